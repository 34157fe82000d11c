// dtl — DistributedContext: Determined's `context.distributed` on c10d. Rendezvous over a
// TCPStore (torchrun's, or one rank 0 hosts), collectives on ProcessGroupGloo (CPU) or
// ProcessGroupNCCL (CUDA builds), and JSON object collectives (allgather, gather, broadcast).
// A failed collective becomes a DistributedError that says which peer failed when it could tell
// (a rank that throws posts its error to the store first), or that a peer was lost.
#ifndef DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_HPP
#define DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/distributed/options.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// c10d's types by name only: a trial's translation unit does not parse c10d, whose headers leave
// ~40 MB of templates pending in every translation unit that does (docs/benchmarks.md). The -inl
// file includes them (detail/torch_compat_c10d.hpp); so does a program that calls
// process_group() (<torch/csrc/distributed/c10d/ProcessGroup.hpp>).
namespace c10d {
class ProcessGroup;
class Store;
class Work;
}  // namespace c10d

namespace dtl {
inline namespace DTL_ABI {

namespace detail {

/// The connection a distributed run shares (distributed_context-inl.hpp).
struct Communicator;

inline constexpr const char* failure_key = "dtl/failure";

}  // namespace detail

/// Where this process sits in a (possibly single-process) run, and the collectives between
/// processes (Determined's `core.DistributedContext`). A single process needs no connection:
/// every collective returns this rank's own value.
///   auto& d = ctx.distributed();
///   if (d.is_chief()) ...;
///   auto sizes = d.allgather(nlohmann::json(local_count));   // one value per rank, in rank order
class DistributedContext {
 public:
  std::int64_t rank = 0;
  std::int64_t size = 1;
  std::int64_t local_rank = 0;
  std::int64_t local_size = 1;
  std::int64_t cross_rank = 0;
  std::int64_t cross_size = 1;

  DistributedContext() = default;

  /// Joins the run `o` describes: rendezvous on the store, then a process group. Blocks until
  /// every rank has joined, at most `o.timeout`.
  DTL_INLINE explicit DistributedContext(DistributedOptions o);

  [[nodiscard]] bool is_chief() const noexcept { return rank == 0; }
  [[nodiscard]] bool is_local_chief() const noexcept { return local_rank == 0; }
  [[nodiscard]] std::int64_t get_rank() const noexcept { return rank; }
  [[nodiscard]] std::int64_t get_size() const noexcept { return size; }
  [[nodiscard]] std::int64_t get_local_rank() const noexcept { return local_rank; }
  [[nodiscard]] std::int64_t get_local_size() const noexcept { return local_size; }
  [[nodiscard]] std::int64_t get_cross_rank() const noexcept { return cross_rank; }
  [[nodiscard]] std::int64_t get_cross_size() const noexcept { return cross_size; }
  /// True when connected to other processes.
  [[nodiscard]] bool connected() const noexcept { return comm_ != nullptr; }

  // ---- object collectives (JSON values; every rank must call them in the same order) --------

  /// Every rank's value, in rank order.
  template <class Json = nlohmann::json>
  [[nodiscard]] std::vector<Json> allgather(const Json& mine) const {
    if (!comm_) return {mine};
    std::vector<Json> out;
    for (auto& bytes : allgather_bytes(Json::to_cbor(mine), "allgather")) out.push_back(Json::from_cbor(bytes));
    return out;
  }
  /// Every rank's value on the chief (in rank order); nullopt on the other ranks.
  template <class Json = nlohmann::json>
  [[nodiscard]] std::optional<std::vector<Json>> gather(const Json& mine) const {
    auto all = allgather(mine);
    if (!is_chief()) return std::nullopt;
    return all;
  }
  /// The chief's value, on every rank (`mine` is ignored elsewhere).
  template <class Json = nlohmann::json>
  [[nodiscard]] Json broadcast(const Json& mine) const {
    if (!comm_) return mine;
    return Json::from_cbor(
        broadcast_bytes(is_chief() ? Json::to_cbor(mine) : std::vector<std::uint8_t>{}, "broadcast"));
  }
  /// Runs `f` (returning a JSON value) on the chief alone and returns its value on every rank,
  /// like `broadcast(f())` — but the other ranks wait on the store, not in a collective, for as
  /// long as the chief is alive: a thread of the chief beats every half second, and only a chief
  /// whose beat stops for the timeout (stopped, hung) or that is lost fails them. For chief-only
  /// work of any length: a checkpoint write, evaluate_full_dataset. `f` must not throw (return
  /// the error in the value instead), and must not call collectives.
  template <class Json = nlohmann::json, class F>
  [[nodiscard]] Json run_on_chief(F&& f, const std::string& what) const {
    if (!comm_) return f();
    std::optional<Json> value;  // the chief's own, returned as f made it
    auto bytes = run_on_chief_bytes(
        [&] {
          value = f();
          return Json::to_cbor(*value);
        },
        what);
    return value ? std::move(*value) : Json::from_cbor(bytes);
  }

  /// Waits until every rank has reached it.
  DTL_INLINE void barrier() const;

  // ---- tensor collectives (what the gradient synchronizer and the Trainer use) -------------

  /// Sums `t` across ranks, in place (blocking).
  DTL_INLINE void allreduce_sum_(torch::Tensor& t) const;
  /// Elementwise maximum across ranks, in place (blocking).
  DTL_INLINE void allreduce_max_(torch::Tensor& t) const;
  /// Starts a sum across ranks of `t` in place; wait on the handle with `wait()`.
  [[nodiscard]] DTL_INLINE c10::intrusive_ptr<c10d::Work> allreduce_sum_async_(torch::Tensor& t) const;
  /// Waits for an asynchronous collective, turning a failure into a DistributedError.
  DTL_INLINE void wait(const c10::intrusive_ptr<c10d::Work>& w, const char* what) const;
  /// Overwrites `t` with the chief's values (blocking).
  DTL_INLINE void broadcast_(torch::Tensor& t) const;

  /// Tells the other ranks why this one is about to fail, so that their errors can name it.
  /// Best effort: never throws.
  DTL_INLINE void post_failure(const std::string& what) const noexcept;
  /// The underlying process group (null in a single process), for user collectives. In LibTorch
  /// 2.x a c10d::ProcessGroup holding dtl's Gloo backend (CPU tensors) and, with the nccl
  /// backend, its NCCL backend (CUDA tensors); in 1.13 the Gloo group itself.
  [[nodiscard]] DTL_INLINE c10::intrusive_ptr<c10d::ProcessGroup> process_group() const;
  [[nodiscard]] DTL_INLINE std::chrono::milliseconds timeout() const noexcept;

 private:
  DTL_INLINE static std::string first_line(const std::string& s);
  DTL_INLINE static std::string seconds(std::chrono::milliseconds t);

  /// What a peer posted before failing, if anything (a quick look; never blocks long).
  [[nodiscard]] DTL_INLINE std::string peer_failure() const;

  template <class F>
  void run(const char* what, F&& f) const {
    try {
      f();
    } catch (const DistributedError&) {
      throw;
    } catch (const std::exception& e) {
      auto peer = peer_failure();
      std::string msg =
          "dtl: rank " + std::to_string(rank) + ": " + what + " across " + std::to_string(size) + " ranks failed: ";
      if (!peer.empty())
        msg += peer;
      else
        msg += "a peer was lost (it exited, was killed, or did not answer within " + seconds(timeout()) +
               "; DTL_DIST_TIMEOUT sets the limit) [" + first_line(e.what()) + "]";
      throw DistributedError(msg);
    }
  }

  [[nodiscard]] DTL_INLINE std::vector<std::vector<std::uint8_t>> allgather_bytes(const std::vector<std::uint8_t>& mine,
                                                                                  const char* what) const;

  [[nodiscard]] DTL_INLINE std::vector<std::uint8_t> broadcast_bytes(std::vector<std::uint8_t> mine,
                                                                     const char* what) const;

  /// run_on_chief's work, in bytes: on the chief `f`'s value, kept alive by a heartbeat while `f`
  /// runs and then posted on the store; elsewhere, the chief's value once posted.
  [[nodiscard]] DTL_INLINE std::vector<std::uint8_t> run_on_chief_bytes(
      const std::function<std::vector<std::uint8_t>()>& f, const std::string& what) const;

  std::shared_ptr<detail::Communicator> comm_;
};

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/distributed/distributed_context-inl.hpp>
#endif

#endif  // DTL_DISTRIBUTED_DISTRIBUTED_CONTEXT_HPP
