// dtl — the non-template definitions of <dtl/callbacks/reduce_lr_on_plateau.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_INL_HPP
#define DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/callbacks/reduce_lr_on_plateau.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

DTL_INLINE ThresholdMode parse_threshold_mode(std::string_view s) {
  if (s == "rel") return ThresholdMode::rel;
  if (s == "abs") return ThresholdMode::abs;
  throw std::invalid_argument("dtl: threshold mode '" + std::string(s) + "' is unknown: use \"rel\" or \"abs\"");
}

DTL_INLINE std::vector<double> MinLR::for_groups(std::size_t groups) const {
  if (!per_group_) return std::vector<double>(groups, values_.front());
  if (values_.size() != groups)
    throw std::invalid_argument("dtl::lr::ReduceLROnPlateau: expected " + std::to_string(groups) + " min_lrs, got " +
                                std::to_string(values_.size()) +
                                " (give one per param group, or a single number for all of them)");
  return values_;
}

DTL_INLINE ReduceLROnPlateau::ReduceLROnPlateau(std::shared_ptr<torch::optim::Optimizer> optimizer, Options options)
    : optimizer_(std::move(optimizer)),
      factor_(options.factor),
      patience_(options.patience),
      verbose_(options.verbose),
      cooldown_(options.cooldown),
      mode_(options.mode),
      threshold_(options.threshold),
      threshold_mode_(options.threshold_mode),
      eps_(options.eps) {
  if (!optimizer_) throw std::invalid_argument("dtl::lr::ReduceLROnPlateau: the optimizer is null");
  if (factor_ >= 1.0)
    throw std::invalid_argument("dtl::lr::ReduceLROnPlateau: factor should be < 1.0 (got " + std::to_string(factor_) +
                                "); new_lr = lr * factor");
  min_lrs_ = options.min_lr.for_groups(optimizer_->param_groups().size());
  default_min_lr_ = options.min_lr.single();
  best_ = mode_worse();
  if (dtl::detail::compat::plateau_last_lr_from_start) {  // torch 2.x: _last_lr from construction on
    for (const auto& group : optimizer_->param_groups()) last_lr_.push_back(group.options().get_lr());
    stepped_ = true;
  }
}

DTL_INLINE void ReduceLROnPlateau::step(double metric) {
  const double current = metric;
  ++last_epoch_;
  if (is_better(current, best_)) {
    best_ = current;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad steps during cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& group : optimizer_->param_groups()) last_lr_.push_back(group.options().get_lr());
  stepped_ = true;
}

DTL_INLINE bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == Mode::min && threshold_mode_ == ThresholdMode::rel) return a < best * (1.0 - threshold_);
  if (mode_ == Mode::min) return a < best - threshold_;
  if (threshold_mode_ == ThresholdMode::rel) return a > best * (threshold_ + 1.0);
  return a > best + threshold_;
}

DTL_INLINE nlohmann::json ReduceLROnPlateau::state_dict() const {
  using callbacks::detail::float_to_json;
  nlohmann::json s = {{"factor", factor_},
                      {"min_lrs", min_lrs_},
                      {"patience", patience_},
                      {"cooldown", cooldown_},
                      {"cooldown_counter", cooldown_counter_},
                      {"mode", to_string(mode_)},
                      {"threshold", threshold_},
                      {"threshold_mode", to_string(threshold_mode_)},
                      {"best", float_to_json(best_)},
                      {"num_bad_epochs", num_bad_epochs_},
                      {"mode_worse", float_to_json(mode_worse())},
                      {"eps", eps_},
                      {"last_epoch", last_epoch_}};
  if (stepped_) s["_last_lr"] = last_lr_;
  dtl::detail::compat::add_plateau_version_keys(s, verbose_, default_min_lr_);
  return s;
}

DTL_INLINE void ReduceLROnPlateau::load_state_dict(const nlohmann::json& state) {
  using callbacks::detail::float_from_json;
  if (!state.is_object())
    throw std::invalid_argument("dtl::lr::ReduceLROnPlateau::load_state_dict: expected a JSON object, got " +
                                std::string(state.type_name()));
  auto num = [&](const char* key, double& out) {
    if (state.contains(key)) out = float_from_json(state.at(key), key);
  };
  auto integer = [&](const char* key, std::int64_t& out) {
    if (state.contains(key)) out = state.at(key).get<std::int64_t>();
  };
  num("factor", factor_);
  integer("patience", patience_);
  if (state.contains("verbose")) verbose_ = state.at("verbose").get<bool>();
  if (state.contains("default_min_lr"))
    default_min_lr_ = state.at("default_min_lr").is_null()
                          ? std::nullopt
                          : std::optional<double>(float_from_json(state.at("default_min_lr"), "default_min_lr"));
  integer("cooldown", cooldown_);
  integer("cooldown_counter", cooldown_counter_);
  if (state.contains("mode")) mode_ = parse_monitor_mode(state.at("mode").get<std::string>());
  num("threshold", threshold_);
  if (state.contains("threshold_mode"))
    threshold_mode_ = parse_threshold_mode(state.at("threshold_mode").get<std::string>());
  num("best", best_);
  integer("num_bad_epochs", num_bad_epochs_);
  num("eps", eps_);
  integer("last_epoch", last_epoch_);
  if (state.contains("min_lrs")) {
    auto m = state.at("min_lrs").get<std::vector<double>>();
    const auto groups = optimizer_->param_groups().size();
    if (m.size() != groups)
      throw std::invalid_argument("dtl::lr::ReduceLROnPlateau::load_state_dict: the state has " +
                                  std::to_string(m.size()) + " min_lrs but the optimizer has " +
                                  std::to_string(groups) + " param groups (was it saved for another optimizer?)");
    min_lrs_ = std::move(m);
  }
  if (state.contains("_last_lr")) {
    last_lr_ = state.at("_last_lr").get<std::vector<double>>();
    stepped_ = true;
  }
}

DTL_INLINE double ReduceLROnPlateau::mode_worse() const noexcept {
  return mode_ == Mode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

DTL_INLINE void ReduceLROnPlateau::reduce_lr() {
  auto& groups = optimizer_->param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const double old_lr = groups[i].options().get_lr();
    const double new_lr = std::max(old_lr * factor_, min_lrs_.at(i));
    // A step smaller than eps is noise (e.g. already at min_lr up to rounding): skip it.
    if (old_lr - new_lr > eps_) {
      groups[i].options().set_lr(new_lr);
      if (verbose_)
        std::printf("Epoch %05lld: reducing learning rate of group %zu to %.4e.\n", static_cast<long long>(last_epoch_),
                    i, new_lr);
    }
  }
}

}  // namespace lr

namespace callbacks {

DTL_INLINE ReduceLROnPlateauEveryValidation::ReduceLROnPlateauEveryValidation(
    std::shared_ptr<lr::ReduceLROnPlateau> scheduler, std::string monitor)
    : scheduler_(std::move(scheduler)), monitor_(std::move(monitor)) {
  if (!scheduler_)
    throw std::invalid_argument("dtl::callbacks::ReduceLROnPlateauEveryValidation: the scheduler is null");
}

DTL_INLINE void ReduceLROnPlateauEveryValidation::on_validation_end(const MetricsJson& metrics) {
  scheduler_->step(detail::monitored_value(metrics, monitor_, "ReduceLROnPlateauEveryValidation"));
}

}  // namespace callbacks
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CALLBACKS_REDUCE_LR_ON_PLATEAU_INL_HPP
