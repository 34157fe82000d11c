// expect: skip() must be the last stage, so that it counts what the trainer consumed (batches)
// The sampler order grammar: nothing may follow skip().
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(sequential(10) | batch(2) | repeat() | skip(3) | shard(0, 2));  // the misuse
  return 0;
}
