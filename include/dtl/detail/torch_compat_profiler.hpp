// dtl — torch_compat.hpp's part for the profiler: Kineto in 2.x, the autograd profiler in Debian's
// 1.13 (built without it). Included by profiler-inl.hpp alone.
#ifndef DTL_DETAIL_TORCH_COMPAT_PROFILER_HPP
#define DTL_DETAIL_TORCH_COMPAT_PROFILER_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>

#include <torch/torch.h>

#if DTL_TORCH_2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include <set>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
namespace compat {

// ---- the profiler: Kineto in 2.x, the autograd profiler in Debian's 1.13 (built without it) ----

/// Whether this LibTorch profiles through Kineto (torch.profiler's engine: its traces open in
/// Perfetto and TensorBoard's PyTorch profiler plugin).
inline constexpr bool kineto_profiler = DTL_TORCH_2;

#if DTL_TORCH_2
namespace kineto {
inline torch::profiler::impl::ProfilerConfig config() {
  return torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::KINETO);
}
inline std::set<torch::profiler::impl::ActivityType> activities() {
  std::set<torch::profiler::impl::ActivityType> a{torch::profiler::impl::ActivityType::CPU};
  if (torch::cuda::is_available()) a.insert(torch::profiler::impl::ActivityType::CUDA);
  return a;
}
}  // namespace kineto
#endif

/// torch.profiler's warmup: Kineto set up, nothing recorded yet.
inline void kineto_prepare() {
#if DTL_TORCH_2
  torch::autograd::profiler::prepareProfiler(kineto::config(), kineto::activities());
#endif
}
/// Starts recording (after kineto_prepare, or on its own).
inline void kineto_start() {
#if DTL_TORCH_2
  torch::autograd::profiler::enableProfiler(kineto::config(), kineto::activities());
#endif
}
/// Stops recording and writes the trace (Chrome trace JSON with Kineto's fields) to `path`.
inline void kineto_stop_and_save(const std::string& path) {
#if DTL_TORCH_2
  torch::autograd::profiler::disableProfiler()->save(path);
#else
  (void)path;
#endif
}

}  // namespace compat
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_TORCH_COMPAT_PROFILER_HPP
