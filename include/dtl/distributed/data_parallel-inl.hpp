// dtl — the non-template definitions of <dtl/distributed/data_parallel.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP
#define DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/torch_compat_c10d.hpp>
#include <dtl/distributed/data_parallel.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace {
/// `a` vs the chief's `b` (two JSON mappings), as "k = v (rank 0: w)" for each key that differs.
std::string mapping_difference(const nlohmann::json& a, const nlohmann::json& b) {
  std::string out;
  const auto add = [&](const std::string& k, const nlohmann::json& mine, const nlohmann::json& chief) {
    auto show = [](const nlohmann::json& v) {
      auto t = v.is_null() ? std::string("(none)") : v.dump();
      return t.size() > 60 ? t.substr(0, 57) + "..." : t;
    };
    out += (out.empty() ? "" : ", ") + k + " = " + show(mine) + " (rank 0: " + show(chief) + ")";
  };
  if (!a.is_object() || !b.is_object()) {
    add("(all)", a, b);
    return out;
  }
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v) add(k, v, b.value(k, nlohmann::json()));
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) add(k, nullptr, v);
  return out;
}

/// The first parameter or buffer where model `a` differs from the chief's `b`.
std::string model_difference(const nlohmann::json& a, const nlohmann::json& b) {
  const auto show = [](const nlohmann::json& e) {
    return e.at(0).get<std::string>() + " " + e.at(1).dump() + " " + e.at(2).get<std::string>();
  };
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return show(a[i]) + " where rank 0 has " + show(b[i]);
  return std::to_string(a.size()) + " parameters and buffers where rank 0 has " + std::to_string(b.size());
}
}  // namespace

DTL_INLINE void check_ranks_agree(const DistributedContext& dist, const nlohmann::json& run, std::size_t index,
                                  const torch::nn::Module& model) {
  nlohmann::json mine = run;
  auto& entries = mine["model"] = nlohmann::json::array();
  const auto add = [&](const std::string& name, const torch::Tensor& t) {
    entries.push_back({name, t.sizes().vec(), std::string(c10::toString(t.scalar_type()))});
  };
  for (const auto& p : model.named_parameters()) add(p.key(), p.value());
  for (const auto& b : model.named_buffers()) add(b.key(), b.value());
  const auto all = dist.allgather(mine);
  const auto& chief = all.at(0);
  std::string problems;
  for (std::size_t r = 1; r < all.size(); ++r) {
    const auto& o = all[r];
    const auto note = [&](const std::string& what) {
      problems += (problems.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " " + what);
    };
    // value(), not at(): a rank running another dtl may lack a field, which is itself a difference.
    const auto at_rank = [&](const char* k) { return o.value(k, nlohmann::json()); };
    const auto at_chief = [&](const char* k) { return chief.value(k, nlohmann::json()); };
    for (const char* k : {"dtl", "libtorch"})
      if (at_rank(k) != at_chief(k))
        note(std::string("runs ") + k + " " + at_rank(k).dump() + " (rank 0: " + at_chief(k).dump() + ")");
    if (at_rank("hparams") != at_chief("hparams"))
      note("has other hyperparameters: " + mapping_difference(at_rank("hparams"), at_chief("hparams")));
    if (at_rank("config") != at_chief("config"))
      note("has another experiment config: " + mapping_difference(at_rank("config"), at_chief("config")));
    if (at_rank("model") != at_chief("model"))
      note("has another model " + std::to_string(index) + " (wrap_model's " + std::to_string(index + 1) +
           (index == 0 ? "st" : index == 1 ? "nd" : index == 2 ? "rd" : "th") +
           " call): " + model_difference(at_rank("model"), at_chief("model")));
  }
  if (!problems.empty())
    throw ConfigError("dtl: the ranks disagree, so they cannot train together: " + problems +
                      ". Every rank must run the same program (the same dtl and LibTorch) with the same config, "
                      "--hparams/--hparam flags and models");
}

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
  // DDP's caps: 25 MiB with a first bucket of 1 MiB by default; a bucket_cap_mb the user gives
  // is every bucket's (int(mb * 2^20) bytes, as Python computes it).
  constexpr std::int64_t mib = 1024 * 1024;
  bucket_bytes_ = static_cast<std::int64_t>(opts_.bucket_cap_mb.value_or(25.0) * static_cast<double>(mib));
  first_bucket_bytes_ = opts_.bucket_cap_mb ? bucket_bytes_ : mib;
  if (bucket_bytes_ < 0) throw ConfigError("dtl: DataParallelOptions::bucket_cap_mb must be >= 0");
  inv_world_ = torch::scalar_tensor(1.0 / static_cast<double>(std::max<std::int64_t>(dist_.size, 1)), torch::kDouble);
  inv_world_.unsafeGetTensorImpl()->set_wrapped_number(true);  // computes in the gradient's dtype, as DDP's
  for (auto& [name, p] : named_params)
    if (p.requires_grad()) params_.push_back(Param{name, p});
  // The first assignment (DDP's __init__): parameter order; one bucket per dtype and device
  // unless unused parameters are looked for; sorted, then the bucket list reversed.
  std::vector<std::size_t> order(params_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::int64_t> limits;
  if (!opts_.find_unused_parameters)
    limits = {std::numeric_limits<std::int64_t>::max()};
  else if (first_bucket_bytes_ < bucket_bytes_)
    limits = {first_bucket_bytes_, bucket_bytes_};
  else
    limits = {bucket_bytes_};
  auto assignment = assign(order, limits, /*sort=*/true);
  std::reverse(assignment.begin(), assignment.end());
  make_buckets(std::move(assignment));
  // DDP rebuilds once, after the first step, unless it looks for unused parameters.
  rebuilt_ = opts_.find_unused_parameters;
  arrived_.assign(params_.size(), 0);
  // A post-hook on each parameter's gradient accumulator: it runs once the gradient of this
  // backward pass has been added into .grad.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[i].tensor);
    acc->add_post_hook(std::make_unique<Hook>(this, i));
    accumulators_.push_back(std::move(acc));
  }
}

DTL_INLINE std::vector<std::vector<std::size_t>> GradientSynchronizer::assign(const std::vector<std::size_t>& order,
                                                                              const std::vector<std::int64_t>& limits,
                                                                              bool sort) const {
  struct Open {
    torch::ScalarType dtype;
    torch::Device device;
    std::vector<std::size_t> members;
    std::int64_t bytes = 0;
    std::size_t limit = 0;
  };
  std::vector<Open> open;  // one per dtype and device, in order of first appearance
  std::vector<std::vector<std::size_t>> out;
  for (const auto i : order) {
    const auto& p = params_[i].tensor;
    auto it = std::find_if(open.begin(), open.end(),
                           [&](const Open& o) { return o.dtype == p.scalar_type() && o.device == p.device(); });
    if (it == open.end()) it = open.insert(open.end(), Open{p.scalar_type(), p.device()});
    it->members.push_back(i);
    it->bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
    if (it->bytes >= limits[it->limit]) {
      out.push_back(std::exchange(it->members, {}));
      it->bytes = 0;
      if (it->limit + 1 < limits.size()) ++it->limit;
    }
  }
  for (auto& o : open)
    if (!o.members.empty()) out.push_back(std::move(o.members));
  if (sort)
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return *std::min_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
    });
  return out;
}

DTL_INLINE void GradientSynchronizer::make_buckets(std::vector<std::vector<std::size_t>> assignment) {
  buckets_.clear();
  for (auto& members : assignment) {
    auto& b = buckets_.emplace_back();
    b.members = std::move(members);
    std::int64_t numel = 0;
    for (const auto i : b.members) numel += params_[i].tensor.numel();
    const auto& first = params_[b.members.front()].tensor;
    b.buffer = torch::zeros({numel}, torch::TensorOptions().dtype(first.scalar_type()).device(first.device()));
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < b.members.size(); ++k) {
      auto& p = params_[b.members[k]];
      p.bucket = buckets_.size() - 1;
      p.slot = k;
      // DDP's views follow the parameter's strides (a channels_last weight keeps its memory order).
      b.views.push_back(b.buffer.as_strided(p.tensor.sizes(), p.tensor.strides(), offset));
      offset += p.tensor.numel();
    }
  }
}

DTL_INLINE void GradientSynchronizer::rebuild() {
  rebuilt_ = true;
  // DDP's rebuild_buckets: the ready order, its two caps, no sort; rank 0's result everywhere.
  nlohmann::json mine = nlohmann::json::array();
  if (ready_order_.size() == params_.size())
    for (const auto& bucket : assign(ready_order_, {first_bucket_bytes_, bucket_bytes_}, /*sort=*/false))
      mine.push_back(bucket);
  ready_order_.clear();
  ready_order_.shrink_to_fit();
  const auto chosen = dist_.broadcast(mine);
  if (chosen.empty()) return;  // rank 0 saw no complete order: keep the first layout
  auto assignment = chosen.get<std::vector<std::vector<std::size_t>>>();
  std::vector<int> seen(params_.size(), 0);
  for (const auto& bucket : assignment)
    for (const auto i : bucket)
      if (i >= params_.size() || seen[i]++)
        throw DistributedError("dtl: rank " + std::to_string(dist_.rank) +
                               ": rank 0's gradient buckets do not match this rank's parameters (a different model?)");
  if (std::find(seen.begin(), seen.end(), 0) != seen.end())
    throw DistributedError("dtl: rank " + std::to_string(dist_.rank) +
                           ": rank 0's gradient buckets do not match this rank's parameters (a different model?)");
  make_buckets(std::move(assignment));
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
  if (!rebuilt_ && !arrived_[i]) ready_order_.push_back(i);
  auto& p = params_[i];
  auto& b = buckets_[p.bucket];
  arrived_[i] = 1;
  // DDP's mark_variable_ready_dense: the gradient times float(1/world_size), into the bucket.
  at::mul_out(b.views[p.slot], p.tensor.grad(), inv_world_);
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
          at::mul_out(b.views[k], g, inv_world_);
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
  for (auto& b : buckets_) {
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
  if (!rebuilt_) rebuild();
}

DTL_INLINE bool GradientSynchronizer::all_ready() const {
  for (const auto& b : buckets_)
    if (b.ready < b.members.size()) return false;
  return true;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_DATA_PARALLEL_INL_HPP
