// dtl — the base of dtl::lr's schedulers: Python's `torch.optim.lr_scheduler._LRScheduler`
// contract (last_epoch starts at -1, construction performs the first step, get_last_lr(),
// state_dict() in Python's layout), with nothing allocated per step.
#ifndef DTL_LR_BASE_HPP
#define DTL_LR_BASE_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/lr/param_group_keys.hpp>
#include <dtl/lr/state_fields.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

class SchedulerList;
class SequentialLR;

/// A value per param group, given as one number for all groups or one per group (Python's
/// "float or list" arguments): `.max_lr = 0.1` or `.max_lr = {0.1, 0.01}`.
struct PerGroup {
  PerGroup() = default;
  PerGroup(double v) : values{v}, scalar(true) {}  // NOLINT(google-explicit-constructor)
  PerGroup(std::initializer_list<double> v) : values(v) {}
  PerGroup(std::vector<double> v) : values(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  std::vector<double> values;
  bool scalar = false;
  [[nodiscard]] bool empty() const noexcept { return values.empty(); }
  /// Python's `_format_param`: one value per group, or the error Python raises.
  [[nodiscard]] DTL_INLINE std::vector<double> expand(const char* scheduler, const char* name,
                                                      std::size_t groups) const;
};

/// How OneCycleLR and SWALR anneal (Python's `anneal_strategy`, "cos" or "linear").
enum class AnnealStrategy { cos, linear };

namespace detail {

/// Where a group's momentum lives: SGD's and RMSprop's `momentum`, Adam's and AdamW's `betas[0]`
/// (Python's `use_beta1`). Resolved once per group, so a cycling step costs no dynamic_cast.
enum class MomentumKind { none, momentum_sgd, momentum_rmsprop, beta1_adam, beta1_adamw };

DTL_INLINE MomentumKind momentum_kind(torch::optim::OptimizerOptions& o);
DTL_INLINE bool uses_beta1(MomentumKind k) noexcept;
DTL_INLINE double get_momentum(torch::optim::OptimizerOptions& o, MomentumKind k);
DTL_INLINE void set_momentum(torch::optim::OptimizerOptions& o, MomentumKind k, double m);
/// Every group's momentum kind, or Python's error when a group has none.
DTL_INLINE std::vector<MomentumKind> momentum_kinds(torch::optim::Optimizer& opt, const char* scheduler);

}  // namespace detail

/// The base of every dtl::lr scheduler. A subclass computes its learning rates in get_lr() (and
/// Python's closed form, where Python has one, in closed_form_lr()); its constructor validates
/// its arguments as Python does, then calls start(), which performs Python's initial step.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  LRScheduler(LRScheduler&&) = default;
  LRScheduler& operator=(LRScheduler&&) = delete;

  /// Advances one step and writes the new learning rate into every param group.
  DTL_INLINE virtual void step();
  /// The learning rates the last step() wrote, one per param group.
  [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
  [[nodiscard]] const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
  [[nodiscard]] const std::shared_ptr<torch::optim::Optimizer>& optimizer() const noexcept { return optimizer_; }

  /// Python's `scheduler.state_dict()` (its `__dict__` without the optimizer): `base_lrs`,
  /// `last_epoch`, `_step_count`, `_get_lr_called_within_step`, `_last_lr`, the version's own
  /// keys (`verbose` in 1.13, `_is_initial` in 2.x), plus the subclass's settings (`fields`) — so
  /// it loads into the Python scheduler of the same torch and back.
  [[nodiscard]] DTL_INLINE virtual nlohmann::json state_dict() const;
  /// Python's `load_state_dict` (`__dict__.update`): every key present replaces the value here,
  /// the settings (`fields`) included.
  DTL_INLINE virtual void load_state_dict(const nlohmann::json& state);

 protected:
  DTL_INLINE explicit LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer);

  /// Python's `_LRScheduler.__init__` tail: `initial_lr` defaults to each group's lr, base_lrs
  /// are the initial_lrs, and the first step is taken.
  DTL_INLINE void start();
  /// Python's `_initial_step`.
  DTL_INLINE void initial_step();

  /// The learning rates for last_epoch(), which step() has already advanced. On entry `lrs`
  /// holds each group's current learning rate (Python's `group['lr']`), for the chainable forms.
  virtual void get_lr(std::span<double> lrs) = 0;
  /// The subclass's settings in its state_dict, saved and loaded by the base (state_fields.hpp).
  virtual void fields(StateFields& /*f*/) {}
  /// Python's `_get_closed_form_lr`, used by `step(epoch)`; false where Python has none.
  virtual bool closed_form_lr(std::span<double> /*lrs*/) { return false; }
  /// Python's `step(epoch)`: what SequentialLR calls at a milestone (epoch 0) in torch 1.13.
  DTL_INLINE virtual void step_to(std::int64_t epoch);
  /// Python 2.x's `_update_lr(epoch)`: what SequentialLR calls at a milestone in torch 2.x — the
  /// learning rates for `epoch` (closed form where there is one), not counted as a step.
  DTL_INLINE void update_lr_to(std::int64_t epoch);
  /// Takes back the step this scheduler took at construction (SequentialLR's "undo"): its
  /// last_epoch; a composite's in 2.x undoes its children's instead (Python's recursive_undo).
  virtual void undo_initial_step() { shift_last_epoch(-1); }

  [[nodiscard]] std::size_t groups() const { return optimizer_->param_groups().size(); }
  [[nodiscard]] double group_lr(std::size_t i) const { return optimizer_->param_groups()[i].options().get_lr(); }
  [[nodiscard]] DTL_INLINE torch::optim::OptimizerOptions& group_options(std::size_t i) const;
  /// get_lr() for last_epoch(), written into the groups and last_lr.
  DTL_INLINE void update_lrs();
  DTL_INLINE void read_lrs();
  /// Writes scratch_ into the groups and into last_lr (sized once; no allocation after the first).
  DTL_INLINE void apply();
  void set_base_lrs(std::vector<double> v) { base_lrs_ = std::move(v); }
  DTL_INLINE void set_last_lr_from_groups();
  void set_last_lr(const std::vector<double>& v) { last_lr_ = v; }
  void shift_last_epoch(std::int64_t d) noexcept { last_epoch_ += d; }
  void set_last_epoch(std::int64_t e) noexcept { last_epoch_ = e; }
  [[nodiscard]] std::int64_t step_count() const noexcept { return step_count_; }

  std::shared_ptr<torch::optim::Optimizer> optimizer_;

 private:
  friend class SchedulerList;
  friend class SequentialLR;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  std::vector<double> scratch_;
  std::int64_t last_epoch_ = -1;
  std::int64_t step_count_ = 0;
};

namespace detail {
/// Reads `key` of `state` into `out` when present (Python's `__dict__.update` of one field).
template <class T>
void load_if_present(const nlohmann::json& state, const char* key, T& out) {
  if (state.contains(key) && !state[key].is_null()) out = state[key].get<T>();
}
[[noreturn]] DTL_INLINE void invalid(const char* scheduler, const std::string& what);
}  // namespace detail

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/base-inl.hpp>
#endif

#endif  // DTL_LR_BASE_HPP
