// dtl — on_chief: chief-only work whose result (or error) every rank receives, so that no rank
// waits for a chief that has failed, and every rank fails the same way when it has.
#ifndef DTL_DISTRIBUTED_ON_CHIEF_HPP
#define DTL_DISTRIBUTED_ON_CHIEF_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/distributed/distributed_context.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Runs `f` (returning JSON) on the chief and hands its result to every rank; an error on the
/// chief is rethrown on every rank (same kind, same message). The others wait for as long as the
/// chief is alive (DistributedContext::run_on_chief), so a long checkpoint write or
/// evaluate_full_dataset does not trip the collective timeout. In one process it is `f()`.
template <class F>
nlohmann::ordered_json on_chief(const DistributedContext& dist, F&& f, const std::string& what) {
  auto packed = dist.template run_on_chief<nlohmann::ordered_json>(
      [&] {
        nlohmann::ordered_json out = {{"result", nullptr}, {"error", ""}, {"kind", ""}};
        try {
          out["result"] = f();
        } catch (const ConfigError& e) {
          out["error"] = e.what(), out["kind"] = "config";
        } catch (const CheckpointError& e) {
          out["error"] = e.what(), out["kind"] = "checkpoint";
        } catch (const DataError& e) {
          out["error"] = e.what(), out["kind"] = "data";
        } catch (const InvalidExperimentException& e) {
          out["error"] = e.what(), out["kind"] = "invalid";
        } catch (const std::exception& e) {
          if (!dist.connected()) throw;
          out["error"] = e.what(), out["kind"] = "other";
        }
        return out;
      },
      what);
  const auto error = packed["error"].template get<std::string>();
  const auto kind = packed["kind"].template get<std::string>();
  if (kind == "config") throw ConfigError(error);
  if (kind == "checkpoint") throw CheckpointError(error);
  if (kind == "data") throw DataError(error);
  if (kind == "invalid") throw InvalidExperimentException(error);
  if (!error.empty()) throw std::runtime_error(dist.is_chief() ? error : "dtl: the chief failed: " + error);
  return std::move(packed["result"]);
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_ON_CHIEF_HPP
