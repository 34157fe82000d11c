// expect: a sampler pipeline starts with its source
// The sampler order grammar: a pipeline starts with sequential(n) or from(range).
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(shuffle(1) | repeat() | batch(2));  // the misuse
  return 0;
}
