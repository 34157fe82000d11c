// dtl — the non-template definitions of <dtl/context.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CONTEXT_INL_HPP
#define DTL_CONTEXT_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/context.hpp>

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE PyTorchTrialContext::PyTorchTrialContext(detail::ContextSetup setup) : s_(std::move(setup)) {
  if (s_.aggregation_frequency < 1)
    throw ConfigError("dtl: aggregation_frequency must be >= 1 (got " + std::to_string(s_.aggregation_frequency) + ")");
}

DTL_INLINE void PyTorchTrialContext::register_model(std::shared_ptr<torch::nn::Module> base,
                                                    const DataParallelOptions& options) {
  base->to(s_.device);
  if (s_.distributed.connected()) {
    detail::check_ranks_agree(s_.distributed, rank_fingerprint(), models_.size(), *base);
    ModelSync sync{options, nullptr, {}};
    detail::broadcast_tensors(s_.distributed, model_state_tensors(*base));
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : base->named_parameters()) named.emplace_back(item.key(), item.value());
    for (const auto& b : base->buffers()) sync.buffers.push_back(b);
    sync.gradients = std::make_unique<detail::GradientSynchronizer>(s_.distributed, std::move(named), options);
    model_syncs_.push_back(std::move(sync));
  }
  models_.push_back(std::move(base));
}

DTL_INLINE void PyTorchTrialContext::register_optimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                                        std::int64_t backward_passes_per_step) {
  if (backward_passes_per_step < 1)
    throw InvalidExperimentException("dtl: wrap_optimizer: backward_passes_per_step must be >= 1");
  OptimizerEntry e{std::move(optimizer), {}};
  for (const auto& group : e.optimizer->param_groups())
    for (const auto& p : group.params()) e.params.push_back(p);
  optimizers_.push_back(std::move(e));
}

DTL_INLINE std::shared_ptr<GradScaler> PyTorchTrialContext::wrap_scaler(GradScaler scaler) {
  return wrap_scaler(std::make_shared<GradScaler>(std::move(scaler)));
}

DTL_INLINE std::shared_ptr<GradScaler> PyTorchTrialContext::wrap_scaler(std::shared_ptr<GradScaler> scaler) {
  if (!scaler) throw InvalidExperimentException("dtl: wrap_scaler: the scaler is null");
  if (scaler_) throw InvalidExperimentException("dtl: wrap_scaler: a scaler is already wrapped; wrap one");
  if (apex_)
    throw InvalidExperimentException("dtl: wrap_scaler cannot be combined with configure_apex_amp: use one of them");
  scaler_ = scaler;
  return scaler;
}

DTL_INLINE void PyTorchTrialContext::configure_apex_amp(
    std::initializer_list<detail::ModuleRef> models,
    std::initializer_list<std::shared_ptr<torch::optim::Optimizer>> optimizers, const ApexAmpOptions& options) {
  if (apex_) throw InvalidExperimentException("dtl: configure_apex_amp: already configured; call it once");
  if (scaler_)
    throw InvalidExperimentException("dtl: configure_apex_amp cannot be combined with wrap_scaler: use one of them");
  if (optimizers.size() == 0)
    throw InvalidExperimentException("dtl: configure_apex_amp: optimizers are required for training");
  for (const auto& m : models)
    if (std::find(models_.begin(), models_.end(), m.ptr) == models_.end())
      throw InvalidExperimentException("dtl: configure_apex_amp: a model was not wrapped; call wrap_model first");
  std::vector<std::shared_ptr<torch::optim::Optimizer>> opts;
  for (const auto& o : optimizers) {
    find_optimizer(o.get());  // must be wrapped
    opts.push_back(o);
  }
  if (s_.distributed.size > 1 && options.num_losses != 1)
    throw InvalidExperimentException(
        "dtl: configure_apex_amp: distributed training supports num_losses = 1 only "
        "(as Determined)");
  apex_ = std::make_unique<detail::ApexAmp>(options, opts, s_.device.type());
  static bool warned = false;  // once per process
  if (options.verbosity > 0 && s_.distributed.rank == 0 && options.enabled && !std::exchange(warned, true))
    std::cerr << "dtl: configure_apex_amp: NVIDIA Apex is deprecated upstream; opt_level " << options.opt_level
              << " runs as native " << (apex_->autocast_enabled() ? "autocast" : "float32")
              << (apex_->scaling() ? " + GradScaler per loss" : "") << " (see docs/porting.md)\n";
}

DTL_INLINE std::vector<std::filesystem::path> PyTorchTrialContext::profiler_traces() const {
  return profiler_ ? profiler_->traces() : std::vector<std::filesystem::path>{};
}

DTL_INLINE void PyTorchTrialContext::backward(const torch::Tensor& loss, const torch::Tensor& gradient,
                                              std::optional<bool> retain_graph, bool create_graph) {
  const auto retain = retain_graph ? c10::optional<bool>(*retain_graph) : c10::nullopt;
  if (apex_) [[unlikely]]
    apex_->backward(loss, std::nullopt, gradient, retain, create_graph);
  else
    loss.backward(gradient, retain, create_graph);
}

DTL_INLINE void PyTorchTrialContext::backward(const torch::Tensor& loss, std::int64_t loss_idx,
                                              const torch::Tensor& gradient, std::optional<bool> retain_graph,
                                              bool create_graph) {
  const auto retain = retain_graph ? c10::optional<bool>(*retain_graph) : c10::nullopt;
  if (!apex_)
    throw InvalidExperimentException(
        "dtl: backward(loss, loss_idx): a loss index needs configure_apex_amp(..., "
        "{.num_losses = N}) first");
  apex_->backward(loss, loss_idx, gradient, retain, create_graph);
}

DTL_INLINE const nlohmann::json& PyTorchTrialContext::get_experiment_config() const noexcept {
  static const nlohmann::json none = nullptr;
  return s_.config ? s_.config->raw : none;
}

DTL_INLINE std::int64_t PyTorchTrialContext::get_per_slot_batch_size() const {
  auto gbs = get_hparam<std::int64_t>("global_batch_size");
  if (gbs < s_.distributed.size)
    throw ConfigError("dtl: global_batch_size (" + std::to_string(gbs) + ") is smaller than the number of slots (" +
                      std::to_string(s_.distributed.size) + ")");
  return gbs / s_.distributed.size;
}

DTL_INLINE Length PyTorchTrialContext::get_max_length() const {
  if (auto length = detail::resolved_max_length(*this, fit_length_)) return *length;
  throw ConfigError(
      "dtl: get_max_length: the run's length is not known yet: FitOptions.max_length reaches the context when "
      "fit() starts, after the trial is built. Give it where the trial can read it at construction — "
      "searcher.max_length in the experiment config, or --max-length batches=N — or ask from a callback's "
      "on_training_start");
}

DTL_INLINE std::int64_t PyTorchTrialContext::get_batches_per_epoch() const {
  if (epoch_len_ == std::numeric_limits<std::int64_t>::max())
    throw ConfigError(
        "dtl: get_batches_per_epoch: the training data loader never ends, so an epoch has no length: give the "
        "run's length in batches, or records_per_epoch in the experiment config");
  if (epoch_len_ > 0) return epoch_len_;
  if (s_.config)
    if (auto rpe = s_.config->records_per_epoch()) return detail::batches_of_records(*rpe, get_global_batch_size());
  throw ConfigError(
      "dtl: get_batches_per_epoch: an epoch's batches are known once fit() has built the training data loader, "
      "after the trial is built; set records_per_epoch in the experiment config, give the length in batches, or "
      "ask from a callback's on_training_start");
}

DTL_INLINE std::int64_t PyTorchTrialContext::get_max_length_batches() const {
  const auto length = get_max_length();
  if (length.is_batches()) return length.value();
  return length.value() * get_batches_per_epoch();
}

DTL_INLINE std::int64_t PyTorchTrialContext::current_train_batch() const {
  require_training("current_train_batch");
  return batch_idx_;
}

DTL_INLINE std::int64_t PyTorchTrialContext::current_train_epoch() const {
  require_training("current_train_epoch");
  return batch_idx_ / epoch_len_;
}

DTL_INLINE bool PyTorchTrialContext::is_epoch_start() const {
  require_training("is_epoch_start");
  return batch_idx_ % epoch_len_ == 0;
}

DTL_INLINE bool PyTorchTrialContext::is_epoch_end() const {
  require_training("is_epoch_end");
  return batch_idx_ % epoch_len_ == epoch_len_ - 1;
}

DTL_INLINE detail::TrialStateRefs PyTorchTrialContext::checkpoint_state() const {
  detail::TrialStateRefs r;
  r.models = models_;
  for (const auto& e : optimizers_) r.optimizers.push_back(e.optimizer);
  for (const auto& e : lr_schedulers_) r.lr_schedulers.push_back({e.scheduler.get(), e.save, e.load});
  r.hparams = s_.hparams;
  r.experiment_config = get_experiment_config();
  r.trial_seed = s_.trial_seed;
  r.cuda_rng_device = detail::rng_cuda_device(s_.device, s_.distributed.local_rank);
  r.load_data_notes = resume_notes_;
  if (scaler_)  // Determined's key for wrap_scaler's state
    r.extra.push_back({"scaler_state_dict", scaler_.get(),
                       [](const void* o) { return static_cast<const GradScaler*>(o)->state_dict(); },
                       [](void* o, const nlohmann::json& j) { static_cast<GradScaler*>(o)->load_state_dict(j); }});
  if (apex_)  // and for apex's amp.state_dict()
    r.extra.push_back({"amp_state", apex_.get(),
                       [](const void* o) { return static_cast<const detail::ApexAmp*>(o)->state_dict(); },
                       [](void* o, const nlohmann::json& j) { static_cast<detail::ApexAmp*>(o)->load_state_dict(j); }});
  return r;
}

DTL_INLINE std::vector<std::shared_ptr<torch::optim::Optimizer>> PyTorchTrialContext::optimizers() const {
  std::vector<std::shared_ptr<torch::optim::Optimizer>> out;
  for (const auto& e : optimizers_) out.push_back(e.optimizer);
  return out;
}

DTL_INLINE SummaryWriter& PyTorchTrialContext::get_tensorboard_writer() {
  if (!tensorboard_) tensorboard_.emplace(get_tensorboard_path());
  return *tensorboard_;
}

DTL_INLINE PyTorchTrialContext::OptimizerEntry& PyTorchTrialContext::find_optimizer(
    const torch::optim::Optimizer* opt) {
  for (auto& e : optimizers_)
    if (e.optimizer.get() == opt) return e;
  throw InvalidExperimentException("dtl: step_optimizer: this optimizer was not registered with wrap_optimizer");
}

DTL_INLINE void PyTorchTrialContext::require_training(const char* what) const {
  if (epoch_len_ == 0)
    throw InternalException(std::string("dtl: context.") + what + "() is only meaningful during training");
}

DTL_INLINE void PyTorchTrialContext::step_lr_schedulers(std::int64_t b) {
  if (lr_schedulers_.empty() || !is_update_batch()) return;
  const auto a = s_.aggregation_frequency;
  for (auto& e : lr_schedulers_) {
    switch (e.mode) {
      case StepMode::every_batch:
        for (auto i = b - a + 1; i <= b; ++i)
          if ((i + 1) % e.frequency == 0) e.step(e.scheduler.get());
        break;
      case StepMode::every_optimizer_step:  // counts batches, as Determined's code does
        if ((b + 1) % e.frequency == 0) e.step(e.scheduler.get());
        break;
      case StepMode::every_epoch:
        for (auto ep = b / epoch_len_; ep < (b + a) / epoch_len_; ++ep)
          if ((ep + 1) % e.frequency == 0) e.step(e.scheduler.get());
        break;
      case StepMode::manual:
        break;
    }
  }
}

DTL_INLINE std::vector<torch::Tensor> PyTorchTrialContext::model_state_tensors(torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p);
  for (const auto& b : m.buffers()) out.push_back(b);
  return out;
}

DTL_INLINE void PyTorchTrialContext::begin_train_batch(std::int64_t batch_idx) {
  batch_idx_ = batch_idx;
  if (model_syncs_.empty()) [[likely]]
    return;
  const bool update = is_update_batch();
  for (auto& m : model_syncs_) {
    m.gradients->set_enabled(update);
    if (m.options.broadcast_buffers && !m.buffers.empty()) detail::broadcast_tensors(s_.distributed, m.buffers);
  }
}

DTL_INLINE nlohmann::json PyTorchTrialContext::rank_fingerprint() const {
  return {{"dtl", std::string(DTL_VERSION_STRING) + " (" + DTL_ABI_STRING + ")"},
          {"libtorch", TORCH_VERSION},
          {"hparams", s_.hparams},
          {"config", s_.config ? s_.config->raw : nlohmann::json()}};
}

DTL_INLINE void PyTorchTrialContext::broadcast_model_state() {
  if (!s_.distributed.connected()) return;
  for (const auto& m : models_) detail::broadcast_tensors(s_.distributed, model_state_tensors(*m));
}

DTL_INLINE std::chrono::nanoseconds PyTorchTrialContext::take_gradient_wait_time() {
  std::chrono::nanoseconds t{};
  for (auto& m : model_syncs_) t += m.gradients->take_wait_time();
  return t;
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CONTEXT_INL_HPP
