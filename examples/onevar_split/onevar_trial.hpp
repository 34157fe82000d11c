// OneVar (examples/onevar.cpp) laid out for a short edit-compile loop (docs/building.md, "Faster
// trial builds"): the trial's class in this header, the bodies a user edits most (the constructor,
// train_batch, evaluate_batch) in onevar_trial.cpp, and the Trainer in main.cpp. Editing
// train_batch recompiles onevar_trial.cpp alone: the Trainer's instantiation for the trial, in
// main.cpp, needs only the declarations here. The data loaders stay inline (their type is deduced).
#ifndef DTL_EXAMPLES_ONEVAR_TRIAL_HPP
#define DTL_EXAMPLES_ONEVAR_TRIAL_HPP

#include <dtl/trainer.hpp>

#include <cstdint>
#include <memory>
#include <tuple>

class OneVarTrial : public dtl::PyTorchTrial<OneVarTrial> {
 public:
  explicit OneVarTrial(dtl::PyTorchTrialContext& ctx);

  auto build_training_data_loader() { return dtl::DataLoader(ones(64), {.batch_size = batch_size()}); }
  auto build_validation_data_loader() { return dtl::DataLoader(ones(16), {.batch_size = batch_size()}); }

  dtl::Metrics train_batch(std::tuple<torch::Tensor, torch::Tensor>& batch, std::int64_t epoch_idx,
                           std::int64_t batch_idx);
  dtl::Metrics evaluate_batch(std::tuple<torch::Tensor, torch::Tensor>& batch);

  [[nodiscard]] double weight() const;

 private:
  [[nodiscard]] std::int64_t batch_size() const { return ctx_.get_per_slot_batch_size(); }
  static dtl::TensorDataset<2> ones(std::int64_t n) {
    return dtl::TensorDataset(torch::ones({n, 1}), torch::ones({n, 1}));
  }

  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

#endif  // DTL_EXAMPLES_ONEVAR_TRIAL_HPP
