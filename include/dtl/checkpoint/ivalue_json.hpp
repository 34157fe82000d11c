// dtl — JSON <-> c10::IValue for the plain-data parts of a checkpoint (scheduler and callback
// state): objects become str-keyed dicts (int-keyed when every key is an integer, as
// MultiStepLR's milestone Counter), arrays lists, and numbers keep their kind (an integer stays a
// Python int, a float a Python float), so Python's load_state_dict sees what it wrote. JSON has no
// infinity or NaN: dtl's states spell them "inf", "-inf", "nan" (detail/json_float.hpp),
// and those three strings cross into the checkpoint as Python floats, and back — a
// ReduceLROnPlateau state saved before its first step holds best = inf, which Python's
// `is_better` compares with a float (a str raised TypeError there).
#ifndef DTL_CHECKPOINT_IVALUE_JSON_HPP
#define DTL_CHECKPOINT_IVALUE_JSON_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/detail/json_float.hpp>
#include <dtl/errors.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// `key` as an int when it is one written canonically ("30", "-2", "0"; not "030" or "+1"), so an
/// object like MultiStepLR's milestone Counter reaches Python with int keys, and reading it back
/// (int keys are written as strings) gives the same JSON.
inline std::optional<std::int64_t> canonical_int_key(const std::string& key) {
  std::int64_t v = 0;
  const char* first = key.data();
  const char* last = key.data() + key.size();
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last) return std::nullopt;
  if (std::to_string(v) != key) return std::nullopt;
  return v;
}

inline c10::IValue json_to_ivalue(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return c10::IValue();
    case nlohmann::json::value_t::boolean:
      return c10::IValue(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return c10::IValue(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return c10::IValue(static_cast<std::int64_t>(j.get<std::uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return c10::IValue(j.get<double>());
    case nlohmann::json::value_t::string: {
      const auto& str = j.get_ref<const std::string&>();
      if (const auto v = non_finite_from_string(str)) return c10::IValue(*v);
      return c10::IValue(str);
    }
    case nlohmann::json::value_t::array: {
      c10::impl::GenericList list(c10::AnyType::get());
      for (const auto& x : j) list.push_back(json_to_ivalue(x));
      return list;
    }
    case nlohmann::json::value_t::object: {
      bool int_keys = !j.empty();
      for (const auto& [k, v] : j.items()) int_keys = int_keys && canonical_int_key(k).has_value();
      if (int_keys) {
        c10::impl::GenericDict dict(c10::IntType::get(), c10::AnyType::get());
        for (const auto& [k, v] : j.items()) dict.insert(*canonical_int_key(k), json_to_ivalue(v));
        return dict;
      }
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [k, v] : j.items()) dict.insert(k, json_to_ivalue(v));
      return dict;
    }
    default:
      break;
  }
  throw CheckpointError("dtl: checkpoint: a state value of JSON type '" + std::string(j.type_name()) +
                        "' cannot be stored");
}

/// The inverse of json_to_ivalue; tensors (which plain state has none of) become nested arrays,
/// tuples arrays, and int-keyed dicts objects with the keys written as strings.
inline nlohmann::json ivalue_to_json(const c10::IValue& v) {
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return float_to_json(v.toDouble());
  if (v.isString()) return v.toStringRef();
  if (v.isList()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v.toListRef()) a.push_back(ivalue_to_json(x));
    return a;
  }
  if (v.isTuple()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v.toTupleRef().elements()) a.push_back(ivalue_to_json(x));
    return a;
  }
  if (v.isGenericDict()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& e : v.toGenericDict()) {
      const auto& k = e.key();
      o[k.isString() ? k.toStringRef()
        : k.isInt()  ? std::to_string(k.toInt())
                     : k.tagKind()] = ivalue_to_json(e.value());
    }
    return o;
  }
  if (v.isTensor()) {
    const auto t = v.toTensor().to(torch::kCPU, torch::kDouble).contiguous();
    if (t.dim() == 0) return t.item<double>();
    nlohmann::json a = nlohmann::json::array();
    for (std::int64_t i = 0; i < t.size(0); ++i) a.push_back(ivalue_to_json(t[i]));
    return a;
  }
  throw CheckpointError("dtl: checkpoint: a state value of type " + v.tagKind() + " cannot be read as plain data");
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_IVALUE_JSON_HPP
