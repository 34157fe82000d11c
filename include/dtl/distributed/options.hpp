// dtl — where a process sits in a distributed run, read from torchrun's environment or given
// explicitly. Torch-free: it only parses and validates; distributed_context.hpp connects.
#ifndef DTL_DISTRIBUTED_OPTIONS_HPP
#define DTL_DISTRIBUTED_OPTIONS_HPP

#include <dtl/errors.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace dtl {

/// Which c10d process group carries the collectives.
enum class DistributedBackend {
  gloo,  ///< CPU tensors (and the only one a CPU-only LibTorch has)
  nccl,  ///< CUDA tensors; needs a CUDA LibTorch and a build with `-Dcuda=true`
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
  DistributedBackend backend = DistributedBackend::gloo;
  /// The store server runs in the launcher (torchrun's agent), not in rank 0.
  bool launcher_hosts_store = false;
  std::string store_prefix;  ///< keys of this attempt (torchrun restarts get their own)

  /// Fills -1 fields, then checks that the numbers describe a run; a ConfigError names the field.
  void validate() {
    if (local_rank < 0) local_rank = rank;
    if (local_size < 0) local_size = size;
    auto bad = [](const std::string& what) {
      throw ConfigError("dtl: distributed setup: " + what +
                        " (launch with torchrun --nproc_per_node=N, or set RANK and WORLD_SIZE consistently)");
    };
    if (size < 1) bad("WORLD_SIZE must be >= 1, got " + std::to_string(size));
    if (rank < 0 || rank >= size)
      bad("RANK must be in [0, WORLD_SIZE), got RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(size));
    if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
      bad("LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE), got " + std::to_string(local_rank) + " of " +
          std::to_string(local_size));
    if (cross_size < 1 || cross_rank < 0 || cross_rank >= cross_size)
      bad("GROUP_RANK must be in [0, GROUP_WORLD_SIZE), got " + std::to_string(cross_rank) + " of " +
          std::to_string(cross_size));
    if (timeout.count() <= 0) bad("the timeout must be positive");
  }
};

namespace detail {

/// An environment variable as an integer; a malformed value is a ConfigError naming it.
inline std::optional<std::int64_t> env_int(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0')
    throw ConfigError(std::string("dtl: environment variable ") + name + "='" + v + "' is not an integer");
  return x;
}

/// Reads torchrun's variables through `get` (std::getenv by default). Without `WORLD_SIZE`, or
/// with `WORLD_SIZE=1`, the run is a single process: nullopt, and no socket is opened.
inline std::optional<DistributedOptions> distributed_options_from(const std::function<const char*(const char*)>& get) {
  const auto world = env_int(get, "WORLD_SIZE");
  if (!world || *world == 1) return std::nullopt;
  DistributedOptions o;
  o.size = *world;
  const auto rank = env_int(get, "RANK");
  if (!rank) throw ConfigError("dtl: WORLD_SIZE is set but RANK is not: set both, or launch with torchrun");
  o.rank = *rank;
  o.local_rank = env_int(get, "LOCAL_RANK").value_or(-1);
  o.local_size = env_int(get, "LOCAL_WORLD_SIZE").value_or(-1);
  o.cross_rank = env_int(get, "GROUP_RANK").value_or(0);
  o.cross_size = env_int(get, "GROUP_WORLD_SIZE").value_or(1);
  if (const char* a = get("MASTER_ADDR"); a && *a) o.master_addr = a;
  if (const auto port = env_int(get, "MASTER_PORT")) {
    if (*port <= 0 || *port > 65535)
      throw ConfigError("dtl: MASTER_PORT=" + std::to_string(*port) + " is not a TCP port (1..65535)");
    o.master_port = static_cast<std::uint16_t>(*port);
  }
  if (const auto t = env_int(get, "DTL_DIST_TIMEOUT")) o.timeout = std::chrono::seconds(*t);
  if (const char* agent = get("TORCHELASTIC_USE_AGENT_STORE"); agent && std::string(agent) == "True") {
    o.launcher_hosts_store = true;
    o.store_prefix =
        "/worker/attempt_" + std::string(get("TORCHELASTIC_RESTART_COUNT") ? get("TORCHELASTIC_RESTART_COUNT") : "0");
  }
  o.validate();
  return o;
}

inline std::optional<DistributedOptions> distributed_options_from_environment() {
  return distributed_options_from([](const char* n) -> const char* { return std::getenv(n); });
}

}  // namespace detail
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_OPTIONS_HPP
