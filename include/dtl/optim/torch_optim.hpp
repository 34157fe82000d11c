// dtl — the optimizers torch.optim has and LibTorch lacks: Adadelta, Adamax, NAdam, RAdam, ASGD and
// Rprop, each with torch.optim's hyperparameters, defaults and single-tensor arithmetic (the same
// ATen ops on the same values, so the same numbers bit for bit), and a checkpoint entry in
// torch.optim's state_dict layout, which Python's `optimizer.load_state_dict` takes and which
// loads a Python-written one. Python's `foreach` implementations (its default on CUDA) and
// `capturable` are not provided: on CUDA these step parameter by parameter, as Python's
// `foreach=False` does.
//   opt_ = ctx.wrap_optimizer(dtl::optim::Adadelta(model_->parameters(), dtl::optim::AdadeltaOptions(1.0)));
#ifndef DTL_OPTIM_TORCH_OPTIM_HPP
#define DTL_OPTIM_TORCH_OPTIM_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/optim/python_optimizer.hpp>

#include <torch/torch.h>

#include <memory>
#include <string>
#include <tuple>

namespace dtl {
inline namespace DTL_ABI {
namespace optim {

/// torch.optim.Adadelta(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False).
struct AdadeltaOptions : torch::optim::OptimizerCloneableOptions<AdadeltaOptions> {
  DTL_INLINE AdadeltaOptions(double lr = 1.0);  // NOLINT(google-explicit-constructor): LibTorch's style
  TORCH_ARG(double, lr);
  TORCH_ARG(double, rho) = 0.9;
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct AdadeltaParamState : torch::optim::OptimizerCloneableParamState<AdadeltaParamState> {
  TORCH_ARG(float, step) = 0;  // Python's float32 step tensor, counted in float32
  TORCH_ARG(torch::Tensor, square_avg);
  TORCH_ARG(torch::Tensor, acc_delta);
};
class Adadelta : public PythonOptimizer<Adadelta, AdadeltaOptions, AdadeltaParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "Adadelta";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

/// torch.optim.Adamax(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False).
struct AdamaxOptions : torch::optim::OptimizerCloneableOptions<AdamaxOptions> {
  DTL_INLINE AdamaxOptions(double lr = 2e-3);  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct AdamaxParamState : torch::optim::OptimizerCloneableParamState<AdamaxParamState> {
  TORCH_ARG(float, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_inf);
};
class Adamax : public PythonOptimizer<Adamax, AdamaxOptions, AdamaxParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "Adamax";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

/// torch.optim.NAdam(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
/// decoupled_weight_decay=False, maximize=False).
struct NAdamOptions : torch::optim::OptimizerCloneableOptions<NAdamOptions> {
  DTL_INLINE NAdamOptions(double lr = 2e-3);  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, momentum_decay) = 4e-3;
  TORCH_ARG(bool, decoupled_weight_decay) = false;
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct NAdamParamState : torch::optim::OptimizerCloneableParamState<NAdamParamState> {
  TORCH_ARG(float, step) = 0;
  TORCH_ARG(float, mu_product) = 1;  // Python's float32 0-d tensor, multiplied in float32
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);
};
class NAdam : public PythonOptimizer<NAdam, NAdamOptions, NAdamParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "NAdam";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

/// torch.optim.RAdam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
/// decoupled_weight_decay=False, maximize=False).
struct RAdamOptions : torch::optim::OptimizerCloneableOptions<RAdamOptions> {
  DTL_INLINE RAdamOptions(double lr = 1e-3);  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  using betas_t = std::tuple<double, double>;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, decoupled_weight_decay) = false;
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct RAdamParamState : torch::optim::OptimizerCloneableParamState<RAdamParamState> {
  TORCH_ARG(float, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);
};
class RAdam : public PythonOptimizer<RAdam, RAdamOptions, RAdamParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "RAdam";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

/// torch.optim.ASGD(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False).
struct ASGDOptions : torch::optim::OptimizerCloneableOptions<ASGDOptions> {
  DTL_INLINE ASGDOptions(double lr = 1e-2);  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  TORCH_ARG(double, lambd) = 1e-4;
  TORCH_ARG(double, alpha) = 0.75;
  TORCH_ARG(double, t0) = 1e6;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct ASGDParamState : torch::optim::OptimizerCloneableParamState<ASGDParamState> {
  TORCH_ARG(float, step) = 0;
  TORCH_ARG(float, eta) = 0;  // Python's float32 0-d tensors
  TORCH_ARG(float, mu) = 1;
  TORCH_ARG(torch::Tensor, ax);  // the averaged parameter
};
class ASGD : public PythonOptimizer<ASGD, ASGDOptions, ASGDParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "ASGD";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

/// torch.optim.Rprop(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False).
struct RpropOptions : torch::optim::OptimizerCloneableOptions<RpropOptions> {
  DTL_INLINE RpropOptions(double lr = 1e-2);  // NOLINT(google-explicit-constructor)
  TORCH_ARG(double, lr);
  using pair_t = std::tuple<double, double>;
  TORCH_ARG(pair_t, etas) = std::make_tuple(0.5, 1.2);  // (etaminus, etaplus)
  TORCH_ARG(pair_t, step_sizes) = std::make_tuple(1e-6, 50.0);  // (min, max)
  TORCH_ARG(bool, maximize) = false;
  [[nodiscard]] double get_lr() const override { return lr(); }
  void set_lr(const double v) override { lr(v); }
};
struct RpropParamState : torch::optim::OptimizerCloneableParamState<RpropParamState> {
  TORCH_ARG(float, step) = 0;
  TORCH_ARG(torch::Tensor, prev);
  TORCH_ARG(torch::Tensor, step_size);
};
class Rprop : public PythonOptimizer<Rprop, RpropOptions, RpropParamState> {
 public:
  using PythonOptimizer::PythonOptimizer;
  static constexpr const char* name = "Rprop";
  DTL_INLINE static void check(const Options& o);
  DTL_INLINE static std::unique_ptr<State> init_state(const torch::Tensor& p, const Options& o);
  DTL_INLINE static void update(torch::Tensor& p, torch::Tensor grad, State& s, const Options& o);
  DTL_INLINE static void group_fields(Fields& f, Options& o);
  DTL_INLINE static void state_fields(Fields& f, State& s);
};

}  // namespace optim
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/optim/torch_optim-inl.hpp>
#endif

#endif  // DTL_OPTIM_TORCH_OPTIM_HPP
