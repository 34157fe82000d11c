// dtl — what the environment a run is in adds to every fit: metrics destinations, stop sources and
// a checkpoint store, behind the seam interfaces alone. dtl::init builds them into the context's
// setup (in a Determined trial container: the master's, cluster/session.hpp); the Trainer plugs
// them in between dtl's own and the program's, and knows nothing of where they come from.
#ifndef DTL_ENVIRONMENT_HPP
#define DTL_ENVIRONMENT_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/checkpoint/store.hpp>
#include <dtl/log/metrics_sink.hpp>
#include <dtl/stop_source.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// The seams an environment adds to one fit.
struct EnvironmentSeams {
  std::vector<std::shared_ptr<MetricsSink>> sinks;
  std::vector<std::shared_ptr<StopSource>> stop_sources;
  std::shared_ptr<CheckpointStore> store;  ///< null: the run directory's
};

/// Makes a fit's seams (each fit gets fresh ones, as each fit has its own reporter and stop
/// sources); empty outside any environment.
using EnvironmentSeamsFactory = std::function<EnvironmentSeams()>;

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_ENVIRONMENT_HPP
