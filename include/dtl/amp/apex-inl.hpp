// dtl — the non-template definitions of <dtl/amp/apex.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_AMP_APEX_INL_HPP
#define DTL_AMP_APEX_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/amp/apex.hpp>

#include <cstdint>
#include <limits>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE ApexAmp::ApexAmp(const ApexAmpOptions& o,
                            const std::vector<std::shared_ptr<torch::optim::Optimizer>>& optimizers,
                            torch::DeviceType device)
    : device_(device), num_losses_(o.num_losses), dtype_(o.dtype) {
  if (o.opt_level != "O0" && o.opt_level != "O1" && o.opt_level != "O2" && o.opt_level != "O3")
    throw InvalidExperimentException(
        "dtl: configure_apex_amp: opt_level must be \"O0\", \"O1\", \"O2\" or \"O3\", got \"" + o.opt_level + "\"");
  if (o.num_losses < 1) throw InvalidExperimentException("dtl: configure_apex_amp: num_losses must be >= 1");
  autocast_ = o.enabled && o.opt_level != "O0";
  bool dynamic = o.opt_level == "O1" || o.opt_level == "O2";
  double static_scale = 1.0;
  if (const auto* s = std::get_if<std::string>(&o.loss_scale)) {
    if (*s != "dynamic")
      throw InvalidExperimentException("dtl: configure_apex_amp: loss_scale must be a number or \"dynamic\", got \"" +
                                       *s + "\"");
    dynamic = true;
  } else if (const auto* v = std::get_if<double>(&o.loss_scale)) {
    if (!(*v > 0)) throw InvalidExperimentException("dtl: configure_apex_amp: loss_scale must be > 0");
    dynamic = false;
    static_scale = *v;
  }
  scaling_ = autocast_ && (dynamic || static_scale != 1.0);
  dynamic_ = dynamic;
  GradScalerOptions so;
  if (dynamic) {
    so.init_scale = std::min(65536.0, o.max_loss_scale);
    so.min_scale = o.min_loss_scale;
    so.max_scale = o.max_loss_scale;
  } else {
    // apex's LossScaler.update_scale when not dynamic: the scale never moves and `unskipped`
    // counts every update, an overflowing one included, without ever resetting.
    so.init_scale = static_scale;
    so.growth_factor = 1.0;
    so.backoff_factor = 1.0;
    so.growth_interval = std::numeric_limits<std::int32_t>::max();
  }
  for (std::int64_t i = 0; i < num_losses_; ++i) scalers_.emplace_back(so);
  used_.assign(static_cast<std::size_t>(num_losses_), false);
  overflow_.assign(static_cast<std::size_t>(num_losses_), false);
  for (const auto& opt : optimizers)
    for (auto& g : opt->param_groups())
      for (auto& p : g.params()) params_.push_back(p);
  stash_.resize(params_.size());
}

DTL_INLINE void ApexAmp::backward(const torch::Tensor& loss, std::optional<std::int64_t> loss_idx,
                                  const torch::Tensor& gradient, c10::optional<bool> retain_graph, bool create_graph) {
  const auto id = loss_idx.value_or(backward_calls_);
  ++backward_calls_;
  if (id < 0 || id >= num_losses_)
    throw InvalidExperimentException(
        "dtl: backward: loss index " + std::to_string(id) +
        " but configure_apex_amp(num_losses = " + std::to_string(num_losses_) + ")" +
        (loss_idx ? std::string() : "; more backward calls in this batch than losses: pass ctx.backward(loss, i)"));
  if (!scaling_) {
    loss.backward(gradient, retain_graph, create_graph);
    return;
  }
  auto& s = scalers_[static_cast<std::size_t>(id)];
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      stash_[i] = params_[i].grad();
      if (stash_[i].defined()) params_[i].mutable_grad() = torch::Tensor();
    }
  }
  s.scale(loss).backward(gradient, retain_graph, create_graph);
  // This backward's gradients only: unscaled and checked as GradScaler does; then the earlier
  // ones are added back.
  std::vector<torch::Tensor> fresh;
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) fresh.push_back(params_[i].mutable_grad());
  auto found = torch::zeros({1}, torch::kFloat);
  GradScaler::unscale_grads(fresh, s.inv_scale(), found);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (stash_[i].defined()) {
      if (params_[i].grad().defined())
        params_[i].mutable_grad().add_(stash_[i]);
      else
        params_[i].mutable_grad() = stash_[i];
    }
    stash_[i] = torch::Tensor();
  }
  const bool overflow = found.item<float>() != 0.0f;
  used_[static_cast<std::size_t>(id)] = true;
  if (overflow) overflow_[static_cast<std::size_t>(id)] = true;
}

DTL_INLINE bool ApexAmp::may_step(const std::vector<torch::Tensor>& params) const {
  if (!scaling_ || std::find(overflow_.begin(), overflow_.end(), true) == overflow_.end()) return true;
  torch::NoGradGuard no_grad;
  for (const auto& p : params)
    if (p.grad().defined() && !torch::isfinite(p.grad()).all().item<bool>()) return false;
  return true;
}

DTL_INLINE void ApexAmp::end_update_batch() {
  if (!scaling_) return;
  for (std::size_t i = 0; i < scalers_.size(); ++i) {
    if (!used_[i]) continue;
    scalers_[i].update_scale(dynamic_ && overflow_[i]);  // the overflowing step itself is skipped either way
    used_[i] = overflow_[i] = false;
  }
}

DTL_INLINE nlohmann::json ApexAmp::state_dict() const {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < scalers_.size(); ++i)
    j["loss_scaler" + std::to_string(i)] = {{"loss_scale", scalers_[i].get_scale()},
                                            {"unskipped", scalers_[i].growth_tracker()}};
  return j;
}

DTL_INLINE void ApexAmp::load_state_dict(const nlohmann::json& j) {
  for (std::size_t i = 0; i < scalers_.size(); ++i) {
    const auto key = "loss_scaler" + std::to_string(i);
    if (!j.contains(key)) continue;
    auto& s = scalers_[i];
    auto st = s.state_dict();
    if (st.empty()) continue;
    st["scale"] = j[key].at("loss_scale").get<double>();
    st["_growth_tracker"] = j[key].at("unskipped").get<std::int64_t>();
    s.load_state_dict(st);
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_AMP_APEX_INL_HPP
