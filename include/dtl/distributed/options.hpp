// dtl — where a process sits in a distributed run, read from torchrun's environment or given
// explicitly. Torch-free: it only parses and validates; distributed_context.hpp connects.
#ifndef DTL_DISTRIBUTED_OPTIONS_HPP
#define DTL_DISTRIBUTED_OPTIONS_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/errors.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {

/// Which c10d backend carries the collectives on the model's tensors. Gloo always carries the
/// CPU ones (metrics, objects, barriers).
enum class DistributedBackend {
  automatic,  ///< nccl when the trial's device is a CUDA device and dtl was built with CUDA, else gloo
  gloo,       ///< CPU tensors (and CUDA tensors, staged through the host); all a CPU-only LibTorch has
  nccl,       ///< CUDA tensors on NCCL; needs a CUDA LibTorch and a build with `-Dcuda=true`
};

/// How to join a distributed run. `dtl::init` reads it from the environment torchrun sets
/// (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `GROUP_RANK`, `GROUP_WORLD_SIZE`,
/// `MASTER_ADDR`, `MASTER_PORT`); code may pass one to `InitOptions::distributed` instead.
///   dtl::init({.distributed = dtl::DistributedOptions{.rank = r, .size = 2, .master_port = 29512}});
struct DistributedOptions {
  std::int64_t rank = 0;
  std::int64_t size = 1;
  std::int64_t local_rank = -1;  ///< -1: the same as rank (one machine)
  std::int64_t local_size = -1;  ///< -1: the same as size
  std::int64_t cross_rank = 0;   ///< the node's index (torchrun's GROUP_RANK)
  std::int64_t cross_size = 1;   ///< the number of nodes (torchrun's GROUP_WORLD_SIZE)
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  /// Longest a collective waits for a peer before every rank fails with a DistributedError.
  /// `DTL_DIST_TIMEOUT` (seconds) overrides it.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  /// `DTL_DIST_BACKEND=gloo|nccl` overrides it.
  DistributedBackend backend = DistributedBackend::automatic;
  /// The store server runs in the launcher (torchrun's agent), not in rank 0.
  bool launcher_hosts_store = false;
  std::string store_prefix;  ///< keys of this attempt (torchrun restarts get their own)
  /// Open the process group even for one process (to run a backend on one GPU, in tests).
  bool connect_single_process = false;

  /// Fills -1 fields, then checks that the numbers describe a run; a ConfigError names the field.
  DTL_INLINE void validate();
};

namespace detail {

/// An environment variable as an integer; a malformed value is a ConfigError naming it.
DTL_INLINE std::optional<std::int64_t> env_int(const std::function<const char*(const char*)>& get, const char* name);

/// Reads torchrun's variables through `get` (std::getenv by default). Without `WORLD_SIZE`, or
/// with `WORLD_SIZE=1`, the run is a single process: nullopt, and no socket is opened.
DTL_INLINE std::optional<DistributedOptions> distributed_options_from(
    const std::function<const char*(const char*)>& get);

DTL_INLINE std::optional<DistributedOptions> distributed_options_from_environment();

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/distributed/options-inl.hpp>
#endif

#endif  // DTL_DISTRIBUTED_OPTIONS_HPP
