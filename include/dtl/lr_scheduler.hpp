// dtl — LR schedulers: Determined's StepMode and the auto-stepping wrapper, plus PyTorch's
// schedulers that LibTorch 1.13 lacks (dtl::lr), with Python's exact update rules.
#ifndef DTL_LR_SCHEDULER_HPP
#define DTL_LR_SCHEDULER_HPP

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace dtl {

/// When the Trainer steps a wrapped scheduler (Determined's `LRScheduler.StepMode`).
enum class StepMode {
  every_epoch = 1,           ///< after the last batch of each epoch
  every_batch = 2,           ///< after every batch (deferred to the optimizer step when aggregating)
  manual = 3,                ///< never; the trial calls step() itself
  every_optimizer_step = 4,  ///< after batches on which the optimizer steps
  // Determined's spellings, so a ported trial reads the same.
  STEP_EVERY_EPOCH = every_epoch,
  STEP_EVERY_BATCH = every_batch,
  MANUAL_STEP = manual,
  STEP_EVERY_OPTIMIZER_STEP = every_optimizer_step,
};

/// Anything with `step()` can be wrapped: dtl::lr schedulers, torch::optim::StepLR, your own.
template <class S>
concept LRSchedulerLike = requires(S& s) {
  s.step();
};

namespace lr {

/// Python's `torch.optim.lr_scheduler._LRScheduler` contract: `last_epoch` starts at -1 and the
/// constructor performs the first step, so after construction `last_epoch == 0`.
class LRScheduler {
 public:
  explicit LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer) : optimizer_(std::move(optimizer)) {
    for (auto& group : optimizer_->param_groups()) base_lrs_.push_back(group.options().get_lr());
  }
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  LRScheduler(LRScheduler&&) = default;
  LRScheduler& operator=(LRScheduler&&) = delete;

  void step() {
    ++last_epoch_;
    auto lrs = next_lrs();
    auto& groups = optimizer_->param_groups();
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
    last_lr_ = std::move(lrs);
  }
  [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
  [[nodiscard]] const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }

  /// Python's `scheduler.state_dict()` keys (its `__dict__` without the optimizer):
  /// `base_lrs`, `last_epoch`, `verbose`, `_step_count`, `_get_lr_called_within_step`,
  /// `_last_lr`, plus the subclass's settings — so it loads into the Python scheduler.
  [[nodiscard]] virtual nlohmann::json state_dict() const {
    return {{"base_lrs", base_lrs_},          {"last_epoch", last_epoch_},           {"verbose", false},
            {"_step_count", last_epoch_ + 1}, {"_get_lr_called_within_step", false}, {"_last_lr", last_lr_}};
  }
  virtual void load_state_dict(const nlohmann::json& state) {
    last_epoch_ = state.at("last_epoch").get<std::int64_t>();
    base_lrs_ = state.at("base_lrs").get<std::vector<double>>();
    last_lr_ = state.at("_last_lr").get<std::vector<double>>();
  }

 protected:
  /// The learning rates for `last_epoch()`, which step() has already advanced.
  virtual std::vector<double> next_lrs() = 0;
  [[nodiscard]] std::vector<double> current_lrs() const {
    std::vector<double> out;
    for (const auto& group : optimizer_->param_groups()) out.push_back(group.options().get_lr());
    return out;
  }
  void set_last_epoch(std::int64_t e) noexcept { last_epoch_ = e; }

  std::shared_ptr<torch::optim::Optimizer> optimizer_;

 private:
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  std::int64_t last_epoch_ = -1;
};

/// Python's StepLR: multiply the learning rate by `gamma` every `step_size` steps.
///   ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt, 1, 0.7), dtl::StepMode::every_epoch);
class StepLR : public LRScheduler {
 public:
  StepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t step_size, double gamma = 0.1)
      : LRScheduler(std::move(optimizer)), step_size_(step_size), gamma_(gamma) {
    if (step_size < 1) throw std::invalid_argument("dtl::lr::StepLR: step_size must be >= 1");
    step();
  }
  [[nodiscard]] std::int64_t step_size() const noexcept { return step_size_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }

  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["step_size"] = step_size_;
    j["gamma"] = gamma_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    if (state.contains("step_size")) step_size_ = state["step_size"].get<std::int64_t>();
    if (state.contains("gamma")) gamma_ = state["gamma"].get<double>();
  }

 protected:
  // Python's chainable form (multiply the current lr), so values match Python's bit for bit.
  std::vector<double> next_lrs() override {
    auto lrs = current_lrs();
    if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return lrs;
    for (auto& v : lrs) v *= gamma_;
    return lrs;
  }

 private:
  std::int64_t step_size_;
  double gamma_;
};

}  // namespace lr
}  // namespace dtl

#endif  // DTL_LR_SCHEDULER_HPP
