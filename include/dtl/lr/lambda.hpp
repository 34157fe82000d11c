// dtl — PyTorch's LambdaLR and MultiplicativeLR: a user function of the step gives the factor.
#ifndef DTL_LR_LAMBDA_HPP
#define DTL_LR_LAMBDA_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/lr/base.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// A factor as a function of the step (`last_epoch`), like Python's `lambda epoch: ...`.
using LRLambda = std::function<double(std::int64_t)>;

namespace detail {
/// Python's argument handling: one function for every group, or one per group.
inline std::vector<LRLambda> lambdas_per_group(std::vector<LRLambda> fs, std::size_t groups, const char* who) {
  if (fs.size() == 1) return std::vector<LRLambda>(groups, fs.front());
  if (fs.size() != groups)
    invalid(who, "Expected " + std::to_string(groups) + " lr_lambdas, but got " + std::to_string(fs.size()));
  for (const auto& f : fs)
    if (!f) invalid(who, "an lr_lambda is empty");
  return fs;
}

/// The two schedulers' shared shape: lambdas per group, saved as Python saves plain functions
/// (`lr_lambdas: [None, ...]`; a C++ function has no state to save).
class LambdaSchedulerBase : public LRScheduler {
 protected:
  void fields(StateFields& f) override {
    f.saved("lr_lambdas", nlohmann::json(std::vector<std::nullptr_t>(lambdas_.size(), nullptr)));
  }
  LambdaSchedulerBase(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> fs, const char* who)
      : LRScheduler(std::move(optimizer)), lambdas_(lambdas_per_group(std::move(fs), groups(), who)) {}
  std::vector<LRLambda> lambdas_;
};
}  // namespace detail

/// Python's LambdaLR: lr = base_lr × lr_lambda(step).
///   dtl::lr::LambdaLR(opt, [](std::int64_t e) { return std::min(1.0, (e + 1) / 100.0); });
class LambdaLR : public detail::LambdaSchedulerBase {
 public:
  LambdaLR(std::shared_ptr<torch::optim::Optimizer> optimizer, LRLambda lr_lambda)
      : LambdaLR(std::move(optimizer), std::vector<LRLambda>{std::move(lr_lambda)}) {}
  LambdaLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> lr_lambdas)
      : LambdaSchedulerBase(std::move(optimizer), std::move(lr_lambdas), "LambdaLR") {
    start();
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * lambdas_[i](last_epoch());
  }
};

/// Python's MultiplicativeLR: lr ← lr × lr_lambda(step), from the second step on.
class MultiplicativeLR : public detail::LambdaSchedulerBase {
 public:
  MultiplicativeLR(std::shared_ptr<torch::optim::Optimizer> optimizer, LRLambda lr_lambda)
      : MultiplicativeLR(std::move(optimizer), std::vector<LRLambda>{std::move(lr_lambda)}) {}
  MultiplicativeLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> lr_lambdas)
      : LambdaSchedulerBase(std::move(optimizer), std::move(lr_lambdas), "MultiplicativeLR") {
    start();
  }

 protected:
  void get_lr(std::span<double> lrs) override {
    if (last_epoch() <= 0) return;
    for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lambdas_[i](last_epoch());
  }
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_LAMBDA_HPP
