// expect: shuffle() after repeat() never ends an epoch
// The sampler order grammar: shuffle() must come before repeat().
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(sequential(10) | repeat() | shuffle(1));  // the misuse
  return 0;
}
