// dtl — the definitions behind <dtl/distributed/data_parallel.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
// (detail/compiled_lib.hpp).
#ifndef DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP
#define DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP

#include <dtl/distributed/data_parallel.hpp>

namespace dtl::detail {

DTL_INLINE void broadcast_tensors(const DistributedContext& dist, const std::vector<torch::Tensor>& tensors) {
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

DTL_INLINE GradientSynchronizer::GradientSynchronizer(DistributedContext dist,
                                                      std::vector<std::pair<std::string, torch::Tensor>> named_params,
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

DTL_INLINE GradientSynchronizer::~GradientSynchronizer() {
  // The accumulators outlive us when the model does: take our hooks out of them.
  for (auto& acc : accumulators_) {
    auto& hooks = acc->post_hooks();
    std::erase_if(hooks, [this](const std::unique_ptr<torch::autograd::FunctionPostHook>& h) {
      const auto* mine = dynamic_cast<const Hook*>(h.get());
      return mine && mine->owner == this;
    });
  }
}

DTL_INLINE void GradientSynchronizer::on_gradient(std::size_t i) {
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

DTL_INLINE void GradientSynchronizer::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready == buckets_[next_bucket_].members.size()) {
    auto& b = buckets_[next_bucket_++];
    b.work = dist_.allreduce_sum_async_(b.buffer);
  }
}

DTL_INLINE void GradientSynchronizer::finalize() {
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

DTL_INLINE bool GradientSynchronizer::all_ready() const {
  for (const auto& b : buckets_)
    if (b.ready < b.members.size()) return false;
  return true;
}

}  // namespace dtl::detail

#endif  // DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP
