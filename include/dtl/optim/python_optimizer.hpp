// dtl — the base of an optimizer that steps as torch.optim's single-tensor implementations do,
// parameter by parameter, and checkpoints in torch.optim's state_dict layout (python_state.hpp).
// dtl's Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop (torch_optim.hpp) are written on it, and so
// can a user's own optimizer: the derived class states only what differs.
//
//   struct SignSGDOptions : torch::optim::OptimizerCloneableOptions<SignSGDOptions> {
//     SignSGDOptions(double lr = 0.01) : lr_(lr) {}
//     TORCH_ARG(double, lr);
//     double get_lr() const override { return lr(); }
//     void set_lr(const double v) override { lr(v); }
//   };
//   struct SignSGDState : torch::optim::OptimizerCloneableParamState<SignSGDState> {};
//   class SignSGD : public dtl::optim::PythonOptimizer<SignSGD, SignSGDOptions, SignSGDState> {
//    public:
//     using PythonOptimizer::PythonOptimizer;
//     static constexpr const char* name = "SignSGD";
//     static void check(const Options&) {}                          // refuse bad hyperparameters
//     static std::unique_ptr<State> init_state(const torch::Tensor&, const Options&) {
//       return std::make_unique<State>();
//     }
//     static void update(torch::Tensor& p, torch::Tensor grad, State&, const Options& o) {
//       p.add_(grad.sign(), -o.lr());
//     }
//     // torch.optim's layout, one list each way: the group's keys and one parameter's state.
//     static void group_fields(Fields& f, Options& o) { f("lr", o.lr()); }
//     static void state_fields(Fields&, State&) {}
//   };
//
// (A class may instead write the four functions the lists stand for, group_out, group_in,
// state_out and state_in, with python_layout's helpers.)
//
// wrap_optimizer takes it as any LibTorch optimizer; checkpoints keep its state in the layout
// above, which the Python twin of the optimizer loads with `load_state_dict`.
#ifndef DTL_OPTIM_PYTHON_OPTIMIZER_HPP
#define DTL_OPTIM_PYTHON_OPTIMIZER_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/errors.hpp>
#include <dtl/optim/python_state.hpp>

#include <torch/torch.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace optim {

template <class Derived, class OptionsT, class StateT>
class PythonOptimizer : public torch::optim::Optimizer,
                        public PythonStateDict,
                        public python_layout::FieldLayout<Derived, OptionsT, StateT> {
 public:
  using Options = OptionsT;
  using State = StateT;
  using Dict = python_layout::Dict;
  using Fields = python_layout::Fields;

  PythonOptimizer(std::vector<torch::optim::OptimizerParamGroup> param_groups, Options defaults = {})
      : torch::optim::Optimizer(param_groups, std::make_unique<Options>(defaults)) {
    // LibTorch 2.x's add_param_group merges a group's own options with the defaults for its own
    // optimizer types only, and gives any other type's group the defaults: a group's learning
    // rate would be lost. A group keeps the options it was given, as in Python and LibTorch 1.13.
    for (std::size_t i = 0; i < param_groups.size(); ++i)
      if (param_groups[i].has_options()) this->param_groups()[i].set_options(param_groups[i].options().clone());
    Derived::check(defaults);
    for (auto& group : this->param_groups()) Derived::check(static_cast<const Options&>(group.options()));
  }
  explicit PythonOptimizer(std::vector<torch::Tensor> params, Options defaults = {})
      : PythonOptimizer({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  /// One step of every parameter with a gradient, group by group, with the group's options; the
  /// parameter's state is made at its first step (torch.optim's lazy initialization).
  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure) {
      at::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : this->param_groups()) {
      const auto& o = static_cast<const Options&>(group.options());
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto& slot = this->state()[detail::compat::optimizer_state_key(p)];
        if (!slot) {
          if (p.grad().is_sparse())
            throw InvalidExperimentException(std::string("dtl: ") + Derived::name +
                                             " does not support sparse gradients (as in torch.optim)");
          if (!p.is_floating_point())
            throw InvalidExperimentException(std::string("dtl: ") + Derived::name +
                                             " steps real floating-point parameters only (got " +
                                             std::string(c10::toString(p.scalar_type())) + ")");
          slot = Derived::init_state(p, o);
        }
        Derived::update(p, p.grad(), static_cast<State&>(*slot), o);
      }
    }
    return loss;
  }

  [[nodiscard]] c10::IValue python_state_dict() const override { return python_layout::save<Derived>(*this); }
  void load_python_state_dict(const c10::IValue& state, const std::string& where) override {
    python_layout::load<Derived>(*this, state, where);
  }

  /// torch::save(optimizer, ...) and torch::load: the Python-layout state, pickled, as one entry.
  void save(torch::serialize::OutputArchive& archive) const override {
    auto bytes = torch::pickle_save(python_state_dict());
    auto t = torch::empty({static_cast<std::int64_t>(bytes.size())}, torch::kUInt8);
    if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    archive.write("python_state_dict", t);
  }
  void load(torch::serialize::InputArchive& archive) override {
    torch::Tensor t;
    archive.read("python_state_dict", t);
    t = t.contiguous();
    std::vector<char> bytes(static_cast<std::size_t>(t.numel()));
    if (!bytes.empty()) std::memcpy(bytes.data(), t.data_ptr(), bytes.size());
    load_python_state_dict(torch::pickle_load(bytes), std::string("dtl: torch::load of ") + Derived::name);
  }

 protected:
  // The layout helpers, for a derived class's group_in / state_in.
  static double num(const Dict& d, const char* k, const std::string& w) { return python_layout::num(d, k, w); }
  static bool flag(const Dict& d, const char* k, const std::string& w) { return python_layout::flag(d, k, w); }
};

}  // namespace optim
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_PYTHON_OPTIMIZER_HPP
