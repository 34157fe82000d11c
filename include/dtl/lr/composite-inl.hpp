// dtl — the non-template definitions of <dtl/lr/composite.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_COMPOSITE_INL_HPP
#define DTL_LR_COMPOSITE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/composite.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

namespace compat = dtl::detail::compat;

DTL_INLINE void SchedulerList::undo_initial_step() {
  if (!compat::lr_undo_is_recursive) return LRScheduler::undo_initial_step();
  for (auto& s : schedulers_) s->undo_initial_step();
}

DTL_INLINE nlohmann::json SchedulerList::scheduler_states() const {
  nlohmann::json subs = nlohmann::json::array();
  for (const auto& s : schedulers_) subs.push_back(s->state_dict());
  return subs;
}

DTL_INLINE void SchedulerList::load_scheduler_states(const nlohmann::json& state, const char* who) {
  const auto& subs = state.at("_schedulers");
  if (subs.size() != schedulers_.size())
    detail::invalid(who, "load_state_dict: the state has " + std::to_string(subs.size()) + " schedulers but this " +
                             who + " has " + std::to_string(schedulers_.size()));
  for (std::size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
}

DTL_INLINE SequentialLR::SequentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                      std::vector<std::shared_ptr<LRScheduler>> schedulers,
                                      std::vector<std::int64_t> milestones)
    : SchedulerList(std::move(optimizer), std::move(schedulers)), milestones_(std::move(milestones)) {
  if (schedulers_.empty()) detail::invalid("SequentialLR", "needs at least one scheduler");
  for (std::size_t i = 0; i < schedulers_.size(); ++i) {
    if (!schedulers_[i]) detail::invalid("SequentialLR", "scheduler " + std::to_string(i) + " is null");
    if (schedulers_[i]->optimizer() != optimizer_)
      detail::invalid("SequentialLR",
                      "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got "
                      "schedulers at index " +
                          std::to_string(i) + " to be different than the optimizer passed in.");
  }
  if (milestones_.size() != schedulers_.size() - 1)
    detail::invalid("SequentialLR",
                    "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
                    "milestone points, but got number of schedulers " +
                        std::to_string(schedulers_.size()) + " and the number of milestones to be equal to " +
                        std::to_string(milestones_.size()));
  set_last_epoch(0);
  // Back to the initial learning rates; undo the step each scheduler took at construction;
  // then only the first one takes its initial step.
  auto& keys = detail::param_group_keys();
  for (std::size_t i = 0; i < groups(); ++i)
    if (auto v = keys.get(*optimizer_, i, "initial_lr")) group_options(i).set_lr(*v);
  for (auto& s : schedulers_) s->undo_initial_step();
  // The scheduler for step 0 takes the initial step: the first in 1.13; in 2.x the one after
  // any milestones at 0.
  const auto first = compat::sequential_lr_first_is_milestone_aware
                         ? static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), 0) -
                                                    milestones_.begin())
                         : 0;
  schedulers_[first]->initial_step();
  set_last_lr(schedulers_[first]->get_last_lr());
}

DTL_INLINE void SequentialLR::step() {
  shift_last_epoch(1);
  const auto e = last_epoch();
  const auto idx =
      static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin());
  auto& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == e) {
    if (compat::sequential_lr_milestone_counts_step)
      s.step_to(0);  // 1.13: step(0), a counted step, which CosineAnnealingWarmRestarts overrides
    else
      s.update_lr_to(0);  // 2.x: _update_lr(0)
  } else {
    s.step();
  }
  set_last_lr(s.get_last_lr());
}

DTL_INLINE nlohmann::json SequentialLR::state_dict() const {
  return {{"_milestones", milestones_},
          {"last_epoch", last_epoch()},
          {"_last_lr", get_last_lr()},
          {"_schedulers", scheduler_states()}};
}

DTL_INLINE void SequentialLR::load_state_dict(const nlohmann::json& state) {
  detail::load_if_present(state, "_milestones", milestones_);
  set_last_epoch(state.at("last_epoch").get<std::int64_t>());
  set_last_lr(state.at("_last_lr").get<std::vector<double>>());
  load_scheduler_states(state, "SequentialLR");
}

// (`schedulers` is copied, not moved: a move could come before first_optimizer reads it, as the
// order in which arguments are evaluated is unspecified)
DTL_INLINE ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : SchedulerList(first_optimizer(schedulers), schedulers) {
  for (std::size_t i = 1; i < schedulers_.size(); ++i)
    if (!schedulers_[i] || schedulers_[i]->optimizer() != optimizer_)
      detail::invalid("ChainedScheduler",
                      "ChainedScheduler expects all schedulers to belong to the same optimizer, but got schedulers "
                      "at index 0 and " +
                          std::to_string(i) + " to be different");
  set_last_lr_from_groups();
}

DTL_INLINE void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  set_last_lr_from_groups();
}

DTL_INLINE nlohmann::json ChainedScheduler::state_dict() const {
  return {{"_last_lr", get_last_lr()}, {"_schedulers", scheduler_states()}};
}

DTL_INLINE void ChainedScheduler::load_state_dict(const nlohmann::json& state) {
  set_last_lr(state.at("_last_lr").get<std::vector<double>>());
  load_scheduler_states(state, "ChainedScheduler");
}

DTL_INLINE std::shared_ptr<torch::optim::Optimizer> ChainedScheduler::first_optimizer(
    const std::vector<std::shared_ptr<LRScheduler>>& s) {
  if (s.empty() || !s.front()) detail::invalid("ChainedScheduler", "needs at least one scheduler");
  return s.front()->optimizer();
}

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_COMPOSITE_INL_HPP
