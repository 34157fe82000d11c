// dtl — PyTorch's LambdaLR and MultiplicativeLR: a user function of the step gives the factor.
#ifndef DTL_LR_LAMBDA_HPP
#define DTL_LR_LAMBDA_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/lr/scheduler.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace dtl::inline DTL_ABI::lr {

/// A factor as a function of the step (`last_epoch`), like Python's `lambda epoch: ...`.
using LRLambda = std::function<double(std::int64_t)>;

namespace detail {
/// Python's argument handling: one function for every group, or one per group.
DTL_INLINE std::vector<LRLambda> lambdas_per_group(std::vector<LRLambda> fs, std::size_t groups, const char* who);

/// The two schedulers' shared shape: lambdas per group, saved as Python saves plain functions
/// (`lr_lambdas: [None, ...]`; a C++ function has no state to save).
class LambdaSchedulerBase : public LRScheduler {
 public:
  [[nodiscard]] DTL_INLINE nlohmann::json state_dict() const override;

 protected:
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
  DTL_INLINE LambdaLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> lr_lambdas);

 protected:
  DTL_INLINE void get_lr(std::span<double> lrs) override;
};

/// Python's MultiplicativeLR: lr ← lr × lr_lambda(step), from the second step on.
class MultiplicativeLR : public detail::LambdaSchedulerBase {
 public:
  MultiplicativeLR(std::shared_ptr<torch::optim::Optimizer> optimizer, LRLambda lr_lambda)
      : MultiplicativeLR(std::move(optimizer), std::vector<LRLambda>{std::move(lr_lambda)}) {}
  DTL_INLINE MultiplicativeLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> lr_lambdas);

 protected:
  DTL_INLINE void get_lr(std::span<double> lrs) override;
};

}  // namespace dtl::lr

#ifndef DTL_COMPILED_LIB
#include <dtl/lr/lambda-inl.hpp>
#endif

#endif  // DTL_LR_LAMBDA_HPP
