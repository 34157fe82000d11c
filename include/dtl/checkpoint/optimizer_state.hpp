// dtl — optimizer state in Python's layout, `{"state": {idx: {...}}, "param_groups": [{..., "params":
// [idx, ...]}]}`, with each torch.optim class's own keys (of the torch beside the LibTorch: 1.13 or 2.x), so a dtl checkpoint's entry
// loads into the Python optimizer with `opt.load_state_dict(...)` and gives the same next step, and
// a Python-written one loads into dtl. LibTorch's SGD, Adam, AdamW, RMSprop and Adagrad are
// covered here; an optimizer implementing optim::PythonStateDict (dtl's Adadelta, Adamax, NAdam,
// RAdam, ASGD, Rprop, and a user's on optim::PythonOptimizer) writes its own; another optimizer
// type has no Python layout (the checkpointer then keeps LibTorch's own archive for it).
#ifndef DTL_CHECKPOINT_OPTIMIZER_STATE_HPP
#define DTL_CHECKPOINT_OPTIMIZER_STATE_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/detail/torch_compat.hpp>
#include <dtl/errors.hpp>
#include <dtl/lr/param_group_keys.hpp>
#include <dtl/optim/python_state.hpp>
#include <dtl/optim/step_control.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace optim_layout {

using namespace optim::python_layout;

// Per optimizer class: the group's hyperparameters and one parameter's state, one field list each
// that saves and loads (python_layout::Fields), in the key order of the torch beside the LibTorch.
template <class Opt>
struct Layout;

template <>
struct Layout<torch::optim::SGD> : FieldLayout<Layout<torch::optim::SGD>, torch::optim::SGDOptions,
                                               torch::optim::SGDParamState> {
  static void group_fields(Fields& f, Options& o) {
    f("lr", o.lr())("momentum", o.momentum())("dampening", o.dampening())("weight_decay", o.weight_decay());
    f("nesterov", o.nesterov()).fixed("maximize", false).none("foreach").fixed("differentiable", false);
#if DTL_TORCH_2
    f.none("fused");
#endif
  }
  static void state_fields(Fields& f, State& s) { f.optional("momentum_buffer", s.momentum_buffer()); }
};

template <class Opt, class O, class S>
struct AdamLike : FieldLayout<AdamLike<Opt, O, S>, O, S> {
  using Options = O;
  using State = S;
  static void group_fields(Fields& f, Options& o) {
    f("lr", o.lr())("betas", o.betas())("eps", o.eps())("weight_decay", o.weight_decay())("amsgrad", o.amsgrad());
#if DTL_TORCH_2  // torch 2.x: AdamW is Adam with decoupled_weight_decay, and the same keys
    f.fixed("maximize", false).none("foreach").fixed("capturable", false).fixed("differentiable", false);
    f.none("fused").fixed("decoupled_weight_decay", std::is_same_v<Opt, torch::optim::AdamW>);
#else
    if constexpr (std::is_same_v<Opt, torch::optim::Adam>) {
      f.fixed("maximize", false).none("foreach").fixed("capturable", false);
      f.fixed("differentiable", false).fixed("fused", false);
    } else {
      f.none("foreach").fixed("maximize", false).fixed("capturable", false);
    }
#endif
  }
  static void state_fields(Fields& f, State& s) {
    f.count_as_tensor("step", s.step())("exp_avg", s.exp_avg())("exp_avg_sq", s.exp_avg_sq());
    f.optional("max_exp_avg_sq", s.max_exp_avg_sq());
  }
};
template <>
struct Layout<torch::optim::Adam>
    : AdamLike<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState> {};
template <>
struct Layout<torch::optim::AdamW>
    : AdamLike<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState> {};

template <>
struct Layout<torch::optim::RMSprop> : FieldLayout<Layout<torch::optim::RMSprop>, torch::optim::RMSpropOptions,
                                                   torch::optim::RMSpropParamState> {
  static void group_fields(Fields& f, Options& o) {
    f("lr", o.lr())("momentum", o.momentum())("alpha", o.alpha())("eps", o.eps())("centered", o.centered());
    f("weight_decay", o.weight_decay());
#if DTL_TORCH_2
    f.fixed("capturable", false);
#endif
    f.none("foreach").fixed("maximize", false).fixed("differentiable", false);
  }
  static void state_fields(Fields& f, State& s) {
    f("step", s.step())("square_avg", s.square_avg());
    f.optional("momentum_buffer", s.momentum_buffer()).optional("grad_avg", s.grad_avg());
  }
};

template <>
struct Layout<torch::optim::Adagrad> : FieldLayout<Layout<torch::optim::Adagrad>, torch::optim::AdagradOptions,
                                                   torch::optim::AdagradParamState> {
  static void group_fields(Fields& f, Options& o) {
    f("lr", o.lr())("lr_decay", o.lr_decay())("eps", o.eps())("weight_decay", o.weight_decay());
    f("initial_accumulator_value", o.initial_accumulator_value()).none("foreach").fixed("maximize", false);
#if DTL_TORCH_2
    f.fixed("differentiable", false).none("fused");
#endif
  }
  static void state_fields(Fields& f, State& s) { f.count_as_tensor("step", s.step())("sum", s.sum()); }
};

template <class Opt>
bool try_save(torch::optim::Optimizer& o, std::optional<c10::IValue>& out) {
  if (auto* t = dynamic_cast<Opt*>(&o)) {
    out = save<Layout<Opt>>(*t);
    return true;
  }
  return false;
}
template <class Opt>
bool try_load(torch::optim::Optimizer& o, const c10::IValue& v, const std::string& where) {
  if (auto* t = dynamic_cast<Opt*>(&o)) {
    load<Layout<Opt>>(*t, v, where);
    return true;
  }
  return false;
}

}  // namespace optim_layout

/// Python's `optimizer.state_dict()` for a LibTorch optimizer; nullopt for a type without a
/// Python layout (not SGD, Adam, AdamW, RMSprop, Adagrad or an optim::PythonStateDict).
inline std::optional<c10::IValue> python_optimizer_state(torch::optim::Optimizer& opt) {
  using namespace torch::optim;
  std::optional<c10::IValue> out;
  auto* control = dynamic_cast<StepControl*>(&opt);
  if (control) control->sync_state();  // fused Adam's step counts live on the device
  if (const auto* own = dynamic_cast<const optim::PythonStateDict*>(&opt)) out = own->python_state_dict();
  // AdamW before Adam: neither derives from the other in LibTorch, but keep the specific first.
  out || optim_layout::try_save<SGD>(opt, out) || optim_layout::try_save<AdamW>(opt, out) ||
      optim_layout::try_save<Adam>(opt, out) || optim_layout::try_save<RMSprop>(opt, out) ||
      optim_layout::try_save<Adagrad>(opt, out);
  if (out) {  // the keys Python's schedulers keep in param_groups ('initial_lr', OneCycleLR's, ...)
    const auto keys = lr::detail::param_group_keys().snapshot(opt);
    const auto groups = out->toGenericDict().at("param_groups").toList();
    for (std::size_t g = 0; g < keys.size() && g < groups.size(); ++g) {
      auto group = groups.get(g).toGenericDict();
      for (const auto& [k, v] : keys[g]) group.insert_or_assign(k, v);
    }
    for (std::size_t g = 0; control && g < groups.size(); ++g) {
      // torch.optim records the choice: foreach None/True/False, fused None/True, capturable
      // (Adam's key; the learning rate stays a number, so that any torch.optim resumes it)
      auto group = groups.get(g).toGenericDict();
      const auto& o = control->options();
      if (o.foreach) group.insert_or_assign("foreach", *o.foreach);
      if ((o.fused || o.capturable) && group.contains("fused")) group.insert_or_assign("fused", true);
      if (o.capturable && group.contains("capturable")) group.insert_or_assign("capturable", true);
    }
  }
  return out;
}

/// After a Python-layout load: the scheduler keys found in the saved param_groups, where the
/// schedulers (loaded next) read them, as Python's do.
inline void load_scheduler_group_keys(const std::shared_ptr<torch::optim::Optimizer>& opt, const c10::IValue& state) {
  if (!state.isGenericDict() || !state.toGenericDict().contains("param_groups")) return;
  const auto groups = state.toGenericDict().at("param_groups").toListRef();
  for (std::size_t g = 0; g < groups.size() && g < opt->param_groups().size(); ++g) {
    if (!groups[g].isGenericDict()) continue;
    const auto group = groups[g].toGenericDict();
    for (const char* key : lr::detail::kSchedulerGroupKeys)
      if (group.contains(key) && (group.at(key).isDouble() || group.at(key).isInt()))
        lr::detail::param_group_keys().set(opt, g, key, group.at(key).toScalar().toDouble());
  }
}

/// Loads a Python-layout optimizer state (from dtl or from Python's torch.save) into `opt`:
/// every group's hyperparameters and every parameter's state. False for an optimizer type
/// without a Python layout; CheckpointError (prefixed by `where`) when the entry does not fit.
inline bool load_python_optimizer_state(torch::optim::Optimizer& opt, const c10::IValue& state,
                                        const std::string& where) {
  using namespace torch::optim;
  try {
    if (auto* own = dynamic_cast<optim::PythonStateDict*>(&opt)) {
      own->load_python_state_dict(state, where);
      return true;
    }
    return optim_layout::try_load<SGD>(opt, state, where) || optim_layout::try_load<AdamW>(opt, state, where) ||
           optim_layout::try_load<Adam>(opt, state, where) || optim_layout::try_load<RMSprop>(opt, state, where) ||
           optim_layout::try_load<Adagrad>(opt, state, where);
  } catch (const c10::Error& e) {
    throw CheckpointError(where + ": " + e.what_without_backtrace());
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_OPTIMIZER_STATE_HPP
