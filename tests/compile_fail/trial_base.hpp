// A valid trial assembled from parts; each compile-fail test replaces exactly one part with a
// misuse. ok_trial.cpp assembles the unmodified parts and must compile.
#include <dtl/trainer.hpp>

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

#define DTL_CF_CTOR(T) \
  explicit T(dtl::PyTorchTrialContext& c) : ctx(c) {}
#define DTL_CF_MEMBERS                                                    \
  dtl::PyTorchTrialContext& ctx;                                          \
  dtl::TensorDataset<2> data{torch::ones({8, 1}), torch::ones({8, 1})};
#define DTL_CF_TRAIN_LOADER \
  auto build_training_data_loader() { return dtl::DataLoader(data, {.batch_size = 2}); }
#define DTL_CF_VAL_LOADER \
  auto build_validation_data_loader() { return dtl::DataLoader(data, {.batch_size = 2}); }
#define DTL_CF_TRAIN_BATCH \
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) { return {{"loss", std::get<0>(b).sum()}}; }
#define DTL_CF_EVALUATE_BATCH \
  dtl::Metrics evaluate_batch(Batch& b, std::int64_t) { return {{"validation_loss", std::get<0>(b).sum()}}; }
#define DTL_CF_EVALUATE_FULL \
  dtl::Metrics evaluate_full_dataset(dtl::DataLoader<dtl::TensorDataset<2>>&) { return {{"validation_loss", 0.0}}; }

template <class T>
void use_trial() {
  auto ctx = dtl::init();
  T trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{1}});
}
