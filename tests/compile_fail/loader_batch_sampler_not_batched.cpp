// expect: a batch_sampler yields batches of indices: end the pipeline with dtl::samplers::batch(size)
// A batch sampler yields batches of indices; a pipeline without batch() yields single indices.
#include <dtl/data/data_loader.hpp>

int main() {
  using namespace dtl::samplers;
  dtl::TensorDataset data(torch::ones({8, 1}));
  dtl::DataLoader fine(data, sequential(8) | shuffle(1) | batch(2));
  dtl::DataLoader bad(data, sequential(8) | shuffle(1));  // the misuse: no batch()
  return 0;
}
