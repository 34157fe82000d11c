// dtl — Trainer<Trial>: the training loop, and only the loop. It reads the schedules and drives
// workloads as Determined 0.38.1 does (semantics §2): train until a boundary, then validate /
// checkpoint / report, with a stop check after each. What happens at a boundary lives in its own
// room: metrics across ranks (distributed/metric_reduction.hpp), where metrics go
// (log/reporter.hpp, MetricsSink), checkpoints (trainer/checkpoint_session.hpp, CheckpointStore),
// stop requests (StopSource), the closing summary (log/run_summary.hpp). docs/architecture.md.
#ifndef DTL_TRAINER_HPP
#define DTL_TRAINER_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/callback.hpp>
#include <dtl/checkpoint/store.hpp>
#include <dtl/cluster/session.hpp>
#include <dtl/context.hpp>
#include <dtl/data/data_loader.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/distributed/metric_reduction.hpp>
#include <dtl/distributed/on_chief.hpp>
#include <dtl/errors.hpp>
#include <dtl/init.hpp>
#include <dtl/load_trial.hpp>
#include <dtl/log/metrics_sink.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/log/run_summary.hpp>
#include <dtl/metrics.hpp>
#include <dtl/nn.hpp>
#include <dtl/builtin_reducers.hpp>
#include <dtl/stop_source.hpp>
#include <dtl/trainer/checkpoint_session.hpp>
#include <dtl/trainer/cuda_graph_step.hpp>
#include <dtl/trainer/data_position.hpp>
#include <dtl/trainer/fit_options.hpp>
#include <dtl/trainer/loop_access.hpp>
#include <dtl/trainer/stop_sources.hpp>
#include <dtl/trainer/wrapped_models.hpp>
#include <dtl/trial.hpp>
#include <dtl/units.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dtl::inline DTL_ABI {

/// Runs a trial (Determined's `det.pytorch.Trainer`).
///   MyTrial trial(ctx);
///   dtl::Trainer trainer(trial, ctx);
///   trainer.fit({.max_length = dtl::Epoch{1}, .validation_period = dtl::Batch{100}});
template <class TrialT>
class Trainer {
  static_assert(detail::diagnose_trial<TrialT>());

 public:
  Trainer(TrialT& trial, PyTorchTrialContext& context) : trial_(trial), ctx_(context), loop_(context) {}

  void fit(FitOptions options = {}) {
    detail::check_models_wrapped(ctx_);
    opts_ = detail::resolve_fit_options(std::move(options), ctx_);
    loop_.set_max_length(*opts_.max_length);
    state_ = TrialState{};
    saved_data_position_ = nullptr;
    last_searcher_metric_.reset();
    const bool chief = ctx_.distributed().is_chief();
    reporter_.emplace(ctx_.run_dir(), chief,
                      detail::ReporterOptions{.quiet = opts_.quiet,
                                              .tensorboard = chief && ctx_.get_enable_tensorboard_logging()
                                                                 ? &ctx_.get_tensorboard_writer()
                                                                 : nullptr});
    // Where results go and stops come from: dtl's own, the environment's (a Determined cluster's
    // master), then the program's.
    auto env = detail::environment_seams(ctx_.cluster_session());
    for (const auto& s : env.sinks) reporter_->add_sink(s);
    for (const auto& s : extra_sinks_) reporter_->add_sink(s);
    stop_sources_ = detail::default_stop_sources(ctx_);
    stop_sources_.insert(stop_sources_.end(), env.stop_sources.begin(), env.stop_sources.end());
    stop_sources_.insert(stop_sources_.end(), extra_stop_sources_.begin(), extra_stop_sources_.end());
    active_store_ = store_ ? store_ : env.store ? env.store : std::make_shared<detail::RunDirectoryStore>(ctx_.run_dir());
    summary_.emplace(opts_.searcher_metric, opts_.smaller_is_better);
    callbacks_ = trial_.build_callbacks();
    checkpoints_.emplace(ctx_, console(), callbacks_, active_store_,
                         detail::CheckpointSessionOptions{.background = opts_.checkpoint_in_background,
                                                          .retention = {.latest = opts_.save_trial_latest,
                                                                        .best = opts_.save_trial_best,
                                                                        .smaller_is_better = opts_.smaller_is_better}},
                         [this](const std::string& dir, std::int64_t batch) { summary_->checkpointed(dir, batch); });
    // on_trial_shutdown runs in reverse order on every exit, including by exception.
    struct ShutdownGuard {
      Callbacks& cbs;
      ~ShutdownGuard() { detail::notify_reverse(cbs, &PyTorchCallback::on_trial_shutdown); }
    };
    detail::notify(callbacks_, &PyTorchCallback::on_trial_startup, ctx_.get_initial_batch(),
                   std::optional<std::string>());
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

  /// Another destination of the reported metrics, after metrics.jsonl, TensorBoard and the console
  /// (the chief reports; the other ranks ignore it). Takes effect at the next fit.
  void add_metrics_sink(std::shared_ptr<MetricsSink> sink) { extra_sinks_.push_back(std::move(sink)); }
  /// Another source of stop requests, asked at every boundary after signals and set_stop_requested.
  void add_stop_source(std::shared_ptr<StopSource> source) { extra_stop_sources_.push_back(std::move(source)); }
  /// Where checkpoints are written and registered (default: `<run_dir>/checkpoints`, unregistered).
  void set_checkpoint_store(std::shared_ptr<CheckpointStore> store) { store_ = std::move(store); }

 private:
  using ValLoader = detail::validation_loader_t<TrialT>;
  using Clock = std::chrono::steady_clock;
  struct ShouldExit {};

  /// Time per phase since the last training report (`profiling_enabled`).
  struct PhaseTimes {
    Clock::duration data_wait{}, train_step{}, validation{}, checkpoint{};
  };

  detail::Console& console() { return reporter_->console(); }

  // ---- the run ---------------------------------------------------------------------------

  void run() {
    const auto& dist = ctx_.distributed();
    auto train_loader = trial_.build_training_data_loader();
    std::int64_t epoch_len = detail::epoch_length(train_loader, dist.size);
    // Determined ignores records_per_epoch (its issue #6869); dtl honours it as an explicit epoch length.
    if (const auto& cfg = ctx_.experiment_config())
      if (auto rpe = cfg->records_per_epoch()) epoch_len = detail::batches_of_records(*rpe, ctx_.get_global_batch_size());
    // Every rank uses the chief's epoch length, so that epoch boundaries agree (semantics §2.1).
    if (dist.connected()) epoch_len = dist.broadcast(nlohmann::json(epoch_len)).template get<std::int64_t>();
    if (epoch_len < 1)
      throw DataError(
          "dtl: the training data loader yields no batch (empty dataset, or drop_last with fewer "
          "examples than batch_size): give it at least one full batch");
    loop_.set_epoch_length(epoch_len);
    val_loader_.emplace(trial_.build_validation_data_loader());
    // Determined creates its training iterator here, before loading a checkpoint: torch's
    // DataLoader then draws its base seed from the global generator (a resume restores it after).
    if constexpr (requires { decltype(train_loader)::draws_torch_base_seed; }) detail::draw_torch_base_seed();

    if (const auto from = checkpoints_->starting_point(opts_.latest_checkpoint)) resume(*from);
    loop_.set_initial_batch(state_.batches_trained);
    summary_->start(state_.batches_trained);

    AdaptOptions adapt{
        .skip = state_.batches_trained, .rank = dist.rank, .world = dist.size, .seed = ctx_.get_trial_seed()};
    const auto saved_position = detail::resumable_position(train_loader, adapt, saved_data_position_, console());
    if (saved_position) adapt.resume = &*saved_position;
    auto stream = detail::adapt_training(train_loader, adapt);
    auto it = stream.begin();
    // Checkpoints record where the stream stands, so a resume seeks instead of skipping.
    data_position_ = [&stream, desc = detail::loader_description(train_loader, adapt)]() -> nlohmann::json {
      auto st = stream.state();
      if (!st) return nullptr;
      return {{"loader", desc}, {"sampler", *st}};
    };
    struct ClearPosition {
      std::function<nlohmann::json()>& f;
      ~ClearPosition() { f = nullptr; }
    } clear_position{data_position_};
    // FitOptions::cuda_graphs: checked now, captured after the warm-up batches, released at the end.
    graph_.reset();
    if (opts_.cuda_graphs)
      if (auto setup = detail::prepare_cuda_graphs(opts_, ctx_, loop_.scaler(), loop_.apex() != nullptr,
                                                   [this](const std::string& line) { console().note(line); }))
        graph_.emplace(std::move(*setup), [this](const std::string& line) { console().note(line); });
    struct ReleaseGraph {
      std::optional<detail::CudaGraphStep>& g;
      ~ReleaseGraph() { g.reset(); }
    } release_graph{graph_};
    console().start_training(total_batches(epoch_len), state_.batches_trained);

    detail::notify(callbacks_, &PyTorchCallback::on_training_start);
    loop_.set_train_mode(true);
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
        reporter_->phase_started(RunPhase::training);
        bool fired_train = false, fired_val = false, fired_ckpt = false, fired_report = false;
        collector_.clear();
        if (graph_) graph_->new_workload();
        for (auto& r : loop_.reducers()) r.ops->reset();
        const auto t0 = Clock::now();
        std::int64_t records = 0;
        while (!(fired_train || fired_val || fired_ckpt || fired_report)) {
          const std::int64_t batch_idx = state_.batches_trained;
          const std::int64_t epoch_idx = batch_idx / epoch_len;
          loop_.begin_train_batch(batch_idx);
          if (batch_idx % epoch_len == 0) detail::notify(callbacks_, &PyTorchCallback::on_training_epoch_start, epoch_idx);

          const auto t_data = profiling ? Clock::now() : Clock::time_point{};
          // Under cuda_graphs the batch stays where the loader made it: it is copied into the graph's inputs.
          auto batch = graph_ ? std::move(*it) : ctx_.to_device(std::move(*it));
          const auto t_step = profiling ? Clock::now() : Clock::time_point{};
          records += trial_.get_batch_length(batch);
          train_step(batch, epoch_idx, batch_idx);
          loop_.step_lr_schedulers(batch_idx);
          if (profiling) {
            const auto t_end = Clock::now();
            phase_.data_wait += t_step - t_data;
            phase_.train_step += t_end - t_step;
          }
          ++it;

          ++state_.batches_trained;
          // the loss shown from the first batch on, read at the redraw rate where it is on the host
          console().batch_trained(state_.batches_trained, [this] { return collector_.latest_on_host("loss"); });
          const bool epoch_end = state_.batches_trained % epoch_len == 0;
          if (epoch_end) {
            detail::notify(callbacks_, &PyTorchCallback::on_training_epoch_end, epoch_idx);
            ++state_.epochs_trained;
          }
          const auto n = state_.batches_trained, e = epoch_idx + 1;
          fired_train = train_unit.fires(n, e, epoch_end);
          fired_val = validation_period.fires(n, e, epoch_end);
          fired_ckpt = checkpoint_period.fires(n, e, epoch_end);
          fired_report = opts_.reporting_period.fires(n, e, epoch_end);
        }
        end_workload(Clock::now() - t0, records, fired_train || fired_report);
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
      console().finish_training();
      reporter_->flush();
    } catch (const InvalidHP&) {
      // As Determined: what was trained is checkpointed before the early exit (one process; on
      // several, the ranks that did not throw are not at the same point).
      if (!ctx_.distributed().connected() && state_.last_ckpt != state_.batches_trained) checkpoint();
      collect_checkpoint();
      try {
        reporter_->flush();
      } catch (const std::exception& e) {  // the early exit is what the searcher must hear
        console().warn(e.what());
      }
      throw;
    } catch (const ShouldExit&) {
      if (state_.last_ckpt != state_.batches_trained) checkpoint();
      collect_checkpoint();
      console().finish_training();
      bool said = false;
      for (const auto& s : stop_sources_)
        if (auto line = s->stopped(state_.batches_trained)) console().note(*line), said = true;
      if (!said) console().note("stopped at batch " + std::to_string(state_.batches_trained) + " (stop requested)");
      reporter_->flush();
    }
    for (const auto& line : summary_->lines(state_.batches_trained, state_.epochs_trained, ctx_.run_dir(),
                                                active_store_->owns_directory()))
      console().note(line);
  }

  /// train_batch, inside apex's autocast region and loss-scale update when configure_apex_amp
  /// was called, and as a named span of the profiler's trace when it records.
  template <class B>
  void train_step(B& batch, std::int64_t epoch_idx, std::int64_t batch_idx) {
    auto step = [&] {
      if (graph_) [[unlikely]] {
        graph_->train(
            batch, [&](auto& b) { return Metrics(trial_.train_batch(b, epoch_idx, batch_idx)); }, collector_,
            batch_idx);
        return;
      }
      if (auto* apex = loop_.apex()) [[unlikely]] {
        apex->begin_batch();
        {
          std::optional<autocast> region;
          if (apex->autocast_enabled()) region.emplace(apex->device(), apex->dtype());
          collector_.add(Metrics(trial_.train_batch(batch, epoch_idx, batch_idx)), "training");
        }
        if (loop_.is_update_batch()) apex->end_update_batch();
        return;
      }
      collector_.add(Metrics(trial_.train_batch(batch, epoch_idx, batch_idx)), "training");
    };
    try {
      if (auto* profiler = loop_.profiler()) [[unlikely]] {
        profiler->before_batch();
        if (profiler->active()) {
          RECORD_USER_SCOPE("train_batch");
          step();
        } else {
          step();
        }
        profiler->after_batch();
      } else {
        step();
      }
    } catch (const InvalidHP&) {
      throw;  // an early exit the trial asked for, not an error
    } catch (const std::exception& e) {
      say_where(e, "train_batch threw at batch " + std::to_string(batch_idx) + " (epoch " +
                       std::to_string(epoch_idx) + ")");
      throw;
    }
  }

  /// Before an exception from the trial's code leaves fit: which hook, at which batch (its
  /// message alone rarely says), on stderr of every rank. The exception itself goes on unchanged.
  void say_where(const std::exception& e, const std::string& where) const {
    const auto& dist = ctx_.distributed();
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << "dtl: " << where << (dist.size > 1 ? " on rank " + std::to_string(dist.rank) : std::string()) << ": "
              << what << std::endl;
  }

  void resume(const std::filesystem::path& dir) {
    auto r = checkpoints_->load(dir);
    state_ = static_cast<const TrialState&>(r.state);
    saved_data_position_ = std::move(r.data_position);
    reporter_->resumed_at(state_.batches_trained);
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

  /// Determined's loop condition: `max_length.value - (batches | epochs trained) > 0`.
  [[nodiscard]] std::int64_t remaining() const {
    if (opts_.test_mode) return state_.batches_trained == 0 ? 1 : 0;
    const auto& m = *opts_.max_length;
    return m.value() - (m.is_batches() ? state_.batches_trained : state_.epochs_trained);
  }

  /// A stop any source asks for on any rank stops every rank at this boundary.
  void check_stop() {
    bool stop = false;
    for (const auto& s : stop_sources_)
      if (s->stop_requested()) {
        stop = true;
        break;
      }
    if (const auto& dist = ctx_.distributed(); dist.connected()) {
      auto flag = torch::tensor({stop ? 1 : 0}, torch::kInt);
      dist.allreduce_max_(flag);
      stop = flag.item<int>() != 0;
    }
    if (stop) throw ShouldExit{};
  }

  void end_workload(Clock::duration elapsed, std::int64_t records, bool progress_due) {
    collector_.to_host();
    const auto report = detail::reduce_training_workload(collector_, loop_.reducers(), records, ctx_.distributed());
    MetricsJson timings = nullptr;
    if (opts_.profiling_enabled) {
      auto s = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
      timings = {{"data_wait_seconds", s(phase_.data_wait)},
                 {"train_step_seconds", s(phase_.train_step)},
                 {"validation_seconds", s(phase_.validation)},
                 {"checkpoint_seconds", s(phase_.checkpoint)}};
      if (ctx_.distributed().connected()) timings["allreduce_wait_seconds"] = s(loop_.take_gradient_wait_time());
      phase_ = {};
    }
    reporter_->report({.type = MetricsRecord::Type::training,
                       .steps_completed = state_.batches_trained,
                       .epochs = state_.epochs_trained,
                       .metrics = report.avg_metrics,
                       .batches = collector_.batches(),
                       .records = records,
                       .seconds = std::chrono::duration<double>(elapsed).count(),
                       .progress = progress(),
                       .timings = &timings,
                       .report = &report,
                       .progress_due = progress_due});
    for (const auto& [name, v] : report.avg_metrics.items())
      if (v.is_number_float() && !std::isfinite(v.template get<double>()) && non_finite_warned_.insert(name).second)
        console().warn("training metric '" + name + "' is " + number_word(v.template get<double>()) +
                       " in the workload ending at batch " + std::to_string(state_.batches_trained) +
                       " (its first non-finite value): the run may be diverging; a lower learning rate, gradient "
                       "clipping (step_optimizer(opt, dtl::clip_grad_norm(1.0))) or mixed-precision loss "
                       "scaling may help");
    // Determined's callbacks get the averages as it reports them: with the counters `batches` and
    // `epochs` added (unless the trial returned such keys), on every rank.
    MetricsJson avg = report.avg_metrics;
    if (!avg.contains("batches")) avg["batches"] = state_.batches_trained;
    if (!avg.contains("epochs")) avg["epochs"] = state_.epochs_trained;
    detail::notify(callbacks_, &PyTorchCallback::on_training_workload_end, avg, report.batch_metrics);
  }

  /// The share of the run done, for the console. Per batch whenever the run's length in
  /// batches is known — also for an Epoch length — so that it moves with every report, not once
  /// per epoch (Determined's own progress counts whole epochs).
  [[nodiscard]] double progress() const {
    if (opts_.test_mode) return 1.0;
    const auto& m = *opts_.max_length;
    if (const auto total = total_batches(loop_.epoch_length()))
      return static_cast<double>(state_.batches_trained) / static_cast<double>(std::max<std::int64_t>(*total, 1));
    return static_cast<double>(state_.epochs_trained) / static_cast<double>(std::max<std::int64_t>(m.value(), 1));
  }

  void validate() {
    collect_checkpoint();
    torch::NoGradGuard no_grad;
    loop_.set_train_mode(false);
    reporter_->phase_started(RunPhase::validating);
    detail::notify(callbacks_, &PyTorchCallback::on_validation_start);
    const auto t0 = Clock::now();
    MetricsJson metrics = MetricsJson::object();
    std::int64_t batches = 0;
    if constexpr (HasEvaluateBatch<TrialT>) {
      detail::notify(callbacks_, &PyTorchCallback::on_validation_epoch_start);
      const auto& dist = ctx_.distributed();
      auto&& stream = detail::adapt_evaluation(
          *val_loader_, {.skip = 0, .rank = dist.rank, .world = dist.size, .seed = ctx_.get_trial_seed()});
      val_collector_.reset_keys();
      for (auto& r : loop_.reducers()) r.ops->reset();
      console().start_validation(validation_batches(dist.size));
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
        if (auto* apex = loop_.apex(); apex && apex->autocast_enabled()) [[unlikely]]
          region.emplace(apex->device(), apex->dtype());
        Metrics m = [&] {
          try {
            return Metrics(detail::call_evaluate_batch(trial_, batch, idx++));
          } catch (const InvalidHP&) {
            throw;
          } catch (const std::exception& e) {
            say_where(e, "evaluate_batch threw at validation batch " + std::to_string(idx - 1) +
                             " (the validation after training batch " + std::to_string(state_.batches_trained) + ")");
            throw;
          }
        }();
        region.reset();
        val_collector_.add(m, "validation");
        console().batch_validated(idx);
        if (keep_outputs) outputs.push_back(std::move(m));
        if (opts_.test_mode) break;
      }
      detail::notify(callbacks_, &PyTorchCallback::on_validation_epoch_end, outputs);
      val_collector_.to_host();
      metrics = detail::reduce_validation(val_collector_, trial_.evaluation_reducer(), loop_.reducers(), dist);
      batches = val_collector_.batches();
    } else {
      // The chief's metrics on every rank: callbacks and the checkpoint policy see the same values.
      metrics = detail::on_chief(
          ctx_.distributed(),
          [&] {
            MetricsJson out = MetricsJson::object();
            Metrics m(trial_.evaluate_full_dataset(*val_loader_));
            for (const auto& [k, v] : m)
              out[k] = v.is_tensor() ? detail::tensor_to_json(v.tensor()) : nlohmann::ordered_json(v.number());
            return out;
          },
          "running evaluate_full_dataset");
    }
    loop_.set_train_mode(true);
    state_.last_val = state_.batches_trained;
    const auto searched = metrics.find(opts_.searcher_metric);
    last_searcher_metric_ = searched != metrics.end() && searched->is_number()
                                ? std::optional<double>(searched->get<double>())
                                : std::nullopt;
    std::optional<double> non_finite;  // never the best, never a checkpoint's metric
    if (last_searcher_metric_ && !std::isfinite(*last_searcher_metric_))
      non_finite = std::exchange(last_searcher_metric_, std::nullopt);
    if (last_searcher_metric_) summary_->validated(*last_searcher_metric_, state_.batches_trained);
    phase_.validation += Clock::now() - t0;
    // A store that knows the experiment's best validation (a cluster's master) is asked before
    // the report, as Determined asks its master; checkpoint_policy best compares with it.
    std::optional<std::optional<double>> experiment_best;
    if (ctx_.distributed().is_chief()) experiment_best = active_store_->experiment_best_validation();
    reporter_->report({.type = MetricsRecord::Type::validation,
                       .steps_completed = state_.batches_trained,
                       .epochs = state_.epochs_trained,
                       .metrics = metrics,
                       .batches = batches,
                       .seconds = std::chrono::duration<double>(Clock::now() - t0).count()});
    if (non_finite) {
      const std::string what = "the searcher metric '" + opts_.searcher_metric + "' is " + number_word(*non_finite) +
                               " at batch " + std::to_string(state_.batches_trained);
      const auto& latest = summary_->latest_checkpoint();
      const std::string kept = latest ? "the last finite checkpoint is " + latest->first + " (batch " +
                                            std::to_string(latest->second) + ")"
                                      : std::string("no checkpoint was written before it");
      if (!opts_.continue_on_non_finite)
        throw NonFiniteMetricError("dtl: " + what + ": training stopped (it diverged); " + kept +
                                   ", and stays latest and best; resume from it with a lower learning rate, or set "
                                   "FitOptions.continue_on_non_finite = true to train on");
      if (non_finite_warned_.insert("validation:" + opts_.searcher_metric).second)
        console().warn(what + "; training continues (continue_on_non_finite), and no checkpoint counts it as best");
    }
    detail::notify(callbacks_, &PyTorchCallback::on_validation_end, metrics);
    if (state_.last_ckpt == state_.batches_trained) return;
    bool want = wants_checkpoint(metrics, experiment_best);
    // The chief's decision on every rank (only it may know the experiment's best).
    if (const auto& dist = ctx_.distributed(); dist.connected() && opts_.checkpoint_policy == CheckpointPolicy::best)
      want = dist.broadcast(nlohmann::json(want)).template get<bool>();
    if (want) checkpoint();
  }

  /// The checkpoint policy; `best` compares with the best validation of this run, or with the
  /// experiment's best before this validation where the store knows it (a cluster's master, as
  /// Determined).
  bool wants_checkpoint(const MetricsJson& metrics, const std::optional<std::optional<double>>& experiment_best) {
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
    auto beats = [&](const std::optional<double>& best) {
      return !best || (opts_.smaller_is_better ? v < *best : v > *best);
    };
    const bool better = beats(experiment_best ? *experiment_best : state_.best_validation);
    if (beats(state_.best_validation)) state_.best_validation = v;
    return better;
  }

  void checkpoint() {
    reporter_->phase_started(RunPhase::checkpointing);
    const auto t0 = Clock::now();
    state_.last_ckpt = state_.batches_trained;
    detail::CheckpointState st{state_};
    st.validation_metric = state_.last_val == state_.batches_trained ? last_searcher_metric_ : std::nullopt;
    checkpoints_->save(std::move(st), data_position_ ? data_position_() : nlohmann::json(nullptr));
    phase_.checkpoint += Clock::now() - t0;
  }

  /// A checkpoint written in the background is complete: collected at every boundary.
  void collect_checkpoint() {
    const auto t0 = Clock::now();
    checkpoints_->collect();
    phase_.checkpoint += Clock::now() - t0;
  }

  /// "nan", "inf" or "-inf" for a non-finite value (what a warning names), else the number.
  static std::string number_word(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return std::to_string(v);
  }

  TrialT& trial_;
  PyTorchTrialContext& ctx_;
  detail::LoopAccess loop_;
  FitOptions opts_;
  TrialState state_;
  Callbacks callbacks_;
  detail::MetricCollector collector_;
  detail::MetricCollector val_collector_;
  std::optional<ValLoader> val_loader_;
  std::optional<detail::Reporter> reporter_;
  std::optional<detail::RunSummary> summary_;
  std::optional<detail::CheckpointSession> checkpoints_;
  std::optional<detail::CudaGraphStep> graph_;  // this fit's, under FitOptions::cuda_graphs on CUDA
  std::vector<std::shared_ptr<StopSource>> stop_sources_;
  std::vector<std::shared_ptr<MetricsSink>> extra_sinks_;
  std::vector<std::shared_ptr<StopSource>> extra_stop_sources_;
  std::shared_ptr<CheckpointStore> store_;
  std::shared_ptr<CheckpointStore> active_store_;  // this fit's: store_, the environment's, or the run directory's
  PhaseTimes phase_;
  std::function<nlohmann::json()> data_position_;  // set while the training stream lives
  std::set<std::string> non_finite_warned_;        // metrics already warned about
  std::optional<double> last_searcher_metric_;     // of the latest validation, if it reported one
  nlohmann::json saved_data_position_;             // from the checkpoint being resumed
};

template <class TrialT>
Trainer(TrialT&, PyTorchTrialContext&) -> Trainer<TrialT>;

}  // namespace dtl

#endif  // DTL_TRAINER_HPP
