// dtl — PyTorch's cosine schedules: CosineAnnealingLR (the recursive, chainable form Python
// steps with) and CosineAnnealingWarmRestarts (SGDR).
#ifndef DTL_LR_COSINE_HPP
#define DTL_LR_COSINE_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/base.hpp>

#include <cmath>
#include <numbers>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// Python's CosineAnnealingLR: from the initial lr down to `eta_min` over `T_max` steps along a
/// half cosine, and back up over the next T_max (it is periodic, as in Python).
class CosineAnnealingLR : public LRScheduler {
 public:
  DTL_INLINE CosineAnnealingLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t T_max,
                               double eta_min = 0);
 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  DTL_INLINE bool closed_form_lr(std::span<double> lrs) override;

 private:
  std::int64_t T_max_;
  double eta_min_;
};

/// Python's CosineAnnealingWarmRestarts (SGDR): a cosine from the initial lr to `eta_min` over
/// T_i steps, then a restart; T_0 the first period, each next one `T_mult` times longer.
/// `step(epoch)` with a fractional epoch (`scheduler.step(epoch + i / iters)`) works as in Python.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  DTL_INLINE CosineAnnealingWarmRestarts(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t T_0,
                                         std::int64_t T_mult = 1, double eta_min = 0);

  DTL_INLINE void step() override;
  /// Python's `step(epoch)`: jump to `epoch`, which may be fractional.
  DTL_INLINE void step(double epoch);

 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;
  void step_to(std::int64_t epoch) override { step(static_cast<double>(epoch)); }

 private:
  std::int64_t T_0_;
  double T_i_;
  std::int64_t T_mult_;
  double eta_min_;
  double T_cur_ = -1;
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/cosine-inl.hpp>
#endif

#endif  // DTL_LR_COSINE_HPP
