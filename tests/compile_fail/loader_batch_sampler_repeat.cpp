// expect: a batch_sampler describes one epoch: leave out repeat(), shard() and skip()
// A user batch sampler must be one epoch: the Trainer adds repeat/shard/skip itself.
#include <dtl/data/data_loader.hpp>

int main() {
  using namespace dtl::samplers;
  dtl::TensorDataset data(torch::ones({8, 1}));
  dtl::DataLoader fine(data, sequential(8) | shuffle(1) | batch(2));
  dtl::DataLoader bad(data, sequential(8) | batch(2) | repeat());  // the misuse
  return 0;
}
