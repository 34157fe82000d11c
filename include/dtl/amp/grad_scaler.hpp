// dtl — GradScaler, PyTorch's `torch.cuda.amp.GradScaler` with its semantics: scale() the loss
// before backward, unscale_() the gradients (before clipping), step() skips the optimizer step
// when a gradient is inf/NaN, update() backs the scale off after an overflow and grows it after
// `growth_interval` clean steps; state_dict() in Python's layout. CUDA gradients go through ATen's
// own kernels (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_); LibTorch 1.13
// has none for CPU, so CPU gradients take an equivalent with the same arithmetic (Python's scaler
// refuses CPU and disables itself; dtl's works there).
#ifndef DTL_AMP_GRAD_SCALER_HPP
#define DTL_AMP_GRAD_SCALER_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/optim/step_control.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

class PyTorchTrialContext;
namespace detail {
class ApexAmp;
class CudaGraphStep;
}

/// GradScaler's arguments, with Python's names and defaults. `min_scale`/`max_scale` are dtl's
/// (apex's min_loss_scale/max_loss_scale, for configure_apex_amp): bounds the dynamic scale.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
  bool enabled = true;
  std::optional<double> min_scale;
  std::optional<double> max_scale;
};

class GradScaler {
 public:
  DTL_INLINE explicit GradScaler(GradScalerOptions o = {});

  /// The loss multiplied by the scale (Python's `scaler.scale(outputs)`); unchanged when disabled.
  [[nodiscard]] DTL_INLINE torch::Tensor scale(const torch::Tensor& outputs);

  /// Divides `optimizer`'s gradients by the scale, in place, and records whether any is inf/NaN.
  /// Once per optimizer between updates (Python's errors otherwise).
  DTL_INLINE void unscale_(torch::optim::Optimizer& optimizer);

  /// Unscales (if not yet) and steps `optimizer` unless a gradient was inf/NaN; true if it stepped.
  /// A fused optimizer (wrap_optimizer's `.fused = true`) takes the scale and the inf flag into
  /// its kernel instead, as torch.optim's do: no host sync, and it returns true (whether the
  /// kernel skipped is known on the device; steps_skipped() reads it).
  DTL_INLINE bool step(torch::optim::Optimizer& optimizer);

  /// Backs the scale off if any optimizer saw inf/NaN since the last update, else counts a clean
  /// step and grows it every growth_interval; with `new_scale`, sets it instead.
  DTL_INLINE void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale (init_scale before the first scale()), as Python's get_scale().
  [[nodiscard]] DTL_INLINE double get_scale() const;
  [[nodiscard]] double get_growth_factor() const noexcept { return o_.growth_factor; }
  void set_growth_factor(double v) noexcept { o_.growth_factor = v; }
  [[nodiscard]] double get_backoff_factor() const noexcept { return o_.backoff_factor; }
  void set_backoff_factor(double v) noexcept { o_.backoff_factor = v; }
  [[nodiscard]] std::int64_t get_growth_interval() const noexcept { return o_.growth_interval; }
  void set_growth_interval(std::int64_t v) noexcept { o_.growth_interval = v; }
  [[nodiscard]] bool is_enabled() const noexcept { return o_.enabled; }
  /// Clean steps since the last growth or backoff (Python's `_growth_tracker`).
  [[nodiscard]] DTL_INLINE std::int64_t growth_tracker() const;
  /// Optimizer steps taken and skipped (inf/NaN) so far by this scaler.
  [[nodiscard]] std::int64_t steps_taken() const { return taken_steps_ + fused_steps_ - fused_skipped(); }
  [[nodiscard]] std::int64_t steps_skipped() const { return skipped_steps_ + fused_skipped(); }

  /// Python's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({}
  /// when disabled).
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const;
  DTL_INLINE void load_state_dict(const nlohmann::json& state);

 private:
  friend class PyTorchTrialContext;
  friend class detail::ApexAmp;
  friend class detail::CudaGraphStep;  // counts the fused steps a replay takes
  enum class Stage { ready, unscaled, stepped };
  struct OptimizerState {
    Stage stage = Stage::ready;
    torch::Tensor found_inf;
  };

  DTL_INLINE void lazy_init(const torch::Device& device);

  /// Python's `inv_scale`: float(1 / double(scale)).
  [[nodiscard]] torch::Tensor inv_scale() const { return scale_.to(torch::kDouble).reciprocal().to(torch::kFloat); }

  DTL_INLINE static void unscale_grads(torch::optim::Optimizer& optimizer, const torch::Tensor& inv_scale,
                                       torch::Tensor& found_inf);
  /// ATen's _amp_foreach_non_finite_check_and_unscale_ for CUDA gradients; for CPU ones the same
  /// arithmetic (grad * float32 inv_scale; found_inf = 1 when any value is not finite).
  DTL_INLINE static void unscale_grads(const std::vector<torch::Tensor>& grads, const torch::Tensor& inv_scale,
                                       torch::Tensor& found_inf);

  /// ATen's _amp_update_scale_ (float scale, int32 tracker; products in double, stored as float),
  /// then dtl's optional bounds.
  DTL_INLINE void update_scale(bool found_inf);

  GradScalerOptions o_;
  torch::Tensor scale_;           // float32 [1], created at the first scale()
  torch::Tensor growth_tracker_;  // int32 [1]
  std::int64_t init_growth_tracker_ = 0;
  std::map<const torch::optim::Optimizer*, OptimizerState> per_optimizer_;
  bool deferred_ = false;  // set by context.step_optimizer on a batch that aggregates
  std::int64_t taken_steps_ = 0;
  std::int64_t skipped_steps_ = 0;
  std::int64_t fused_steps_ = 0;     // fused steps, taken or skipped on the device
  torch::Tensor skipped_on_device_;  // their inf flags, summed
  [[nodiscard]] std::int64_t fused_skipped() const {
    return skipped_on_device_.defined() ? static_cast<std::int64_t>(skipped_on_device_.sum().item<float>()) : 0;
  }
};

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/amp/grad_scaler-inl.hpp>
#endif

#endif  // DTL_AMP_GRAD_SCALER_HPP
