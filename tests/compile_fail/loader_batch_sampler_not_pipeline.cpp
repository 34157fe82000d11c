// expect: a batch_sampler must be a dtl::samplers pipeline ending in batch()
// Any other range of index batches cannot be repeated, sharded and skipped reproducibly.
#include <dtl/data/data_loader.hpp>
#include <vector>

int main() {
  dtl::TensorDataset data(torch::ones({8, 1}));
  std::vector<std::vector<std::int64_t>> batches = {{0, 1}, {2, 3}};
  dtl::DataLoader bad(data, batches);  // the misuse
  return 0;
}
