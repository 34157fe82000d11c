// dtl — optimizer state in torch.optim's `state_dict()` layout: `{"state": {idx: {...}},
// "param_groups": [{..., "params": [idx, ...]}]}`, parameters numbered across the groups in order.
//
// A checkpoint keeps an optimizer's state in this layout, so that Python's
// `optimizer.load_state_dict(...)` resumes dtl's checkpoints and dtl resumes Python's. LibTorch's
// SGD, Adam, AdamW, RMSprop and Adagrad have it built in (checkpoint/optimizer_state.hpp); dtl's
// own optimizers (torch_optim.hpp) and a user's optimizer get it by implementing
// `PythonStateDict`, most simply through `PythonOptimizer` (python_optimizer.hpp), which needs
// only a Layout: two field lists (Fields, below) that write and read one group's hyperparameters
// and one parameter's state, or the four functions they stand for, written with the helpers below.
#ifndef DTL_OPTIM_PYTHON_STATE_HPP
#define DTL_OPTIM_PYTHON_STATE_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/errors.hpp>

#include <torch/torch.h>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace optim {

/// An optimizer whose checkpoint entry is torch.optim's state_dict: the checkpointer asks for
/// this interface (a cross-cast from torch::optim::Optimizer) before LibTorch's own archive.
class PythonStateDict {
 public:
  virtual ~PythonStateDict() = default;
  /// Python's `optimizer.state_dict()`: what torch.save writes and `load_state_dict` takes.
  [[nodiscard]] virtual c10::IValue python_state_dict() const = 0;
  /// Loads a state written by python_state_dict or by Python's `torch.save(opt.state_dict())`;
  /// CheckpointError, prefixed by `where`, when it does not fit this optimizer.
  virtual void load_python_state_dict(const c10::IValue& state, const std::string& where) = 0;
};

namespace python_layout {

using Dict = c10::impl::GenericDict;

inline Dict str_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

/// A state tensor as torch.save stores it: detached, on the CPU.
inline torch::Tensor out(const torch::Tensor& t) { return t.detach().cpu(); }
/// A loaded state tensor made the parameter's own: its device and dtype, its own memory.
inline torch::Tensor in(const c10::IValue& v, const torch::Tensor& like) {
  return v.toTensor().to(like.device(), like.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
}
/// torch.optim's 0-d float32 CPU tensor for a step count or another scalar of the state.
inline torch::Tensor scalar_tensor(float v) { return torch::tensor(v, torch::kFloat); }

/// A state entry that must be there.
inline c10::IValue at(const Dict& d, const char* k, const std::string& where) {
  if (!d.contains(k)) throw CheckpointError(where + ": a parameter's state has no '" + k + "'");
  return d.at(k);
}
/// A group's number (a Python float, int or bool).
inline double num(const Dict& d, const char* k, const std::string& where) {
  if (!d.contains(k)) throw CheckpointError(where + ": param_group has no '" + k + "'");
  const auto v = d.at(k);
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item<double>();  // lr=torch.tensor(...)
  throw CheckpointError(where + ": param_group['" + k + "'] is not a number");
}
inline bool flag(const Dict& d, const char* k, const std::string& where) { return num(d, k, where) != 0.0; }
/// A group's pair of numbers (`betas`, `etas`, `step_sizes`): a tuple, or a list after a JSON trip.
inline std::pair<double, double> pair(const Dict& d, const char* k, const std::string& where) {
  if (!d.contains(k)) throw CheckpointError(where + ": param_group has no '" + k + "'");
  const auto v = d.at(k);
  std::vector<c10::IValue> xs;
  if (v.isTuple())
    xs = v.toTupleRef().elements().vec();
  else if (v.isList())
    xs = v.toListRef().vec();
  auto number = [](const c10::IValue& x) { return x.isDouble() || x.isInt(); };
  if (xs.size() != 2 || !number(xs[0]) || !number(xs[1]))
    throw CheckpointError(where + ": param_group['" + k + "'] must hold two numbers");
  auto d0 = [](const c10::IValue& x) { return x.isDouble() ? x.toDouble() : static_cast<double>(x.toInt()); };
  return {d0(xs[0]), d0(xs[1])};
}
inline c10::IValue tuple(double a, double b) { return c10::ivalue::Tuple::create({a, b}); }
/// A step count or another scalar of the state: a tensor (torch >= 1.12), an int or a float.
inline double scalar(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().item<double>();
  if (v.isInt()) return static_cast<double>(v.toInt());
  return v.toDouble();
}
/// The same for a state entry that must be there.
inline double scalar(const Dict& d, const char* k, const std::string& where) { return scalar(at(d, k, where)); }

/// One optimizer's torch.optim layout written once, as a field list that both saves and loads
/// (lr::StateFields does the same for the schedulers). The list's order is the dict's order, which
/// pickled bytes keep; the C++ type of a field says how Python stores it:
///
///   static void group_fields(Fields& f, Options& o) {            // one param_group's keys
///     f("lr", o.lr())("betas", o.betas())("maximize", o.maximize()).none("foreach");
///   }
///   static void state_fields(Fields& f, State& s) {              // one parameter's state
///     f("step", s.step())("exp_avg", s.exp_avg()).optional("max_exp_avg_sq", s.max_exp_avg_sq());
///   }
///
/// Loading throws CheckpointError, prefixed by `where`, for a key that is missing or of the wrong
/// kind; a missing flag is false, as torch.optim's `__setstate__` defaults it.
class Fields {
 public:
  /// Fields that write into `out` (the options or state are only read).
  [[nodiscard]] static Fields saving_to(Dict& out) { return Fields(&out, nullptr, {}, nullptr); }
  /// Fields that read from `in`; a state's tensors are made `param`'s own (device and dtype).
  [[nodiscard]] static Fields loading_from(const Dict& in, std::string where, const torch::Tensor* param = nullptr) {
    return Fields(nullptr, &in, std::move(where), param);
  }

  /// A group's Python float.
  Fields& operator()(const char* k, double& v) {
    if (out_)
      out_->insert(k, v);
    else
      v = num(*in_, k, where_);
    return *this;
  }
  /// A group's flag.
  Fields& operator()(const char* k, bool& v) {
    if (out_)
      out_->insert(k, v);
    else
      v = in_->contains(k) && flag(*in_, k, where_);
    return *this;
  }
  /// A group's pair (`betas`, `etas`): a Python tuple.
  Fields& operator()(const char* k, std::tuple<double, double>& v) {
    if (out_) {
      out_->insert(k, c10::ivalue::Tuple::create({std::get<0>(v), std::get<1>(v)}));
    } else {
      const auto [a, b] = pair(*in_, k, where_);
      v = std::make_tuple(a, b);
    }
    return *this;
  }
  /// A state's float32 0-d tensor (torch.optim's `step`, NAdam's `mu_product`), kept as a float.
  Fields& operator()(const char* k, float& v) {
    if (out_)
      out_->insert(k, scalar_tensor(v));
    else
      v = static_cast<float>(scalar(*in_, k, where_));
    return *this;
  }
  /// A state's count that Python keeps as an int (RMSprop's `step` in LibTorch's state).
  Fields& operator()(const char* k, std::int64_t& v) {
    if (out_)
      out_->insert(k, v);
    else
      v = static_cast<std::int64_t>(scalar(*in_, k, where_));
    return *this;
  }
  /// A state's tensor: saved detached on the CPU, loaded onto the parameter's device and dtype.
  Fields& operator()(const char* k, torch::Tensor& v) {
    if (out_)
      out_->insert(k, python_layout::out(v));
    else
      v = in(at(*in_, k, where_), *param_);
    return *this;
  }
  /// A state's count that Python keeps as a float32 0-d tensor (Adam's and Adagrad's `step`,
  /// an int64 in LibTorch's state).
  Fields& count_as_tensor(const char* k, std::int64_t& v) {
    if (out_)
      out_->insert(k, scalar_tensor(static_cast<float>(v)));
    else
      v = static_cast<std::int64_t>(scalar(*in_, k, where_));
    return *this;
  }
  /// A state's tensor that only some settings have (momentum_buffer, max_exp_avg_sq): saved
  /// when defined, loaded when present and not None.
  Fields& optional(const char* k, torch::Tensor& v) {
    if (out_) {
      if (v.defined()) out_->insert(k, python_layout::out(v));
    } else if (in_->contains(k) && !in_->at(k).isNone()) {
      v = in(in_->at(k), *param_);
    }
    return *this;
  }
  /// A group's key whose value dtl's step fixes (`capturable: False`): saved, not read.
  Fields& fixed(const char* k, bool v) {
    if (out_) out_->insert(k, v);
    return *this;
  }
  /// A group's key Python leaves None (`foreach`, `fused`): saved, not read.
  Fields& none(const char* k) {
    if (out_) out_->insert(k, c10::IValue());
    return *this;
  }

 private:
  Fields(Dict* out, const Dict* in, std::string where, const torch::Tensor* param)
      : out_(out), in_(in), where_(std::move(where)), param_(param) {}
  Dict* out_;
  const Dict* in_;
  std::string where_;
  const torch::Tensor* param_;
};

/// The four functions of a layout (below) from a class's two field lists, `Self::group_fields`
/// and `Self::state_fields`.
template <class Self, class OptionsT, class StateT>
struct FieldLayout {
  using Options = OptionsT;
  using State = StateT;
  static void group_out(const Options& o, Dict& g) {
    auto f = Fields::saving_to(g);
    Self::group_fields(f, const_cast<Options&>(o));  // saving only reads
  }
  static void group_in(Options& o, const Dict& g, const std::string& w) {
    auto f = Fields::loading_from(g, w);
    Self::group_fields(f, o);
  }
  static void state_out(const State& s, Dict& d) {
    auto f = Fields::saving_to(d);
    Self::state_fields(f, const_cast<State&>(s));  // saving only reads
  }
  static std::unique_ptr<State> state_in(const Dict& d, const torch::Tensor& p, const std::string& w) {
    auto s = std::make_unique<State>();
    auto f = Fields::loading_from(d, w, &p);
    Self::state_fields(f, *s);
    return s;
  }
};

/// What a layout gives for optimizer `O`: its options and state types, and the four functions.
template <class L>
concept StateLayout = requires(const typename L::Options& co, typename L::Options& o, const typename L::State& s, Dict& d,
                          const Dict& cd, const torch::Tensor& p, const std::string& w) {
  L::group_out(co, d);
  L::group_in(o, cd, w);
  L::state_out(s, d);
  { L::state_in(cd, p, w) } -> std::same_as<std::unique_ptr<typename L::State>>;
};

/// `opt.state_dict()` in Python's layout, through layout L.
template <StateLayout L>
c10::IValue save(const torch::optim::Optimizer& opt) {
  Dict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  std::int64_t index = 0;
  for (const auto& group : opt.param_groups()) {
    Dict g = str_dict();
    L::group_out(static_cast<const typename L::Options&>(group.options()), g);
    c10::impl::GenericList params(c10::AnyType::get());
    for (const auto& p : group.params()) {
      params.push_back(index);
      if (auto it = opt.state().find(detail::compat::optimizer_state_key(p)); it != opt.state().end()) {
        Dict s = str_dict();
        L::state_out(static_cast<const typename L::State&>(*it->second), s);
        state.insert(index, s);
      }
      ++index;
    }
    g.insert("params", params);
    groups.push_back(g);
  }
  Dict sd = str_dict();
  sd.insert("state", state);
  sd.insert("param_groups", groups);
  return sd;
}

/// Loads a Python-layout state into `opt` through layout L: every group's hyperparameters and
/// every parameter's state, or CheckpointError (prefixed by `where`) naming what does not fit.
template <StateLayout L>
void load(torch::optim::Optimizer& opt, const c10::IValue& v, const std::string& where) {
  if (!v.isGenericDict()) throw CheckpointError(where + " is not a dict");
  const auto sd = v.toGenericDict();
  if (!sd.contains("state") || !sd.contains("param_groups") || !sd.at("param_groups").isList() ||
      !sd.at("state").isGenericDict())
    throw CheckpointError(where + " has no 'state' / 'param_groups' (not an optimizer state_dict)");
  const auto groups = sd.at("param_groups").toListRef();
  auto& mine = opt.param_groups();
  if (groups.size() != mine.size())
    throw CheckpointError(where + " has " + std::to_string(groups.size()) + " param_groups but the optimizer has " +
                          std::to_string(mine.size()));
  // Python numbers parameters across groups in order; map those numbers to this optimizer's tensors.
  std::vector<torch::Tensor> by_index;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g].isGenericDict()) throw CheckpointError(where + ": param_group " + std::to_string(g) + " is not a dict");
    const auto saved = groups[g].toGenericDict();
    if (!saved.contains("params") || !saved.at("params").isList())
      throw CheckpointError(where + ": param_group " + std::to_string(g) + " has no 'params' list");
    const auto params = saved.at("params").toListRef();
    if (params.size() != mine[g].params().size())
      throw CheckpointError(where + ": param_group " + std::to_string(g) + " has " + std::to_string(params.size()) +
                            " parameters but the optimizer's has " + std::to_string(mine[g].params().size()) +
                            " (a different model?)");
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto idx = static_cast<std::size_t>(params[i].toInt());
      if (idx >= by_index.size()) by_index.resize(idx + 1);
      by_index[idx] = mine[g].params()[i];
    }
    L::group_in(static_cast<typename L::Options&>(mine[g].options()), saved, where);
  }
  opt.state().clear();
  for (const auto& e : sd.at("state").toGenericDict()) {
    const auto idx = static_cast<std::size_t>(e.key().toInt());
    if (idx >= by_index.size() || !by_index[idx].defined())
      throw CheckpointError(where + ": state for parameter " + std::to_string(idx) + ", which no param_group lists");
    if (!e.value().isGenericDict())
      throw CheckpointError(where + ": the state of parameter " + std::to_string(idx) + " is not a dict");
    const auto& p = by_index[idx];
    opt.state()[detail::compat::optimizer_state_key(p)] = L::state_in(e.value().toGenericDict(), p, where);
  }
}

}  // namespace python_layout

}  // namespace optim
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_OPTIM_PYTHON_STATE_HPP
