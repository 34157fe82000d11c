// dtl — Trainer<Trial>: the training loop, and only the loop. It reads the schedules and drives
// workloads as Determined 0.38.1 does (semantics §2): train until a boundary, then validate /
// checkpoint / report, with a stop check after each. What happens at a boundary lives in its own
// room: the schedule (trainer/schedule.hpp), the evaluation pass (trainer/evaluation.hpp), the
// searcher metric's bookkeeping (trainer/validation_bookkeeping.hpp), metrics across ranks
// (distributed/metric_reduction.hpp), where metrics go (log/reporter.hpp, MetricsSink),
// checkpoints (trainer/checkpoint_session.hpp, CheckpointStore), stop requests (StopSource), the
// closing summary (log/run_summary.hpp). docs/architecture.md.
#ifndef DTL_TRAINER_HPP
#define DTL_TRAINER_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/callback.hpp>
#include <dtl/checkpoint/store.hpp>
#include <dtl/context.hpp>
#include <dtl/data/data_loader.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/distributed/metric_reduction.hpp>
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
#include <dtl/trainer/evaluation.hpp>
#include <dtl/trainer/fit_options.hpp>
#include <dtl/trainer/loop_access.hpp>
#include <dtl/trainer/say_where.hpp>
#include <dtl/trainer/schedule.hpp>
#include <dtl/trainer/seams.hpp>
#include <dtl/trainer/validation_bookkeeping.hpp>
#include <dtl/trainer/wrapped_models.hpp>
#include <dtl/trial.hpp>
#include <dtl/units.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

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
    validations_.start_fit(opts_);
    const bool chief = ctx_.distributed().is_chief();
    reporter_.emplace(ctx_.run_dir(), chief,
                      detail::ReporterOptions{.quiet = opts_.quiet,
                                              .tensorboard = chief && ctx_.get_enable_tensorboard_logging()
                                                                 ? &ctx_.get_tensorboard_writer()
                                                                 : nullptr});
    auto seams = detail::wire_seams(ctx_, *reporter_, program_seams_);
    stop_sources_ = std::move(seams.stop_sources);
    active_store_ = std::move(seams.store);
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
  void add_metrics_sink(std::shared_ptr<MetricsSink> sink) { program_seams_.sinks.push_back(std::move(sink)); }
  /// Another source of stop requests, asked at every boundary after signals and set_stop_requested.
  void add_stop_source(std::shared_ptr<StopSource> source) { program_seams_.stop_sources.push_back(std::move(source)); }
  /// Where checkpoints are written and registered (default: `<run_dir>/checkpoints`, unregistered).
  void set_checkpoint_store(std::shared_ptr<CheckpointStore> store) { program_seams_.store = std::move(store); }

 private:
  using Clock = std::chrono::steady_clock;
  struct ShouldExit {};

  detail::Console& console() { return reporter_->console(); }

  // ---- the run ---------------------------------------------------------------------------

  void run() {
    const auto& dist = ctx_.distributed();
    auto train_loader = trial_.build_training_data_loader();
    const std::int64_t epoch_len = start_data(train_loader);
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
    start_cuda_graphs();
    struct ReleaseGraph {
      std::optional<detail::CudaGraphStep>& g;
      ~ReleaseGraph() { g.reset(); }
    } release_graph{graph_};
    console().start_training(detail::total_batches(opts_, epoch_len), state_.batches_trained);
    detail::notify(callbacks_, &PyTorchCallback::on_training_start);
    loop_.set_train_mode(true);
    collector_.reset_keys();
    phase_ = {};
    try {
      train(it, epoch_len);
    } catch (const InvalidHP&) {
      // As Determined: what was trained is checkpointed before the early exit (one process; on
      // several, the ranks that did not throw are not at the same point).
      if (!dist.connected() && state_.last_ckpt != state_.batches_trained) checkpoint();
      collect_checkpoint();
      try {
        reporter_->flush();
      } catch (const std::exception& e) {  // the early exit is what the searcher must hear
        console().warn(e.what());
      }
      throw;
    } catch (const ShouldExit&) {
      stopped();
    }
    for (const auto& line : summary_->lines(state_.batches_trained, state_.epochs_trained, ctx_.run_dir(),
                                            active_store_->owns_directory()))
      console().note(line);
  }

  /// The fit's data before training: the epoch length, the validation loader, a resume.
  template <class L>
  std::int64_t start_data(L& train_loader) {
    const auto& dist = ctx_.distributed();
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
    evaluation_.open();
    // Determined creates its training iterator here, before loading a checkpoint: torch's
    // DataLoader then draws its base seed from the global generator (a resume restores it after).
    if constexpr (requires { L::draws_torch_base_seed; }) detail::draw_torch_base_seed();
    if (const auto from = checkpoints_->starting_point(opts_.latest_checkpoint)) resume(*from);
    loop_.set_initial_batch(state_.batches_trained);
    summary_->start(state_.batches_trained);
    return epoch_len;
  }

  /// FitOptions::cuda_graphs: checked now, captured after the warm-up batches, released at the end.
  void start_cuda_graphs() {
    graph_.reset();
    if (!opts_.cuda_graphs) return;
    auto note = [this](const std::string& line) { console().note(line); };
    if (auto setup = detail::prepare_cuda_graphs(opts_, ctx_, loop_.scaler(), loop_.apex() != nullptr, note))
      graph_.emplace(std::move(*setup), note);
  }

  /// Workloads until the run's length, each ending at a boundary, whose work is done in
  /// Determined's order (train, validate, checkpoint, report), a stop check after each.
  template <class It>
  void train(It& it, std::int64_t epoch_len) {
    const detail::Periods periods(opts_);
    if (opts_.step_zero_validation && state_.batches_trained == 0) validate();
    while (detail::remaining(opts_, state_) > 0) {
      const auto fired = train_workload(it, epoch_len, periods);
      collect_checkpoint();  // a write started at an earlier boundary
      if (fired.train) check_stop();
      if (fired.validate) {
        if (state_.last_val != state_.batches_trained) validate();
        check_stop();
      }
      if (fired.checkpoint) {
        if (state_.last_ckpt != state_.batches_trained) checkpoint();
        check_stop();
      }
      if (fired.report) check_stop();
    }
    if (state_.last_val != state_.batches_trained) validate();
    if (state_.last_ckpt != state_.batches_trained) checkpoint();
    collect_checkpoint();
    console().finish_training();
    reporter_->flush();
  }

  /// One workload: train until a boundary fires, then report it.
  template <class It>
  detail::Boundaries train_workload(It& it, std::int64_t epoch_len, const detail::Periods& periods) {
    reporter_->phase_started(RunPhase::training);
    collector_.clear();
    if (graph_) graph_->new_workload();
    for (auto& r : loop_.reducers()) r.ops->reset();
    const bool profiling = opts_.profiling_enabled;
    const auto t0 = Clock::now();
    std::int64_t records = 0;
    detail::Boundaries fired;
    while (!fired.any()) {
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
      fired = periods.fired(state_.batches_trained, epoch_idx + 1, epoch_end);
    }
    end_workload(Clock::now() - t0, records, fired.train || fired.report);
    return fired;
  }

  /// train_batch, inside apex's autocast region and loss-scale update when configure_apex_amp
  /// was called, and as a named span of the profiler's trace when it records.
  template <class B>
  void train_step(B& batch, std::int64_t epoch_idx, std::int64_t batch_idx) {
    auto train = [&](auto& b) { return Metrics(trial_.train_batch(b, epoch_idx, batch_idx)); };
    auto step = [&] {
      if (graph_) [[unlikely]]
        graph_->train(batch, train, collector_, batch_idx);
      else
        loop_.under_apex([&] { collector_.add(train(batch), "training"); });
    };
    try {
      loop_.profiled_train_batch(step);
    } catch (const InvalidHP&) {
      throw;  // an early exit the trial asked for, not an error
    } catch (const std::exception& e) {
      detail::say_where(ctx_.distributed(), e,
                        "train_batch threw at batch " + std::to_string(batch_idx) + " (epoch " +
                            std::to_string(epoch_idx) + ")");
      throw;
    }
  }

  void resume(const std::filesystem::path& dir) {
    auto r = checkpoints_->load(dir);
    state_ = static_cast<const TrialState&>(r.state);
    saved_data_position_ = std::move(r.data_position);
    reporter_->resumed_at(state_.batches_trained);
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

  /// A stop was requested: checkpoint what was trained, then each source says what follows.
  void stopped() {
    if (state_.last_ckpt != state_.batches_trained) checkpoint();
    collect_checkpoint();
    console().finish_training();
    bool said = false;
    for (const auto& s : stop_sources_)
      if (auto line = s->stopped(state_.batches_trained)) console().note(*line), said = true;
    if (!said) console().note("stopped at batch " + std::to_string(state_.batches_trained) + " (stop requested)");
    reporter_->flush();
  }

  void end_workload(Clock::duration elapsed, std::int64_t records, bool progress_due) {
    collector_.to_host();
    const auto report = detail::reduce_training_workload(collector_, loop_.reducers(), records, ctx_.distributed());
    MetricsJson timings = nullptr;
    if (opts_.profiling_enabled)
      timings = phase_.take(ctx_.distributed().connected() ? std::optional(loop_.take_gradient_wait_time())
                                                           : std::nullopt);
    reporter_->report({.type = MetricsRecord::Type::training,
                       .steps_completed = state_.batches_trained,
                       .epochs = state_.epochs_trained,
                       .metrics = report.avg_metrics,
                       .batches = collector_.batches(),
                       .records = records,
                       .seconds = std::chrono::duration<double>(elapsed).count(),
                       .progress = detail::progress(opts_, state_, loop_.epoch_length()),
                       .timings = &timings,
                       .report = &report,
                       .progress_due = progress_due});
    validations_.check_training(report.avg_metrics, state_.batches_trained, console());
    // Determined's callbacks get the averages as it reports them: with the counters `batches` and
    // `epochs` added (unless the trial returned such keys), on every rank.
    MetricsJson avg = report.avg_metrics;
    if (!avg.contains("batches")) avg["batches"] = state_.batches_trained;
    if (!avg.contains("epochs")) avg["epochs"] = state_.epochs_trained;
    detail::notify(callbacks_, &PyTorchCallback::on_training_workload_end, avg, report.batch_metrics);
  }

  /// A validation: the evaluation pass, its report, the searcher metric's bookkeeping, and the
  /// checkpoint the policy asks for.
  void validate() {
    collect_checkpoint();
    torch::NoGradGuard no_grad;
    loop_.set_train_mode(false);
    reporter_->phase_started(RunPhase::validating);
    detail::notify(callbacks_, &PyTorchCallback::on_validation_start);
    const auto t0 = Clock::now();
    const auto result = evaluation_.run(callbacks_, console(), opts_.test_mode, state_.batches_trained);
    loop_.set_train_mode(true);
    state_.last_val = state_.batches_trained;
    validations_.validated(result.metrics, state_.batches_trained, *summary_);
    phase_.validation += Clock::now() - t0;
    // A store that knows the experiment's best validation (a cluster's master) is asked before
    // the report, as Determined asks its master; checkpoint_policy best compares with it.
    std::optional<std::optional<double>> experiment_best;
    if (ctx_.distributed().is_chief()) experiment_best = active_store_->experiment_best_validation();
    reporter_->report({.type = MetricsRecord::Type::validation,
                       .steps_completed = state_.batches_trained,
                       .epochs = state_.epochs_trained,
                       .metrics = result.metrics,
                       .batches = result.batches,
                       .seconds = std::chrono::duration<double>(Clock::now() - t0).count()});
    validations_.check_finite(state_.batches_trained, *summary_, console());
    detail::notify(callbacks_, &PyTorchCallback::on_validation_end, result.metrics);
    if (state_.last_ckpt == state_.batches_trained) return;
    bool want = validations_.wants_checkpoint(result.metrics, experiment_best, state_.best_validation);
    // The chief's decision on every rank (only it may know the experiment's best).
    if (const auto& dist = ctx_.distributed(); dist.connected() && opts_.checkpoint_policy == CheckpointPolicy::best)
      want = dist.broadcast(nlohmann::json(want)).template get<bool>();
    if (want) checkpoint();
  }

  void checkpoint() {
    reporter_->phase_started(RunPhase::checkpointing);
    const auto t0 = Clock::now();
    state_.last_ckpt = state_.batches_trained;
    detail::CheckpointState st{state_};
    st.validation_metric = validations_.checkpoint_metric(state_.last_val == state_.batches_trained);
    checkpoints_->save(std::move(st), data_position_ ? data_position_() : nlohmann::json(nullptr));
    phase_.checkpoint += Clock::now() - t0;
  }

  /// A checkpoint written in the background is complete: collected at every boundary.
  void collect_checkpoint() {
    const auto t0 = Clock::now();
    checkpoints_->collect();
    phase_.checkpoint += Clock::now() - t0;
  }

  TrialT& trial_;
  PyTorchTrialContext& ctx_;
  detail::LoopAccess loop_;
  FitOptions opts_;
  TrialState state_;
  Callbacks callbacks_;
  detail::MetricCollector collector_;
  detail::EvaluationPass<TrialT> evaluation_{trial_, ctx_, loop_};
  detail::ValidationBookkeeping validations_;
  std::optional<detail::Reporter> reporter_;
  std::optional<detail::RunSummary> summary_;
  std::optional<detail::CheckpointSession> checkpoints_;
  std::optional<detail::CudaGraphStep> graph_;  // this fit's, under FitOptions::cuda_graphs on CUDA
  detail::EnvironmentSeams program_seams_;           // add_metrics_sink, add_stop_source, set_checkpoint_store
  std::vector<std::shared_ptr<StopSource>> stop_sources_;  // this fit's (trainer/seams.hpp)
  std::shared_ptr<CheckpointStore> active_store_;          // this fit's
  detail::PhaseTimes phase_;
  std::function<nlohmann::json()> data_position_;  // set while the training stream lives
  nlohmann::json saved_data_position_;             // from the checkpoint being resumed
};

template <class TrialT>
Trainer(TrialT&, PyTorchTrialContext&) -> Trainer<TrialT>;

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_HPP
