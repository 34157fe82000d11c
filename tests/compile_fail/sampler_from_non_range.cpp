// expect: from(range) needs a sized, re-iterable (forward) range of integer indices
// The sampler order grammar: from() takes integer indices.
#include <dtl/samplers/pipeline.hpp>

#include <vector>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)from(std::vector<double>{1.0, 2.0});  // the misuse
  return 0;
}
