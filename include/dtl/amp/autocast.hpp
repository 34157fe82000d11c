// dtl — autocast regions, Python's `torch.autocast(device_type, dtype, enabled, cache_enabled)`
// as an RAII guard: inside, matmuls, convolutions and linear layers run in the lower precision
// (CPU: bfloat16; CUDA: float16 or bfloat16), and ops that need float32 (losses, norms) stay
// float32, so a float loss takes the region's outputs.
//   { dtl::autocast region(torch::kCPU); auto loss = loss_fn(model(x), y); }
#ifndef DTL_AMP_AUTOCAST_HPP
#define DTL_AMP_AUTOCAST_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/detail/torch_compat.hpp>

#include <ATen/autocast_mode.h>

#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace dtl {
inline namespace DTL_ABI {

/// An autocast region for the current thread, restored (and its cast cache cleared at the
/// outermost exit) on destruction, as Python's context manager does.
class autocast {
 public:
  explicit autocast(torch::DeviceType device_type = torch::kCPU, std::optional<torch::ScalarType> dtype = std::nullopt,
                    bool enabled = true, bool cache_enabled = true)
      : device_(device_type) {
    if (device_ != torch::kCPU && device_ != torch::kCUDA)
      throw std::invalid_argument("dtl::autocast: device_type must be torch::kCPU or torch::kCUDA, got " +
                                  c10::DeviceTypeName(device_));
    if (device_ == torch::kCUDA && enabled && !torch::cuda::is_available()) {
      static bool warned = false;  // Python warns and disables, once per region; once per process is enough
      if (!warned)
        std::cerr << "dtl: warning: autocast(torch::kCUDA) without CUDA: the region is disabled (no GPU here)\n";
      warned = true;
      enabled = false;
    }
    namespace compat = detail::compat;
    const auto want = dtype.value_or(compat::autocast_dtype(device_));
    if (device_ == torch::kCPU && enabled && !compat::cpu_autocast_supports(want))
      throw std::invalid_argument(std::string("dtl::autocast: LibTorch ") + TORCH_VERSION +
                                  " autocasts on the CPU to " + (DTL_TORCH_2 ? "bfloat16 or float16" : "bfloat16 only") +
                                  ", not " + c10::toString(want) + "; pass torch::kBFloat16 or no dtype");
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    prev_enabled_ = compat::autocast_enabled(device_);
    prev_dtype_ = compat::autocast_dtype(device_);
    compat::set_autocast_enabled(device_, enabled);
    compat::set_autocast_dtype(device_, want);
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled);
  }
  ~autocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    detail::compat::set_autocast_enabled(device_, prev_enabled_);
    detail::compat::set_autocast_dtype(device_, prev_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;
  autocast(autocast&&) = delete;
  autocast& operator=(autocast&&) = delete;

 private:
  torch::DeviceType device_;
  bool prev_enabled_ = false;
  bool prev_cache_ = true;
  torch::ScalarType prev_dtype_ = torch::kBFloat16;
};

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_AMP_AUTOCAST_HPP
