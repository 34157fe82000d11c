// dtl — Determined's `context.configure_apex_amp(...)` mapped onto native mixed precision. NVIDIA
// Apex is deprecated upstream (and cannot exist in C++), so its levels become an autocast region
// around train_batch/evaluate_batch plus one GradScaler per loss:
//   O0 — off (float32); O1, O2 — autocast + dynamic loss scaling; O3 — autocast, static scale 1.
// A number as loss_scale is a static scale. As apex does, each backward's gradients are unscaled
// right after it (the earlier gradients set aside and added back), so losses with different
// scales can feed the same parameters; an optimizer whose gradients overflowed skips its step.
#ifndef DTL_AMP_APEX_HPP
#define DTL_AMP_APEX_HPP

#include <torch/torch.h>

#include <dtl/amp/grad_scaler.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// configure_apex_amp's arguments with apex's names and defaults (the ones that mean something
/// without apex; `dtype` is dtl's: the autocast dtype, default bfloat16 on CPU, float16 on CUDA).
struct ApexAmpOptions {
  bool enabled = true;
  std::string opt_level = "O1";
  std::variant<std::monostate, double, std::string> loss_scale;  ///< the level's default, a number, or "dynamic"
  std::int64_t num_losses = 1;
  int verbosity = 1;
  std::optional<double> min_loss_scale;
  double max_loss_scale = 16777216.0;
  std::optional<torch::ScalarType> dtype;
};

namespace detail {

class ApexAmp {
 public:
  DTL_INLINE ApexAmp(const ApexAmpOptions& o, const std::vector<std::shared_ptr<torch::optim::Optimizer>>& optimizers,
                     torch::DeviceType device);

  [[nodiscard]] bool autocast_enabled() const noexcept { return autocast_; }
  [[nodiscard]] torch::DeviceType device() const noexcept { return device_; }
  [[nodiscard]] std::optional<torch::ScalarType> dtype() const noexcept { return dtype_; }
  [[nodiscard]] bool scaling() const noexcept { return scaling_; }
  [[nodiscard]] const std::vector<GradScaler>& scalers() const noexcept { return scalers_; }

  void begin_batch() noexcept { backward_calls_ = 0; }

  /// apex's `with amp.scale_loss(loss, optimizers, loss_id=i): backward()`.
  DTL_INLINE void backward(const torch::Tensor& loss, std::optional<std::int64_t> loss_idx,
                           const torch::Tensor& gradient, c10::optional<bool> retain_graph, bool create_graph);

  /// Whether `params` (one optimizer's) may be stepped: no overflow since the last update, or
  /// none in these gradients.
  [[nodiscard]] DTL_INLINE bool may_step(const std::vector<torch::Tensor>& params) const;

  /// After an optimizer-step batch: each loss's scaler backs off or counts a clean step.
  DTL_INLINE void end_update_batch();

  /// apex's `amp.state_dict()`: {"loss_scaler0": {"loss_scale": s, "unskipped": n}, ...}.
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const;
  DTL_INLINE void load_state_dict(const nlohmann::json& j);

 private:
  torch::DeviceType device_;
  std::int64_t num_losses_;
  std::optional<torch::ScalarType> dtype_;
  bool autocast_ = false;
  bool scaling_ = false;
  bool dynamic_ = false;  // apex's `dynamic`: only a dynamic scaler backs off, grows and resets its count
  std::vector<GradScaler> scalers_;
  std::vector<bool> used_, overflow_;
  std::vector<torch::Tensor> params_, stash_;
  std::int64_t backward_calls_ = 0;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/amp/apex-inl.hpp>
#endif

#endif  // DTL_AMP_APEX_HPP
