// dtl — the definitions behind <dtl/callbacks/lr_monitor.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
#ifndef DTL_CALLBACKS_LR_MONITOR_INL_HPP
#define DTL_CALLBACKS_LR_MONITOR_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/callbacks/lr_monitor.hpp>

namespace dtl::inline DTL_ABI::callbacks {

DTL_INLINE void LearningRateMonitor::on_training_workload_end(const MetricsJson& /*avg_metrics*/,
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

DTL_INLINE std::string LearningRateMonitor::tag(const std::string& prefix, std::size_t optimizer, std::size_t group,
                                                std::size_t groups) {
  auto t = prefix + "-" + std::to_string(optimizer);
  if (groups > 1) t += "-group" + std::to_string(group);
  return t;
}

}  // namespace dtl::callbacks

#endif  // DTL_CALLBACKS_LR_MONITOR_INL_HPP
