// dtl — PyTorchTrialContext: what a trial uses to wrap its models, optimizers and schedulers,
// run backward and optimizer steps (with gradient aggregation and clipping), read
// hyperparameters, and ask where training stands. Built by dtl::init (see init.hpp).
#ifndef DTL_CONTEXT_HPP
#define DTL_CONTEXT_HPP

#include <torch/torch.h>

#include <dtl/amp/apex.hpp>
#include <dtl/amp/autocast.hpp>
#include <dtl/amp/grad_scaler.hpp>
#include <dtl/checkpoint/trial_state_refs.hpp>
#include <dtl/cluster/info.hpp>
#include <dtl/config/experiment_config.hpp>
#include <dtl/config/hparams.hpp>
#include <dtl/data/batch.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/device.hpp>
#include <dtl/detail/run_dir_lock.hpp>
#include <dtl/detail/specialization_of.hpp>
#include <dtl/distributed/data_parallel.hpp>
#include <dtl/distributed/distributed_context.hpp>
#include <dtl/environment.hpp>
#include <dtl/errors.hpp>
#include <dtl/log/tensorboard.hpp>
#include <dtl/lr_schedulers.hpp>
#include <dtl/optim/python_optimizers.hpp>
#include <dtl/optim/torch_optim.hpp>
#include <dtl/optim/step_options.hpp>
#include <dtl/custom_reducers.hpp>
#include <dtl/profiler.hpp>
#include <dtl/version.hpp>
#include <dtl/units.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

namespace detail {
class LoopAccess;
}  // namespace detail

/// Gradient clipping for step_optimizer (Determined's `clip_grads=lambda params: ...`).
///   ctx.step_optimizer(opt, dtl::clip_grad_norm(1.0));
[[nodiscard]] inline auto clip_grad_norm(double max_norm, double norm_type = 2.0) {
  return
      [=](const std::vector<torch::Tensor>& params) { torch::nn::utils::clip_grad_norm_(params, max_norm, norm_type); };
}
[[nodiscard]] inline auto clip_grad_value(double clip_value) {
  return [=](const std::vector<torch::Tensor>& params) { torch::nn::utils::clip_grad_value_(params, clip_value); };
}

/// No gradient clipping (step_optimizer's default).
struct NoClip {};

/// What the command line asked of fit(); it overrides fit's arguments from code.
struct RunOverrides {
  std::optional<LengthSpec> max_length;
  bool test_mode = false;
  std::optional<std::string> resume;  ///< "latest" or a checkpoint directory
  std::optional<std::int64_t> scheduling_unit;  ///< `--scheduling-unit N`: the reporting period, in batches
};

namespace detail {
/// What wrap_lr_scheduler refuses with a diagnostic: a scheduler (or a pointer to one) without step().
template <class S>
concept NotLRScheduler = !LRSchedulerLike<pointee_t<std::remove_cvref_t<S>>>;

/// A model as configure_apex_amp takes it: a ModuleHolder (`torch::nn::Linear`, a TORCH_MODULE
/// type) or a std::shared_ptr to a module.
struct ModuleRef {
  template <class T>
  ModuleRef(const torch::nn::ModuleHolder<T>& m) : ptr(m.ptr()) {}  // NOLINT(google-explicit-constructor)
  template <std::derived_from<torch::nn::Module> T>
  ModuleRef(const std::shared_ptr<T>& m) : ptr(m) {}  // NOLINT(google-explicit-constructor)
  std::shared_ptr<torch::nn::Module> ptr;
};

struct ContextSetup {
  nlohmann::json hparams = nlohmann::json::object();
  std::optional<ExperimentConfig> config;
  std::uint64_t trial_seed = 0;
  bool trial_seed_given = false;  // by --seed, InitOptions.seed or the config's experiment_seed
  torch::Device device = torch::kCPU;
  std::int64_t aggregation_frequency = 1;
  bool average_aggregated_gradients = true;
  DistributedContext distributed{};
  std::filesystem::path run_dir;
  RunOverrides overrides{};
  std::shared_ptr<RunDirLock> run_dir_lock;  // the chief's, held while the context lives
  bool enable_tensorboard_logging = true;
  /// In a Determined trial container: what the master told it.
  std::shared_ptr<const ClusterInfo> cluster_info;
  /// What the environment adds to every fit (a cluster's master: its metrics, storage and
  /// preemption; environment.hpp); empty elsewhere.
  EnvironmentSeamsFactory environment;
};
}  // namespace detail

/// The trial's view of the harness (Determined's `det.pytorch.PyTorchTrialContext`).
class PyTorchTrialContext {
 public:
  DTL_INLINE explicit PyTorchTrialContext(detail::ContextSetup setup);
  PyTorchTrialContext(const PyTorchTrialContext&) = delete;
  PyTorchTrialContext& operator=(const PyTorchTrialContext&) = delete;

  // ---- wrapping -------------------------------------------------------------------------

  /// Registers a model (a ModuleHolder such as `torch::nn::Linear`, a `TORCH_MODULE` type, or a
  /// `std::shared_ptr<Module>`), moves it to `device()`, and returns it. Checkpoints save
  /// models in wrap order. In a distributed run the model becomes data-parallel with PyTorch
  /// DDP's semantics (`options`): rank 0's parameters and buffers are broadcast now, and every
  /// backward pass averages the gradients across ranks (except on the batches where gradient
  /// aggregation only accumulates). Every rank must wrap the same models in the same order.
  ///   model_ = ctx.wrap_model(Net{}, {.find_unused_parameters = true});
  template <class M>
  M wrap_model(M model, DataParallelOptions options = {}) {
    if constexpr (requires { model.ptr(); })
      register_model(model.ptr(), options);
    else
      register_model(model, options);
    return model;
  }

  /// Registers an optimizer and returns a shared handle to it (pass it to step_optimizer and
  /// to LR schedulers). `backward_passes_per_step` is accepted for Determined parity; gradient
  /// aggregation across batches is `aggregation_frequency` (dtl::init).
  template <std::derived_from<torch::optim::Optimizer> O>
  std::shared_ptr<O> wrap_optimizer(O optimizer, std::int64_t backward_passes_per_step = 1) {
    return wrap_optimizer(std::move(optimizer), OptimizerOptions{.backward_passes_per_step = backward_passes_per_step});
  }
  /// With torch.optim's `foreach` / `fused` choice (optim/step_options.hpp). SGD, Adam and AdamW
  /// step as torch.optim does (optim/python_optimizers.hpp): on CUDA with multi-tensor ops by
  /// default, as Python's default does.
  ///   opt_ = ctx.wrap_optimizer(torch::optim::AdamW(model_->parameters(), 1e-3), {.fused = true});
  template <std::derived_from<torch::optim::Optimizer> O>
  std::shared_ptr<O> wrap_optimizer(O optimizer, const OptimizerOptions& options) {
    return wrap_optimizer(detail::make_wrapped_optimizer<O>(std::move(optimizer), options),
                          options.backward_passes_per_step);
  }
  template <std::derived_from<torch::optim::Optimizer> O>
  std::shared_ptr<O> wrap_optimizer(std::shared_ptr<O> optimizer, std::int64_t backward_passes_per_step = 1) {
    register_optimizer(optimizer, backward_passes_per_step);
    return optimizer;
  }

  /// Registers an LR scheduler that the Trainer steps per `step_mode` every `frequency` units,
  /// and returns it (Determined returns the original scheduler too).
  template <LRSchedulerLike S>
  std::shared_ptr<S> wrap_lr_scheduler(S scheduler, StepMode step_mode, std::int64_t frequency = 1) {
    return wrap_lr_scheduler(std::make_shared<S>(std::move(scheduler)), step_mode, frequency);
  }
  template <LRSchedulerLike S>
  std::shared_ptr<S> wrap_lr_scheduler(std::shared_ptr<S> scheduler, StepMode step_mode, std::int64_t frequency = 1) {
    if (frequency < 1) throw InvalidExperimentException("dtl: wrap_lr_scheduler: frequency must be >= 1");
    LRSchedulerEntry e{scheduler, [](void* s) { static_cast<S*>(s)->step(); }, step_mode, frequency, nullptr, nullptr};
    if constexpr (std::derived_from<S, lr::LRScheduler>) {
      e.save = [](const void* s) { return static_cast<const S*>(s)->state_dict(); };
      e.load = [](void* s, const nlohmann::json& j) { static_cast<S*>(s)->load_state_dict(j); };
    }
    lr_schedulers_.push_back(std::move(e));
    return scheduler;
  }

  /// Registers a GradScaler (Determined's `wrap_scaler`) so checkpoints save and restore it
  /// (`scaler_state_dict`), and returns it; pass it to step_optimizer and call its update().
  ///   scaler_ = ctx.wrap_scaler(dtl::GradScaler{});
  ///   { dtl::autocast region(torch::kCPU); loss = ...; }
  ///   ctx.backward(scaler_->scale(loss));
  ///   ctx.step_optimizer(opt_, scaler_);
  ///   scaler_->update();
  DTL_INLINE std::shared_ptr<GradScaler> wrap_scaler(GradScaler scaler);
  DTL_INLINE std::shared_ptr<GradScaler> wrap_scaler(std::shared_ptr<GradScaler> scaler);

  /// Determined's `configure_apex_amp(models, optimizers, ...)`, mapped onto native mixed
  /// precision (apex is deprecated upstream): O0 = float32; O1/O2 = an autocast region around
  /// train_batch and evaluate_batch plus a dynamic GradScaler per loss; O3 = autocast with a
  /// static scale of 1; a number as `loss_scale` is a static scale. The models and optimizers
  /// must be wrapped already and are returned unchanged (float32 weights in every level), so:
  ///   ctx.configure_apex_amp({a_, b_}, {opt1_, opt2_}, {.num_losses = 2});
  ///   ... ctx.backward(loss_a, 0); ctx.backward(loss_b, 1);
  DTL_INLINE void configure_apex_amp(std::initializer_list<detail::ModuleRef> models,
                                     std::initializer_list<std::shared_ptr<torch::optim::Optimizer>> optimizers,
                                     const ApexAmpOptions& options = {});

  /// Anything else is a compile error that says what to do: a scheduler that steps on a metric
  /// (ReduceLROnPlateau) cannot be stepped by the Trainer.
  template <detail::NotLRScheduler S>
  void wrap_lr_scheduler(S&&, StepMode, std::int64_t = 1) {
    using T = detail::pointee_t<std::remove_cvref_t<S>>;
    static_assert(
        !requires(T & t) { t.step(1.0); }, DTL_DIAG_LR_STEPS_ON_METRIC);
    static_assert(
        requires(T & t) { t.step(1.0); }, DTL_DIAG_LR_NOT_A_SCHEDULER);
  }

  /// Registers a custom reducer (Determined's `wrap_reducer`) and returns it, to be fed with
  /// `update(...)` from train_batch / evaluate_batch. It is reset at the start of every training
  /// workload and validation and reported at the end. With a name it reports one metric of that
  /// name; without, its cross_slot_reduce returns a map of metrics that is merged in. `reducer` is
  /// a MetricReducer (by value or shared_ptr) or a function of the flat list of values, which
  /// becomes a SimpleReducer whose `update(v)` appends v:
  ///   auto sum = ctx.wrap_reducer([](const std::vector<double>& v) { return std::accumulate(...); }, "sum");
  ///   sum->update(loss.item<double>());
  template <class X>
  auto wrap_reducer(X&& reducer, std::string name, ReducerPhases phases = {}) {
    return add_reducer<true>(std::forward<X>(reducer), std::move(name), phases);
  }
  template <class X>
  auto wrap_reducer(X&& reducer, ReducerPhases phases = {}) {
    return add_reducer<false>(std::forward<X>(reducer), std::nullopt, phases);
  }

  /// Profiles scheduled train_batch calls (Determined's `set_profiler`, with
  /// torch.profiler.schedule's fields) and writes a Chrome trace per active cycle to
  /// `schedule.trace_dir` (default `<run_dir>/profiler`).
  ///   ctx.set_profiler({.wait = 1, .warmup = 1, .active = 2, .repeat = 1});
  void set_profiler(ProfilerSchedule schedule) { profiler_.emplace(std::move(schedule), s_.run_dir / "profiler"); }
  /// The traces the profiler has written so far (empty without set_profiler).
  [[nodiscard]] DTL_INLINE std::vector<std::filesystem::path> profiler_traces() const;

  // ---- the optimization step ---------------------------------------------------------------

  /// `loss.backward(...)`, as Determined's `context.backward`.
  DTL_INLINE void backward(const torch::Tensor& loss, const torch::Tensor& gradient = {},
                           std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);
  /// Under configure_apex_amp with num_losses > 1: backward on loss number `loss_idx` (apex's
  /// `loss_id`), scaled by that loss's own scaler. Without the index, the i-th backward call of
  /// a batch is loss i.
  DTL_INLINE void backward(const torch::Tensor& loss, std::int64_t loss_idx, const torch::Tensor& gradient = {},
                           std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

  /// Steps `optimizer` on batches where gradients are due (every `aggregation_frequency`-th
  /// batch), first averaging the aggregated gradients and applying `clip_grads(params)`; then
  /// zeroes the gradients unless `auto_zero_grads` is false. On other batches it does nothing,
  /// so gradients keep accumulating.
  /// With `scaler` (Determined's `scaler=`, for a scaler from wrap_scaler): the gradients are
  /// unscaled before `clip_grads` (so it clips the true norm), and the step is
  /// `scaler->step(optimizer)`, skipped when a gradient is inf/NaN; call `scaler->update()` after
  /// the batch's steps, as in PyTorch (on a batch that only aggregates, update() does nothing).
  template <class O, class Clip = NoClip>
  void step_optimizer(const std::shared_ptr<O>& optimizer, Clip clip_grads = {}, bool auto_zero_grads = true,
                      const std::shared_ptr<GradScaler>& scaler = nullptr) {
    if (s_.aggregation_frequency > 1 && !auto_zero_grads)
      throw InvalidExperimentException(
          "dtl: step_optimizer(auto_zero_grads=false) cannot be combined with aggregation_frequency > 1: "
          "aggregated gradients must be zeroed after each step");
    if (!is_update_batch()) {
      if (scaler) scaler->deferred_ = true;
      return;
    }
    auto& entry = find_optimizer(optimizer.get());
    if (s_.aggregation_frequency > 1 && s_.average_aggregated_gradients) {
      torch::NoGradGuard no_grad;
      for (auto& p : entry.params)
        if (p.grad().defined()) p.mutable_grad().div_(static_cast<double>(s_.aggregation_frequency));
    }
    if (scaler && scaler->is_enabled()) [[unlikely]] {
      if constexpr (!std::is_same_v<Clip, NoClip>) {
        if (scaler->per_optimizer_[optimizer.get()].stage == GradScaler::Stage::ready) scaler->unscale_(*optimizer);
        clip_grads(entry.params);
      }
      scaler->step(*optimizer);
    } else if (apex_ && !apex_->may_step(entry.params)) [[unlikely]] {
      // an overflow under configure_apex_amp: this step is skipped, the loss scale backs off
    } else {
      if constexpr (!std::is_same_v<Clip, NoClip>) clip_grads(entry.params);
      optimizer->step();
    }
    if (auto_zero_grads) optimizer->zero_grad();
  }
  /// `step_optimizer(opt, scaler)`: Determined's `step_optimizer(opt, scaler=scaler)`.
  template <class O>
  void step_optimizer(const std::shared_ptr<O>& optimizer, const std::shared_ptr<GradScaler>& scaler) {
    step_optimizer(optimizer, NoClip{}, true, scaler);
  }

  /// Moves a nested batch to `device()` (the Trainer does this before train_batch). Tensors in
  /// page-locked memory (a loader's `pin_memory`) are copied without blocking the host.
  template <class B>
  [[nodiscard]] std::remove_cvref_t<B> to_device(B&& batch) const {
    return dtl::to_device(std::forward<B>(batch), s_.device, /*non_blocking=*/s_.device.is_cuda());
  }

  // ---- hyperparameters and configuration -------------------------------------------------

  /// A hyperparameter converted to T; a missing or mistyped one is a ConfigError naming it.
  ///   double lr = ctx.get_hparam<double>("lr");
  template <class T>
  [[nodiscard]] T get_hparam(std::string_view name) const {
    return detail::hparam_as<T>(s_.hparams, name);
  }
  [[nodiscard]] const nlohmann::json& get_hparams() const noexcept { return s_.hparams; }
  /// The experiment config as given (null when there is none), like Determined's dict.
  [[nodiscard]] DTL_INLINE const nlohmann::json& get_experiment_config() const noexcept;
  /// The parsed experiment config, when one was given.
  [[nodiscard]] const std::optional<ExperimentConfig>& experiment_config() const noexcept { return s_.config; }

  /// `global_batch_size / slots`, as Determined (the hparam `global_batch_size` must be set).
  [[nodiscard]] DTL_INLINE std::int64_t get_per_slot_batch_size() const;
  [[nodiscard]] std::int64_t get_global_batch_size() const { return get_per_slot_batch_size() * s_.distributed.size; }

  /// The run's length as fit() trains it, for sizing a schedule to the run. Known when the trial
  /// is built if the experiment config's searcher.max_length or --max-length gives it (they
  /// override fit()'s), else once fit() starts, from FitOptions.max_length. Records become batches
  /// as in Determined. Before it is known: a ConfigError that says where to give it.
  ///   const auto total = ctx.get_max_length_batches();     // e.g. 10000 for --max-length batches=10000
  ///   auto cosine = std::make_shared<dtl::lr::CosineAnnealingLR>(opt, total - warmup);
  [[nodiscard]] DTL_INLINE Length get_max_length() const;
  /// get_max_length() in batches: an Epoch length times the batches per epoch, which the config's
  /// records_per_epoch gives when the trial is built, and the training data loader once fit()
  /// starts (a callback's on_training_start may ask then).
  [[nodiscard]] DTL_INLINE std::int64_t get_max_length_batches() const;
  /// Batches per epoch of the training data (what get_max_length_batches multiplies by): from
  /// records_per_epoch, or from the training loader once fit() starts.
  [[nodiscard]] DTL_INLINE std::int64_t get_batches_per_epoch() const;

  [[nodiscard]] std::uint64_t get_trial_seed() const noexcept { return s_.trial_seed; }
  [[nodiscard]] std::int64_t get_initial_batch() const noexcept { return initial_batch_; }
  [[nodiscard]] const torch::Device& device() const noexcept { return s_.device; }
  [[nodiscard]] const DistributedContext& distributed() const noexcept { return s_.distributed; }
  [[nodiscard]] std::int64_t aggregation_frequency() const noexcept { return s_.aggregation_frequency; }
  [[nodiscard]] const std::filesystem::path& run_dir() const noexcept { return s_.run_dir; }
  [[nodiscard]] const RunOverrides& run_overrides() const noexcept { return s_.overrides; }
  /// The Determined trial this process runs as (read from the DET_* environment by dtl::init),
  /// or null outside a cluster (Determined's `det.get_cluster_info()`).
  [[nodiscard]] const ClusterInfo* get_cluster_info() const noexcept { return s_.cluster_info.get(); }
  /// The seams the environment adds to a fit (dtl::init's; none outside a cluster).
  [[nodiscard]] detail::EnvironmentSeams environment_seams() const {
    return s_.environment ? s_.environment() : detail::EnvironmentSeams{};
  }

  // ---- where training stands ---------------------------------------------------------------

  [[nodiscard]] DTL_INLINE std::int64_t current_train_batch() const;
  [[nodiscard]] DTL_INLINE std::int64_t current_train_epoch() const;
  [[nodiscard]] DTL_INLINE bool is_epoch_start() const;
  [[nodiscard]] DTL_INLINE bool is_epoch_end() const;
  /// Ask the Trainer to stop at the next workload boundary (after checkpointing).
  void set_stop_requested(bool stop) noexcept { stop_requested_ = stop; }
  [[nodiscard]] bool get_stop_requested() const noexcept { return stop_requested_; }

  [[nodiscard]] const std::vector<std::shared_ptr<torch::nn::Module>>& models() const noexcept { return models_; }

  /// What a checkpoint saves and restores of this trial — models, optimizers, LR schedulers,
  /// hyperparameters, config and seed — lent to checkpoint storage, which knows no contexts.
  [[nodiscard]] DTL_INLINE detail::TrialStateRefs checkpoint_state() const;
  /// The wrapped optimizers, in wrap order (Determined's `context.optimizers`).
  [[nodiscard]] DTL_INLINE std::vector<std::shared_ptr<torch::optim::Optimizer>> optimizers() const;

  /// Where TensorBoard event files go: `<run_dir>/tensorboard` (Determined's
  /// `get_tensorboard_path()`).
  [[nodiscard]] std::filesystem::path get_tensorboard_path() const { return s_.run_dir / "tensorboard"; }
  /// The run's TensorBoard writer, created on first use; dtl writes its own `Determined/…`
  /// metrics into the same file (Determined's `TorchWriter().writer`).
  ///   ctx.get_tensorboard_writer().add_scalar("my/gradient_norm", norm, ctx.current_train_batch());
  /// Determined's switch for the Trainer's automatic TensorBoard metrics (default on;
  /// `InitOptions.enable_tensorboard_logging` sets it too). get_tensorboard_writer() still works.
  void set_enable_tensorboard_logging(bool enabled) noexcept { s_.enable_tensorboard_logging = enabled; }
  [[nodiscard]] bool get_enable_tensorboard_logging() const noexcept { return s_.enable_tensorboard_logging; }
  [[nodiscard]] DTL_INLINE SummaryWriter& get_tensorboard_writer();

 private:
  friend class detail::LoopAccess;  // the Trainer's narrow way in (trainer/loop_access.hpp)

  struct OptimizerEntry {
    std::shared_ptr<torch::optim::Optimizer> optimizer;
    std::vector<torch::Tensor> params;  // flat, gathered once: what clip_grads receives
  };
  struct LRSchedulerEntry {
    std::shared_ptr<void> scheduler;
    void (*step)(void*);
    StepMode mode;
    std::int64_t frequency;
    nlohmann::json (*save)(const void*);  // null: the scheduler keeps no state dtl can save
    void (*load)(void*, const nlohmann::json&);
  };

  template <bool Named, class X>
  auto add_reducer(X&& x, std::optional<std::string> name, ReducerPhases phases) {
    using U = std::remove_cvref_t<X>;
    if constexpr (detail::specialization_of<U, std::shared_ptr>) {
      using R = typename U::element_type;
      static_assert(detail::diagnose_reducer<R, Named>());
      for (const auto& w : reducers_)
        if (w.identity == x.get())
          throw InvalidExperimentException("dtl: wrap_reducer: this reducer is already wrapped; wrap each once");
      reducers_.push_back({std::make_unique<detail::WrappedReducer::OpsFor<R>>(x), x.get(), std::move(name), phases});
      return std::shared_ptr<R>(std::forward<X>(x));
    } else if constexpr (HasReset<U> || HasPerSlotReduce<U>) {
      return add_reducer<Named>(std::make_shared<U>(std::forward<X>(x)), std::move(name), phases);
    } else if constexpr (detail::is_unary_vector_function<U>) {
      using F = std::decay_t<U>;
      using T = typename detail::unary_vector_function<F>::value_type;
      return add_reducer<Named>(std::make_shared<SimpleReducer<T, F>>(std::forward<X>(x)), std::move(name), phases);
    } else {
      static_assert(detail::always_false<U>, DTL_DIAG_REDUCER_NOT_A_REDUCER);
      return std::shared_ptr<U>();
    }
  }

  // What wrap_model and wrap_optimizer do past the type they keep: not templates, so a trial's
  // translation unit instantiates none of it (the DDP setup, the parameter lists), and against
  // libdtl compiles none of it either.
  DTL_INLINE void register_model(std::shared_ptr<torch::nn::Module> base, const DataParallelOptions& options);
  DTL_INLINE void register_optimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                     std::int64_t backward_passes_per_step);

  [[nodiscard]] bool is_update_batch() const noexcept { return (batch_idx_ + 1) % s_.aggregation_frequency == 0; }

  DTL_INLINE OptimizerEntry& find_optimizer(const torch::optim::Optimizer* opt);

  DTL_INLINE void require_training(const char* what) const;

  /// Determined's LR auto-stepping after train_batch (semantics §2.5).
  DTL_INLINE void step_lr_schedulers(std::int64_t b);

  /// What every rank of a distributed run must agree on (detail::check_ranks_agree).
  [[nodiscard]] DTL_INLINE nlohmann::json rank_fingerprint() const;
  /// Parameters then buffers, in the module's order (what rank 0 broadcasts).
  DTL_INLINE static std::vector<torch::Tensor> model_state_tensors(torch::nn::Module& m);

  /// Before train_batch: where training stands, whether this batch's backward communicates
  /// (Determined's no_sync on aggregation batches), and DDP's buffer broadcast.
  DTL_INLINE void begin_train_batch(std::int64_t batch_idx);
  /// After a checkpoint load: every rank continues from rank 0's weights (DDP's invariant).
  DTL_INLINE void broadcast_model_state();
  /// Time the gradient all-reduces kept backward waiting since the last call.
  DTL_INLINE std::chrono::nanoseconds take_gradient_wait_time();

  struct ModelSync {
    DataParallelOptions options;
    std::unique_ptr<detail::GradientSynchronizer> gradients;
    std::vector<torch::Tensor> buffers;
  };

  detail::ContextSetup s_;
  std::vector<ModelSync> model_syncs_;
  std::vector<std::shared_ptr<torch::nn::Module>> models_;
  std::vector<OptimizerEntry> optimizers_;
  std::vector<LRSchedulerEntry> lr_schedulers_;
  std::int64_t batch_idx_ = 0;
  std::int64_t epoch_len_ = 0;  // 0 until training starts
  std::optional<Length> fit_length_;  // fit()'s resolved max_length, once fit() starts
  std::int64_t initial_batch_ = 0;
  bool stop_requested_ = false;
  std::optional<SummaryWriter> tensorboard_;
  std::vector<detail::WrappedReducer> reducers_;
  std::optional<detail::ScheduledProfiler> profiler_;
  std::shared_ptr<GradScaler> scaler_;
  std::unique_ptr<detail::ApexAmp> apex_;
  nlohmann::json resume_notes_;  // what a resume changed, recorded in later checkpoints
};

namespace detail {

/// A length as the trial's units (records become batches, detail::batches_of_records; the global
/// batch size is asked for only then: a trial may have none).
[[nodiscard]] inline Length to_length(const LengthSpec& spec, const PyTorchTrialContext& ctx) {
  switch (spec.unit) {
    case LengthSpec::Unit::batches:
      return Batch{spec.value};
    case LengthSpec::Unit::epochs:
      return Epoch{spec.value};
    case LengthSpec::Unit::records:
      break;
  }
  return Batch{batches_of_records(spec.value, ctx.get_global_batch_size())};
}

/// The run's length by fit()'s precedence: the command line over the experiment config over
/// `given` (FitOptions.max_length); empty when none of them gives one.
[[nodiscard]] inline std::optional<Length> resolved_max_length(const PyTorchTrialContext& ctx,
                                                               std::optional<Length> given) {
  if (const auto& m = ctx.run_overrides().max_length) return to_length(*m, ctx);
  if (const auto& cfg = ctx.experiment_config())
    if (auto m = cfg->max_length()) return to_length(*m, ctx);
  return given;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/context-inl.hpp>
#endif

#endif  // DTL_CONTEXT_HPP
