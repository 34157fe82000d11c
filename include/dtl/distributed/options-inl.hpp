// dtl — the non-template definitions of <dtl/distributed/options.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_DISTRIBUTED_OPTIONS_INL_HPP
#define DTL_DISTRIBUTED_OPTIONS_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/distributed/options.hpp>

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE void DistributedOptions::validate() {
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

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE std::optional<std::int64_t> env_int(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0')
    throw ConfigError(std::string("dtl: environment variable ") + name + "='" + v + "' is not an integer");
  return x;
}

DTL_INLINE std::optional<DistributedOptions> distributed_options_from(
    const std::function<const char*(const char*)>& get) {
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
  if (const char* b = get("DTL_DIST_BACKEND"); b && *b) {
    const std::string name = b;
    if (name == "gloo")
      o.backend = DistributedBackend::gloo;
    else if (name == "nccl")
      o.backend = DistributedBackend::nccl;
    else
      throw ConfigError("dtl: DTL_DIST_BACKEND='" + name + "' is not a backend; write gloo or nccl");
  }
  if (const char* agent = get("TORCHELASTIC_USE_AGENT_STORE"); agent && std::string(agent) == "True") {
    o.launcher_hosts_store = true;
    o.store_prefix =
        "/worker/attempt_" + std::string(get("TORCHELASTIC_RESTART_COUNT") ? get("TORCHELASTIC_RESTART_COUNT") : "0");
  }
  o.validate();
  return o;
}

DTL_INLINE std::optional<DistributedOptions> distributed_options_from_environment() {
  return distributed_options_from([](const char* n) -> const char* { return std::getenv(n); });
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_OPTIONS_INL_HPP
