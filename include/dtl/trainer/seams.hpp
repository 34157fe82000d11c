// dtl — a fit's seams wired in order: where its results go (the reporter's sinks) and where its
// stops come from — dtl's own, then the environment's (a cluster's, environment.hpp), then the
// program's (Trainer::add_metrics_sink, add_stop_source) — and where its checkpoints are stored:
// the program's store, else the environment's, else the run directory's.
#ifndef DTL_TRAINER_SEAMS_HPP
#define DTL_TRAINER_SEAMS_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/checkpoint/store.hpp>
#include <dtl/context.hpp>
#include <dtl/environment.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/trainer/stop_sources.hpp>

#include <memory>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct FitSeams {
  std::vector<std::shared_ptr<StopSource>> stop_sources;
  std::shared_ptr<CheckpointStore> store;
};

/// Adds the environment's and the program's sinks to `reporter` (after dtl's own); returns the
/// fit's stop sources and checkpoint store.
inline FitSeams wire_seams(const PyTorchTrialContext& ctx, Reporter& reporter, const EnvironmentSeams& program) {
  const auto env = ctx.environment_seams();
  for (const auto& s : env.sinks) reporter.add_sink(s);
  for (const auto& s : program.sinks) reporter.add_sink(s);
  FitSeams fit{.stop_sources = default_stop_sources(ctx)};
  fit.stop_sources.insert(fit.stop_sources.end(), env.stop_sources.begin(), env.stop_sources.end());
  fit.stop_sources.insert(fit.stop_sources.end(), program.stop_sources.begin(), program.stop_sources.end());
  fit.store = program.store ? program.store : env.store ? env.store : std::make_shared<RunDirectoryStore>(ctx.run_dir());
  return fit;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_SEAMS_HPP
