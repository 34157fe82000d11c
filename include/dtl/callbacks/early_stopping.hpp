// dtl — EarlyStopping: stop training once a validation metric has stopped improving
// (PyTorch Lightning's EarlyStopping, on Determined's callback hooks).
#ifndef DTL_CALLBACKS_EARLY_STOPPING_HPP
#define DTL_CALLBACKS_EARLY_STOPPING_HPP

#include <dtl/callback.hpp>
#include <dtl/callbacks/monitor.hpp>
#include <dtl/context.hpp>
#include <dtl/detail/compiled_lib.hpp>

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

namespace dtl {
inline namespace DTL_ABI {
namespace callbacks {

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

  DTL_INLINE explicit EarlyStopping(PyTorchTrialContext& ctx, Options options = {});

  DTL_INLINE void on_validation_end(const MetricsJson& metrics) override;

  /// `{"monitor", "mode", "best_score", "wait_count", "stopped"}`; best_score is "inf"/"-inf"
  /// until a finite value has been seen (JSON has no infinity).
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const override;

  /// Restores the count, so a resumed run stops where the uninterrupted one would have. A state
  /// saved for another metric or mode is set aside (its best means nothing for this one) and
  /// the count starts afresh; patience and the other settings are always this object's.
  DTL_INLINE void load_state_dict(const nlohmann::json& state) override;

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
  [[nodiscard]] DTL_INLINE double worst() const noexcept;
  [[nodiscard]] bool better(double a, double b) const noexcept { return o_.mode == Mode::min ? a < b : a > b; }
  // Lightning's rule: strictly better than the best by more than min_delta.
  [[nodiscard]] DTL_INLINE bool improves(double current) const noexcept;
  DTL_INLINE static std::string format(double v);
  DTL_INLINE void say(const std::string& text) const;

  PyTorchTrialContext& ctx_;
  Options o_;
  double best_;
  std::int64_t wait_count_ = 0;
  bool stopped_ = false;
  std::string stop_reason_;
};

}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/callbacks/early_stopping-inl.hpp>
#endif

#endif  // DTL_CALLBACKS_EARLY_STOPPING_HPP
