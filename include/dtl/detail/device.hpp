// dtl — checking the device a run asked for (`--device`, InitOptions::device) against the build
// and the machine, so that asking for CUDA where there is none is one clear error (exit 2), not
// an abort deep inside LibTorch.
#ifndef DTL_DETAIL_DEVICE_HPP
#define DTL_DETAIL_DEVICE_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/errors.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Whether this program was built with dtl's CUDA paths (meson -Dcuda=true, DTL_WITH_CUDA).
inline constexpr bool built_with_cuda =
#ifdef DTL_WITH_CUDA
    true;
#else
    false;
#endif

/// `cpu`, `cuda`, `cuda:N` as torch::Device reads them; anything else is a ConfigError.
inline torch::Device parse_device(const std::string& text, const std::string& where) {
  try {
    return torch::Device(text);
  } catch (const std::exception&) {
    throw ConfigError("dtl: " + where + ": not a device; write cpu, cuda or cuda:N");
  }
}

/// Throws a ConfigError naming the problem and the fix when `device` cannot be used here.
inline void check_device_usable(const torch::Device& device, const std::string& where) {
  if (device.is_cpu()) return;
  if (!device.is_cuda())
    throw ConfigError("dtl: " + where + ": dtl trains on cpu or cuda devices, not " + device.str());
  if (!built_with_cuda)
    throw ConfigError("dtl: " + where + ": this program was built without CUDA; rebuild dtl with -Dcuda=true against a "
                      "CUDA LibTorch (docs/building.md), or pass --device cpu");
  if (!torch::cuda::is_available())
    throw ConfigError("dtl: " + where + ": no CUDA device is available on this machine (no GPU, or no driver); "
                      "pass --device cpu");
  const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
  if (device.has_index() && device.index() >= count)
    throw ConfigError("dtl: " + where + ": this machine has " + std::to_string(count) + " CUDA device" +
                      (count == 1 ? "" : "s") + " (cuda:0" + (count > 1 ? "..cuda:" + std::to_string(count - 1) : "") +
                      ")");
}

/// The CUDA device whose generator a checkpoint saves (Determined's `gpu_rng_state`): the
/// trial's device when it is a CUDA device, else cuda:<local_rank> where CUDA devices exist;
/// none on a machine without CUDA.
inline std::optional<torch::Device> rng_cuda_device(const torch::Device& trial_device, std::int64_t local_rank) {
  if (trial_device.is_cuda()) return torch::Device(torch::kCUDA, trial_device.has_index() ? trial_device.index() : 0);
  if (!torch::cuda::is_available()) return std::nullopt;
  const auto count = static_cast<std::int64_t>(torch::cuda::device_count());
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_DEVICE_HPP
