// expect: repeat() twice
// The sampler order grammar: one repeat() per pipeline.
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(sequential(10) | repeat() | repeat());  // the misuse
  return 0;
}
