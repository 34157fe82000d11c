// dtl — data parallelism with PyTorch DDP's semantics on a DistributedContext: parameters and
// buffers broadcast from rank 0, gradients averaged in buckets that are all-reduced
// asynchronously from autograd hooks as soon as each bucket's gradients are accumulated, so the
// communication overlaps the rest of backward. (DDP's own Reducer cannot be built against
// Debian's LibTorch headers; this is the same algorithm on the process group.)
#ifndef DTL_DISTRIBUTED_DATA_PARALLEL_HPP
#define DTL_DISTRIBUTED_DATA_PARALLEL_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/distributed/distributed_context.hpp>
#include <dtl/errors.hpp>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtl {

/// DDP's options, as `wrap_model(model, {...})` takes them.
///   model_ = ctx.wrap_model(Net{}, {.find_unused_parameters = true});
struct DataParallelOptions {
  /// Gradients are all-reduced in buckets of about this many MiB (DDP's default 25).
  double bucket_cap_mb = 25.0;
  /// Parameters that get no gradient in a step (data-dependent branches, frozen heads) count
  /// as zero gradients instead of failing the step (DDP's option; Determined's issue #9814
  /// asks for it). Costs one more small all-reduce per step.
  bool find_unused_parameters = false;
  /// Broadcast the model's buffers (e.g. BatchNorm statistics) from rank 0 before every
  /// training batch, as DDP does before every forward.
  bool broadcast_buffers = true;
  /// Launch each bucket from the autograd hooks (overlap with backward). Off: every bucket is
  /// reduced after backward ends (for measuring what the overlap hides).
  bool overlap = true;
};

namespace detail {

/// The flat parameters and buffers of a module, per dtype, overwritten with the chief's.
DTL_INLINE void broadcast_tensors(const DistributedContext& dist, const std::vector<torch::Tensor>& tensors);

/// Averages a module's gradients across ranks, bucket by bucket, from autograd hooks.
class GradientSynchronizer {
 public:
  DTL_INLINE GradientSynchronizer(DistributedContext dist,
                                  std::vector<std::pair<std::string, torch::Tensor>> named_params,
                                  DataParallelOptions options);
  GradientSynchronizer(const GradientSynchronizer&) = delete;
  GradientSynchronizer& operator=(const GradientSynchronizer&) = delete;
  DTL_INLINE ~GradientSynchronizer();

  /// Off: backward passes accumulate locally (DDP's `no_sync`, the non-update batches of
  /// gradient aggregation). On: the next backward averages the accumulated gradients.
  void set_enabled(bool on) noexcept { enabled_ = on; }

  /// Time spent blocked in finalize() waiting for all-reduces, since the last call (the part
  /// of the communication that backward did not hide).
  [[nodiscard]] std::chrono::nanoseconds take_wait_time() noexcept { return std::exchange(wait_time_, {}); }

 private:
  struct Param {
    std::string name;
    torch::Tensor tensor;
    std::size_t bucket;
    std::int64_t offset;
  };
  struct Bucket {
    torch::ScalarType dtype;
    torch::Device device = torch::kCPU;
    std::vector<std::size_t> members;
    std::vector<torch::Tensor> views;  // one per member, shaped like its parameter, into buffer
    torch::Tensor buffer;
    std::int64_t numel = 0;
    std::int64_t bytes = 0;
    std::size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  struct Hook final : torch::autograd::FunctionPostHook {
    Hook(GradientSynchronizer* o, std::size_t i) : owner(o), index(i) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list& /*inputs*/) override {
      owner->on_gradient(index);
      return outputs;
    }
    GradientSynchronizer* owner;
    std::size_t index;
  };

  DTL_INLINE void on_gradient(std::size_t i);

  /// Launches buckets in index order, so every rank issues the same collectives in the same order.
  DTL_INLINE void launch_ready_buckets();

  DTL_INLINE void finalize();

  [[nodiscard]] DTL_INLINE bool all_ready() const;

  DistributedContext dist_;
  DataParallelOptions opts_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  std::vector<detail::compat::GradAccumulator> accumulators_;
  std::vector<int> arrived_;  // which parameters got their gradient in this pass
  std::size_t next_bucket_ = 0;
  bool enabled_ = true;
  bool pass_started_ = false;
  std::chrono::nanoseconds wait_time_{};
};

}  // namespace detail
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/distributed/data_parallel-inl.hpp>
#endif

#endif  // DTL_DISTRIBUTED_DATA_PARALLEL_HPP
