// dtl — Trainer<Trial>: the training loop. It reads the schedules, drives workloads (train until
// a boundary, then validate / checkpoint / report), and owns no math: reducers, checkpoints and
// logging live in their own headers. Scheduling follows Determined 0.38.1 (semantics §2).
#ifndef DTL_TRAINER_HPP
#define DTL_TRAINER_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/callback.hpp>
#include <dtl/checkpoint/background_writer.hpp>
#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/context.hpp>
#include <dtl/data/data_loader.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/errors.hpp>
#include <dtl/init.hpp>
#include <dtl/load_trial.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/metrics.hpp>
#include <dtl/reducer.hpp>
#include <dtl/samplers/sampler_state_json.hpp>
#include <dtl/trial.hpp>
#include <dtl/units.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dtl::inline DTL_ABI {

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
};

/// Where a run stands; saved in checkpoints (Determined's `_TrialState`).
struct TrialState {
  std::int64_t batches_trained = 0;
  std::int64_t epochs_trained = 0;
  std::int64_t last_val = 0;
  std::int64_t last_ckpt = 0;
  std::optional<double> best_validation;
};

/// Runs a trial (Determined's `det.pytorch.Trainer`).
///   MyTrial trial(ctx);
///   dtl::Trainer trainer(trial, ctx);
///   trainer.fit({.max_length = dtl::Epoch{1}, .validation_period = dtl::Batch{100}});
template <class TrialT>
class Trainer {
  static_assert(detail::diagnose_trial<TrialT>());

 public:
  Trainer(TrialT& trial, PyTorchTrialContext& context) : trial_(trial), ctx_(context) {}

  void fit(FitOptions options = {}) {
    opts_ = resolve(std::move(options));
    state_ = TrialState{};
    saved_data_position_ = nullptr;
    last_searcher_metric_.reset();
    const bool chief = ctx_.distributed().is_chief();
    reporter_.emplace(
        ctx_.run_dir(), chief,
        detail::ReporterOptions{.quiet = opts_.quiet,
                                .tensorboard = chief && ctx_.get_enable_tensorboard_logging()
                                                   ? &ctx_.get_tensorboard_writer()
                                                   : nullptr});
    callbacks_ = trial_.build_callbacks();
    // on_trial_shutdown runs in reverse order on every exit, including by exception.
    struct ShutdownGuard {
      Callbacks& cbs;
      ~ShutdownGuard() {
        for (auto it = cbs.rbegin(); it != cbs.rend(); ++it) it->callback->on_trial_shutdown();
      }
    };
    for (auto& [name, cb] : callbacks_) cb->on_trial_startup(ctx_.get_initial_batch(), std::nullopt);
    ShutdownGuard guard{callbacks_};
    try {
      run();
    } catch (const std::exception& e) {
      // The other ranks are (or soon will be) waiting on this one: tell them why it stops.
      ctx_.distributed().post_failure(e.what());
      throw;
    }
  }

  /// Counters of the last (or current) fit.
  [[nodiscard]] const TrialState& state() const noexcept { return state_; }

 private:
  using ValLoader = detail::validation_loader_t<TrialT>;

  struct ShouldExit {};
  using Clock = std::chrono::steady_clock;

  /// Time per phase since the last training report (`profiling_enabled`).
  struct PhaseTimes {
    Clock::duration data_wait{}, train_step{}, validation{}, checkpoint{};
  };

  FitOptions resolve(FitOptions o) const {
    if (const auto& cfg = ctx_.experiment_config()) {
      if (auto m = cfg->max_length()) o.max_length = to_length(*m);
      // The config's periods follow Determined's legacy rule: a value < 1 means never.
      auto period = [&](const LengthSpec& p) { return p.value < 1 ? Length{Batch::never()} : to_length(p); };
      if (auto v = cfg->min_validation_period()) o.validation_period = period(*v);
      if (auto c = cfg->min_checkpoint_period()) o.checkpoint_period = period(*c);
      if (auto metric = cfg->searcher_metric(); !metric.empty()) o.searcher_metric = metric;
      if (auto k = cfg->save_trial_latest()) o.save_trial_latest = *k;
      if (auto k = cfg->save_trial_best()) o.save_trial_best = *k;
      if (cfg->raw.contains("searcher")) o.smaller_is_better = cfg->smaller_is_better();
      if (auto p = cfg->checkpoint_policy())
        o.checkpoint_policy = *p == "all"    ? CheckpointPolicy::all
                              : *p == "none" ? CheckpointPolicy::none
                                             : CheckpointPolicy::best;
    }
    const auto& ov = ctx_.run_overrides();
    if (ov.max_length) o.max_length = to_length(*ov.max_length);
    if (ov.test_mode) o.test_mode = true;
    if (!o.max_length)
      throw ConfigError(
          "dtl: fit needs a max_length: pass .max_length = dtl::Batch{N} or dtl::Epoch{N} to fit, set "
          "searcher.max_length in the experiment config, or use --max-length batches=N");
    if (o.max_length->is_schedule())
      throw ConfigError("dtl: max_length must be a single number of batches or epochs, not a schedule");
    return o;
  }

  /// Records become batches as in Determined: `max(records // global_batch_size, 1)`.
  [[nodiscard]] Length to_length(const LengthSpec& spec) const {
    switch (spec.unit) {
      case LengthSpec::Unit::batches:
        return Batch{spec.value};
      case LengthSpec::Unit::epochs:
        return Epoch{spec.value};
      case LengthSpec::Unit::records:
        break;
    }
    return Batch{std::max<std::int64_t>(spec.value / ctx_.get_global_batch_size(), 1)};
  }

  // ---- the run ---------------------------------------------------------------------------

  void run() {
    const auto& dist = ctx_.distributed();
    auto train_loader = trial_.build_training_data_loader();
    std::int64_t epoch_len = detail::epoch_length(train_loader, dist.size);
    // Determined ignores records_per_epoch (its issue #6869); dtl honours it as an explicit epoch length.
    if (const auto& cfg = ctx_.experiment_config())
      if (auto rpe = cfg->records_per_epoch())
        epoch_len = std::max<std::int64_t>(*rpe / ctx_.get_global_batch_size(), 1);
    // Every rank uses the chief's epoch length, so that epoch boundaries agree (semantics §2.1).
    if (dist.connected()) epoch_len = dist.broadcast(nlohmann::json(epoch_len)).template get<std::int64_t>();
    if (epoch_len < 1)
      throw DataError(
          "dtl: the training data loader yields no batch (empty dataset, or drop_last with fewer "
          "examples than batch_size): give it at least one full batch");
    ctx_.epoch_len_ = epoch_len;
    val_loader_.emplace(trial_.build_validation_data_loader());

    if (ctx_.distributed().is_chief())
      for (const auto& p : checkpointer().clean_temporaries())
        reporter_->warn("removed " + p.string() + ", left by an interrupted checkpoint write");
    std::optional<std::filesystem::path> resume_from = opts_.latest_checkpoint;
    if (const auto& r = ctx_.run_overrides().resume) {
      // The chief resolves `latest`, so that every rank resumes from the same checkpoint. With no
      // checkpoint yet, `latest` starts from the beginning (a restart-on-failure loop can always
      // pass it).
      auto resolved = on_chief(
          [&]() -> nlohmann::json {
            if (*r == "latest" && !checkpointer().has_latest()) return nullptr;
            return checkpointer().resolve(*r).string();
          },
          "resolving --resume " + *r);
      if (resolved.is_null())
        reporter_->warn("--resume latest: no checkpoint in " + (ctx_.run_dir() / "checkpoints").string() +
                        " yet; starting from the beginning");
      else
        resume_from = resolved.template get<std::string>();
    }
    if (resume_from) {
      load(*resume_from);
      reporter_->resumed_at(state_.batches_trained);
    }
    ctx_.initial_batch_ = state_.batches_trained;
    summary_ = RunSummary{.start = Clock::now(), .first_batch = state_.batches_trained};

    AdaptOptions adapt{
        .skip = state_.batches_trained, .rank = dist.rank, .world = dist.size, .seed = ctx_.get_trial_seed()};
    const auto saved_position = resumable_position(train_loader, adapt);
    if (saved_position) adapt.resume = &*saved_position;
    auto stream = detail::adapt_training(train_loader, adapt);
    auto it = stream.begin();
    // Checkpoints record where the stream stands, so a resume seeks instead of skipping.
    data_position_ = [&stream, desc = loader_description(train_loader, adapt)]() -> nlohmann::json {
      auto st = stream.state();
      if (!st) return nullptr;
      return {{"loader", desc}, {"sampler", *st}};
    };
    struct ClearPosition {
      std::function<nlohmann::json()>& f;
      ~ClearPosition() { f = nullptr; }
    } clear_position{data_position_};
    reporter_->start_training(total_batches(epoch_len), state_.batches_trained);

    for (auto& [name, cb] : callbacks_) cb->on_training_start();
    set_train_mode(true);
    collector_.reset_keys();

    const Length train_unit = opts_.test_mode ? Length{Batch{1}} : *opts_.max_length;
    const Length validation_period = opts_.validation_period.value_or(Batch::never());
    const Length checkpoint_period = opts_.checkpoint_period.value_or(Batch::never());
    const bool profiling = opts_.profiling_enabled;
    phase_ = {};

    try {
      if (opts_.step_zero_validation && state_.batches_trained == 0) validate();
      while (remaining() > 0) {
        // One workload: train until a boundary fires.
        bool fired_train = false, fired_val = false, fired_ckpt = false, fired_report = false;
        collector_.clear();
        for (auto& r : ctx_.reducers_) r.ops->reset();
        const auto t0 = std::chrono::steady_clock::now();
        std::int64_t records = 0;
        while (!(fired_train || fired_val || fired_ckpt || fired_report)) {
          const std::int64_t batch_idx = state_.batches_trained;
          const std::int64_t epoch_idx = batch_idx / epoch_len;
          const bool epoch_start = batch_idx % epoch_len == 0;
          ctx_.begin_train_batch(batch_idx);
          if (epoch_start)
            for (auto& [name, cb] : callbacks_) cb->on_training_epoch_start(epoch_idx);

          const auto t_data = profiling ? Clock::now() : Clock::time_point{};
          auto batch = ctx_.to_device(std::move(*it));
          const auto t_step = profiling ? Clock::now() : Clock::time_point{};
          records += trial_.get_batch_length(batch);
          auto train_step = [&] {
            if (ctx_.apex_) [[unlikely]] {  // configure_apex_amp: autocast region, a loss scale update per step
              ctx_.apex_->begin_batch();
              {
                std::optional<autocast> region;
                if (ctx_.apex_->autocast_enabled()) region.emplace(ctx_.apex_->device(), ctx_.apex_->dtype());
                collector_.add(Metrics(trial_.train_batch(batch, epoch_idx, batch_idx)), "training");
              }
              if (ctx_.is_update_batch()) ctx_.apex_->end_update_batch();
              return;
            }
            collector_.add(Metrics(trial_.train_batch(batch, epoch_idx, batch_idx)), "training");
          };
          if (ctx_.profiler_) [[unlikely]] {
            ctx_.profiler_->before_batch();
            if (ctx_.profiler_->active()) {
              RECORD_USER_SCOPE("train_batch");  // the batch as a named span in the trace
              train_step();
            } else {
              train_step();
            }
            ctx_.profiler_->after_batch();
          } else {
            train_step();
          }
          ctx_.step_lr_schedulers(batch_idx);
          if (profiling) {
            const auto t_end = Clock::now();
            phase_.data_wait += t_step - t_data;
            phase_.train_step += t_end - t_step;
          }
          ++it;

          ++state_.batches_trained;
          reporter_->batch_trained(state_.batches_trained);
          const bool epoch_end = state_.batches_trained % epoch_len == 0;
          if (epoch_end) {
            for (auto& [name, cb] : callbacks_) cb->on_training_epoch_end(epoch_idx);
            ++state_.epochs_trained;
          }
          const auto n = state_.batches_trained, e = epoch_idx + 1;
          fired_train = train_unit.fires(n, e, epoch_end);
          fired_val = validation_period.fires(n, e, epoch_end);
          fired_ckpt = checkpoint_period.fires(n, e, epoch_end);
          fired_report = opts_.reporting_period.fires(n, e, epoch_end);
        }
        end_workload(std::chrono::steady_clock::now() - t0, records);
        collect_checkpoint();  // a write started at an earlier boundary
        // Boundaries in Determined's order (train, validate, checkpoint, report), a stop check after each.
        if (fired_train) check_stop();
        if (fired_val) {
          if (state_.last_val != state_.batches_trained) validate();
          check_stop();
        }
        if (fired_ckpt) {
          if (state_.last_ckpt != state_.batches_trained) checkpoint();
          check_stop();
        }
        if (fired_report) check_stop();
      }
      if (state_.last_val != state_.batches_trained) validate();
      if (state_.last_ckpt != state_.batches_trained) checkpoint();
      collect_checkpoint();
      reporter_->finish_training();
    } catch (const ShouldExit&) {
      if (state_.last_ckpt != state_.batches_trained) checkpoint();
      collect_checkpoint();
      reporter_->finish_training();
      if (const int sig = detail::stop_signal_flag().load()) {
        // Preempted: the process will exit with 128 + signal once main returns.
        detail::preempted_by_signal().store(sig);
        reporter_->note("stopped at batch " + std::to_string(state_.batches_trained) + " by " +
                        (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig)) +
                        ", checkpoint saved; the program exits with status " + std::to_string(128 + sig));
      } else {
        reporter_->note("stopped at batch " + std::to_string(state_.batches_trained) + " (stop requested)");
      }
    }
    print_summary();
  }

  /// What a user acts on at the end of a run: how far and how fast it went, the best and last
  /// searcher metric, the best and latest checkpoints, and the commands to look further.
  void print_summary() {
    const auto& sm = summary_;
    const double secs = std::chrono::duration<double>(Clock::now() - sm.start).count();
    const auto batches = state_.batches_trained - sm.first_batch;
    auto num = [](double v) {
      std::ostringstream o;
      o << v;
      return o.str();
    };
    auto fixed = [](double v, int digits) {
      std::ostringstream o;
      o << std::fixed << std::setprecision(digits) << v;
      return o.str();
    };
    std::string line = "finished: " + std::to_string(state_.batches_trained) + " batches (" +
                       std::to_string(state_.epochs_trained) + " epochs); this run trained " + std::to_string(batches) +
                       " in " + fixed(secs, secs < 10 ? 2 : 1) + " s";
    if (secs > 0 && batches > 0) line += ", " + fixed(static_cast<double>(batches) / secs, 1) + " batches/s";
    reporter_->note(line);
    if (sm.last)
      reporter_->note(opts_.searcher_metric + ": best " + num(sm.best->first) + " at batch " +
                      std::to_string(sm.best->second) + ", last " + num(sm.last->first) + " at batch " +
                      std::to_string(sm.last->second));
    if (sm.latest_checkpoint)
      reporter_->note("checkpoints: latest " + sm.latest_checkpoint->first + " (batch " +
                      std::to_string(sm.latest_checkpoint->second) + ")" +
                      (sm.best_checkpoint ? "; best " + sm.best_checkpoint->first + " (batch " +
                                                std::to_string(sm.best_checkpoint->second) + ")"
                                          : std::string()));
    const auto run = ctx_.run_dir().string();
    reporter_->note("look further: python3 tools/plot_metrics.py " + run + "/metrics.jsonl -o " + run +
                    "/metrics.html; tensorboard --logdir " + run + "/tensorboard; continue with --run-dir " + run +
                    " --resume latest");
  }

  /// Batches this fit trains in all, when known (for the progress line).
  [[nodiscard]] std::optional<std::int64_t> total_batches(std::int64_t epoch_len) const {
    if (opts_.test_mode) return 1;
    const auto& m = *opts_.max_length;
    if (m.is_batches()) return m.value();
    if (epoch_len == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
    return m.value() * epoch_len;
  }

  /// Validation batches on the chief, when known (for the progress line).
  [[nodiscard]] std::optional<std::int64_t> validation_batches(std::int64_t world) {
    if (opts_.test_mode) return 1;
    if constexpr (AdaptableLoader<ValLoader>)
      return val_loader_->epoch_length(world);
    else if constexpr (std::ranges::sized_range<ValLoader>)
      return static_cast<std::int64_t>(std::ranges::size(*val_loader_));
    else
      return std::nullopt;
  }

  /// Runs `f` (returning JSON) on the chief and hands its result to every rank; an error on the
  /// chief is rethrown on every rank (same kind, same message), so no rank waits for a chief
  /// that has failed. The others wait for as long as the chief is alive (run_on_chief), so a
  /// long checkpoint write or evaluate_full_dataset does not trip the collective timeout.
  template <class F>
  nlohmann::ordered_json on_chief(F&& f, const std::string& what) {
    const auto& dist = ctx_.distributed();
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

  /// Determined's loop condition: `max_length.value - (batches | epochs trained) > 0`.
  [[nodiscard]] std::int64_t remaining() const {
    if (opts_.test_mode) return state_.batches_trained == 0 ? 1 : 0;
    const auto& m = *opts_.max_length;
    return m.value() - (m.is_batches() ? state_.batches_trained : state_.epochs_trained);
  }

  /// A stop asked on any rank (a callback, SIGINT/SIGTERM) stops every rank at this boundary.
  void check_stop() {
    bool stop = ctx_.get_stop_requested() || detail::stop_signal_received();
    if (const auto& dist = ctx_.distributed(); dist.connected()) {
      auto flag = torch::tensor({stop ? 1 : 0}, torch::kInt);
      dist.allreduce_max_(flag);
      stop = flag.item<int>() != 0;
    }
    if (stop) throw ShouldExit{};
  }

  void set_train_mode(bool on) {
    for (auto& m : ctx_.models_) m->train(on);
  }

  void end_workload(std::chrono::steady_clock::duration elapsed, std::int64_t records) {
    auto report = detail::reduce_training(collector_);
    if (const auto& dist = ctx_.distributed(); dist.connected()) {
      // One collective: every rank's per-batch metrics and its custom reducers' values.
      auto reducers = detail::prepare_reducers(ctx_.reducers_, /*training=*/true);
      nlohmann::ordered_json batches = nlohmann::ordered_json::array();
      for (const auto& b : report.batch_metrics) batches.push_back(b);
      const auto all = dist.allgather(nlohmann::ordered_json{{"batches", std::move(batches)},
                                                             {"records", records},
                                                             {"reducers", reducers.mine},
                                                             {"float32", report.float32_keys}});
      std::vector<MetricsJson> per_rank;
      std::vector<nlohmann::json> reducer_values;
      auto float32_keys = report.float32_keys;  // float32 on every rank: numpy averages them in float32
      records = 0;  // the workload's records across all ranks
      for (const auto& r : all) {
        records += r.at("records").template get<std::int64_t>();
        per_rank.push_back(r.at("batches"));
        reducer_values.push_back(nlohmann::json(r.at("reducers")));
        const auto theirs = r.at("float32").template get<std::vector<std::string>>();
        std::erase_if(float32_keys, [&](const std::string& k) {
          return std::find(theirs.begin(), theirs.end(), k) == theirs.end();
        });
      }
      report = detail::average_training_across_ranks(per_rank, collector_.keys(), float32_keys);
      if (!reducers.active.empty()) detail::finish_reducers(reducers, reducer_values, report.avg_metrics);
    } else {
      detail::report_reducers(ctx_.reducers_, /*training=*/true, report.avg_metrics,
                              [this](const nlohmann::json& mine) { return ctx_.distributed().allgather(mine); });
    }
    const auto secs = std::chrono::duration<double>(elapsed).count();
    const auto batches = collector_.batches();
    MetricsJson timings = nullptr;
    if (opts_.profiling_enabled) {
      auto s = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
      timings = {{"data_wait_seconds", s(phase_.data_wait)},
                 {"train_step_seconds", s(phase_.train_step)},
                 {"validation_seconds", s(phase_.validation)},
                 {"checkpoint_seconds", s(phase_.checkpoint)}};
      if (ctx_.distributed().connected()) timings["allreduce_wait_seconds"] = s(ctx_.take_gradient_wait_time());
      phase_ = {};
    }
    reporter_->training(state_.batches_trained, state_.epochs_trained, progress(), report,
                        {.batches = batches, .records = records, .seconds = secs}, timings);
    for (const auto& [name, v] : report.avg_metrics.items())
      if (v.is_number_float() && !std::isfinite(v.template get<double>()) && non_finite_warned_.insert(name).second)
        reporter_->warn("training metric '" + name + "' is " + number_word(v.template get<double>()) +
                        " in the workload ending at batch " + std::to_string(state_.batches_trained) +
                        " (its first non-finite value): the run may be diverging; a lower learning rate, gradient "
                        "clipping (step_optimizer(opt, dtl::clip_grad_norm(1.0))) or mixed-precision loss "
                        "scaling may help");
    for (auto& [name, cb] : callbacks_) cb->on_training_workload_end(report.avg_metrics, report.batch_metrics);
  }

  /// The share of the run done, for the console. Per batch whenever the run's length in
  /// batches is known — also for an Epoch length — so that it moves with every report, not once
  /// per epoch (Determined's own progress counts whole epochs).
  [[nodiscard]] double progress() const {
    if (opts_.test_mode) return 1.0;
    const auto& m = *opts_.max_length;
    if (const auto total = total_batches(ctx_.epoch_len_))
      return static_cast<double>(state_.batches_trained) / static_cast<double>(std::max<std::int64_t>(*total, 1));
    return static_cast<double>(state_.epochs_trained) / static_cast<double>(std::max<std::int64_t>(m.value(), 1));
  }

  void validate() {
    collect_checkpoint();
    torch::NoGradGuard no_grad;
    set_train_mode(false);
    for (auto& [name, cb] : callbacks_) cb->on_validation_start();
    const auto t0 = std::chrono::steady_clock::now();
    MetricsJson metrics = MetricsJson::object();
    std::int64_t batches = 0;
    if constexpr (HasEvaluateBatch<TrialT>) {
      for (auto& [name, cb] : callbacks_) cb->on_validation_epoch_start();
      const auto& dist = ctx_.distributed();
      auto&& stream = detail::adapt_evaluation(
          *val_loader_, {.skip = 0, .rank = dist.rank, .world = dist.size, .seed = ctx_.get_trial_seed()});
      val_collector_.reset_keys();
      for (auto& r : ctx_.reducers_) r.ops->reset();
      reporter_->start_validation(validation_batches(dist.size));
      std::vector<Metrics> outputs;
      const bool keep_outputs = !callbacks_.empty();
      std::int64_t idx = 0;
      for (auto&& raw : stream) {
        // A dtl stream's batch is its own, so it is moved; a raw loader's belongs to the loader,
        // which the next validation iterates again, so it is copied (tensor handles only).
        auto batch = [&] {
          if constexpr (RawLoader<ValLoader>)
            return ctx_.to_device(raw);
          else
            return ctx_.to_device(std::move(raw));
        }();
        std::optional<autocast> region;  // configure_apex_amp casts evaluation too, as apex's patched functions do
        if (ctx_.apex_ && ctx_.apex_->autocast_enabled()) [[unlikely]]
          region.emplace(ctx_.apex_->device(), ctx_.apex_->dtype());
        Metrics m(detail::call_evaluate_batch(trial_, batch, idx++));
        region.reset();
        val_collector_.add(m, "validation");
        reporter_->batch_validated(idx);
        if (keep_outputs) outputs.push_back(std::move(m));
        if (opts_.test_mode) break;
      }
      const auto er = trial_.evaluation_reducer();
      for (auto& [name, cb] : callbacks_) cb->on_validation_epoch_end(outputs);
      // One collective (none in a single process): each rank's per-metric values and batch
      // counts, and its custom reducers' values. An empty shard fails every rank, not just its
      // own, which would leave the others waiting.
      nlohmann::json slots_json = nlohmann::json::array();
      if (val_collector_.batches() > 0)
        for (const auto& v : detail::reduce_validation_slot(val_collector_, er)) slots_json.push_back(v.value);
      auto reducers = detail::prepare_reducers(ctx_.reducers_, /*training=*/false);
      const auto all = dist.allgather(nlohmann::json{{"batches", val_collector_.batches()},
                                                     {"keys", val_collector_.keys()},
                                                     {"values", std::move(slots_json)},
                                                     {"reducers", reducers.mine}});
      std::string empty;
      for (std::size_t r = 0; r < all.size(); ++r)
        if (all[r].at("batches").template get<std::int64_t>() == 0)
          empty += (empty.empty() ? "" : ", ") + std::to_string(r);
      if (!empty.empty())
        throw DataError("dtl: validation_loader is empty on rank(s) " + empty +
                        ": their shard of build_validation_data_loader() has no batch; give the validation set at "
                        "least one batch per rank (" +
                        std::to_string(dist.size) + " ranks)");
      const auto& keys = val_collector_.keys();
      for (std::size_t r = 0; r < all.size(); ++r)
        if (all[r].at("keys").template get<std::vector<std::string>>() != keys)
          throw std::invalid_argument("dtl: validation metrics must have the same names on every rank: rank " +
                                      std::to_string(r) + " returned " + all[r].at("keys").dump());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        std::vector<detail::SlotValue> slots;
        for (const auto& rank : all)
          slots.push_back(
              {rank.at("values").at(i).template get<double>(), rank.at("batches").template get<std::int64_t>()});
        metrics[keys[i]] = detail::reduce_cross_slot(detail::reducer_for(er, keys[i]), slots);
      }
      std::vector<nlohmann::json> reducer_values;
      for (const auto& rank : all) reducer_values.push_back(rank.at("reducers"));
      if (!reducers.active.empty()) detail::finish_reducers(reducers, reducer_values, metrics);
      batches = val_collector_.batches();
    } else {
      // The chief's metrics on every rank: callbacks and the checkpoint policy see the same values.
      metrics = on_chief(
          [&] {
            MetricsJson out = MetricsJson::object();
            Metrics m(trial_.evaluate_full_dataset(*val_loader_));
            for (const auto& [k, v] : m)
              out[k] = v.is_tensor() ? detail::tensor_to_json(v.tensor()) : nlohmann::ordered_json(v.number());
            return out;
          },
          "running evaluate_full_dataset");
    }
    set_train_mode(true);
    state_.last_val = state_.batches_trained;
    const auto searched = metrics.find(opts_.searcher_metric);
    last_searcher_metric_ = searched != metrics.end() && searched->is_number()
                                ? std::optional<double>(searched->get<double>())
                                : std::nullopt;
    std::optional<double> non_finite;  // never the best, never a checkpoint's metric
    if (last_searcher_metric_ && !std::isfinite(*last_searcher_metric_)) non_finite = std::exchange(last_searcher_metric_, std::nullopt);
    if (last_searcher_metric_) {
      const std::pair<double, std::int64_t> now{*last_searcher_metric_, state_.batches_trained};
      summary_.last = now;
      const auto& best = summary_.best;
      if (!best || (opts_.smaller_is_better ? now.first < best->first : now.first > best->first)) summary_.best = now;
    }
    phase_.validation += std::chrono::steady_clock::now() - t0;
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    reporter_->validation(state_.batches_trained, state_.epochs_trained, metrics,
                          {.batches = batches, .seconds = secs});
    if (non_finite) {
      const std::string what = "the searcher metric '" + opts_.searcher_metric + "' is " +
                               number_word(*non_finite) + " at batch " +
                               std::to_string(state_.batches_trained);
      const std::string kept = summary_.latest_checkpoint
                                   ? "the last finite checkpoint is " + summary_.latest_checkpoint->first +
                                         " (batch " + std::to_string(summary_.latest_checkpoint->second) + ")"
                                   : std::string("no checkpoint was written before it");
      if (!opts_.continue_on_non_finite)
        throw NonFiniteMetricError("dtl: " + what + ": training stopped (it diverged); " + kept +
                                   ", and stays latest and best; resume from it with a lower learning rate, or set "
                                   "FitOptions.continue_on_non_finite = true to train on");
      if (non_finite_warned_.insert("validation:" + opts_.searcher_metric).second)
        reporter_->warn(what + "; training continues (continue_on_non_finite), and no checkpoint counts it as best");
    }
    for (auto& [name, cb] : callbacks_) cb->on_validation_end(metrics);
    if (state_.last_ckpt != state_.batches_trained && wants_checkpoint(metrics)) checkpoint();
  }

  /// The checkpoint policy; `best` compares with the best validation of this run (Determined
  /// compares with the experiment-wide best, which a local run does not have).
  bool wants_checkpoint(const MetricsJson& metrics) {
    switch (opts_.checkpoint_policy) {
      case CheckpointPolicy::all:
        return true;
      case CheckpointPolicy::none:
        return false;
      case CheckpointPolicy::best:
        break;
    }
    const auto it = metrics.find(opts_.searcher_metric);
    if (it == metrics.end() || !it->is_number())
      throw InvalidExperimentException(
          "dtl: checkpoint_policy best compares the searcher metric '" + opts_.searcher_metric +
          "', but validation returned no numeric metric of that name: set FitOptions.searcher_metric (or "
          "searcher.metric in the config) to one of your validation metrics, or use CheckpointPolicy::all");
    const double v = it->get<double>();
    if (!std::isfinite(v)) return false;  // a NaN/inf metric is never the best
    const auto& best = state_.best_validation;
    const bool better = !best || (opts_.smaller_is_better ? v < *best : v > *best);
    if (better) state_.best_validation = v;
    return better;
  }

  detail::Checkpointer& checkpointer() {
    if (!checkpointer_) checkpointer_.emplace(ctx_.run_dir() / "checkpoints");
    return *checkpointer_;
  }

  void checkpoint() {
    collect_checkpoint();
    const auto t0 = Clock::now();
    struct AddTime {
      Clock::duration& d;
      Clock::time_point t0;
      ~AddTime() { d += Clock::now() - t0; }
    } add_time{phase_.checkpoint, t0};
    state_.last_ckpt = state_.batches_trained;
    // What differs per rank — its RNG and its data position — goes to the chief, which writes
    // them all, so each rank resumes with its own (Determined saves only the chief's RNG).
    const auto& dist = ctx_.distributed();
    nlohmann::json mine = detail::rank_rng_states(rng_cuda_device());
    mine["data_position"] = data_position_ ? data_position_() : nlohmann::json(nullptr);
    auto ranks = dist.gather(mine);
    const bool background = opts_.checkpoint_in_background;
    const auto taken = on_chief(
        [&] {
          auto snap = std::make_shared<detail::CheckpointSnapshot>(checkpointer().snapshot(
              ctx_.checkpoint_state(),
              detail::CheckpointState{
                  .batches_trained = state_.batches_trained,
                  .epochs_trained = state_.epochs_trained,
                  .last_val = state_.last_val,
                  .last_ckpt = state_.last_ckpt,
                  .best_validation = state_.best_validation,
                  .data_position = mine["data_position"],
                  .validation_metric = state_.last_val == state_.batches_trained ? last_searcher_metric_ : std::nullopt,
                  .ranks = nlohmann::json(std::move(*ranks))},
              callbacks_));
          const nlohmann::json target = {{"uuid", snap->target.uuid}};
          auto job = [this, snap] {
            auto w = checkpointer().write(*snap);
            checkpointer().collect_garbage({.latest = opts_.save_trial_latest,
                                            .best = opts_.save_trial_best,
                                            .smaller_is_better = opts_.smaller_is_better});
            return w;
          };
          if (background) {
            writer_.start(std::move(job));
          } else {
            job();
            for (auto& [name, cb] : callbacks_) cb->on_checkpoint_write_end(snap->target.dir);
          }
          return target;
        },
        "writing a checkpoint");
    pending_checkpoint_ = {taken.at("uuid").template get<std::string>(), state_.batches_trained};
    if (!background) checkpoint_complete();
  }

  /// Collects the checkpoint written in the background, if one is: waits for its write, raises
  /// its failure on every rank, and runs the hooks of a complete checkpoint (on_checkpoint_write_end
  /// on the chief, on_checkpoint_upload_end on every rank). Every rank calls it at the same points.
  void collect_checkpoint() {
    if (!pending_checkpoint_) return;
    const auto t0 = Clock::now();
    on_chief(
        [&] {
          if (auto w = writer_.wait())
            for (auto& [name, cb] : callbacks_) cb->on_checkpoint_write_end(w->dir);
          return nlohmann::json(nullptr);
        },
        "writing a checkpoint");
    phase_.checkpoint += Clock::now() - t0;
    checkpoint_complete();
  }

  void checkpoint_complete() {
    const auto [uuid, batch] = *pending_checkpoint_;
    pending_checkpoint_.reset();
    summary_.latest_checkpoint = {checkpointer().checkpoint_dir(uuid).string(), batch};
    if (summary_.best && summary_.best->second == batch) summary_.best_checkpoint = summary_.latest_checkpoint;
    reporter_->note("checkpoint " + uuid + " at batch " + std::to_string(batch));
    for (auto& [name, cb] : callbacks_) cb->on_checkpoint_upload_end(uuid);
  }

  void load(const std::filesystem::path& dir) {
    auto st = checkpointer().load(ctx_.checkpoint_state(), dir, callbacks_);
    state_ = TrialState{.batches_trained = st.batches_trained,
                        .epochs_trained = st.epochs_trained,
                        .last_val = st.last_val,
                        .last_ckpt = st.last_ckpt,
                        .best_validation = st.best_validation};
    saved_data_position_ = std::move(st.data_position);
    restore_rank_state(st.ranks);
    ctx_.broadcast_model_state();
    // A resumed trial keeps its seed, so that its data order (seeded from it) continues.
    if (st.trial_seed && *st.trial_seed != ctx_.s_.trial_seed) {
      reporter_->warn("resuming with the checkpoint's trial seed " + std::to_string(*st.trial_seed) + ", not " +
                      std::to_string(ctx_.s_.trial_seed) + ": a resumed trial keeps its seed");
      ctx_.s_.trial_seed = *st.trial_seed;
    }
    warn_changed_hparams(dir);
    reporter_->note("resumed from " + dir.string() + " at batch " + std::to_string(state_.batches_trained));
  }

  /// Hyperparameters given now that differ from the checkpoint's: named, with which value is in
  /// effect where, and recorded in the next checkpoints' load_data.json.
  void warn_changed_hparams(const std::filesystem::path& dir) {
    nlohmann::json saved;
    try {
      saved = nlohmann::json::parse(detail::read_file(dir / "load_data.json")).value("hparams", nlohmann::json());
    } catch (const std::exception&) {
      return;  // an older or foreign checkpoint: nothing to compare with
    }
    if (!saved.is_object()) return;
    const auto& now = ctx_.get_hparams();
    nlohmann::json changed = nlohmann::json::object();
    std::string list;
    auto add = [&](const std::string& k, const nlohmann::json& given, const nlohmann::json& ckpt) {
      changed[k] = {{"given", given}, {"checkpoint", ckpt}};
      list += (list.empty() ? "" : ", ") + k + " = " + (given.is_null() ? std::string("(none)") : given.dump()) +
              " (checkpoint: " + (ckpt.is_null() ? std::string("(none)") : ckpt.dump()) + ")";
    };
    for (const auto& [k, v] : now.items())
      if (!saved.contains(k) || saved[k] != v) add(k, v, saved.value(k, nlohmann::json()));
    for (const auto& [k, v] : saved.items())
      if (!now.contains(k)) add(k, nullptr, v);
    if (changed.empty()) return;
    reporter_->warn("resuming with hyperparameters that differ from the checkpoint's: " + list +
                    ". The trial was built with the values given now; what the checkpoint restores keeps the "
                    "checkpoint's values (each optimizer group's learning rate and momentum, LR schedulers, "
                    "callbacks). Set those in code after the load to change them, or start a new run");
    ctx_.resume_notes_ = {{"hparams_changed_at_resume", std::move(changed)}, {"resumed_from", dir.string()}};
  }

  std::optional<torch::Device> rng_cuda_device() const {
    return detail::rng_cuda_device(ctx_.device(), ctx_.distributed().local_rank);
  }

  /// This rank's own RNG and data position from the checkpoint's per-rank states. With another
  /// world size the data is re-sharded (the stream skips to the same global batch) and ranks
  /// the checkpoint did not have start from the chief's RNG.
  void restore_rank_state(const nlohmann::json& ranks) {
    const auto& dist = ctx_.distributed();
    if (!ranks.is_array() || ranks.empty()) return;  // an older checkpoint: the chief's RNG for all
    const auto saved_world = static_cast<std::int64_t>(ranks.size());
    if (saved_world != dist.size) {
      reporter_->warn("the checkpoint was written by " + std::to_string(saved_world) + " ranks, this run has " +
                      std::to_string(dist.size) +
                      ": the global batch and the data position carry over, the data is "
                      "re-sharded, and ranks without a saved RNG state start from the chief's");
      saved_data_position_ = nullptr;
    }
    if (dist.rank >= saved_world) return;
    const auto& me = ranks.at(static_cast<std::size_t>(dist.rank));
    detail::restore_rank_rng_states(me, rng_cuda_device());
    if (saved_world == dist.size) saved_data_position_ = me.value("data_position", nlohmann::json(nullptr));
  }

  template <class L>
  static std::string loader_description(const L& loader, const AdaptOptions& a) {
    if constexpr (AdaptableLoader<L>)
      return loader.describe(a);
    else
      return "";
  }

  /// The sampler state saved by the checkpoint being resumed, when it fits this run's loader;
  /// otherwise (another loader, or an older checkpoint) the stream skips, which is exact too.
  template <class L>
  std::optional<samplers::sampler_state> resumable_position(const L& loader, const AdaptOptions& a) {
    if (state_.batches_trained == 0) return std::nullopt;
    if constexpr (RawLoader<L>) {
      reporter_->warn(
          "dataset reproducibility checks are disabled: the training data starts from its beginning "
          "again (batch " +
          std::to_string(state_.batches_trained) + " of the run)");
      return std::nullopt;
    } else {
      const auto& saved = saved_data_position_;
      if (saved.is_null() || !saved.contains("sampler")) return std::nullopt;
      if (saved.value("loader", std::string{}) != loader.describe(a)) {
        reporter_->warn("the training data loader differs from the checkpoint's (" +
                        saved.value("loader", std::string{}) + " vs " + loader.describe(a) + "): skipping " +
                        std::to_string(a.skip) + " batches instead");
        return std::nullopt;
      }
      auto st = saved.at("sampler").template get<samplers::sampler_state>();
      if (st.position != a.skip) {
        reporter_->warn("the checkpoint's data position (batch " + std::to_string(st.position) +
                        ") does not match its batch count: skipping " + std::to_string(a.skip) + " batches instead");
        return std::nullopt;
      }
      return st;
    }
  }

  TrialT& trial_;
  PyTorchTrialContext& ctx_;
  FitOptions opts_;
  TrialState state_;
  Callbacks callbacks_;
  detail::MetricCollector collector_;
  detail::MetricCollector val_collector_;
  std::optional<ValLoader> val_loader_;
  std::optional<detail::Reporter> reporter_;
  std::optional<detail::Checkpointer> checkpointer_;
  /// After checkpointer_: destroyed first, so a write in flight finishes before what it uses goes.
  detail::BackgroundWriter<detail::WrittenCheckpoint> writer_;
  std::optional<std::pair<std::string, std::int64_t>> pending_checkpoint_;  // uuid and batch, until collected
  PhaseTimes phase_;
  std::function<nlohmann::json()> data_position_;  // set while the training stream lives
  /// "nan", "inf" or "-inf" for a non-finite value (what a warning names), else the number.
  static std::string number_word(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return std::to_string(v);
  }

  std::set<std::string> non_finite_warned_;         // metrics already warned about
  std::optional<double> last_searcher_metric_;     // of the latest validation, if it reported one
  nlohmann::json saved_data_position_;             // from the checkpoint being resumed
  /// This fit's figures for the closing summary.
  struct RunSummary {
    Clock::time_point start;
    std::int64_t first_batch = 0;
    std::optional<std::pair<double, std::int64_t>> best, last;  // searcher metric and its batch
    std::optional<std::pair<std::string, std::int64_t>> best_checkpoint, latest_checkpoint;
  };
  RunSummary summary_;
};

template <class TrialT>
Trainer(TrialT&, PyTorchTrialContext&) -> Trainer<TrialT>;

}  // namespace dtl

#endif  // DTL_TRAINER_HPP
