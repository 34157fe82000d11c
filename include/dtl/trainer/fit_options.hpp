// dtl — what Trainer::fit takes (FitOptions, Determined's defaults), how the experiment config and
// the command line override it.
#ifndef DTL_TRAINER_FIT_OPTIONS_HPP
#define DTL_TRAINER_FIT_OPTIONS_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/context.hpp>
#include <dtl/errors.hpp>
#include <dtl/units.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {

/// When a validation also saves a checkpoint (Determined's `checkpoint_policy`).
enum class CheckpointPolicy {
  best,  ///< when the searcher metric is strictly better than every earlier validation of the run
  all,   ///< after every validation
  none,  ///< never on validation (periodic and final checkpoints still happen)
};

/// Arguments of Trainer::fit, with Determined's defaults. Command-line flags (`--max-length`,
/// `--test-mode`, `--resume`) and the experiment config override them.
struct FitOptions {
  std::optional<Length> max_length;         ///< required (here, in the config, or on the command line)
  std::optional<Length> validation_period;  ///< none: only at the end
  std::optional<Length> checkpoint_period;  ///< none: only at the end
  /// Batches per training report (and stop check); the config's `scheduling_unit` and
  /// `--scheduling-unit N` override it, as Determined's harness does.
  Length reporting_period = Batch{100};
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::best;
  std::optional<std::filesystem::path> latest_checkpoint;
  bool step_zero_validation = false;
  bool test_mode = false;
  bool profiling_enabled = false;
  bool quiet = false;  ///< no console output (metrics.jsonl, TensorBoard and checkpoints are still written)
  /// Keep only this many of the newest checkpoints (plus `save_trial_best` of the best); unset
  /// keeps every checkpoint. The config's `checkpoint_storage.save_trial_latest` sets it too.
  std::optional<std::int64_t> save_trial_latest;
  std::int64_t save_trial_best = 1;                 ///< with save_trial_latest: the best checkpoints kept besides
  std::string searcher_metric = "validation_loss";  ///< what `best` compares
  bool smaller_is_better = true;
  /// A non-finite (NaN/inf) searcher metric stops training with an error by default, keeping the
  /// last finite checkpoint as latest and best; true keeps training (with a warning).
  bool continue_on_non_finite = false;
  /// Checkpoints are written off the training thread: training pauses only while the state is
  /// copied, the write runs in the background (one at a time), and it is collected — waited for,
  /// a failure raised, on_checkpoint_write_end / on_checkpoint_upload_end run — at the next
  /// boundary (report, validation or checkpoint) and at the end of fit. false: written and
  /// collected at once, as Determined does.
  bool checkpoint_in_background = true;
  /// Capture train_batch — forward, backward, optimizer step, GradScaler, metrics — into a CUDA
  /// graph after `cuda_graph_warmup` eager batches and replay it for every later batch
  /// (torch.cuda.graphs; torch.compile's "reduce-overhead"). Wrapped SGD, Adam and AdamW step
  /// capturably (OptimizerOptions::capturable); one process, aggregation_frequency 1; on the CPU
  /// the run stays eager, with a note. docs/cuda-graphs.md.
  bool cuda_graphs = false;
  std::int64_t cuda_graph_warmup = 3;  ///< eager batches before the capture (at least 1)
};

namespace detail {

/// The options a fit runs with: the experiment config's over fit's arguments, the command line's
/// over both; a missing or scheduled max_length is a ConfigError.
inline FitOptions resolve_fit_options(FitOptions o, const PyTorchTrialContext& ctx) {
  if (const auto& cfg = ctx.experiment_config()) {
    // The config's periods follow Determined's legacy rule: a value < 1 means never.
    auto period = [&](const LengthSpec& p) { return p.value < 1 ? Length{Batch::never()} : to_length(p, ctx); };
    if (auto v = cfg->min_validation_period()) o.validation_period = period(*v);
    if (auto c = cfg->min_checkpoint_period()) o.checkpoint_period = period(*c);
    if (auto metric = cfg->searcher_metric(); !metric.empty()) o.searcher_metric = metric;
    if (auto k = cfg->save_trial_latest()) o.save_trial_latest = *k;
    if (auto k = cfg->save_trial_best()) o.save_trial_best = *k;
    if (auto n = cfg->scheduling_unit()) o.reporting_period = Batch{*n};
    if (cfg->raw.contains("searcher")) o.smaller_is_better = cfg->smaller_is_better();
    if (auto p = cfg->checkpoint_policy())
      o.checkpoint_policy = *p == "all"    ? CheckpointPolicy::all
                            : *p == "none" ? CheckpointPolicy::none
                                           : CheckpointPolicy::best;
  }
  o.max_length = resolved_max_length(ctx, o.max_length);
  if (ctx.run_overrides().test_mode) o.test_mode = true;
  if (auto n = ctx.run_overrides().scheduling_unit) o.reporting_period = Batch{*n};
  if (!o.max_length)
    throw ConfigError(
        "dtl: fit needs a max_length: pass .max_length = dtl::Batch{N} or dtl::Epoch{N} to fit, set "
        "searcher.max_length in the experiment config, or use --max-length batches=N");
  if (o.max_length->is_schedule())
    throw ConfigError("dtl: max_length must be a single number of batches or epochs, not a schedule");
  return o;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_FIT_OPTIONS_HPP
