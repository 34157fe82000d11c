// dtl — PyTorch's scheduler combinators: SequentialLR (one scheduler after another, switching at
// milestones) and ChainedScheduler (several stepped together, their factors multiplying).
#ifndef DTL_LR_COMPOSITE_HPP
#define DTL_LR_COMPOSITE_HPP

#include <dtl/lr/scheduler.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace dtl::lr {

/// Python's SequentialLR: `schedulers[i]` runs from `milestones[i-1]` on, restarted there.
///   auto warmup = std::make_shared<dtl::lr::LinearLR>(opt, 0.1, 1.0, 5);
///   auto cosine = std::make_shared<dtl::lr::CosineAnnealingLR>(opt, 95);
///   ctx.wrap_lr_scheduler(dtl::lr::SequentialLR(opt, {warmup, cosine}, {5}), dtl::StepMode::every_batch);
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<std::int64_t> milestones)
      : LRScheduler(std::move(optimizer)), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
    if (schedulers_.empty()) detail::invalid("SequentialLR", "needs at least one scheduler");
    for (std::size_t i = 0; i < schedulers_.size(); ++i) {
      if (!schedulers_[i]) detail::invalid("SequentialLR", "scheduler " + std::to_string(i) + " is null");
      if (schedulers_[i]->optimizer() != optimizer_)
        detail::invalid("SequentialLR",
                        "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
                        "schedulers at index " + std::to_string(i) + " to be different than the optimizer passed in.");
    }
    if (milestones_.size() != schedulers_.size() - 1)
      detail::invalid("SequentialLR",
                      "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                      "milestone points, but got number of schedulers " + std::to_string(schedulers_.size()) +
                      " and the number of milestones to be equal to " + std::to_string(milestones_.size()));
    set_last_epoch(0);
    // Back to the initial learning rates; undo the step each scheduler took at construction;
    // then only the first one takes its initial step.
    auto& keys = detail::param_group_keys();
    for (std::size_t i = 0; i < groups(); ++i)
      if (auto v = keys.get(*optimizer_, i, "initial_lr")) group_options(i).set_lr(*v);
    for (auto& s : schedulers_) s->shift_last_epoch(-1);
    schedulers_.front()->initial_step();
    set_last_lr(schedulers_.front()->get_last_lr());
  }

  void step() override {
    shift_last_epoch(1);
    const auto e = last_epoch();
    const auto idx = static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin());
    auto& s = *schedulers_[idx];
    if (idx > 0 && milestones_[idx - 1] == e)
      s.step_to(0);
    else
      s.step();
    set_last_lr(s.get_last_lr());
  }

  [[nodiscard]] const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const noexcept { return schedulers_; }

  /// Python's layout: `_milestones`, `last_epoch`, `_last_lr` and `_schedulers` (each one's state).
  [[nodiscard]] nlohmann::json state_dict() const override {
    nlohmann::json subs = nlohmann::json::array();
    for (const auto& s : schedulers_) subs.push_back(s->state_dict());
    return {{"_milestones", milestones_}, {"last_epoch", last_epoch()}, {"_last_lr", get_last_lr()}, {"_schedulers", subs}};
  }
  void load_state_dict(const nlohmann::json& state) override {
    detail::load_if_present(state, "_milestones", milestones_);
    set_last_epoch(state.at("last_epoch").get<std::int64_t>());
    set_last_lr(state.at("_last_lr").get<std::vector<double>>());
    const auto& subs = state.at("_schedulers");
    if (subs.size() != schedulers_.size())
      detail::invalid("SequentialLR", "load_state_dict: the state has " + std::to_string(subs.size()) +
                                          " schedulers but this SequentialLR has " + std::to_string(schedulers_.size()));
    for (std::size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
  }

 protected:
  void get_lr(std::span<double> /*lrs*/) override {}

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<std::int64_t> milestones_;
};

/// Python's ChainedScheduler: every step() steps each scheduler in turn, so their chainable
/// factors multiply.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
      : LRScheduler(first_optimizer(schedulers)), schedulers_(std::move(schedulers)) {
    for (std::size_t i = 1; i < schedulers_.size(); ++i)
      if (!schedulers_[i] || schedulers_[i]->optimizer() != optimizer_)
        detail::invalid("ChainedScheduler",
                        "ChainedScheduler expects all schedulers to belong to the same optimizer, but got schedulers "
                        "at index 0 and " + std::to_string(i) + " to be different");
    set_last_lr_from_groups();
  }

  void step() override {
    for (auto& s : schedulers_) s->step();
    set_last_lr_from_groups();
  }

  [[nodiscard]] const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const noexcept { return schedulers_; }

  /// Python's layout: `_last_lr` and `_schedulers`.
  [[nodiscard]] nlohmann::json state_dict() const override {
    nlohmann::json subs = nlohmann::json::array();
    for (const auto& s : schedulers_) subs.push_back(s->state_dict());
    return {{"_last_lr", get_last_lr()}, {"_schedulers", subs}};
  }
  void load_state_dict(const nlohmann::json& state) override {
    set_last_lr(state.at("_last_lr").get<std::vector<double>>());
    const auto& subs = state.at("_schedulers");
    if (subs.size() != schedulers_.size())
      detail::invalid("ChainedScheduler", "load_state_dict: the state has " + std::to_string(subs.size()) +
                                              " schedulers but this ChainedScheduler has " +
                                              std::to_string(schedulers_.size()));
    for (std::size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
  }

 protected:
  void get_lr(std::span<double> /*lrs*/) override {}

 private:
  static std::shared_ptr<torch::optim::Optimizer> first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& s) {
    if (s.empty() || !s.front()) detail::invalid("ChainedScheduler", "needs at least one scheduler");
    return s.front()->optimizer();
  }
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace dtl::lr

#endif  // DTL_LR_COMPOSITE_HPP
