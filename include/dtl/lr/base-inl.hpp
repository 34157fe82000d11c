// dtl — the non-template definitions of <dtl/lr/base.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_LR_BASE_INL_HPP
#define DTL_LR_BASE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/base.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE std::vector<double> PerGroup::expand(const char* scheduler, const char* name, std::size_t groups) const {
  if (values.empty()) throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": " + name + " is required");
  if (scalar) return std::vector<double>(groups, values.front());
  if (values.size() != groups)
    throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": expected " + std::to_string(groups) +
                                " values for " + name + ", got " + std::to_string(values.size()));
  return values;
}

}  // namespace lr

namespace lr {
namespace detail {

DTL_INLINE MomentumKind momentum_kind(torch::optim::OptimizerOptions& o) {
  using namespace torch::optim;
  if (dynamic_cast<SGDOptions*>(&o) != nullptr) return MomentumKind::momentum_sgd;
  if (dynamic_cast<RMSpropOptions*>(&o) != nullptr) return MomentumKind::momentum_rmsprop;
  if (dynamic_cast<AdamOptions*>(&o) != nullptr) return MomentumKind::beta1_adam;
  if (dynamic_cast<AdamWOptions*>(&o) != nullptr) return MomentumKind::beta1_adamw;
  return MomentumKind::none;
}

DTL_INLINE bool uses_beta1(MomentumKind k) noexcept {
  return k == MomentumKind::beta1_adam || k == MomentumKind::beta1_adamw;
}

DTL_INLINE double get_momentum(torch::optim::OptimizerOptions& o, MomentumKind k) {
  using namespace torch::optim;
  switch (k) {
    case MomentumKind::momentum_sgd:
      return static_cast<SGDOptions&>(o).momentum();
    case MomentumKind::momentum_rmsprop:
      return static_cast<RMSpropOptions&>(o).momentum();
    case MomentumKind::beta1_adam:
      return std::get<0>(static_cast<AdamOptions&>(o).betas());
    case MomentumKind::beta1_adamw:
      return std::get<0>(static_cast<AdamWOptions&>(o).betas());
    case MomentumKind::none:
      break;
  }
  return 0.0;
}

DTL_INLINE void set_momentum(torch::optim::OptimizerOptions& o, MomentumKind k, double m) {
  using namespace torch::optim;
  switch (k) {
    case MomentumKind::momentum_sgd:
      static_cast<SGDOptions&>(o).momentum(m);
      break;
    case MomentumKind::momentum_rmsprop:
      static_cast<RMSpropOptions&>(o).momentum(m);
      break;
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
    case MomentumKind::none:
      break;
  }
}

DTL_INLINE std::vector<MomentumKind> momentum_kinds(torch::optim::Optimizer& opt, const char* scheduler) {
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
}  // namespace lr

namespace lr {

DTL_INLINE void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  update_lrs();
}

DTL_INLINE nlohmann::json LRScheduler::state_dict() const {
  nlohmann::json j = {{"base_lrs", base_lrs_},
                      {"last_epoch", last_epoch_},
                      {"_step_count", step_count_},
                      {"_get_lr_called_within_step", false},
                      {"_last_lr", last_lr_}};
  dtl::detail::compat::add_scheduler_version_keys(j);
  auto f = StateFields::saving_to(j);
  const_cast<LRScheduler*>(this)->fields(f);  // saving reads the settings only
  return j;
}

DTL_INLINE void LRScheduler::load_state_dict(const nlohmann::json& state) {
  last_epoch_ = state.at("last_epoch").get<std::int64_t>();
  base_lrs_ = state.at("base_lrs").get<std::vector<double>>();
  last_lr_ = state.at("_last_lr").get<std::vector<double>>();
  if (state.contains("_step_count")) step_count_ = state["_step_count"].get<std::int64_t>();
  if (base_lrs_.size() != groups() || last_lr_.size() != groups())
    throw std::invalid_argument("dtl::lr: load_state_dict: the state has " + std::to_string(base_lrs_.size()) +
                                " param groups but the optimizer has " + std::to_string(groups()));
  auto f = StateFields::loading_from(state);
  fields(f);
}

DTL_INLINE LRScheduler::LRScheduler(std::shared_ptr<torch::optim::Optimizer> optimizer)
    : optimizer_(std::move(optimizer)) {
  if (!optimizer_) throw std::invalid_argument("dtl::lr: the optimizer is null");
  scratch_.resize(groups());
}

DTL_INLINE void LRScheduler::start() {
  auto& keys = detail::param_group_keys();
  base_lrs_.clear();
  for (std::size_t i = 0; i < groups(); ++i)
    base_lrs_.push_back(keys.setdefault(optimizer_, i, "initial_lr", group_lr(i)));
  initial_step();
}

DTL_INLINE void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

DTL_INLINE void LRScheduler::step_to(std::int64_t epoch) {
  ++step_count_;
  update_lr_to(epoch);
}

DTL_INLINE void LRScheduler::update_lr_to(std::int64_t epoch) {
  last_epoch_ = epoch;
  read_lrs();
  if (!closed_form_lr(scratch_)) get_lr(scratch_);
  apply();
}

DTL_INLINE torch::optim::OptimizerOptions& LRScheduler::group_options(std::size_t i) const {
  return optimizer_->param_groups()[i].options();
}

DTL_INLINE void LRScheduler::update_lrs() {
  read_lrs();
  get_lr(scratch_);
  apply();
}

DTL_INLINE void LRScheduler::read_lrs() {
  auto& gs = optimizer_->param_groups();
  for (std::size_t i = 0; i < scratch_.size(); ++i) scratch_[i] = gs[i].options().get_lr();
}

DTL_INLINE void LRScheduler::apply() {
  auto& gs = optimizer_->param_groups();
  last_lr_.resize(scratch_.size());
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    gs[i].options().set_lr(scratch_[i]);
    last_lr_[i] = scratch_[i];
  }
}

DTL_INLINE void LRScheduler::set_last_lr_from_groups() {
  read_lrs();
  last_lr_.assign(scratch_.begin(), scratch_.end());
}

}  // namespace lr

namespace lr {
namespace detail {

DTL_INLINE void invalid(const char* scheduler, const std::string& what) {
  throw std::invalid_argument(std::string("dtl::lr::") + scheduler + ": " + what);
}

}  // namespace detail
}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_BASE_INL_HPP
