// dtl — LearningRateMonitor: the learning rate of every param group of every wrapped optimizer,
// at every training workload, kept in memory and written to TensorBoard (PyTorch Lightning's
// LearningRateMonitor, on Determined's callback hooks).
#ifndef DTL_CALLBACKS_LR_MONITOR_HPP
#define DTL_CALLBACKS_LR_MONITOR_HPP

#include <dtl/callback.hpp>
#include <dtl/context.hpp>
#include <dtl/detail/abi.hpp>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace callbacks {

/// One learning rate as the monitor saw it.
struct LearningRateRecord {
  std::int64_t step = 0;      ///< batches trained when it was read (TensorBoard's step)
  std::size_t optimizer = 0;  ///< index in ctx.optimizers() (wrap order)
  std::size_t group = 0;      ///< param group of that optimizer
  double lr = 0.0;
  friend bool operator==(const LearningRateRecord&, const LearningRateRecord&) = default;
  /// `{step 8, optimizer 0, group 1, lr 0.005}`, for logs and test failures.
  friend std::ostream& operator<<(std::ostream& os, const LearningRateRecord& r) {
    return os << "{step " << r.step << ", optimizer " << r.optimizer << ", group " << r.group << ", lr " << r.lr << "}";
  }
};

struct LearningRateMonitorOptions {
  std::string prefix = "lr";  ///< tags are `<prefix>-<optimizer>[-group<g>]`
  bool tensorboard = true;    ///< write to ctx.get_tensorboard_writer() (the history is kept either way)
};

/// Records each param group's learning rate at the end of every training workload (each
/// reporting, validation or checkpoint boundary) and writes it to the run's TensorBoard file as
/// `lr-<optimizer index>`, or `lr-<optimizer index>-group<g>` for optimizers with several param
/// groups, at step = batches trained. The rate read is the one the next batch will use: LR
/// schedulers have already stepped for the workload's last batch.
///
/// ```cpp
/// dtl::Callbacks build_callbacks() {
///   return {{"lr_monitor", std::make_shared<dtl::callbacks::LearningRateMonitor>(ctx_)}};
/// }
/// ```
class LearningRateMonitor : public PyTorchCallback {
 public:
  using Options = LearningRateMonitorOptions;

  explicit LearningRateMonitor(PyTorchTrialContext& ctx, Options options = {}) : ctx_(ctx), o_(std::move(options)) {}

  void on_training_workload_end(const MetricsJson& /*avg_metrics*/, const BatchMetrics& /*batch_metrics*/) override;

  /// Every rate recorded so far, in order (step, then optimizer, then group).
  [[nodiscard]] const std::vector<LearningRateRecord>& history() const noexcept { return history_; }

  /// The TensorBoard tag of a param group: `tag("lr", 0, 0, 1) == "lr-0"`,
  /// `tag("lr", 1, 2, 3) == "lr-1-group2"`.
  [[nodiscard]] static std::string tag(const std::string& prefix, std::size_t optimizer, std::size_t group,
                                       std::size_t groups);

 private:
  PyTorchTrialContext& ctx_;
  Options o_;
  std::vector<LearningRateRecord> history_;
};

inline void LearningRateMonitor::on_training_workload_end(const MetricsJson& /*avg_metrics*/,
                                                          const BatchMetrics& /*batch_metrics*/) {
  const std::int64_t step = ctx_.current_train_batch() + 1;
  // As Determined, only the chief writes TensorBoard; every rank keeps the history.
  const bool write = o_.tensorboard && ctx_.distributed().is_chief();
  const auto optimizers = ctx_.optimizers();
  for (std::size_t i = 0; i < optimizers.size(); ++i) {
    const auto& groups = optimizers[i]->param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const double lr = groups[g].options().get_lr();
      history_.push_back({step, i, g, lr});
      if (write) ctx_.get_tensorboard_writer().add_scalar(tag(o_.prefix, i, g, groups.size()), lr, step);
    }
  }
  // One write per workload, so the chart advances while training runs, as Determined flushes
  // after each report.
  if (write && !optimizers.empty()) ctx_.get_tensorboard_writer().flush();
}

inline std::string LearningRateMonitor::tag(const std::string& prefix, std::size_t optimizer, std::size_t group,
                                            std::size_t groups) {
  auto t = prefix + "-" + std::to_string(optimizer);
  if (groups > 1) t += "-group" + std::to_string(group);
  return t;
}

}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CALLBACKS_LR_MONITOR_HPP
