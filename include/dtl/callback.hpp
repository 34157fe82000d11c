// dtl — callbacks: Determined's PyTorchCallback hooks, in Determined's order (semantics §6).
#ifndef DTL_CALLBACK_HPP
#define DTL_CALLBACK_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/diagnostics.hpp>
#include <dtl/metrics.hpp>

#include <ATen/core/Dict.h>
#include <dtl/builtin_reducers.hpp>

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// Base class of a callback: override the hooks you need (mark them `override`, so a wrong
/// signature is a compile error rather than a hook that never runs). Hooks run at epoch,
/// workload, validation and checkpoint boundaries, never per batch.
class PyTorchCallback {
 public:
  virtual ~PyTorchCallback() = default;

  virtual void on_trial_startup(std::int64_t /*first_batch_idx*/,
                                const std::optional<std::string>& /*checkpoint_uuid*/) {}
  virtual void on_training_start() {}
  virtual void on_training_epoch_start(std::int64_t /*epoch_idx*/) {}
  virtual void on_training_epoch_end(std::int64_t /*epoch_idx*/) {}
  virtual void on_training_workload_end(const MetricsJson& /*avg_metrics*/, const BatchMetrics& /*batch_metrics*/) {}
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

namespace detail {

template <class P>
struct member_function_type;
template <class F, class C>
struct member_function_type<F C::*> {
  using type = F;  // the function type with its qualifiers: R(Args...) const noexcept
};

/// A hook `T` declares is PyTorchCallback's hook of that name with the same signature; a hook
/// declared with other parameters would be a new function that never runs (Determined's duck
/// typing silently ignores it too). Not declaring it, or an overload set, is fine.
template <class T, class Base>
consteval bool same_hook() {
  if constexpr (std::is_same_v<T, Base>) return true;
  return std::is_same_v<typename member_function_type<T>::type, typename member_function_type<Base>::type>;
}

#define DTL_CHECK_HOOK(hook, expected)                                               \
  if constexpr (requires { &T::hook; }) {                                            \
    static_assert(same_hook<decltype(&T::hook), decltype(&PyTorchCallback::hook)>(), \
                  DTL_DIAG_CALLBACK_HOOK_SIGNATURE(hook, expected));                 \
  }

template <class T>
consteval bool check_callback_hooks() {
  static_assert(std::is_base_of_v<PyTorchCallback, T>, DTL_DIAG_CALLBACK_HOOKS_NOT_DERIVED);
  DTL_CHECK_HOOK(
      on_trial_startup,
      "void on_trial_startup(std::int64_t first_batch_idx, const std::optional<std::string>& checkpoint_uuid)")
  DTL_CHECK_HOOK(on_training_start, "void on_training_start()")
  DTL_CHECK_HOOK(on_training_epoch_start, "void on_training_epoch_start(std::int64_t epoch_idx)")
  DTL_CHECK_HOOK(on_training_epoch_end, "void on_training_epoch_end(std::int64_t epoch_idx)")
  DTL_CHECK_HOOK(
      on_training_workload_end,
      "void on_training_workload_end(const dtl::MetricsJson& avg_metrics, const dtl::BatchMetrics& batch_metrics)")
  DTL_CHECK_HOOK(on_validation_start, "void on_validation_start()")
  DTL_CHECK_HOOK(on_validation_epoch_start, "void on_validation_epoch_start()")
  DTL_CHECK_HOOK(on_validation_epoch_end, "void on_validation_epoch_end(const std::vector<dtl::Metrics>& outputs)")
  DTL_CHECK_HOOK(on_validation_end, "void on_validation_end(const dtl::MetricsJson& metrics)")
  DTL_CHECK_HOOK(on_checkpoint_save_start, "void on_checkpoint_save_start(c10::impl::GenericDict& checkpoint)")
  DTL_CHECK_HOOK(on_checkpoint_load_start, "void on_checkpoint_load_start(const c10::impl::GenericDict& checkpoint)")
  DTL_CHECK_HOOK(on_checkpoint_write_end, "void on_checkpoint_write_end(const std::filesystem::path& checkpoint_dir)")
  DTL_CHECK_HOOK(on_checkpoint_upload_end, "void on_checkpoint_upload_end(const std::string& uuid)")
  DTL_CHECK_HOOK(on_trial_shutdown, "void on_trial_shutdown()")
  DTL_CHECK_HOOK(state_dict, "nlohmann::json state_dict() const")
  DTL_CHECK_HOOK(load_state_dict, "void load_state_dict(const nlohmann::json& state)")
  return true;
}

#undef DTL_CHECK_HOOK

template <class T>
concept NotCallback = !std::derived_from<T, PyTorchCallback>;

}  // namespace detail

/// One entry of `build_callbacks()`: a name (what checkpoints store its state under) and the
/// callback. Built from `{"name", std::make_shared<MyCallback>(...)}`, which checks MyCallback's
/// hooks at compile time: a hook with a wrong signature is an error, not a hook that never runs.
struct NamedCallback {
  std::string name;
  std::shared_ptr<PyTorchCallback> callback;

  template <std::derived_from<PyTorchCallback> T>
  NamedCallback(std::string n, std::shared_ptr<T> cb)  // NOLINT(google-explicit-constructor)
      : name(std::move(n)), callback(std::move(cb)) {
    static_assert(detail::check_callback_hooks<T>());
  }
  /// Anything else: the error says what a callback is.
  template <detail::NotCallback T>
  NamedCallback(std::string, std::shared_ptr<T>) {  // NOLINT(google-explicit-constructor)
    static_assert(std::derived_from<T, PyTorchCallback>, DTL_DIAG_CALLBACK_NOT_DERIVED);
  }
};

/// What `build_callbacks()` returns: callbacks by name, in the order their hooks run.
///   dtl::Callbacks build_callbacks() { return {{"early_stopping",
///   std::make_shared<dtl::callbacks::EarlyStopping>(ctx_)}}; }
using Callbacks = std::vector<NamedCallback>;

namespace detail {

/// Runs one hook of every callback, in order: notify(cbs, &PyTorchCallback::on_training_start).
template <class... Params, class... Args>
void notify(const Callbacks& callbacks, void (PyTorchCallback::*hook)(Params...), Args&&... args) {
  for (const auto& c : callbacks) ((*c.callback).*hook)(args...);
}

/// The same in reverse order (on_trial_shutdown).
template <class... Params, class... Args>
void notify_reverse(const Callbacks& callbacks, void (PyTorchCallback::*hook)(Params...), Args&&... args) {
  for (auto it = callbacks.rbegin(); it != callbacks.rend(); ++it) ((*it->callback).*hook)(args...);
}

}  // namespace detail

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CALLBACK_HPP
