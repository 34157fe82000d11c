// dtl — the definitions behind <dtl/lr/lambda.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
#ifndef DTL_LR_LAMBDA_INL_HPP
#define DTL_LR_LAMBDA_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/lr/lambda.hpp>

namespace dtl::inline DTL_ABI::lr::detail {

DTL_INLINE std::vector<LRLambda> lambdas_per_group(std::vector<LRLambda> fs, std::size_t groups, const char* who) {
  if (fs.size() == 1) return std::vector<LRLambda>(groups, fs.front());
  if (fs.size() != groups)
    invalid(who, "Expected " + std::to_string(groups) + " lr_lambdas, but got " + std::to_string(fs.size()));
  for (const auto& f : fs)
    if (!f) invalid(who, "an lr_lambda is empty");
  return fs;
}

DTL_INLINE nlohmann::json LambdaSchedulerBase::state_dict() const {
  auto j = LRScheduler::state_dict();
  j["lr_lambdas"] = nlohmann::json::array();
  for (std::size_t i = 0; i < lambdas_.size(); ++i) j["lr_lambdas"].push_back(nullptr);
  return j;
}

}  // namespace dtl::lr::detail

namespace dtl::inline DTL_ABI::lr {

DTL_INLINE LambdaLR::LambdaLR(std::shared_ptr<torch::optim::Optimizer> optimizer, std::vector<LRLambda> lr_lambdas)
    : LambdaSchedulerBase(std::move(optimizer), std::move(lr_lambdas), "LambdaLR") {
  start();
}

DTL_INLINE void LambdaLR::get_lr(std::span<double> lrs) {
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] = base_lrs()[i] * lambdas_[i](last_epoch());
}

DTL_INLINE MultiplicativeLR::MultiplicativeLR(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                              std::vector<LRLambda> lr_lambdas)
    : LambdaSchedulerBase(std::move(optimizer), std::move(lr_lambdas), "MultiplicativeLR") {
  start();
}

DTL_INLINE void MultiplicativeLR::get_lr(std::span<double> lrs) {
  if (last_epoch() <= 0) return;
  for (std::size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lambdas_[i](last_epoch());
}

}  // namespace dtl::lr

#endif  // DTL_LR_LAMBDA_INL_HPP
