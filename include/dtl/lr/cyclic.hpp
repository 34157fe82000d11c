// dtl — PyTorch's per-batch cyclical policies, with momentum cycled inversely to the learning
// rate: CyclicLR (CLR) and OneCycleLR (1cycle). Momentum is SGD's/RMSprop's `momentum` or
// Adam's/AdamW's `betas[0]`.
#ifndef DTL_LR_CYCLIC_HPP
#define DTL_LR_CYCLIC_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/base.hpp>

#include <array>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// CyclicLR's built-in policies (Python's `mode`).
enum class CyclicMode { triangular, triangular2, exp_range };
/// What CyclicLR's scale function is evaluated on (Python's `scale_mode`).
enum class ScaleMode { cycle, iterations };

/// CyclicLR's arguments, with Python's names and defaults:
///   dtl::lr::CyclicLR(opt, {.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 20, .mode =
///   dtl::lr::CyclicMode::triangular2})
struct CyclicLROptions {
  PerGroup base_lr;  ///< required: the lower bound, per group or for all
  PerGroup max_lr;   ///< required: the upper bound
  double step_size_up = 2000;
  std::optional<double> step_size_down;  ///< default: step_size_up
  CyclicMode mode = CyclicMode::triangular;
  double gamma = 1.0;                       ///< exp_range's base
  std::function<double(double)> scale_fn;   ///< a custom policy; then `mode` is ignored
  ScaleMode scale_mode = ScaleMode::cycle;  ///< for a custom scale_fn
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.8;
  PerGroup max_momentum = 0.9;
};

/// Python's CyclicLR: the learning rate cycles between base_lr and max_lr, stepped every batch.
/// Unlike torch 1.13 (but as later PyTorch), momentum cycling also works with Adam's betas.
class CyclicLR : public LRScheduler {
 public:
  DTL_INLINE CyclicLR(std::shared_ptr<torch::optim::Optimizer> optimizer, CyclicLROptions o);

 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;

 private:
  [[nodiscard]] DTL_INLINE double scale(double x) const;

  CyclicMode mode_;
  double gamma_;
  std::function<double(double)> scale_fn_;
  ScaleMode scale_mode_ = ScaleMode::cycle;
  bool cycle_momentum_;
  std::vector<double> max_lrs_;
  double total_size_ = 0;
  double step_ratio_ = 0;
  std::vector<detail::MomentumKind> kinds_;
  std::vector<double> base_momentums_;
  std::vector<double> max_momentums_;
};

/// OneCycleLR's arguments, with Python's names and defaults. Give `total_steps`, or `epochs`
/// and `steps_per_epoch`:
///   dtl::lr::OneCycleLR(opt, {.max_lr = 0.1, .total_steps = 1000})
struct OneCycleLROptions {
  PerGroup max_lr;  ///< required
  std::optional<std::int64_t> total_steps;
  std::optional<std::int64_t> epochs;
  std::optional<std::int64_t> steps_per_epoch;
  double pct_start = 0.3;
  AnnealStrategy anneal_strategy = AnnealStrategy::cos;
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.85;
  PerGroup max_momentum = 0.95;
  double div_factor = 25.;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

/// Python's OneCycleLR: up from max_lr/div_factor to max_lr over pct_start of the steps, then
/// down to initial_lr/final_div_factor (three_phase: back to the initial lr, then down). Stepping
/// past total_steps is Python's error.
class OneCycleLR : public LRScheduler {
 public:
  DTL_INLINE OneCycleLR(std::shared_ptr<torch::optim::Optimizer> optimizer, OneCycleLROptions o);

  [[nodiscard]] std::int64_t total_steps() const noexcept { return total_steps_; }
  /// Also reads the group keys the schedule anneals between (the optimizer's, loaded first).
  DTL_INLINE void load_state_dict(const nlohmann::json& state) override;

 protected:
  DTL_INLINE void fields(StateFields& f) override;
  DTL_INLINE void get_lr(std::span<double> lrs) override;

 private:
  // Indices into detail::kSchedulerGroupKeys (the same names, in the same order).
  enum Key : std::uint8_t { initial_lr, max_lr, min_lr, max_momentum, base_momentum };
  struct Phase {
    double end_step;
    Key start_lr, end_lr, start_m, end_m;
  };
  [[nodiscard]] DTL_INLINE double anneal(double start, double end, double pct) const;
  /// The group keys Python reads per step, cached: no lookup on the per-batch path.
  DTL_INLINE void read_group_keys();

  std::int64_t total_steps_ = 0;
  std::vector<Phase> phases_;
  AnnealStrategy anneal_;
  bool cycle_momentum_;
  std::vector<detail::MomentumKind> kinds_;
  std::vector<std::array<double, 5>> values_;
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/cyclic-inl.hpp>
#endif

#endif  // DTL_LR_CYCLIC_HPP
