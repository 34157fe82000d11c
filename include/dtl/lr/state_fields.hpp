// dtl — a scheduler's own settings in its state_dict, declared once: `fields` names each key and
// member, and the base both saves them (after its own keys) and loads them (each key present
// replaces the value, as Python's `__dict__.update` does). What LibTorch's serialization macros
// do for its optimizers' options, for Python's layout.
#ifndef DTL_LR_STATE_FIELDS_HPP
#define DTL_LR_STATE_FIELDS_HPP

#include <dtl/detail/abi.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace lr {

/// Saving into a state dict, or loading from one. A scheduler declares its settings:
///   void fields(dtl::lr::StateFields& f) override { f("step_size", step_size_)("gamma", gamma_); }
class StateFields {
 public:
  [[nodiscard]] static StateFields saving_to(nlohmann::json& out) { return StateFields(&out, nullptr); }
  [[nodiscard]] static StateFields loading_from(const nlohmann::json& in) { return StateFields(nullptr, &in); }

  /// A setting Python keeps as it is (a number, a bool, a list of numbers).
  template <class T>
  StateFields& operator()(const char* key, T& value) {
    if (out_)
      (*out_)[key] = value;
    else if (const auto* v = present(key))
      value = v->template get<T>();
    return *this;
  }
  /// A number Python keeps as an int where it is whole, else as a float.
  StateFields& number(const char* key, double& value) {
    if (out_)
      (*out_)[key] = std::floor(value) == value && std::abs(value) < 9.0e15
                         ? nlohmann::json(static_cast<std::int64_t>(value))
                         : nlohmann::json(value);
    else if (const auto* v = present(key))
      value = v->get<double>();
    return *this;
  }
  /// An enum Python keeps by name; a name it does not list loads as `otherwise`.
  template <class E>
  StateFields& named(const char* key, E& value, std::initializer_list<std::pair<E, const char*>> names, E otherwise) {
    if (out_) {
      for (const auto& [e, name] : names)
        if (e == value) (*out_)[key] = name;
    } else if (const auto* v = present(key)) {
      value = otherwise;
      for (const auto& [e, name] : names)
        if (*v == name) value = e;
    }
    return *this;
  }
  /// What Python keeps but dtl derives from other settings: saved, never loaded.
  StateFields& saved(const char* key, nlohmann::json value) {
    if (out_) (*out_)[key] = std::move(value);
    return *this;
  }

  /// The state dict being written (null while loading), for a setting in a layout of its own.
  [[nodiscard]] nlohmann::json* saving() const noexcept { return out_; }
  /// While loading: `key`'s value when the state has it and it is not null.
  [[nodiscard]] const nlohmann::json* present(const char* key) const {
    if (!in_ || !in_->contains(key) || (*in_)[key].is_null()) return nullptr;
    return &(*in_)[key];
  }

 private:
  StateFields(nlohmann::json* out, const nlohmann::json* in) : out_(out), in_(in) {}
  nlohmann::json* out_;
  const nlohmann::json* in_;
};

}  // namespace lr
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_LR_STATE_FIELDS_HPP
