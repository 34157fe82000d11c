// dtl — the base of dtl::lr's schedulers: Python's `torch.optim.lr_scheduler._LRScheduler`
// contract (last_epoch starts at -1, construction performs the first step, get_last_lr(),
// state_dict() in Python's layout), with nothing allocated per step.
#ifndef DTL_LR_SCHEDULER_BASE_HPP
#define DTL_LR_SCHEDULER_BASE_HPP

#include <torch/torch.h>

#include <dtl/lr/param_group_keys.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtl::lr {

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
  [[nodiscard]] std::vector<double> expand(const char* scheduler, const char* name, std::size_t groups) const {
    if (values.empty()) throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": " + name + " is required");
    if (scalar) return std::vector<double>(groups, values.front());
    if (values.size() != groups)
      throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": expected " + std::to_string(groups) +
                                  " values for " + name + ", got " + std::to_string(values.size()));
    return values;
  }
};

namespace detail {

/// Where a group's momentum lives: SGD's and RMSprop's `momentum`, Adam's and AdamW's `betas[0]`
/// (Python's `use_beta1`). Resolved once per group, so a cycling step costs no dynamic_cast.
enum class MomentumKind { none, momentum_sgd, momentum_rmsprop, beta1_adam, beta1_adamw };

inline MomentumKind momentum_kind(torch::optim::OptimizerOptions& o) {
  using namespace torch::optim;
  if (dynamic_cast<SGDOptions*>(&o) != nullptr) return MomentumKind::momentum_sgd;
  if (dynamic_cast<RMSpropOptions*>(&o) != nullptr) return MomentumKind::momentum_rmsprop;
  if (dynamic_cast<AdamOptions*>(&o) != nullptr) return MomentumKind::beta1_adam;
  if (dynamic_cast<AdamWOptions*>(&o) != nullptr) return MomentumKind::beta1_adamw;
  return MomentumKind::none;
}
inline bool uses_beta1(MomentumKind k) noexcept {
  return k == MomentumKind::beta1_adam || k == MomentumKind::beta1_adamw;
}
inline double get_momentum(torch::optim::OptimizerOptions& o, MomentumKind k) {
  using namespace torch::optim;
  switch (k) {
    case MomentumKind::momentum_sgd: return static_cast<SGDOptions&>(o).momentum();
    case MomentumKind::momentum_rmsprop: return static_cast<RMSpropOptions&>(o).momentum();
    case MomentumKind::beta1_adam: return std::get<0>(static_cast<AdamOptions&>(o).betas());
    case MomentumKind::beta1_adamw: return std::get<0>(static_cast<AdamWOptions&>(o).betas());
    case MomentumKind::none: break;
  }
  return 0.0;
}
inline void set_momentum(torch::optim::OptimizerOptions& o, MomentumKind k, double m) {
  using namespace torch::optim;
  switch (k) {
    case MomentumKind::momentum_sgd: static_cast<SGDOptions&>(o).momentum(m); break;
    case MomentumKind::momentum_rmsprop: static_cast<RMSpropOptions&>(o).momentum(m); break;
    case MomentumKind::beta1_adam: {
      auto& a = static_cast<AdamOptions&>(o);
      a.betas(std::make_tuple(m, std::get<1>(a.betas())));
      break;
    }
    case MomentumKind::beta1_adamw: {
      auto& a = static_cast<AdamWOptions&>(o);
      a.betas(std::make_tuple(m, std::get<1>(a.betas())));
      break;
    }
    case MomentumKind::none: break;
  }
}
/// Every group's momentum kind, or Python's error when a group has none.
inline std::vector<MomentumKind> momentum_kinds(torch::optim::Optimizer& opt, const char* scheduler) {
  std::vector<MomentumKind> out;
  for (auto& g : opt.param_groups()) {
    out.push_back(momentum_kind(g.options()));
    if (out.back() == MomentumKind::none)
      throw std::invalid_argument(std::string("dtl::lr::") + scheduler +
                                  ": optimizer must support momentum with `cycle_momentum` option enabled "
                                  "(SGD, RMSprop, Adam or AdamW), or pass .cycle_momentum = false");
  }
  return out;
}

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
  virtual void step() {
    ++step_count_;
    ++last_epoch_;
    update_lrs();
  }
  /// The learning rates the last step() wrote, one per param group.
  [[nodiscard]] const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  [[nodiscard]] std::int64_t last_epoch() const noexcept { return last_epoch_; }
  [[nodiscard]] const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
  [[nodiscard]] const std::shared_ptr<torch::optim::Optimizer>& optimizer() const noexcept { return optimizer_; }

  /// Python's `scheduler.state_dict()` (its `__dict__` without the optimizer): `base_lrs`,
  /// `last_epoch`, `verbose`, `_step_count`, `_get_lr_called_within_step`, `_last_lr`, plus the
  /// subclass's settings — so it loads into the Python scheduler and back.
  [[nodiscard]] virtual nlohmann::json state_dict() const {
    return {{"base_lrs", base_lrs_},      {"last_epoch", last_epoch_},
            {"verbose", false},           {"_step_count", step_count_},
            {"_get_lr_called_within_step", false}, {"_last_lr", last_lr_}};
  }
  /// Python's `load_state_dict` (`__dict__.update`): every key present replaces the value here,
  /// the settings included.
  virtual void load_state_dict(const nlohmann::json& state) {
    last_epoch_ = state.at("last_epoch").get<std::int64_t>();
    base_lrs_ = state.at("base_lrs").get<std::vector<double>>();
    last_lr_ = state.at("_last_lr").get<std::vector<double>>();
    if (state.contains("_step_count")) step_count_ = state["_step_count"].get<std::int64_t>();
    if (base_lrs_.size() != groups() || last_lr_.size() != groups())
      throw std::invalid_argument("dtl::lr: load_state_dict: the state has " + std::to_string(base_lrs_.size()) +
                                  " param groups but the optimizer has " + std::to_string(groups()));
  }

 protected:
  explicit LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer) : optimizer_(std::move(optimizer)) {
    if (!optimizer_) throw std::invalid_argument("dtl::lr: the optimizer is null");
    scratch_.resize(groups());
  }

  /// Python's `_LRScheduler.__init__` tail: `initial_lr` defaults to each group's lr, base_lrs
  /// are the initial_lrs, and the first step is taken.
  void start() {
    auto& keys = detail::param_group_keys();
    base_lrs_.clear();
    for (std::size_t i = 0; i < groups(); ++i)
      base_lrs_.push_back(keys.setdefault(optimizer_, i, "initial_lr", group_lr(i)));
    initial_step();
  }
  /// Python's `_initial_step`.
  void initial_step() {
    step_count_ = 0;
    step();
  }

  /// The learning rates for last_epoch(), which step() has already advanced. On entry `lrs`
  /// holds each group's current learning rate (Python's `group['lr']`), for the chainable forms.
  virtual void get_lr(std::span<double> lrs) = 0;
  /// Python's `_get_closed_form_lr`, used by `step(epoch)`; false where Python has none.
  virtual bool closed_form_lr(std::span<double> /*lrs*/) { return false; }
  /// Python's `step(epoch)`: what SequentialLR calls at a milestone (epoch 0).
  virtual void step_to(std::int64_t epoch) {
    ++step_count_;
    last_epoch_ = epoch;
    read_lrs();
    if (!closed_form_lr(scratch_)) get_lr(scratch_);
    apply();
  }

  [[nodiscard]] std::size_t groups() const { return optimizer_->param_groups().size(); }
  [[nodiscard]] double group_lr(std::size_t i) const { return optimizer_->param_groups()[i].options().get_lr(); }
  [[nodiscard]] torch::optim::OptimizerOptions& group_options(std::size_t i) const {
    return optimizer_->param_groups()[i].options();
  }
  /// get_lr() for last_epoch(), written into the groups and last_lr.
  void update_lrs() {
    read_lrs();
    get_lr(scratch_);
    apply();
  }
  void read_lrs() {
    auto& gs = optimizer_->param_groups();
    for (std::size_t i = 0; i < scratch_.size(); ++i) scratch_[i] = gs[i].options().get_lr();
  }
  /// Writes scratch_ into the groups and into last_lr (sized once; no allocation after the first).
  void apply() {
    auto& gs = optimizer_->param_groups();
    last_lr_.resize(scratch_.size());
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
      gs[i].options().set_lr(scratch_[i]);
      last_lr_[i] = scratch_[i];
    }
  }
  void set_base_lrs(std::vector<double> v) { base_lrs_ = std::move(v); }
  void set_last_lr_from_groups() {
    read_lrs();
    last_lr_.assign(scratch_.begin(), scratch_.end());
  }
  void set_last_lr(const std::vector<double>& v) { last_lr_ = v; }
  void shift_last_epoch(std::int64_t d) noexcept { last_epoch_ += d; }
  void set_last_epoch(std::int64_t e) noexcept { last_epoch_ = e; }
  [[nodiscard]] std::int64_t step_count() const noexcept { return step_count_; }

  std::shared_ptr<torch::optim::Optimizer> optimizer_;

 private:
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
[[noreturn]] inline void invalid(const char* scheduler, const std::string& what) {
  throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": " + what);
}
}  // namespace detail

}  // namespace dtl::lr

#endif  // DTL_LR_SCHEDULER_BASE_HPP
