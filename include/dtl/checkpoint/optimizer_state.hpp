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

/// Python keeps Adam's `step` as a float tensor and RMSprop's as an int.
inline std::int64_t step_of(const c10::IValue& v) { return static_cast<std::int64_t>(scalar(v)); }

// Per optimizer class: the group's hyperparameters and one parameter's state, both ways.
template <class Opt>
struct Layout;

template <>
struct Layout<torch::optim::SGD> {
  using Options = torch::optim::SGDOptions;
  using State = torch::optim::SGDParamState;
  static void group_out(const Options& o, Dict& g) {
    g.insert("lr", o.lr());
    g.insert("momentum", o.momentum());
    g.insert("dampening", o.dampening());
    g.insert("weight_decay", o.weight_decay());
    g.insert("nesterov", o.nesterov());
    g.insert("maximize", false);
    g.insert("foreach", c10::IValue());
    g.insert("differentiable", false);
#if DTL_TORCH_2
    g.insert("fused", c10::IValue());
#endif
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) {
    o.lr(num(g, "lr", w)).momentum(num(g, "momentum", w)).dampening(num(g, "dampening", w));
    o.weight_decay(num(g, "weight_decay", w)).nesterov(flag(g, "nesterov", w));
  }
  static void state_out(const State& s, Dict& d) {
    if (s.momentum_buffer().defined()) d.insert("momentum_buffer", out(s.momentum_buffer()));
  }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string&) {
    auto s = std::make_unique<State>();
    if (d.contains("momentum_buffer") && !d.at("momentum_buffer").isNone())
      s->momentum_buffer(in(d.at("momentum_buffer"), p));
    return s;
  }
};

template <class Opt, class O, class S>
struct AdamLike {
  using Options = O;
  using State = S;
  static void group_out(const Options& o, Dict& g) {
    g.insert("lr", o.lr());
    g.insert("betas", c10::ivalue::Tuple::create({std::get<0>(o.betas()), std::get<1>(o.betas())}));
    g.insert("eps", o.eps());
    g.insert("weight_decay", o.weight_decay());
    g.insert("amsgrad", o.amsgrad());
#if DTL_TORCH_2  // torch 2.x: AdamW is Adam with decoupled_weight_decay, and the same keys
    g.insert("maximize", false);
    g.insert("foreach", c10::IValue());
    g.insert("capturable", false);
    g.insert("differentiable", false);
    g.insert("fused", c10::IValue());
    g.insert("decoupled_weight_decay", std::is_same_v<Opt, torch::optim::AdamW>);
#else
    if constexpr (std::is_same_v<Opt, torch::optim::Adam>) {
      g.insert("maximize", false);
      g.insert("foreach", c10::IValue());
    } else {
      g.insert("foreach", c10::IValue());
      g.insert("maximize", false);
    }
    g.insert("capturable", false);
    if constexpr (std::is_same_v<Opt, torch::optim::Adam>) {
      g.insert("differentiable", false);
      g.insert("fused", false);
    }
#endif
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) {
    if (!g.contains("betas")) throw CheckpointError(w + ": param_group has no 'betas'");
    const auto b = g.at("betas");
    std::vector<c10::IValue> bs;
    if (b.isTuple())
      bs = b.toTupleRef().elements().vec();
    else if (b.isList())
      bs = b.toListRef().vec();
    if (bs.size() != 2) throw CheckpointError(w + ": param_group['betas'] must hold two numbers");
    auto d = [](const c10::IValue& v) { return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt()); };
    o.lr(num(g, "lr", w)).betas(std::make_tuple(d(bs[0]), d(bs[1]))).eps(num(g, "eps", w));
    o.weight_decay(num(g, "weight_decay", w)).amsgrad(flag(g, "amsgrad", w));
  }
  static void state_out(const State& s, Dict& d) {
    d.insert("step", torch::tensor(static_cast<float>(s.step())));
    d.insert("exp_avg", out(s.exp_avg()));
    d.insert("exp_avg_sq", out(s.exp_avg_sq()));
    if (s.max_exp_avg_sq().defined()) d.insert("max_exp_avg_sq", out(s.max_exp_avg_sq()));
  }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string&) {
    auto s = std::make_unique<State>();
    s->step(step_of(d.at("step")));
    s->exp_avg(in(d.at("exp_avg"), p));
    s->exp_avg_sq(in(d.at("exp_avg_sq"), p));
    if (d.contains("max_exp_avg_sq")) s->max_exp_avg_sq(in(d.at("max_exp_avg_sq"), p));
    return s;
  }
};
template <>
struct Layout<torch::optim::Adam>
    : AdamLike<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState> {};
template <>
struct Layout<torch::optim::AdamW>
    : AdamLike<torch::optim::AdamW, torch::optim::AdamWOptions, torch::optim::AdamWParamState> {};

template <>
struct Layout<torch::optim::RMSprop> {
  using Options = torch::optim::RMSpropOptions;
  using State = torch::optim::RMSpropParamState;
  static void group_out(const Options& o, Dict& g) {
    g.insert("lr", o.lr());
    g.insert("momentum", o.momentum());
    g.insert("alpha", o.alpha());
    g.insert("eps", o.eps());
    g.insert("centered", o.centered());
    g.insert("weight_decay", o.weight_decay());
#if DTL_TORCH_2
    g.insert("capturable", false);
#endif
    g.insert("foreach", c10::IValue());
    g.insert("maximize", false);
    g.insert("differentiable", false);
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) {
    o.lr(num(g, "lr", w)).momentum(num(g, "momentum", w)).alpha(num(g, "alpha", w)).eps(num(g, "eps", w));
    o.centered(flag(g, "centered", w)).weight_decay(num(g, "weight_decay", w));
  }
  static void state_out(const State& s, Dict& d) {
    d.insert("step", s.step());
    d.insert("square_avg", out(s.square_avg()));
    if (s.momentum_buffer().defined()) d.insert("momentum_buffer", out(s.momentum_buffer()));
    if (s.grad_avg().defined()) d.insert("grad_avg", out(s.grad_avg()));
  }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string&) {
    auto s = std::make_unique<State>();
    s->step(step_of(d.at("step")));
    s->square_avg(in(d.at("square_avg"), p));
    if (d.contains("momentum_buffer")) s->momentum_buffer(in(d.at("momentum_buffer"), p));
    if (d.contains("grad_avg")) s->grad_avg(in(d.at("grad_avg"), p));
    return s;
  }
};

template <>
struct Layout<torch::optim::Adagrad> {
  using Options = torch::optim::AdagradOptions;
  using State = torch::optim::AdagradParamState;
  static void group_out(const Options& o, Dict& g) {
    g.insert("lr", o.lr());
    g.insert("lr_decay", o.lr_decay());
    g.insert("eps", o.eps());
    g.insert("weight_decay", o.weight_decay());
    g.insert("initial_accumulator_value", o.initial_accumulator_value());
    g.insert("foreach", c10::IValue());
    g.insert("maximize", false);
#if DTL_TORCH_2
    g.insert("differentiable", false);
    g.insert("fused", c10::IValue());
#endif
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) {
    o.lr(num(g, "lr", w)).lr_decay(num(g, "lr_decay", w)).eps(num(g, "eps", w));
    o.weight_decay(num(g, "weight_decay", w)).initial_accumulator_value(num(g, "initial_accumulator_value", w));
  }
  static void state_out(const State& s, Dict& d) {
    d.insert("step", torch::tensor(static_cast<float>(s.step())));
    d.insert("sum", out(s.sum()));
  }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string&) {
    auto s = std::make_unique<State>();
    s->step(step_of(d.at("step")));
    s->sum(in(d.at("sum"), p));
    return s;
  }
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
