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

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtl {

class PyTorchTrialContext;
namespace detail {
class ApexAmp;
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
  explicit GradScaler(GradScalerOptions o = {}) : o_(o) {
    if (o_.enabled) {
      if (!(o_.growth_factor > 1.0) && o_.growth_factor != 1.0)
        throw std::invalid_argument("dtl::GradScaler: growth_factor should be > 1 (1 keeps the scale static)");
      if (!(o_.backoff_factor < 1.0) && o_.backoff_factor != 1.0)
        throw std::invalid_argument("dtl::GradScaler: backoff_factor should be < 1 (1 keeps the scale static)");
      if (o_.growth_interval < 1) throw std::invalid_argument("dtl::GradScaler: growth_interval should be > 0");
    }
  }

  /// The loss multiplied by the scale (Python's `scaler.scale(outputs)`); unchanged when disabled.
  [[nodiscard]] torch::Tensor scale(const torch::Tensor& outputs) {
    if (!o_.enabled) return outputs;
    lazy_init(outputs.device());
    return outputs * (scale_.device() == outputs.device() ? scale_ : scale_.to(outputs.device()));
  }

  /// Divides `optimizer`'s gradients by the scale, in place, and records whether any is inf/NaN.
  /// Once per optimizer between updates (Python's errors otherwise).
  void unscale_(torch::optim::Optimizer& optimizer) {
    if (!o_.enabled) return;
    auto& st = per_optimizer_[&optimizer];
    if (st.stage == Stage::unscaled)
      throw std::runtime_error("dtl::GradScaler: unscale_() has already been called on this optimizer since the last update().");
    if (st.stage == Stage::stepped) throw std::runtime_error("dtl::GradScaler: unscale_() is being called after step().");
    if (!scale_.defined())
      throw std::runtime_error("dtl::GradScaler: unscale_() before any scale(): nothing was scaled");
    st.found_inf = torch::zeros({1}, scale_.options());
    unscale_grads(optimizer, inv_scale(), st.found_inf);
    st.stage = Stage::unscaled;
  }

  /// Unscales (if not yet) and steps `optimizer` unless a gradient was inf/NaN; true if it stepped.
  bool step(torch::optim::Optimizer& optimizer) {
    if (!o_.enabled) {
      optimizer.step();
      return true;
    }
    auto& st = per_optimizer_[&optimizer];
    if (st.stage == Stage::stepped)
      throw std::runtime_error("dtl::GradScaler: step() has already been called since the last update().");
    if (st.stage == Stage::ready) unscale_(optimizer);
    st.stage = Stage::stepped;
    const bool skip = st.found_inf.item<float>() != 0.0f;
    if (!skip) optimizer.step();
    ++(skip ? skipped_steps_ : taken_steps_);
    return !skip;
  }

  /// Backs the scale off if any optimizer saw inf/NaN since the last update, else counts a clean
  /// step and grows it every growth_interval; with `new_scale`, sets it instead.
  void update(std::optional<double> new_scale = std::nullopt) {
    if (!o_.enabled) return;
    if (new_scale) {
      lazy_init(torch::kCPU);
      scale_.fill_(*new_scale);
    } else {
      bool any = false, found = false;
      for (const auto& [opt, st] : per_optimizer_)
        if (st.found_inf.defined()) {
          any = true;
          found = found || st.found_inf.item<float>() != 0.0f;
        }
      if (!any) {
        if (deferred_) {  // an aggregation batch: step_optimizer did not step, nothing to update
          deferred_ = false;
          return;
        }
        throw std::runtime_error("dtl::GradScaler: update(): no inf checks were recorded prior to update() "
                                 "(call step(optimizer) or context.step_optimizer(opt, scaler) first)");
      }
      update_scale(found);
    }
    per_optimizer_.clear();
    deferred_ = false;
  }

  /// The current scale (init_scale before the first scale()), as Python's get_scale().
  [[nodiscard]] double get_scale() const {
    if (!o_.enabled) return 1.0;
    return scale_.defined() ? static_cast<double>(scale_.item<float>()) : o_.init_scale;
  }
  [[nodiscard]] double get_growth_factor() const noexcept { return o_.growth_factor; }
  void set_growth_factor(double v) noexcept { o_.growth_factor = v; }
  [[nodiscard]] double get_backoff_factor() const noexcept { return o_.backoff_factor; }
  void set_backoff_factor(double v) noexcept { o_.backoff_factor = v; }
  [[nodiscard]] std::int64_t get_growth_interval() const noexcept { return o_.growth_interval; }
  void set_growth_interval(std::int64_t v) noexcept { o_.growth_interval = v; }
  [[nodiscard]] bool is_enabled() const noexcept { return o_.enabled; }
  /// Clean steps since the last growth or backoff (Python's `_growth_tracker`).
  [[nodiscard]] std::int64_t growth_tracker() const {
    return growth_tracker_.defined() ? growth_tracker_.item<std::int32_t>() : init_growth_tracker_;
  }
  /// Optimizer steps taken and skipped (inf/NaN) so far by this scaler.
  [[nodiscard]] std::int64_t steps_taken() const noexcept { return taken_steps_; }
  [[nodiscard]] std::int64_t steps_skipped() const noexcept { return skipped_steps_; }

  /// Python's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({}
  /// when disabled).
  [[nodiscard]] nlohmann::json state_dict() const {
    if (!o_.enabled) return nlohmann::json::object();
    return {{"scale", get_scale()},
            {"growth_factor", o_.growth_factor},
            {"backoff_factor", o_.backoff_factor},
            {"growth_interval", o_.growth_interval},
            {"_growth_tracker", growth_tracker()}};
  }
  void load_state_dict(const nlohmann::json& state) {
    if (!o_.enabled) return;
    if (!state.is_object() || state.empty())
      throw std::runtime_error("dtl::GradScaler: the source state dict is empty, possibly because it was saved from "
                               "a disabled GradScaler");
    o_.init_scale = state.at("scale").get<double>();
    if (scale_.defined()) scale_.fill_(o_.init_scale);
    o_.growth_factor = state.at("growth_factor").get<double>();
    o_.backoff_factor = state.at("backoff_factor").get<double>();
    o_.growth_interval = state.at("growth_interval").get<std::int64_t>();
    init_growth_tracker_ = state.at("_growth_tracker").get<std::int64_t>();
    if (growth_tracker_.defined()) growth_tracker_.fill_(init_growth_tracker_);
  }

 private:
  friend class PyTorchTrialContext;
  friend class detail::ApexAmp;
  enum class Stage { ready, unscaled, stepped };
  struct OptimizerState {
    Stage stage = Stage::ready;
    torch::Tensor found_inf;
  };

  void lazy_init(const torch::Device& device) {
    if (scale_.defined()) return;
    scale_ = torch::full({1}, o_.init_scale, torch::TensorOptions().dtype(torch::kFloat).device(device));
    growth_tracker_ = torch::full({1}, init_growth_tracker_, torch::TensorOptions().dtype(torch::kInt).device(device));
  }

  /// Python's `inv_scale`: float(1 / double(scale)).
  [[nodiscard]] torch::Tensor inv_scale() const { return scale_.to(torch::kDouble).reciprocal().to(torch::kFloat); }

  static void unscale_grads(torch::optim::Optimizer& optimizer, const torch::Tensor& inv_scale,
                            torch::Tensor& found_inf) {
    std::vector<torch::Tensor> grads;
    for (auto& group : optimizer.param_groups())
      for (auto& p : group.params())
        if (p.grad().defined()) grads.push_back(p.mutable_grad());
    unscale_grads(grads, inv_scale, found_inf);
  }
  /// ATen's _amp_foreach_non_finite_check_and_unscale_ for CUDA gradients; for CPU ones the same
  /// arithmetic (grad * float32 inv_scale; found_inf = 1 when any value is not finite).
  static void unscale_grads(const std::vector<torch::Tensor>& grads, const torch::Tensor& inv_scale,
                            torch::Tensor& found_inf) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> cuda_grads;
    for (auto g : grads) {  // a handle: mul_ acts on the gradient itself
      if (g.scalar_type() == torch::kHalf)
        throw std::invalid_argument("dtl::GradScaler: attempting to unscale FP16 gradients (keep the parameters float32)");
      if (g.is_cuda()) {
        cuda_grads.push_back(g);
        continue;
      }
      if (!torch::isfinite(g).all().item<bool>()) found_inf.fill_(1.0);
      g.mul_(inv_scale);
    }
    if (!cuda_grads.empty()) {
      const auto dev = cuda_grads.front().device();
      auto f = found_inf.to(dev);
      at::_amp_foreach_non_finite_check_and_unscale_(cuda_grads, f, inv_scale.to(dev));
      found_inf.copy_(f.to(found_inf.device()).maximum(found_inf));
    }
  }

  /// ATen's _amp_update_scale_ (float scale, int32 tracker; products in double, stored as float),
  /// then dtl's optional bounds.
  void update_scale(bool found_inf) {
    if (scale_.is_cuda()) {
      auto f = torch::full({1}, found_inf ? 1.0 : 0.0, scale_.options());
      at::_amp_update_scale_(scale_, growth_tracker_, f, o_.growth_factor, o_.backoff_factor, o_.growth_interval);
    } else {
      float scale = scale_.item<float>();
      std::int32_t tracker = growth_tracker_.item<std::int32_t>();
      if (found_inf) {
        scale = static_cast<float>(static_cast<double>(scale) * o_.backoff_factor);
        tracker = 0;
      } else {
        const std::int32_t successful = tracker + 1;
        if (successful == o_.growth_interval) {
          const auto grown = static_cast<float>(static_cast<double>(scale) * o_.growth_factor);
          if (std::isfinite(grown)) scale = grown;
          tracker = 0;
        } else {
          tracker = successful;
        }
      }
      scale_.fill_(scale);
      growth_tracker_.fill_(tracker);
    }
    if (o_.max_scale && get_scale() > *o_.max_scale) scale_.fill_(*o_.max_scale);
    if (o_.min_scale && get_scale() < *o_.min_scale) scale_.fill_(*o_.min_scale);
  }

  GradScalerOptions o_;
  torch::Tensor scale_;           // float32 [1], created at the first scale()
  torch::Tensor growth_tracker_;  // int32 [1]
  std::int64_t init_growth_tracker_ = 0;
  std::map<const torch::optim::Optimizer*, OptimizerState> per_optimizer_;
  bool deferred_ = false;  // set by context.step_optimizer on a batch that aggregates
  std::int64_t taken_steps_ = 0;
  std::int64_t skipped_steps_ = 0;
};

}  // namespace dtl

#endif  // DTL_AMP_GRAD_SCALER_HPP
