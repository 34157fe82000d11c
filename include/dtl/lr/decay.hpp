// dtl — PyTorch's multiplicative decay schedulers: StepLR, MultiStepLR, ExponentialLR, ConstantLR,
// LinearLR, PolynomialLR. Each computes Python's chainable form (the current lr times a factor), so
// its values equal Python's bit for bit, and Python's closed form where SequentialLR needs it.
#ifndef DTL_LR_DECAY_HPP
#define DTL_LR_DECAY_HPP

#include <dtl/lr/scheduler.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace dtl::lr {

/// Python's StepLR: multiply the learning rate by `gamma` every `step_size` steps.
///   ctx.wrap_lr_scheduler(dtl::lr::StepLR(opt, 1, 0.7), dtl::StepMode::every_epoch);
class StepLR : public LRScheduler {
 public:
  StepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t step_size, double gamma = 0.1)
      : LRScheduler(std::move(optimizer)), step_size_(step_size), gamma_(gamma) {
    if (step_size < 1) detail::invalid("StepLR", "step_size must be >= 1");
    start();
  }
  [[nodiscard]] std::int64_t step_size() const noexcept { return step_size_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["step_size"] = step_size_;
    j["gamma"] = gamma_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    detail::load_if_present(state, "step_size", step_size_);
    detail::load_if_present(state, "gamma", gamma_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    if (last_epoch() == 0 || last_epoch() % step_size_ != 0) return;
    for (auto& v : lrs) v *= gamma_;
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const double f = std::pow(gamma_, static_cast<double>(last_epoch() / step_size_));
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  std::int64_t step_size_;
  double gamma_;
};

/// Python's MultiStepLR: multiply by `gamma` at each milestone (a milestone listed twice
/// multiplies by gamma² there, as Python's Counter does).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<std::int64_t> milestones,
              double gamma = 0.1)
      : LRScheduler(std::move(optimizer)), milestones_(std::move(milestones)), gamma_(gamma) {
    std::sort(milestones_.begin(), milestones_.end());
    start();
  }
  [[nodiscard]] const std::vector<std::int64_t>& milestones() const noexcept { return milestones_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  /// `milestones` as Python's Counter: {milestone: count}, which the checkpoint writes with int keys.
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    nlohmann::json counter = nlohmann::json::object();
    for (auto m : milestones_) {
      auto& c = counter[std::to_string(m)];
      c = c.is_null() ? 1 : c.get<std::int64_t>() + 1;
    }
    j["milestones"] = std::move(counter);
    j["gamma"] = gamma_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    if (state.contains("milestones") && state["milestones"].is_object()) {
      milestones_.clear();
      for (const auto& [k, count] : state["milestones"].items())
        for (std::int64_t c = 0; c < count.get<std::int64_t>(); ++c) milestones_.push_back(std::stoll(k));
      std::sort(milestones_.begin(), milestones_.end());
    }
    detail::load_if_present(state, "gamma", gamma_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    const auto [lo, hi] = std::equal_range(milestones_.begin(), milestones_.end(), last_epoch());
    if (lo == hi) return;
    const double f = std::pow(gamma_, static_cast<double>(hi - lo));
    for (auto& v : lrs) v *= f;
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch()) - milestones_.begin();
    const double f = std::pow(gamma_, static_cast<double>(passed));
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  std::vector<std::int64_t> milestones_;  // sorted, with repeats
  double gamma_;
};

/// Python's ExponentialLR: multiply by `gamma` every step.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double gamma)
      : LRScheduler(std::move(optimizer)), gamma_(gamma) {
    start();
  }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["gamma"] = gamma_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    detail::load_if_present(state, "gamma", gamma_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    if (last_epoch() == 0) return;
    for (auto& v : lrs) v *= gamma_;
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const double f = std::pow(gamma_, static_cast<double>(last_epoch()));
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  double gamma_;
};

/// Python's ConstantLR: the learning rate times `factor` until step `total_iters`, then the lr.
class ConstantLR : public LRScheduler {
 public:
  explicit ConstantLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double factor = 1.0 / 3,
                      std::int64_t total_iters = 5)
      : LRScheduler(std::move(optimizer)), factor_(factor), total_iters_(total_iters) {
    if (factor > 1.0 || factor < 0)
      detail::invalid("ConstantLR", "Constant multiplicative factor expected to be between 0 and 1.");
    start();
  }
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["factor"] = factor_;
    j["total_iters"] = total_iters_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    detail::load_if_present(state, "factor", factor_);
    detail::load_if_present(state, "total_iters", total_iters_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    const auto e = last_epoch();
    if (e == 0) {
      for (auto& v : lrs) v *= factor_;
    } else if (e == total_iters_) {
      for (auto& v : lrs) v *= 1.0 / factor_;
    }
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const double f = factor_ + (last_epoch() >= total_iters_ ? 1.0 : 0.0) * (1 - factor_);
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  double factor_;
  std::int64_t total_iters_;
};

/// Python's LinearLR: the factor moves linearly from `start_factor` to `end_factor` over
/// `total_iters` steps. start_factor must be > 0 (as in later PyTorch; 1.13 accepted 0 and then
/// divided by zero).
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(std::shared_ptr<torch::optim::Optimizer> optimizer, double start_factor = 1.0 / 3,
                    double end_factor = 1.0, std::int64_t total_iters = 5)
      : LRScheduler(std::move(optimizer)), start_factor_(start_factor), end_factor_(end_factor),
        total_iters_(total_iters) {
    if (start_factor > 1.0 || start_factor <= 0)
      detail::invalid("LinearLR",
                      "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
    if (end_factor > 1.0 || end_factor < 0)
      detail::invalid("LinearLR", "Ending multiplicative factor expected to be between 0 and 1.");
    if (total_iters < 1) detail::invalid("LinearLR", "total_iters must be >= 1");
    start();
  }
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["start_factor"] = start_factor_;
    j["end_factor"] = end_factor_;
    j["total_iters"] = total_iters_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    detail::load_if_present(state, "start_factor", start_factor_);
    detail::load_if_present(state, "end_factor", end_factor_);
    detail::load_if_present(state, "total_iters", total_iters_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    const auto e = last_epoch();
    if (e == 0) {
      for (auto& v : lrs) v *= start_factor_;
      return;
    }
    if (e > total_iters_) return;
    const double d = end_factor_ - start_factor_;
    const double f = 1. + d / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(e - 1) * d);
    for (auto& v : lrs) v *= f;
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const auto n = static_cast<double>(std::min(total_iters_, last_epoch()));
    const double f = start_factor_ + (end_factor_ - start_factor_) * n / static_cast<double>(total_iters_);
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  double start_factor_;
  double end_factor_;
  std::int64_t total_iters_;
};

/// Python's PolynomialLR: decay to 0 over `total_iters` steps as (1 - t/T)^power.
class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::int64_t total_iters = 5,
                        double power = 1.0)
      : LRScheduler(std::move(optimizer)), total_iters_(total_iters), power_(power) {
    if (total_iters < 1) detail::invalid("PolynomialLR", "total_iters must be >= 1");
    start();
  }
  [[nodiscard]] nlohmann::json state_dict() const override {
    auto j = LRScheduler::state_dict();
    j["total_iters"] = total_iters_;
    j["power"] = power_;
    return j;
  }
  void load_state_dict(const nlohmann::json& state) override {
    LRScheduler::load_state_dict(state);
    detail::load_if_present(state, "total_iters", total_iters_);
    detail::load_if_present(state, "power", power_);
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    const auto e = last_epoch();
    if (e == 0 || e > total_iters_) return;
    const auto t = static_cast<double>(total_iters_);
    const double f =
        std::pow((1.0 - static_cast<double>(e) / t) / (1.0 - static_cast<double>(e - 1) / t), power_);
    for (auto& v : lrs) v *= f;
  }
  bool closed_form_lr(std::span<double> lrs) override {
    const auto t = static_cast<double>(total_iters_);
    const double f = std::pow(1.0 - static_cast<double>(std::min(total_iters_, last_epoch())) / t, power_);
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * f;
    return true;
  }

 private:
  std::int64_t total_iters_;
  double power_;
};

}  // namespace dtl::lr

#endif  // DTL_LR_DECAY_HPP
