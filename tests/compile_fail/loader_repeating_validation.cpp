// expect: this batch_sampler repeats its indices (repeat() before batch()) and never ends
// A batch sampler that repeats before batching trains (batches across epoch ends), but a
// validation pass (or stream()) must end.
#include <dtl/data/data_loader.hpp>

int main() {
  using namespace dtl::samplers;
  dtl::TensorDataset data(torch::ones({8, 1}));
  dtl::DataLoader endless(data, sequential(8) | shuffle(1) | repeat() | batch(3));
  (void)endless.adapt_training({});          // fine: training repeats anyway
  (void)endless.adapt_evaluation({});        // the misuse
  return 0;
}
