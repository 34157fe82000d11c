// dtl — data parallelism with PyTorch DDP's semantics on a DistributedContext: parameters and
// buffers broadcast from rank 0, gradients averaged in buckets that are all-reduced
// asynchronously from autograd hooks as soon as each bucket's gradients are accumulated, so the
// communication overlaps the rest of backward. (DDP's own Reducer cannot be built against
// Debian's LibTorch headers; this is the same algorithm on the process group.)
#ifndef DTL_DISTRIBUTED_DATA_PARALLEL_HPP
#define DTL_DISTRIBUTED_DATA_PARALLEL_HPP

#include <torch/torch.h>

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
inline void broadcast_tensors(const DistributedContext& dist, const std::vector<torch::Tensor>& tensors) {
  if (!dist.connected() || tensors.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> group;
  auto flush = [&] {
    if (group.empty()) return;
    std::vector<torch::Tensor> flat;
    flat.reserve(group.size());
    for (const auto& t : group) flat.push_back(t.detach().reshape(-1));
    auto buf = torch::cat(flat);
    dist.broadcast_(buf);
    std::int64_t off = 0;
    for (auto& t : group) {
      t.detach().copy_(buf.narrow(0, off, t.numel()).view_as(t));
      off += t.numel();
    }
    group.clear();
  };
  for (const auto& t : tensors) {
    if (!group.empty() && (group.front().scalar_type() != t.scalar_type() || group.front().device() != t.device()))
      flush();
    group.push_back(t);
  }
  flush();
}

/// Averages a module's gradients across ranks, bucket by bucket, from autograd hooks.
class GradientSynchronizer {
 public:
  GradientSynchronizer(DistributedContext dist, std::vector<std::pair<std::string, torch::Tensor>> named_params,
                       DataParallelOptions options)
      : dist_(std::move(dist)), opts_(options) {
    // Buckets in reverse registration order: backward produces the last layers' gradients first.
    const auto cap = static_cast<std::int64_t>(opts_.bucket_cap_mb * 1024.0 * 1024.0);
    for (auto it = named_params.rbegin(); it != named_params.rend(); ++it) {
      auto& [name, p] = *it;
      if (!p.requires_grad()) continue;
      const auto bytes = p.numel() * static_cast<std::int64_t>(p.element_size());
      if (buckets_.empty() || buckets_.back().bytes + bytes > cap || buckets_.back().dtype != p.scalar_type() ||
          buckets_.back().device != p.device())
        buckets_.push_back(Bucket{.dtype = p.scalar_type(), .device = p.device()});
      auto& b = buckets_.back();
      params_.push_back(Param{name, p, buckets_.size() - 1, b.numel});
      b.members.push_back(params_.size() - 1);
      b.numel += p.numel();
      b.bytes += bytes;
    }
    for (auto& b : buckets_) {
      b.buffer = torch::zeros({b.numel}, torch::TensorOptions().dtype(b.dtype).device(b.device));
      for (auto i : b.members) {
        auto& p = params_[i];
        b.views.push_back(b.buffer.narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes()));
      }
    }
    arrived_.assign(params_.size(), 0);
    // A post-hook on each parameter's gradient accumulator: it runs once the gradient of this
    // backward pass has been added into .grad.
    for (std::size_t i = 0; i < params_.size(); ++i) {
      auto acc = torch::autograd::impl::grad_accumulator(params_[i].tensor);
      acc->add_post_hook(std::make_unique<Hook>(this, i));
      accumulators_.push_back(std::move(acc));
    }
  }
  GradientSynchronizer(const GradientSynchronizer&) = delete;
  GradientSynchronizer& operator=(const GradientSynchronizer&) = delete;
  ~GradientSynchronizer() {
    // The accumulators outlive us when the model does: take our hooks out of them.
    for (auto& acc : accumulators_) {
      auto& hooks = acc->post_hooks();
      std::erase_if(hooks, [this](const std::unique_ptr<torch::autograd::FunctionPostHook>& h) {
        const auto* mine = dynamic_cast<const Hook*>(h.get());
        return mine && mine->owner == this;
      });
    }
  }

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

  void on_gradient(std::size_t i) {
    if (!enabled_ || !dist_.connected()) return;
    if (!pass_started_) {
      pass_started_ = true;
      // Runs once this backward pass has finished: wait for the buckets and write back.
      torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
    }
    auto& p = params_[i];
    auto& b = buckets_[p.bucket];
    const std::size_t k = static_cast<std::size_t>(&p - params_.data()) - b.members.front();
    arrived_[i] = 1;
    b.views[k].copy_(p.tensor.grad());
    if (++b.ready == b.members.size() && opts_.overlap) launch_ready_buckets();
  }

  /// Launches buckets in index order, so every rank issues the same collectives in the same order.
  void launch_ready_buckets() {
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready == buckets_[next_bucket_].members.size()) {
      auto& b = buckets_[next_bucket_++];
      b.work = dist_.allreduce_sum_async_(b.buffer);
    }
  }

  void finalize() {
    pass_started_ = false;
    struct Reset {
      GradientSynchronizer& s;
      ~Reset() {
        for (auto& b : s.buckets_) b.ready = 0, b.work.reset();
        s.next_bucket_ = 0;
        std::fill(s.arrived_.begin(), s.arrived_.end(), 0);
      }
    } reset{*this};
    if (!all_ready()) {
      // Some gradients never arrived in this pass: count them as zero (plus what earlier no_sync
      // batches accumulated), or fail naming them rather than leave the other ranks waiting.
      if (!opts_.find_unused_parameters) {
        std::string missing;
        for (std::size_t i = 0; i < params_.size(); ++i)
          if (!arrived_[i]) missing += (missing.empty() ? "" : ", ") + params_[i].name;
        throw DistributedError(
            "dtl: rank " + std::to_string(dist_.rank) + ": parameters received no gradient in this step: " + missing +
            ". Every rank must produce a gradient for every parameter, or the gradient all-reduce cannot complete; "
            "if some steps leave parameters unused, wrap the model with "
            "dtl::DataParallelOptions{.find_unused_parameters = true}");
      }
      for (auto& b : buckets_) {
        for (std::size_t k = 0; k < b.members.size(); ++k) {
          const auto i = b.members[k];
          if (arrived_[i]) continue;
          const auto& g = params_[i].tensor.grad();
          if (g.defined())
            b.views[k].copy_(g);
          else
            b.views[k].zero_();
        }
        b.ready = b.members.size();
      }
    }
    launch_ready_buckets();
    torch::Tensor used;
    if (opts_.find_unused_parameters) {
      used = torch::empty({static_cast<std::int64_t>(params_.size())}, torch::kInt);
      for (std::size_t i = 0; i < params_.size(); ++i) used.data_ptr<int>()[i] = arrived_[i];
      dist_.allreduce_sum_(used);
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& b : buckets_) dist_.wait(b.work, "gradient all-reduce");
    wait_time_ += std::chrono::steady_clock::now() - t0;
    torch::NoGradGuard no_grad;
    const double inv = 1.0 / static_cast<double>(dist_.size);
    for (auto& b : buckets_) {
      b.buffer.mul_(inv);
      for (std::size_t k = 0; k < b.members.size(); ++k) {
        const auto i = b.members[k];
        auto& p = params_[i].tensor;
        if (p.grad().defined())
          p.mutable_grad().copy_(b.views[k]);
        else if (used.defined() && used.data_ptr<int>()[i] > 0)
          p.mutable_grad() = b.views[k].clone();
        // else: unused on every rank, so its gradient stays undefined, as DDP leaves it
      }
    }
  }

  [[nodiscard]] bool all_ready() const {
    for (const auto& b : buckets_)
      if (b.ready < b.members.size()) return false;
    return true;
  }

  DistributedContext dist_;
  DataParallelOptions opts_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<int> arrived_;  // which parameters got their gradient in this pass
  std::size_t next_bucket_ = 0;
  bool enabled_ = true;
  bool pass_started_ = false;
  std::chrono::nanoseconds wait_time_{};
};

}  // namespace detail
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_DATA_PARALLEL_HPP
