// dtl — EarlyStopping: stop training once a validation metric has stopped improving
// (PyTorch Lightning's EarlyStopping, on Determined's callback hooks).
#ifndef DTL_CALLBACKS_EARLY_STOPPING_HPP
#define DTL_CALLBACKS_EARLY_STOPPING_HPP

#include <dtl/callback.hpp>
#include <dtl/callbacks/monitor.hpp>
#include <dtl/context.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace dtl::callbacks {

/// EarlyStopping's settings, with Lightning's meaning (patience defaults to Lightning's 3).
struct EarlyStoppingOptions {
  std::string monitor = "validation_loss";  ///< a numeric metric that every validation reports
  Mode mode = Mode::min;
  double min_delta = 0.0;                      ///< an improvement must exceed this (absolute; >= 0)
  std::int64_t patience = 3;                   ///< validations without improvement before stopping (>= 1)
  bool verbose = false;                        ///< also print each improvement
  bool check_finite = true;                    ///< stop at once when the metric is NaN or infinite
  std::optional<double> stopping_threshold;    ///< stop at once when the metric is better than this
  std::optional<double> divergence_threshold;  ///< stop at once when the metric is worse than this
};

/// Asks the Trainer to stop (`ctx.set_stop_requested(true)`) once the monitored validation
/// metric has not improved by more than `min_delta` for `patience` validations in a row. The
/// Trainer then checkpoints and exits at the next boundary, as for any stop request.
///
/// ```cpp
/// dtl::Callbacks build_callbacks() {
///   return {{"early_stopping", std::make_shared<dtl::callbacks::EarlyStopping>(
///                                  ctx_, dtl::callbacks::EarlyStopping::Options{.patience = 5})}};
/// }
/// ```
class EarlyStopping : public PyTorchCallback {
 public:
  using Options = EarlyStoppingOptions;

  explicit EarlyStopping(PyTorchTrialContext& ctx, Options options = {}) : ctx_(ctx), o_(std::move(options)) {
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

  void on_validation_end(const MetricsJson& metrics) override {
    const double current = detail::monitored_value(metrics, o_.monitor, "EarlyStopping");
    const double previous_best = best_;
    std::string reason;
    if (o_.check_finite && !std::isfinite(current)) {
      reason =
          "'" + o_.monitor + "' = " + format(current) + " is not finite (best so far " + format(previous_best) + ")";
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
      reason = "'" + o_.monitor + "' did not improve in the last " + std::to_string(wait_count_) +
               " validations (best " + format(best_) + ")";
    }
    stopped_ = true;
    stop_reason_ = reason;
    // Printed even when not verbose: a run that ends early should say why.
    say(reason + "; stopping");
    ctx_.set_stop_requested(true);
  }

  /// `{"monitor", "mode", "best_score", "wait_count", "stopped"}`; best_score is "inf"/"-inf"
  /// until a finite value has been seen (JSON has no infinity).
  [[nodiscard]] nlohmann::json state_dict() const override {
    return {{"monitor", o_.monitor},
            {"mode", to_string(o_.mode)},
            {"best_score", detail::float_to_json(best_)},
            {"wait_count", wait_count_},
            {"stopped", stopped_}};
  }

  /// Restores the count, so a resumed run stops where the uninterrupted one would have. A state
  /// saved for another metric or mode is set aside (its best means nothing for this one) and
  /// the count starts afresh; patience and the other settings are always this object's.
  void load_state_dict(const nlohmann::json& state) override {
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

  /// The best value seen (±infinity before the first validation).
  [[nodiscard]] double best_score() const noexcept { return best_; }
  /// Validations since the last improvement.
  [[nodiscard]] std::int64_t wait_count() const noexcept { return wait_count_; }
  /// Whether this callback has requested the stop.
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }
  /// Why it stopped (empty until it has).
  [[nodiscard]] const std::string& stop_reason() const noexcept { return stop_reason_; }
  [[nodiscard]] const Options& options() const noexcept { return o_; }

 private:
  [[nodiscard]] double worst() const noexcept {
    return o_.mode == Mode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  [[nodiscard]] bool better(double a, double b) const noexcept { return o_.mode == Mode::min ? a < b : a > b; }
  // Lightning's rule: strictly better than the best by more than min_delta.
  [[nodiscard]] bool improves(double current) const noexcept {
    return o_.mode == Mode::min ? current + o_.min_delta < best_ : current - o_.min_delta > best_;
  }
  static std::string format(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }
  void say(const std::string& text) const {
    if (ctx_.distributed().is_chief()) std::cout << "[dtl] EarlyStopping: " << text << std::endl;
  }

  PyTorchTrialContext& ctx_;
  Options o_;
  double best_;
  std::int64_t wait_count_ = 0;
  bool stopped_ = false;
  std::string stop_reason_;
};

}  // namespace dtl::callbacks

#endif  // DTL_CALLBACKS_EARLY_STOPPING_HPP
