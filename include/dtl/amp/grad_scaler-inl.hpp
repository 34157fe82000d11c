// dtl — the non-template definitions of <dtl/amp/grad_scaler.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_AMP_GRAD_SCALER_INL_HPP
#define DTL_AMP_GRAD_SCALER_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/amp/grad_scaler.hpp>

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE GradScaler::GradScaler(GradScalerOptions o) : o_(o) {
  if (o_.enabled) {
    if (!(o_.growth_factor > 1.0) && o_.growth_factor != 1.0)
      throw std::invalid_argument("dtl::GradScaler: growth_factor should be > 1 (1 keeps the scale static)");
    if (!(o_.backoff_factor < 1.0) && o_.backoff_factor != 1.0)
      throw std::invalid_argument("dtl::GradScaler: backoff_factor should be < 1 (1 keeps the scale static)");
    if (o_.growth_interval < 1) throw std::invalid_argument("dtl::GradScaler: growth_interval should be > 0");
  }
}

DTL_INLINE torch::Tensor GradScaler::scale(const torch::Tensor& outputs) {
  if (!o_.enabled) return outputs;
  lazy_init(outputs.device());
  return outputs * (scale_.device() == outputs.device() ? scale_ : scale_.to(outputs.device()));
}

DTL_INLINE void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!o_.enabled) return;
  auto& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::unscaled)
    throw std::runtime_error(
        "dtl::GradScaler: unscale_() has already been called on this optimizer since the last update().");
  if (st.stage == Stage::stepped) throw std::runtime_error("dtl::GradScaler: unscale_() is being called after step().");
  if (!scale_.defined()) throw std::runtime_error("dtl::GradScaler: unscale_() before any scale(): nothing was scaled");
  st.found_inf = torch::zeros({1}, scale_.options());
  unscale_grads(optimizer, inv_scale(), st.found_inf);
  st.stage = Stage::unscaled;
}

DTL_INLINE bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!o_.enabled) {
    optimizer.step();
    return true;
  }
  auto& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::stepped)
    throw std::runtime_error("dtl::GradScaler: step() has already been called since the last update().");
  if (auto* c = dynamic_cast<detail::StepControl*>(&optimizer); c && c->supports_amp_scaling()) {
    // A fused step (torch.optim's _step_supports_amp_scaling): the kernel divides by the scale
    // (unless unscale_ already did) and skips on inf/NaN itself, with no host sync.
    if (!scale_.defined()) throw std::runtime_error("dtl::GradScaler: step() before any scale(): nothing was scaled");
    detail::AmpArgs amp;
    if (st.stage == Stage::ready) {
      st.found_inf = torch::zeros({1}, scale_.options());
      unscale_grads(optimizer, torch::ones({1}, scale_.options()), st.found_inf);  // the inf check alone
      amp.grad_scale = scale_;
    }
    amp.found_inf = st.found_inf;
    st.stage = Stage::stepped;
    c->step_with_amp(amp);
    ++fused_steps_;
    if (skipped_on_device_.defined())
      skipped_on_device_.add_(st.found_inf);
    else
      skipped_on_device_ = st.found_inf.clone();
    return true;
  }
  if (st.stage == Stage::ready) unscale_(optimizer);
  st.stage = Stage::stepped;
  const bool skip = st.found_inf.item<float>() != 0.0f;
  if (!skip) optimizer.step();
  ++(skip ? skipped_steps_ : taken_steps_);
  return !skip;
}

DTL_INLINE void GradScaler::update(std::optional<double> new_scale) {
  if (!o_.enabled) return;
  if (new_scale) {
    lazy_init(torch::kCPU);
    scale_.fill_(*new_scale);
  } else {
    bool any = false;
    for (const auto& [opt, st] : per_optimizer_) any = any || st.found_inf.defined();
    if (!any) {
      if (deferred_) {  // an aggregation batch: step_optimizer did not step, nothing to update
        deferred_ = false;
        return;
      }
      throw std::runtime_error(
          "dtl::GradScaler: update(): no inf checks were recorded prior to update() "
          "(call step(optimizer) or context.step_optimizer(opt, scaler) first)");
    }
    if (scale_.is_cuda() && !o_.min_scale && !o_.max_scale) {
      // On the GPU, as Python: the inf flags summed and the scale updated on the device, no host sync.
      torch::Tensor found;
      for (const auto& [opt, st] : per_optimizer_)
        if (st.found_inf.defined()) {
          auto f = st.found_inf.to(scale_.device(), /*non_blocking=*/true);
          found = found.defined() ? found.add_(f) : f.clone();
        }
      at::_amp_update_scale_(scale_, growth_tracker_, found, o_.growth_factor, o_.backoff_factor, o_.growth_interval);
    } else {
      bool found = false;
      for (const auto& [opt, st] : per_optimizer_)
        found = found || (st.found_inf.defined() && st.found_inf.item<float>() != 0.0f);
      update_scale(found);
    }
  }
  per_optimizer_.clear();
  deferred_ = false;
}

DTL_INLINE double GradScaler::get_scale() const {
  if (!o_.enabled) return 1.0;
  return scale_.defined() ? static_cast<double>(scale_.item<float>()) : o_.init_scale;
}

DTL_INLINE std::int64_t GradScaler::growth_tracker() const {
  return growth_tracker_.defined() ? growth_tracker_.item<std::int32_t>() : init_growth_tracker_;
}

DTL_INLINE nlohmann::json GradScaler::state_dict() const {
  if (!o_.enabled) return nlohmann::json::object();
  return {{"scale", get_scale()},
          {"growth_factor", o_.growth_factor},
          {"backoff_factor", o_.backoff_factor},
          {"growth_interval", o_.growth_interval},
          {"_growth_tracker", growth_tracker()}};
}

DTL_INLINE void GradScaler::load_state_dict(const nlohmann::json& state) {
  if (!o_.enabled) return;
  if (!state.is_object() || state.empty())
    throw std::runtime_error(
        "dtl::GradScaler: the source state dict is empty, possibly because it was saved from "
        "a disabled GradScaler");
  o_.init_scale = state.at("scale").get<double>();
  if (scale_.defined()) scale_.fill_(o_.init_scale);
  o_.growth_factor = state.at("growth_factor").get<double>();
  o_.backoff_factor = state.at("backoff_factor").get<double>();
  o_.growth_interval = state.at("growth_interval").get<std::int64_t>();
  init_growth_tracker_ = state.at("_growth_tracker").get<std::int64_t>();
  if (growth_tracker_.defined()) growth_tracker_.fill_(init_growth_tracker_);
}

DTL_INLINE void GradScaler::lazy_init(const torch::Device& device) {
  if (scale_.defined()) return;
  scale_ = torch::full({1}, o_.init_scale, torch::TensorOptions().dtype(torch::kFloat).device(device));
  growth_tracker_ = torch::full({1}, init_growth_tracker_, torch::TensorOptions().dtype(torch::kInt).device(device));
}

DTL_INLINE void GradScaler::unscale_grads(torch::optim::Optimizer& optimizer, const torch::Tensor& inv_scale,
                                          torch::Tensor& found_inf) {
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined()) grads.push_back(p.mutable_grad());
  unscale_grads(grads, inv_scale, found_inf);
}

DTL_INLINE void GradScaler::unscale_grads(const std::vector<torch::Tensor>& grads, const torch::Tensor& inv_scale,
                                          torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> cuda_grads;
  for (auto g : grads) {  // a handle: mul_ acts on the gradient itself
    if (g.scalar_type() == torch::kHalf)
      throw std::invalid_argument(
          "dtl::GradScaler: attempting to unscale FP16 gradients (keep the parameters float32)");
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

DTL_INLINE void GradScaler::update_scale(bool found_inf) {
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

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_AMP_GRAD_SCALER_INL_HPP
