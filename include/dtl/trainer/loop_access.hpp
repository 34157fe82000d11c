// dtl — LoopAccess: the one narrow way the Trainer reaches into PyTorchTrialContext — what the loop
// tells the context (where training stands) and the per-batch work the context does for it.
#ifndef DTL_TRAINER_LOOP_ACCESS_HPP
#define DTL_TRAINER_LOOP_ACCESS_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/amp/autocast.hpp>
#include <dtl/context.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

class LoopAccess {
 public:
  explicit LoopAccess(PyTorchTrialContext& ctx) noexcept : ctx_(ctx) {}

  // ---- where training stands ----------------------------------------------------------------
  void set_epoch_length(std::int64_t n) noexcept { ctx_.epoch_len_ = n; }
  [[nodiscard]] std::int64_t epoch_length() const noexcept { return ctx_.epoch_len_; }
  void set_initial_batch(std::int64_t b) noexcept { ctx_.initial_batch_ = b; }
  /// fit()'s resolved max_length (what get_max_length answers when neither config nor command line gave it).
  void set_max_length(const Length& l) { ctx_.fit_length_ = l; }
  /// A resumed trial keeps the checkpoint's seed, so that its data order continues.
  void adopt_trial_seed(std::uint64_t seed) noexcept { ctx_.s_.trial_seed = seed; }
  /// Whether this run's seed was asked for (--seed, InitOptions.seed, experiment_seed), not drawn.
  [[nodiscard]] bool trial_seed_given() const noexcept { return ctx_.s_.trial_seed_given; }
  /// What a resume changed, recorded in the next checkpoints' load_data.json.
  void set_resume_notes(nlohmann::json notes) { ctx_.resume_notes_ = std::move(notes); }

  // ---- per batch --------------------------------------------------------------------------
  /// Before train_batch (aggregation's no_sync, DDP's buffer broadcast).
  void begin_train_batch(std::int64_t batch_idx) { ctx_.begin_train_batch(batch_idx); }
  /// After train_batch: Determined's LR auto-stepping.
  void step_lr_schedulers(std::int64_t batch_idx) { ctx_.step_lr_schedulers(batch_idx); }
  [[nodiscard]] ApexAmp* apex() const noexcept { return ctx_.apex_.get(); }
  /// wrap_scaler's GradScaler, if any.
  [[nodiscard]] GradScaler* scaler() const noexcept { return ctx_.scaler_.get(); }
  [[nodiscard]] bool is_update_batch() const noexcept { return ctx_.is_update_batch(); }
  [[nodiscard]] ScheduledProfiler* profiler() noexcept { return ctx_.profiler_ ? &*ctx_.profiler_ : nullptr; }
  /// Runs `f` (train_batch and its metrics) inside apex's autocast region and loss-scale update
  /// when configure_apex_amp was called.
  template <class F>
  void under_apex(F&& f) {
    auto* apex = this->apex();
    if (!apex) [[likely]] {
      f();
      return;
    }
    apex->begin_batch();
    {
      std::optional<autocast> region;
      if (apex->autocast_enabled()) region.emplace(apex->device(), apex->dtype());
      f();
    }
    if (is_update_batch()) apex->end_update_batch();
  }
  /// Runs `f` (a training step) as the profiler's step, a named span of its trace when it records.
  template <class F>
  void profiled_train_batch(F&& f) {
    auto* profiler = this->profiler();
    if (!profiler) [[likely]] {
      f();
      return;
    }
    profiler->before_batch();
    if (profiler->active()) {
      RECORD_USER_SCOPE("train_batch");
      f();
    } else {
      f();
    }
    profiler->after_batch();
  }

  // ---- at boundaries ------------------------------------------------------------------------
  [[nodiscard]] std::vector<WrappedReducer>& reducers() noexcept { return ctx_.reducers_; }
  void set_train_mode(bool on) {
    for (auto& m : ctx_.models_) m->train(on);
  }
  /// Time the gradient all-reduces kept backward waiting since the last call.
  [[nodiscard]] std::chrono::nanoseconds take_gradient_wait_time() { return ctx_.take_gradient_wait_time(); }
  /// After a checkpoint load: every rank continues from rank 0's weights.
  void broadcast_model_state() { ctx_.broadcast_model_state(); }

 private:
  PyTorchTrialContext& ctx_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_LOOP_ACCESS_HPP
