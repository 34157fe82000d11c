// dtl — callbacks: Determined's PyTorchCallback hooks, in Determined's order (semantics §6).
#ifndef DTL_CALLBACK_HPP
#define DTL_CALLBACK_HPP

#include <dtl/metrics.hpp>

#include <ATen/core/Dict.h>
#include <dtl/reducer.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {

/// Base class of a callback: override the hooks you need (mark them `override`, so a wrong
/// signature is a compile error rather than a hook that never runs). Hooks run at epoch,
/// workload, validation and checkpoint boundaries, never per batch.
class PyTorchCallback {
 public:
  virtual ~PyTorchCallback() = default;

  virtual void on_trial_startup(std::int64_t /*first_batch_idx*/, const std::optional<std::string>& /*checkpoint_uuid*/) {}
  virtual void on_training_start() {}
  virtual void on_training_epoch_start(std::int64_t /*epoch_idx*/) {}
  virtual void on_training_epoch_end(std::int64_t /*epoch_idx*/) {}
  virtual void on_training_workload_end(const MetricsJson& /*avg_metrics*/,
                                        const BatchMetrics& /*batch_metrics*/) {}
  virtual void on_validation_start() {}
  virtual void on_validation_epoch_start() {}
  virtual void on_validation_epoch_end(const std::vector<Metrics>& /*outputs*/) {}
  virtual void on_validation_end(const MetricsJson& /*metrics*/) {}
  /// Before state_dict.pth is written (chief only), with the dict that becomes it: a callback may
  /// add entries of its own (tensors, numbers, strings, lists, dicts).
  virtual void on_checkpoint_save_start(c10::impl::GenericDict& /*checkpoint*/) {}
  /// When resuming, before anything is restored, with the loaded state_dict.pth.
  virtual void on_checkpoint_load_start(const c10::impl::GenericDict& /*checkpoint*/) {}
  virtual void on_checkpoint_write_end(const std::filesystem::path& /*checkpoint_dir*/) {}
  virtual void on_checkpoint_upload_end(const std::string& /*uuid*/) {}
  virtual void on_trial_shutdown() {}

  /// Saved in checkpoints under the name `build_callbacks` gave this callback.
  [[nodiscard]] virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
  virtual void load_state_dict(const nlohmann::json& /*state*/) {}
};

/// What `build_callbacks()` returns: callbacks by name, in the order their hooks run.
using Callbacks = std::vector<std::pair<std::string, std::shared_ptr<PyTorchCallback>>>;

}  // namespace dtl

#endif  // DTL_CALLBACK_HPP
