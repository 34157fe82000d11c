// dtl — autocast regions, Python's `torch.autocast(device_type, dtype, enabled, cache_enabled)`
// as an RAII guard: inside, matmuls, convolutions and linear layers run in the lower precision
// (CPU: bfloat16; CUDA: float16 or bfloat16), and ops that need float32 (losses, norms) stay
// float32, so a float loss takes the region's outputs.
//   { dtl::autocast region(torch::kCPU); auto loss = loss_fn(model(x), y); }
#ifndef DTL_AMP_AUTOCAST_HPP
#define DTL_AMP_AUTOCAST_HPP

#include <torch/torch.h>

#include <ATen/autocast_mode.h>

#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace dtl {

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
    const auto want = dtype.value_or(device_ == torch::kCPU ? at::autocast::get_autocast_cpu_dtype()
                                                             : at::autocast::get_autocast_gpu_dtype());
    if (device_ == torch::kCPU && enabled && want != torch::kBFloat16)
      throw std::invalid_argument(std::string("dtl::autocast: on CPU LibTorch 1.13 autocasts to bfloat16 only, not ") +
                                  c10::toString(want) + "; pass torch::kBFloat16 or no dtype");
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    if (device_ == torch::kCPU) {
      prev_enabled_ = at::autocast::is_cpu_enabled();
      prev_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(enabled);
      at::autocast::set_autocast_cpu_dtype(want);
    } else {
      prev_enabled_ = at::autocast::is_enabled();
      prev_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(enabled);
      at::autocast::set_autocast_gpu_dtype(want);
    }
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled);
  }
  ~autocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (device_ == torch::kCPU) {
      at::autocast::set_cpu_enabled(prev_enabled_);
      at::autocast::set_autocast_cpu_dtype(prev_dtype_);
    } else {
      at::autocast::set_enabled(prev_enabled_);
      at::autocast::set_autocast_gpu_dtype(prev_dtype_);
    }
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

}  // namespace dtl

#endif  // DTL_AMP_AUTOCAST_HPP
