// dtl — the non-template definitions of <dtl/callbacks/early_stopping.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CALLBACKS_EARLY_STOPPING_INL_HPP
#define DTL_CALLBACKS_EARLY_STOPPING_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/callbacks/early_stopping.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace callbacks {

DTL_INLINE EarlyStopping::EarlyStopping(PyTorchTrialContext& ctx, Options options) : ctx_(ctx), o_(std::move(options)) {
  if (o_.patience < 1)
    throw InvalidExperimentException("dtl::callbacks::EarlyStopping: patience must be >= 1 (got " +
                                     std::to_string(o_.patience) +
                                     "); it counts validations without improvement before stopping");
  if (!(o_.min_delta >= 0.0))
    throw InvalidExperimentException("dtl::callbacks::EarlyStopping: min_delta must be >= 0 (got " +
                                     std::to_string(o_.min_delta) +
                                     "); it is the size of change that counts as an improvement, in either mode");
  best_ = worst();
}

DTL_INLINE void EarlyStopping::on_validation_end(const MetricsJson& metrics) {
  const double current = detail::monitored_value(metrics, o_.monitor, "EarlyStopping");
  const double previous_best = best_;
  std::string reason;
  if (o_.check_finite && !std::isfinite(current)) {
    reason = "'" + o_.monitor + "' = " + format(current) + " is not finite (best so far " + format(previous_best) + ")";
  } else if (o_.stopping_threshold && better(current, *o_.stopping_threshold)) {
    reason = "'" + o_.monitor + "' = " + format(current) + " reached the stopping threshold " +
             format(*o_.stopping_threshold);
  } else if (o_.divergence_threshold && better(*o_.divergence_threshold, current)) {
    reason = "'" + o_.monitor + "' = " + format(current) + " is worse than the divergence threshold " +
             format(*o_.divergence_threshold);
  } else if (improves(current)) {
    best_ = current;
    wait_count_ = 0;
    if (o_.verbose)
      say("'" + o_.monitor + "' improved to " + format(current) +
          (std::isfinite(previous_best) ? " (from " + format(previous_best) + ")" : ""));
    return;
  } else {
    ++wait_count_;
    if (wait_count_ < o_.patience) {
      if (o_.verbose)
        say("'" + o_.monitor + "' = " + format(current) + " did not improve on " + format(best_) + " (" +
            std::to_string(wait_count_) + " of " + std::to_string(o_.patience) + ")");
      return;
    }
    reason = "'" + o_.monitor + "' did not improve in the last " + std::to_string(wait_count_) + " validations (best " +
             format(best_) + ")";
  }
  stopped_ = true;
  stop_reason_ = reason;
  // Printed even when not verbose: a run that ends early should say why.
  say(reason + "; stopping");
  ctx_.set_stop_requested(true);
}

DTL_INLINE nlohmann::json EarlyStopping::state_dict() const {
  return {{"monitor", o_.monitor},
          {"mode", to_string(o_.mode)},
          {"best_score", detail::float_to_json(best_)},
          {"wait_count", wait_count_},
          {"stopped", stopped_}};
}

DTL_INLINE void EarlyStopping::load_state_dict(const nlohmann::json& state) {
  if (!state.is_object() || state.empty()) return;  // a callback added since the checkpoint
  const auto monitor = state.value("monitor", o_.monitor);
  const auto mode = state.contains("mode") ? parse_monitor_mode(state.at("mode").get<std::string>()) : o_.mode;
  if (monitor != o_.monitor || mode != o_.mode) {
    say("the saved state watched '" + monitor + "' (" + to_string(mode) + "), this callback watches '" + o_.monitor +
        "' (" + to_string(o_.mode) + "): starting the count afresh");
    return;
  }
  best_ = state.contains("best_score") ? detail::float_from_json(state.at("best_score"), "best_score") : worst();
  wait_count_ = state.value("wait_count", std::int64_t{0});
  stopped_ = state.value("stopped", false);
}

DTL_INLINE double EarlyStopping::worst() const noexcept {
  return o_.mode == Mode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

DTL_INLINE bool EarlyStopping::improves(double current) const noexcept {
  return o_.mode == Mode::min ? current + o_.min_delta < best_ : current - o_.min_delta > best_;
}

DTL_INLINE std::string EarlyStopping::format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

DTL_INLINE void EarlyStopping::say(const std::string& text) const {
  if (ctx_.distributed().is_chief()) std::cout << "[dtl] EarlyStopping: " << text << std::endl;
}

}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CALLBACKS_EARLY_STOPPING_INL_HPP
