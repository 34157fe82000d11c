// expect: shard() before repeat() lets the ranks drift apart
// The sampler order grammar: shard() must come after repeat().
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(sequential(10) | shuffle(1) | shard(0, 2) | repeat());  // the misuse
  return 0;
}
