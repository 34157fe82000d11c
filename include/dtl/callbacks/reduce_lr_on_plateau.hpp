// dtl — ReduceLROnPlateau: torch.optim.lr_scheduler.ReduceLROnPlateau (torch 1.13) with Python's
// exact update rule and state_dict keys, and the callback that steps it after every validation
// (the callback Determined's docs tell PyTorchTrial users to write themselves).
//
// It is not a dtl::lr::LRScheduler and not LRSchedulerLike: its step needs the metric, which
// only exists after a validation, so it cannot be wrapped with wrap_lr_scheduler. Step it from
// on_validation_end, which is what ReduceLROnPlateauEveryValidation does.
#ifndef DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_HPP
#define DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_HPP

#include <torch/torch.h>

#include <dtl/callback.hpp>
#include <dtl/callbacks/monitor.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <optional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

using Mode = MonitorMode;

/// How a new value must beat the best to count as an improvement (Python's `threshold_mode`).
enum class ThresholdMode {
  rel,  ///< beyond `best * (1 - threshold)` in min mode, `best * (1 + threshold)` in max mode
  abs,  ///< beyond `best - threshold` in min mode, `best + threshold` in max mode
};

/// Python's spelling: `to_string(ThresholdMode::rel) == "rel"`.
[[nodiscard]] inline std::string to_string(ThresholdMode m) { return m == ThresholdMode::rel ? "rel" : "abs"; }

/// Parses Python's spelling ("rel" or "abs").
[[nodiscard]] DTL_INLINE ThresholdMode parse_threshold_mode(std::string_view s);

/// Python's `min_lr`: one floor for every param group, or a list with one per group.
///   {.min_lr = 1e-5}            // every group
///   {.min_lr = {1e-4, 1e-6}}    // group 0, group 1 (the count must match the optimizer's groups)
class MinLR {
 public:
  MinLR(double all_groups = 0.0) : values_{all_groups} {}  // NOLINT(google-explicit-constructor)
  MinLR(std::initializer_list<double> per_group) : values_(per_group), per_group_(true) {}
  MinLR(std::vector<double> per_group) : values_(std::move(per_group)), per_group_(true) {}  // NOLINT

  /// One floor per group; a list of the wrong length is Python's ValueError, with its wording.
  [[nodiscard]] DTL_INLINE std::vector<double> for_groups(std::size_t groups) const;
  /// The one floor for every group (Python 2.x's `default_min_lr`); none for a list.
  [[nodiscard]] std::optional<double> single() const {
    return per_group_ ? std::nullopt : std::optional<double>(values_.front());
  }

 private:
  std::vector<double> values_;
  bool per_group_ = false;
};

/// ReduceLROnPlateau's arguments, with Python's defaults.
struct ReduceLROnPlateauOptions {
  Mode mode = Mode::min;
  double factor = 0.1;         ///< new_lr = lr * factor; must be < 1
  std::int64_t patience = 10;  ///< bad steps tolerated; the lr drops on the (patience + 1)-th
  double threshold = 1e-4;
  ThresholdMode threshold_mode = ThresholdMode::rel;
  std::int64_t cooldown = 0;  ///< steps after a reduction during which bad steps are not counted
  MinLR min_lr = 0.0;
  double eps = 1e-8;     ///< a reduction smaller than this is skipped
  bool verbose = false;  ///< print Python's "Epoch 00012: reducing learning rate of group 0 to 1.0000e-02."
};

/// torch.optim.lr_scheduler.ReduceLROnPlateau: lowers every param group's learning rate by
/// `factor` once the metric has not improved for more than `patience` steps.
///
/// ```cpp
/// dtl::lr::ReduceLROnPlateau sched(opt, {.mode = dtl::lr::Mode::min, .factor = 0.5, .patience = 2});
/// for (...) { train(); sched.step(validation_loss); }
/// ```
class ReduceLROnPlateau {
 public:
  using Options = ReduceLROnPlateauOptions;

  DTL_INLINE explicit ReduceLROnPlateau(std::shared_ptr<torch::optim::Optimizer> optimizer, Options options = {});

  /// One step with the newest value of the monitored metric (Python's `step(metrics)`).
  DTL_INLINE void step(double metric);
  /// A 0-d (or one-element) tensor, as Python's `float(metrics)` takes one.
  void step(const torch::Tensor& metric) { step(metric.item<double>()); }

  /// Python's comparison: is `a` an improvement on `best` by more than the threshold?
  [[nodiscard]] DTL_INLINE bool is_better(double a, double best) const;

  /// The learning rates after the last step (empty before the first, where Python has none).
  [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
  [[nodiscard]] double best() const noexcept { return best_; }
  [[nodiscard]] std::int64_t num_bad_epochs() const noexcept { return num_bad_epochs_; }
  [[nodiscard]] std::int64_t cooldown_counter() const noexcept { return cooldown_counter_; }
  [[nodiscard]] bool in_cooldown() const noexcept { return cooldown_counter_ > 0; }
  [[nodiscard]] const std::vector<double>& min_lrs() const noexcept { return min_lrs_; }
  [[nodiscard]] Mode mode() const noexcept { return mode_; }
  [[nodiscard]] const std::shared_ptr<torch::optim::Optimizer>& optimizer() const noexcept { return optimizer_; }

  /// Python's state_dict (its `__dict__` without the optimizer), key for key. JSON has no
  /// infinity, so `best` and `mode_worse` are written as "inf" / "-inf" while nothing has
  /// been seen; load_state_dict reads those back, and Python's `float()` reads them too.
  /// `_last_lr` is present once step() has run, as in Python.
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const;

  /// Python's load_state_dict: the keys present replace the current values (absent ones stay),
  /// then mode and threshold_mode are re-validated and `mode_worse` follows `mode`. The
  /// optimizer's learning rates are not touched: they are the optimizer's state (a dtl
  /// checkpoint restores them).
  DTL_INLINE void load_state_dict(const nlohmann::json& state);

 private:
  [[nodiscard]] DTL_INLINE double mode_worse() const noexcept;

  DTL_INLINE void reduce_lr();

  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  double factor_;
  std::vector<double> min_lrs_;
  std::optional<double> default_min_lr_;
  std::int64_t patience_;
  bool verbose_;
  std::int64_t cooldown_;
  std::int64_t cooldown_counter_ = 0;
  Mode mode_;
  double threshold_;
  ThresholdMode threshold_mode_;
  double best_;
  std::int64_t num_bad_epochs_ = 0;
  double eps_;
  std::int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
  bool stepped_ = false;
};

}  // namespace lr

namespace callbacks {

/// Steps a ReduceLROnPlateau with the monitored validation metric after every validation, and
/// saves the scheduler's state as this callback's state_dict (Determined's documented
/// `ReduceLROnPlateauEveryValidationStep`, shipped).
///
/// ```cpp
/// dtl::Callbacks build_callbacks() {
///   return {{"reduce_lr", std::make_shared<dtl::callbacks::ReduceLROnPlateauEveryValidation>(
///                             opt_, "validation_loss", dtl::lr::ReduceLROnPlateauOptions{.patience = 2})}};
/// }
/// ```
class ReduceLROnPlateauEveryValidation : public PyTorchCallback {
 public:
  /// Builds the scheduler on `optimizer` (one of the trial's wrapped optimizers).
  explicit ReduceLROnPlateauEveryValidation(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                            std::string monitor = "validation_loss",
                                            lr::ReduceLROnPlateauOptions options = {})
      : ReduceLROnPlateauEveryValidation(
            std::make_shared<lr::ReduceLROnPlateau>(std::move(optimizer), std::move(options)), std::move(monitor)) {}
  /// Steps a scheduler you built (and may keep a handle to).
  DTL_INLINE explicit ReduceLROnPlateauEveryValidation(std::shared_ptr<lr::ReduceLROnPlateau> scheduler,
                                                       std::string monitor = "validation_loss");

  DTL_INLINE void on_validation_end(const MetricsJson& metrics) override;

  /// The scheduler's state_dict, Python's keys (see lr::ReduceLROnPlateau::state_dict).
  [[nodiscard]] nlohmann::json state_dict() const override { return scheduler_->state_dict(); }
  void load_state_dict(const nlohmann::json& state) override { scheduler_->load_state_dict(state); }

  [[nodiscard]] const std::shared_ptr<lr::ReduceLROnPlateau>& scheduler() const noexcept { return scheduler_; }
  [[nodiscard]] const std::string& monitor() const noexcept { return monitor_; }

 private:
  std::shared_ptr<lr::ReduceLROnPlateau> scheduler_;
  std::string monitor_;
};

}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/callbacks/reduce_lr_on_plateau-inl.hpp>
#endif

#endif  // DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_HPP
