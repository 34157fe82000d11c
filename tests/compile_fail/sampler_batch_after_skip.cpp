// expect: batch() after skip() would count the skip in records
// The sampler order grammar: batch() must come before skip().
#include <dtl/samplers/pipeline.hpp>

int main() {
  using namespace dtl::samplers;
  auto fine = sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3);
  (void)fine.begin();
  (void)(sequential(10) | repeat() | skip(3) | batch(2));  // the misuse
  return 0;
}
