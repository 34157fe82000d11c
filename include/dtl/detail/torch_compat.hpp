// dtl — what differs between the LibTorch versions dtl supports, in one place: Debian's 1.13 and
// 2.x (PyPI's wheel, pytorch.org's archive). Code elsewhere names these and never tests a
// version itself. docs/building.md lists the supported versions. What needs c10d or Kineto is in
// torch_compat_c10d.hpp and torch_compat_profiler.hpp, which only -inl.hpp files include: their
// headers leave templates pending in every translation unit that parses them.
#ifndef DTL_DETAIL_TORCH_COMPAT_HPP
#define DTL_DETAIL_TORCH_COMPAT_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/autocast_mode.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#if TORCH_VERSION_MAJOR < 1 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR < 13)
#error "dtl needs LibTorch 1.13 or later (docs/building.md lists the supported versions)"
#endif

#define DTL_TORCH_2 (TORCH_VERSION_MAJOR >= 2)

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
namespace compat {

/// The key of a parameter's entry in `torch::optim::Optimizer::state()`: the address of its
/// TensorImpl, as a string in 1.13 and as the pointer itself in 2.x.
using OptimizerStateKey =
    typename std::remove_cvref_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
template <class Key = OptimizerStateKey>
Key optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;  // what LibTorch 1.13 writes (c10::guts::to_string of the pointer)
    address << static_cast<const void*>(p.unsafeGetTensorImpl());
    return address.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

/// A parameter's gradient accumulator, as LibTorch hands it out (a shared_ptr in 1.13, an
/// intrusive_ptr in 2.x).
using GradAccumulator = decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));

// Autocast state per device type. 2.x keys it by device (`set_autocast_enabled(kCUDA, …)`);
// 1.13 has one call per device (`set_cpu_enabled`, `set_enabled` for CUDA).
inline bool autocast_enabled(c10::DeviceType d) {
#if DTL_TORCH_2
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}
inline void set_autocast_enabled(c10::DeviceType d, bool on) {
#if DTL_TORCH_2
  at::autocast::set_autocast_enabled(d, on);
#else
  d == c10::kCPU ? at::autocast::set_cpu_enabled(on) : at::autocast::set_enabled(on);
#endif
}
inline c10::ScalarType autocast_dtype(c10::DeviceType d) {
#if DTL_TORCH_2
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}
inline void set_autocast_dtype(c10::DeviceType d, c10::ScalarType t) {
#if DTL_TORCH_2
  at::autocast::set_autocast_dtype(d, t);
#else
  d == c10::kCPU ? at::autocast::set_autocast_cpu_dtype(t) : at::autocast::set_autocast_gpu_dtype(t);
#endif
}
/// The lower-precision types autocast supports on the CPU: 1.13 casts to bfloat16 only; 2.x also
/// to float16.
inline bool cpu_autocast_supports(c10::ScalarType t) {
#if DTL_TORCH_2
  return t == c10::kBFloat16 || t == c10::kHalf;
#else
  return t == c10::kBFloat16;
#endif
}

// ---- what the Python side of each version writes -------------------------------------------
// dtl's files and states are read by the torch (and Determined, numpy) that sit beside its
// LibTorch: Debian's python3-torch 1.13 with numpy 1.24, or PyPI's torch 2.x with numpy 2.x.

/// torch.optim.lr_scheduler's state_dict() keys that every scheduler has in this version besides
/// its own settings: 1.13 `verbose: False`; 2.x `_is_initial: False` (verbose is gone).
/// Not followed per version: 1.13's OneCycleLR and SWALR save their anneal function itself
/// (`anneal_func`, not data); dtl saves its name on both (`_anneal_func_type`, `_anneal_strategy`),
/// as 2.x does (docs/lr-schedulers.md).
inline void add_scheduler_version_keys(nlohmann::json& state) {
#if DTL_TORCH_2
  state["_is_initial"] = false;
#else
  state["verbose"] = false;
#endif
}

/// SequentialLR at a milestone: 1.13 calls the next scheduler's `step(0)` (a counted step, which
/// CosineAnnealingWarmRestarts overrides); 2.x its `_update_lr(0)` (not counted, not overridden).
inline constexpr bool sequential_lr_milestone_counts_step = !DTL_TORCH_2;
/// SequentialLR's initial step: 1.13 the first scheduler's; 2.x the one for step 0 (after any
/// milestones at 0).
inline constexpr bool sequential_lr_first_is_milestone_aware = DTL_TORCH_2;
/// SequentialLR's undo of its schedulers' construction steps: 2.x recurses into nested
/// composites (recursive_undo), 1.13 takes one from each scheduler it holds.
inline constexpr bool lr_undo_is_recursive = DTL_TORCH_2;

/// ReduceLROnPlateau's state_dict() keys of this version: 1.13 `verbose`; 2.x `default_min_lr`
/// (the one floor for every group, or None when min_lr was a list). 2.x also has `_last_lr`
/// from construction on (plateau_last_lr_from_start).
inline void add_plateau_version_keys(nlohmann::json& state, bool verbose, std::optional<double> default_min_lr) {
#if DTL_TORCH_2
  (void)verbose;
  state["default_min_lr"] = default_min_lr ? nlohmann::json(*default_min_lr) : nlohmann::json(nullptr);
#else
  (void)default_min_lr;
  state["verbose"] = verbose;
#endif
}

inline constexpr bool plateau_last_lr_from_start = DTL_TORCH_2;

/// np.mean's summation buffer (detail::numpy_mean): numpy 1.24 sums in buffers of 8192
/// elements; numpy 2.4 sums a contiguous array whole. They differ past 8192 values (a workload of
/// more than 8192 batches).
inline constexpr std::size_t numpy_sum_buffer = DTL_TORCH_2 ? 0 : 8192;

}  // namespace compat
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_TORCH_COMPAT_HPP
