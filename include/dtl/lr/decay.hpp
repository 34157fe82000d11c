// dtl — PyTorch's multiplicative decay schedulers: StepLR, MultiStepLR, ExponentialLR, ConstantLR,
// LinearLR, PolynomialLR. Each computes Python's chainable form (the current lr times a factor), so
// its values equal Python's bit for bit, and Python's closed form where SequentialLR needs it.
#ifndef DTL_LR_DECAY_HPP
#define DTL_LR_DECAY_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/base.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// Python's StepLR: multiply the learning rate by `gamma` every `step_size` steps.
///   ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt, 1, 0.7), dtl::StepMode::every_epoch);
class StepLR : public LRScheduler {
 public:
  DTL_INLINE StepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t step_size, double gamma = 0.1);
  [[nodiscard]] std::int64_t step_size() const noexcept { return step_size_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

/// Python's MultiStepLR: multiply by `gamma` at each milestone (a milestone listed twice
/// multiplies by gamma² there, as Python's Counter does).
class MultiStepLR : public LRScheduler {
 public:
  DTL_INLINE MultiStepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<std::int64_t> milestones,
                         double gamma = 0.1);
  [[nodiscard]] const std::vector<std::int64_t>& milestones() const noexcept { return milestones_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  /// `milestones` as Python's Counter: {milestone: count}, which the checkpoint writes with int keys.
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  std::vector<std::int64_t> milestones_;  // sorted, with repeats
  double gamma_;
};

/// Python's ExponentialLR: multiply by `gamma` every step.
class ExponentialLR : public LRScheduler {
 public:
  DTL_INLINE ExponentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double gamma);
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  double gamma_;
};

/// Python's ConstantLR: the learning rate times `factor` until step `total_iters`, then the lr.
class ConstantLR : public LRScheduler {
 public:
  DTL_INLINE explicit ConstantLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double factor = 1.0 / 3,
                                 std::int64_t total_iters = 5);
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  double factor_;
  std::int64_t total_iters_;
};

/// Python's LinearLR: the factor moves linearly from `start_factor` to `end_factor` over
/// `total_iters` steps. start_factor must be > 0 (as in later PyTorch; 1.13 accepted 0 and then
/// divided by zero).
class LinearLR : public LRScheduler {
 public:
  DTL_INLINE explicit LinearLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double start_factor = 1.0 / 3,
                               double end_factor = 1.0, std::int64_t total_iters = 5);
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  double start_factor_;
  double end_factor_;
  std::int64_t total_iters_;
};

/// Python's PolynomialLR: decay to 0 over `total_iters` steps as (1 - t/T)^power.
class PolynomialLR : public LRScheduler {
 public:
  DTL_INLINE explicit PolynomialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t total_iters = 5,
                                   double power = 1.0);
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  std::int64_t total_iters_;
  double power_;
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/decay-inl.hpp>
#endif

#endif  // DTL_LR_DECAY_HPP
