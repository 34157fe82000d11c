// dtl — PyTorch's scheduler combinators: SequentialLR (one scheduler after another, switching at
// milestones) and ChainedScheduler (several stepped together, their factors multiplying).
#ifndef DTL_LR_COMPOSITE_HPP
#define DTL_LR_COMPOSITE_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/base.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// What SequentialLR and ChainedScheduler share: the schedulers they drive, the undo of their
/// construction steps, and their state_dict's `_schedulers` (each one's state, in order).
class SchedulerList : public LRScheduler {
 public:
  [[nodiscard]] const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const noexcept { return schedulers_; }

 protected:
  SchedulerList(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers)
      : LRScheduler(std::move(optimizer)), schedulers_(std::move(schedulers)) {}
  void get_lr(std::span<double> /*lrs*/) override {}
  DTL_INLINE void undo_initial_step() override;
  /// `_schedulers`: each scheduler's state_dict.
  [[nodiscard]] DTL_INLINE nlohmann::json scheduler_states() const;
  /// Loads `_schedulers` into the schedulers, one for one; `who` names the composite in the error.
  DTL_INLINE void load_scheduler_states(const nlohmann::json& state, const char* who);

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

/// Python's SequentialLR: `schedulers[i]` runs from `milestones[i-1]` on, restarted there.
///   auto warmup = std::make_shared<dtl::lr::LinearLR>(opt, 0.1, 1.0, 5);
///   auto cosine = std::make_shared<dtl::lr::CosineAnnealingLR>(opt, 95);
///   ctx.wrap_lr_scheduler(dtl::lr::SequentialLR(opt, {warmup, cosine}, {5}), dtl::StepMode::every_batch);
class SequentialLR : public SchedulerList {
 public:
  DTL_INLINE SequentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                          std::vector<std::shared_ptr<LRScheduler>> schedulers, std::vector<std::int64_t> milestones);

  DTL_INLINE void step() override;

  /// Python's layout: `_milestones`, `last_epoch`, `_last_lr` and `_schedulers` (each one's state).
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const override;
  DTL_INLINE void load_state_dict(const nlohmann::json& state) override;

 private:
  std::vector<std::int64_t> milestones_;
};

/// Python's ChainedScheduler: every step() steps each scheduler in turn, so their chainable
/// factors multiply.
class ChainedScheduler : public SchedulerList {
 public:
  DTL_INLINE explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);

  DTL_INLINE void step() override;

  /// Python's layout: `_last_lr` and `_schedulers`.
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const override;
  DTL_INLINE void load_state_dict(const nlohmann::json& state) override;

 private:
  DTL_INLINE static std::shared_ptr<torch::optim::Optimizer> first_optimizer(
      const std::vector<std::shared_ptr<LRScheduler>>& s);
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/composite-inl.hpp>
#endif

#endif  // DTL_LR_COMPOSITE_HPP
