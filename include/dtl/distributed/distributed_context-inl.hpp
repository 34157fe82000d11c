// dtl — the non-template definitions of <dtl/distributed/distributed_context.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_INL_HPP
#define DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/detail/diagnostics.hpp>
#include <dtl/distributed/distributed_context.hpp>

// LibTorch declares ProcessGroupGloo only under its build's defines: say so first, by name.
#if defined(USE_DISTRIBUTED) && defined(USE_C10D_GLOO)
#define DTL_HAS_DISTRIBUTED_DEFINES true
#else
#define DTL_HAS_DISTRIBUTED_DEFINES false
#endif
static_assert(DTL_HAS_DISTRIBUTED_DEFINES, DTL_DIAG_MISSING_DISTRIBUTED_DEFINES);
#undef DTL_HAS_DISTRIBUTED_DEFINES

#include <dtl/detail/torch_compat_c10d.hpp>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(DTL_WITH_CUDA) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

namespace detail {

/// The connection a distributed run shares: store, process group, and what failed.
struct Communicator {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<detail::compat::CollectiveGroup> group;       // ProcessGroupGloo: CPU tensors, objects
  c10::intrusive_ptr<detail::compat::CollectiveGroup> cuda_group;  // ProcessGroupNCCL (nccl backend): CUDA tensors
  c10::intrusive_ptr<c10d::ProcessGroup> user_group;                // process_group(), made when first asked for

  /// The group that carries `t`: NCCL for a CUDA tensor when there is one, else Gloo.
  [[nodiscard]] detail::compat::CollectiveGroup& for_tensor(const torch::Tensor& t) const {
    return cuda_group && t.is_cuda() ? *cuda_group : *group;
  }
  std::chrono::milliseconds timeout{};
  std::int64_t rank = 0;
  std::int64_t size = 1;
  bool failure_posted = false;
  std::int64_t chief_calls = 0;  // run_on_chief's sequence number (the same on every rank)
};

}  // namespace detail

DTL_INLINE DistributedContext::DistributedContext(DistributedOptions o) {
  o.validate();
  rank = o.rank, size = o.size, local_rank = o.local_rank, local_size = o.local_size;
  cross_rank = o.cross_rank, cross_size = o.cross_size;
  if (size == 1 && !o.connect_single_process) return;
  auto comm = std::make_shared<detail::Communicator>();
  comm->timeout = o.timeout;
  comm->rank = rank;
  comm->size = size;
  const std::string where = o.master_addr + ":" + std::to_string(o.master_port);
  try {
    c10d::TCPStoreOptions so;
    so.port = o.master_port;
    so.isServer = !o.launcher_hosts_store && rank == 0;
    so.numWorkers = o.launcher_hosts_store ? c10::nullopt : c10::optional<std::size_t>(size);
    so.waitWorkers = false;
    so.timeout = o.timeout;
    so.multiTenant = true;
    c10::intrusive_ptr<c10d::Store> tcp = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    if (!o.store_prefix.empty()) tcp = c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, tcp);
    comm->store = c10::make_intrusive<c10d::PrefixStore>("dtl/", tcp);
  } catch (const std::exception& e) {
    throw DistributedError("dtl: rank " + std::to_string(rank) + " could not reach the rendezvous store at " + where +
                           " within " + seconds(o.timeout) + ": " + first_line(e.what()) +
                           " (is rank 0 running, and MASTER_ADDR/MASTER_PORT the same on every rank?)");
  }
  try {
    // Gloo always: object collectives, metrics and barriers run on CPU tensors. NCCL besides for
    // CUDA tensors with the nccl backend (PyTorch's "cpu:gloo,cuda:nccl"); `automatic` is gloo
    // here (dtl::init resolves it from the trial's device).
    auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (o.master_addr == "127.0.0.1" || o.master_addr == "localhost")
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    comm->group = c10::make_intrusive<c10d::ProcessGroupGloo>(comm->store, static_cast<int>(rank),
                                                              static_cast<int>(size), opts);
    if (o.backend == DistributedBackend::nccl) {
#if defined(DTL_WITH_CUDA) && defined(USE_C10D_NCCL)
      auto nccl_opts = c10d::ProcessGroupNCCL::Options::create();
      nccl_opts->timeout = o.timeout;
      comm->cuda_group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          c10::make_intrusive<c10d::PrefixStore>("nccl/", comm->store), static_cast<int>(rank), static_cast<int>(size),
          nccl_opts);
#else
      throw ConfigError("dtl: the nccl backend needs a CUDA LibTorch and a build with -Dcuda=true (docs/building.md)");
#endif
    }
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("dtl: rank " + std::to_string(rank) + " could not connect to its " +
                           std::to_string(size - 1) + " peers within " + seconds(o.timeout) + ": " +
                           first_line(e.what()) + " (did every rank start? WORLD_SIZE=" + std::to_string(size) + ")");
  }
  comm_ = std::move(comm);
}

DTL_INLINE void DistributedContext::barrier() const {
  if (!comm_) return;
  run("barrier", [&] { comm_->group->barrier()->wait(); });
}

DTL_INLINE void DistributedContext::allreduce_sum_(torch::Tensor& t) const {
  if (!comm_) return;
  std::vector<torch::Tensor> v{t};
  run("allreduce", [&] { comm_->for_tensor(t).allreduce(v)->wait(); });
}

DTL_INLINE void DistributedContext::allreduce_max_(torch::Tensor& t) const {
  if (!comm_) return;
  std::vector<torch::Tensor> v{t};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  run("allreduce", [&] { comm_->for_tensor(t).allreduce(v, o)->wait(); });
}

DTL_INLINE c10::intrusive_ptr<c10d::Work> DistributedContext::allreduce_sum_async_(torch::Tensor& t) const {
  std::vector<torch::Tensor> v{t};
  c10::intrusive_ptr<c10d::Work> w;
  run("allreduce", [&] { w = comm_->for_tensor(t).allreduce(v); });
  return w;
}

DTL_INLINE void DistributedContext::wait(const c10::intrusive_ptr<c10d::Work>& w, const char* what) const {
  run(what, [&] { w->wait(); });
}

DTL_INLINE void DistributedContext::broadcast_(torch::Tensor& t) const {
  if (!comm_) return;
  std::vector<torch::Tensor> v{t};
  run("broadcast", [&] { comm_->for_tensor(t).broadcast(v)->wait(); });
}

DTL_INLINE void DistributedContext::post_failure(const std::string& what) const noexcept {
  if (!comm_ || comm_->failure_posted) return;
  try {
    const std::string msg = "rank " + std::to_string(rank) + " failed: " + first_line(what);
    comm_->store->set(detail::failure_key, std::vector<std::uint8_t>(msg.begin(), msg.end()));
    comm_->failure_posted = true;
  } catch (...) {
  }
}

DTL_INLINE c10::intrusive_ptr<c10d::ProcessGroup> DistributedContext::process_group() const {
  if (!comm_) return {};
  if (!comm_->user_group) comm_->user_group = detail::compat::as_process_group(comm_->group, comm_->cuda_group, comm_->store);
  return comm_->user_group;
}

DTL_INLINE std::chrono::milliseconds DistributedContext::timeout() const noexcept {
  return comm_ ? comm_->timeout : std::chrono::milliseconds(0);
}

DTL_INLINE std::string DistributedContext::first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

DTL_INLINE std::string DistributedContext::seconds(std::chrono::milliseconds t) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t).count()) + " s";
}

DTL_INLINE std::string DistributedContext::peer_failure() const {
  try {
    if (comm_->store->check({detail::failure_key})) {
      auto v = comm_->store->get(detail::failure_key);
      return std::string(v.begin(), v.end());
    }
  } catch (...) {
  }
  return {};
}

DTL_INLINE std::vector<std::vector<std::uint8_t>> DistributedContext::allgather_bytes(
    const std::vector<std::uint8_t>& mine, const char* what) const {
  const auto n = static_cast<std::size_t>(size);
  // Lengths first, then every rank's bytes padded to the longest.
  auto len = torch::tensor({static_cast<std::int64_t>(mine.size())}, torch::kLong);
  std::vector<std::vector<torch::Tensor>> lens_out(1);
  for (std::size_t i = 0; i < n; ++i) lens_out[0].push_back(torch::empty({1}, torch::kLong));
  std::vector<torch::Tensor> lens_in{len};
  run(what, [&] { comm_->group->allgather(lens_out, lens_in)->wait(); });
  std::int64_t longest = 0;
  for (const auto& t : lens_out[0]) longest = std::max(longest, t.item<std::int64_t>());
  auto buf = torch::zeros({std::max<std::int64_t>(longest, 1)}, torch::kUInt8);
  std::copy(mine.begin(), mine.end(), buf.data_ptr<std::uint8_t>());
  std::vector<std::vector<torch::Tensor>> out(1);
  for (std::size_t i = 0; i < n; ++i) out[0].push_back(torch::empty_like(buf));
  std::vector<torch::Tensor> in{buf};
  run(what, [&] { comm_->group->allgather(out, in)->wait(); });
  std::vector<std::vector<std::uint8_t>> result(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto* p = out[0][i].data_ptr<std::uint8_t>();
    result[i].assign(p, p + lens_out[0][i].item<std::int64_t>());
  }
  return result;
}

DTL_INLINE std::vector<std::uint8_t> DistributedContext::broadcast_bytes(std::vector<std::uint8_t> mine,
                                                                         const char* what) const {
  auto len = torch::tensor({static_cast<std::int64_t>(mine.size())}, torch::kLong);
  std::vector<torch::Tensor> v{len};
  run(what, [&] { comm_->group->broadcast(v)->wait(); });
  const auto n = len.item<std::int64_t>();
  auto buf = torch::zeros({std::max<std::int64_t>(n, 1)}, torch::kUInt8);
  if (is_chief()) std::copy(mine.begin(), mine.end(), buf.data_ptr<std::uint8_t>());
  std::vector<torch::Tensor> b{buf};
  run(what, [&] { comm_->group->broadcast(b)->wait(); });
  const auto* p = buf.data_ptr<std::uint8_t>();
  return std::vector<std::uint8_t>(p, p + n);
}

DTL_INLINE std::vector<std::uint8_t> DistributedContext::run_on_chief_bytes(
    const std::function<std::vector<std::uint8_t>()>& f, const std::string& what) const {
  const auto id = std::to_string(comm_->chief_calls++);
  const std::string done = "chief/" + id, beat = "chief/" + id + "/beat";
  if (is_chief()) {
    std::atomic<bool> working{true};
    std::mutex m;
    std::condition_variable cv;
    std::thread heart([&] {
      std::unique_lock lock(m);
      while (working) {
        try {
          comm_->store->add(beat, 1);
        } catch (...) {
        }
        cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return !working; });
      }
    });
    const auto stop_heart = [&] {
      {
        std::lock_guard lock(m);
        working = false;
      }
      cv.notify_all();
      heart.join();
    };
    std::vector<std::uint8_t> bytes;
    try {
      bytes = f();
    } catch (...) {
      stop_heart();
      throw;
    }
    stop_heart();
    run(what.c_str(), [&] { comm_->store->set(done, bytes); });
    return bytes;
  }
  auto last_beat = std::int64_t{-1};
  auto last_change = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    bool ready = false;
    std::int64_t b = 0;
    try {
      ready = comm_->store->check({done});
      if (!ready) b = comm_->store->add(beat, 0);
    } catch (const std::exception& e) {
      auto peer = peer_failure();
      throw DistributedError("dtl: rank " + std::to_string(rank) + ": a peer was lost while the chief (rank 0) was " +
                             what + ": " + (peer.empty() ? "it exited or was killed" : peer) + " [" +
                             first_line(e.what()) + "]");
    }
    if (ready) break;
    const auto now = std::chrono::steady_clock::now();
    if (b != last_beat) {
      last_beat = b;
      last_change = now;
    } else if (now - last_change > comm_->timeout) {
      throw DistributedError("dtl: rank " + std::to_string(rank) + ": the chief (rank 0) did not answer within " +
                             seconds(comm_->timeout) + " while it was " + what +
                             " (stopped or hung; DTL_DIST_TIMEOUT sets the limit)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(50));
  }
  std::vector<std::uint8_t> bytes;
  run(what.c_str(), [&] { bytes = comm_->store->get(done); });
  return bytes;
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_INL_HPP
