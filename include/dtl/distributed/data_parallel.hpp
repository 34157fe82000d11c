// dtl — data parallelism with PyTorch DDP's semantics on a DistributedContext: parameters and
// buffers broadcast from rank 0, gradients averaged in buckets that are all-reduced
// asynchronously from autograd hooks as soon as each bucket's gradients are accumulated, so the
// communication overlaps the rest of backward. The arithmetic and the bucket layout are DDP's
// (torch 2.15's Reducer), so ranks sum exactly as Python DDP does: each gradient is multiplied
// by float(1/world_size) as it is copied into its bucket, the buckets are summed, and the layout
// is DDP's — one bucket per dtype and device in parameter order for the first step, then, once,
// buckets of 1 MiB and 25 MiB in the order gradients became ready (rank 0's). Gloo's ring adds
// each element in an order that depends on its offset, so with 3+ ranks the layout decides the
// last bits. (DDP's own c10d::Reducer cannot be built against Debian's LibTorch 1.13 headers;
// this one code runs on both versions; docs/distributed.md.)
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
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// DDP's options, as `wrap_model(model, {...})` takes them.
///   model_ = ctx.wrap_model(Net{}, {.find_unused_parameters = true});
struct DataParallelOptions {
  /// Gradients are all-reduced in buckets of about this many MiB. Unset: DDP's default, 25 MiB
  /// with a first bucket of 1 MiB; set: every bucket this size (DDP's rule).
  std::optional<double> bucket_cap_mb;
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

/// Before a model's first collective (wrap_model's broadcast): every rank sends what must agree —
/// `run` (dtl's and LibTorch's versions, the hyperparameters, the experiment config) and model
/// `index`'s parameter and buffer names, shapes and dtypes — in one small allgather. Ranks that
/// disagree would train on silently, or fail deep inside Gloo on mismatched sizes; here every rank
/// throws the same ConfigError naming what differs on which rank.
DTL_INLINE void check_ranks_agree(const DistributedContext& dist, const nlohmann::json& run, std::size_t index,
                                  const torch::nn::Module& model);

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
    std::size_t bucket = 0;
    std::size_t slot = 0;  // its place among the bucket's members
  };
  struct Bucket {
    std::vector<std::size_t> members;  // parameter indices, in bucket order
    std::vector<torch::Tensor> views;  // one per member, shaped and strided like it, into buffer
    torch::Tensor buffer;
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

  /// DDP's compute_bucket_assignment_by_size: the parameters in `order`, per dtype and device,
  /// into buckets closed once they reach the current limit (the last limit repeats); sorted by
  /// their smallest index when `sort` (the initial assignment).
  [[nodiscard]] DTL_INLINE std::vector<std::vector<std::size_t>> assign(const std::vector<std::size_t>& order,
                                                                       const std::vector<std::int64_t>& limits,
                                                                       bool sort) const;
  /// Allocates the buckets' buffers and views for an assignment.
  DTL_INLINE void make_buckets(std::vector<std::vector<std::size_t>> assignment);
  /// After the first synchronized backward: DDP's one rebuild, in the order the gradients became
  /// ready, with rank 0's assignment on every rank.
  DTL_INLINE void rebuild();

  DTL_INLINE void on_gradient(std::size_t i);

  /// Launches buckets in index order, so every rank issues the same collectives in the same order.
  DTL_INLINE void launch_ready_buckets();

  DTL_INLINE void finalize();

  [[nodiscard]] DTL_INLINE bool all_ready() const;

  DistributedContext dist_;
  DataParallelOptions opts_;
  std::int64_t bucket_bytes_ = 0;        // DDP's bucket_bytes_cap
  std::int64_t first_bucket_bytes_ = 0;  // and first_bucket_bytes_cap
  torch::Tensor inv_world_;              // 1/world_size as a wrapped double scalar (DDP's div_factor)
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  std::vector<detail::compat::GradAccumulator> accumulators_;
  std::vector<int> arrived_;              // which parameters got their gradient in this pass
  std::vector<std::size_t> ready_order_;  // the first synchronized pass's, for the rebuild
  bool rebuilt_ = false;
  std::size_t next_bucket_ = 0;
  bool enabled_ = true;
  bool pass_started_ = false;
  std::chrono::nanoseconds wait_time_{};
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/distributed/data_parallel-inl.hpp>
#endif

#endif  // DTL_DISTRIBUTED_DATA_PARALLEL_HPP
