// dtl — PyTorch's SWALR (torch.optim.swa_utils.SWALR): the learning-rate schedule of Stochastic
// Weight Averaging, which anneals each param group's lr to a fixed `swa_lr` and holds it there.
#ifndef DTL_LR_SWA_HPP
#define DTL_LR_SWA_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/base.hpp>

#include <cstdint>
#include <string_view>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// Python's SWALR: from each group's current lr to its `swa_lr` over `anneal_epochs` steps, along
/// a half cosine (`AnnealStrategy::cos`, the default) or a straight line; then `swa_lr` for good.
/// `anneal_epochs = 0` switches to swa_lr at construction. It anneals from whatever lr the group
/// holds when it steps, so it takes over from another scheduler:
///   dtl::lr::SWALR swa(opt, 0.05, 20, dtl::lr::AnnealStrategy::linear);
/// `swa_lr` is one number for every group or one per group (`{0.05, 0.01}`); as in Python it is
/// kept in each optimizer param group (key `swa_lr`), saved with the optimizer in checkpoints, and
/// read there at every step.
class SWALR : public LRScheduler {
 public:
  DTL_INLINE SWALR(std::shared_ptr<torch::optim::Optimizer> optimizer, PerGroup swa_lr, std::int64_t anneal_epochs = 10,
                   AnnealStrategy anneal_strategy = AnnealStrategy::cos);
  /// Python's spelling of the strategy, "cos" or "linear" (from a config, say); anything else is
  /// Python's error.
  DTL_INLINE SWALR(std::shared_ptr<torch::optim::Optimizer> optimizer, PerGroup swa_lr, std::int64_t anneal_epochs,
                   std::string_view anneal_strategy);

  [[nodiscard]] std::int64_t anneal_epochs() const noexcept { return anneal_epochs_; }
  [[nodiscard]] AnnealStrategy anneal_strategy() const noexcept { return anneal_strategy_; }

 protected:
  /// Python 2.x's layout on both versions: the base keys plus `anneal_epochs` and
  /// `_anneal_strategy`. torch 1.13 saves the anneal function itself (`anneal_func`), which is
  /// not data; dtl saves its name instead (docs/lr-schedulers.md). `_anneal_strategy`, when
  /// present, picks the anneal function, as in Python 2.x.
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;

 private:
  /// Python's __init__ after the base's: its checks in its order, `swa_lr` into the groups, the
  /// initial step. Both constructors pass the strategy as Python spells it.
  DTL_INLINE void init(const PerGroup& swa_lr, std::int64_t anneal_epochs, std::string_view anneal_strategy);
  [[nodiscard]] DTL_INLINE double anneal(double t) const;

  std::int64_t anneal_epochs_ = 10;
  AnnealStrategy anneal_strategy_ = AnnealStrategy::cos;
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/swa-inl.hpp>
#endif

#endif  // DTL_LR_SWA_HPP
