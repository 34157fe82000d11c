// dtl — the non-template definitions of <dtl/config/hparams.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CONFIG_HPARAMS_INL_HPP
#define DTL_CONFIG_HPARAMS_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/config/hparams.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE std::string describe_json(const nlohmann::json& value) {
  const auto shown = [&] {
    std::string text = value.dump();
    constexpr std::size_t max_shown = 40;
    if (text.size() > max_shown) text = text.substr(0, max_shown - 3) + "...";
    return " (" + text + ")";
  };
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean" + shown();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer" + shown();
    case nlohmann::json::value_t::number_float:
      return "a floating-point number" + shown();
    case nlohmann::json::value_t::string:
      return "a string" + shown();
    case nlohmann::json::value_t::array:
      return value.empty() ? "an empty list" : "a list" + shown();
    case nlohmann::json::value_t::object:
      return value.empty() ? "an empty mapping" : "a mapping" + shown();
    case nlohmann::json::value_t::binary:
      return "a binary value";
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "an invalid value";
}

DTL_INLINE std::vector<std::string> split_dotted(std::string_view name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    parts.emplace_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

DTL_INLINE bool has_empty_segment(std::string_view name) {
  for (const auto& part : split_dotted(name)) {
    if (part.empty()) return true;
  }
  return false;
}

DTL_INLINE void collect_hparam_names(const nlohmann::json& node, const std::string& prefix,
                                     std::vector<std::string>& out) {
  if (node.is_object() && !node.empty()) {
    for (const auto& [key, child] : node.items()) {
      collect_hparam_names(child, prefix.empty() ? key : prefix + "." + key, out);
    }
  } else if (!prefix.empty()) {
    out.push_back(prefix);
  }
}

DTL_INLINE void throw_hparam_not_set(const nlohmann::json& hparams, std::string_view name) {
  std::vector<std::string> known;
  collect_hparam_names(hparams, "", known);
  std::string message = "hyperparameter '" + std::string(name) + "' is not set" + did_you_mean(name, known) +
                        "; pass --hparam " + std::string(name) + "=VALUE or add it to hyperparameters in the config";
  if (known.empty()) {
    message += " (no hyperparameters are set)";
  } else {
    // A long list would bury the line; the first names are enough to spot a naming scheme.
    constexpr std::size_t max_listed = 20;
    message += " (known: ";
    for (std::size_t i = 0; i < known.size() && i < max_listed; ++i) message += (i ? ", " : "") + known[i];
    if (known.size() > max_listed) message += ", ... " + std::to_string(known.size() - max_listed) + " more";
    message += ")";
  }
  throw ConfigError(message);
}

DTL_INLINE void throw_hparam_type(std::string_view name, const nlohmann::json& value, std::string_view expected,
                                  bool numeric_expected) {
  std::string message =
      "hyperparameter '" + std::string(name) + "' is " + describe_json(value) + ", expected " + std::string(expected);
  // A quoted number in YAML or JSON is a string; say how to write it so it parses as a number.
  if (value.is_string()) {
    const auto unquoted = nlohmann::json::parse(value.get_ref<const std::string&>(), nullptr, false);
    if ((numeric_expected && unquoted.is_number()) || (!numeric_expected && unquoted.is_boolean())) {
      message += "; write it without quotes (--hparam " + std::string(name) + "=" + unquoted.dump() + ")";
    }
  }
  throw ConfigError(message);
}

#ifdef DTL_COMPILED_LIB
// What hparams.hpp declares `extern template` against libdtl.
template double hparam_convert<double>(const nlohmann::json&, std::string_view);
template std::int64_t hparam_convert<std::int64_t>(const nlohmann::json&, std::string_view);
template bool hparam_convert<bool>(const nlohmann::json&, std::string_view);
template std::string hparam_convert<std::string>(const nlohmann::json&, std::string_view);
#endif

DTL_INLINE nlohmann::json merge_hparams_into(nlohmann::json base, nlohmann::json override_value) {
  if (!base.is_object() || !override_value.is_object()) return override_value;
  for (auto& [key, value] : override_value.items()) {
    auto it = base.find(key);
    if (it == base.end()) {
      base[key] = std::move(value);
    } else {
      *it = merge_hparams_into(std::move(*it), std::move(value));
    }
  }
  return base;
}

DTL_INLINE nlohmann::json merge_hparams(nlohmann::json base, nlohmann::json override_value) {
  if (override_value.is_null()) return base;
  return merge_hparams_into(std::move(base), std::move(override_value));
}

/// Every name an override could address in `hp`: each key, and each nested key as a dotted path.
DTL_INLINE void hparam_names(const nlohmann::json& hp, const std::string& prefix, std::vector<std::string>& out) {
  if (!hp.is_object()) return;
  for (const auto& [key, value] : hp.items()) {
    out.push_back(prefix + key);
    hparam_names(value, prefix + key + ".", out);
  }
}

DTL_INLINE void apply_overrides(nlohmann::json& hparams,
                                const std::vector<std::pair<std::string, nlohmann::json>>& overrides) {
  for (const auto& [spelled, value] : overrides) {
    const bool add = spelled.starts_with('+');
    const std::string name = add ? spelled.substr(1) : spelled;
    if (hparams.is_null()) hparams = nlohmann::json::object();
    if (!hparams.is_object()) {
      throw ConfigError("cannot apply --hparam " + name + "=...: the hyperparameters are " + describe_json(hparams) +
                        ", not a mapping of names to values");
    }
    if (name.empty() || has_empty_segment(name)) {
      throw ConfigError("invalid hyperparameter name '" + name +
                        "': a name needs text between its dots; write e.g. --hparam optimizer.lr=0.1");
    }
    if (auto it = hparams.find(name); it != hparams.end()) {
      *it = value;
      continue;
    }
    const auto parts = split_dotted(name);
    // Down the mappings the name already has; a value in the way is an error, a missing (or null)
    // mapping ends the walk.
    nlohmann::json* node = &hparams;
    std::size_t depth = 0;
    std::string walked;
    for (; depth + 1 < parts.size(); ++depth) {
      const auto it = node->find(parts[depth]);
      if (it == node->end() || it->is_null()) break;
      walked += (depth ? "." : "") + parts[depth];
      if (!it->is_object()) {
        throw ConfigError("cannot apply --hparam " + name + "=...: hyperparameter '" + walked + "' is " +
                          describe_json(*it) + ", not a mapping; override '" + walked + "' itself instead");
      }
      node = &*it;
    }
    // A name nothing defines is a typo, unless it was written as a deliberate addition.
    if (!add && (depth + 1 < parts.size() || !node->contains(parts.back()))) {
      std::vector<std::string> known;
      hparam_names(hparams, "", known);
      throw ConfigError("--hparam " + name + "=...: no hyperparameter '" + name +
                        "' in the config, the hparams file or the code's defaults" + did_you_mean(name, known) +
                        "; to add a new one on purpose, write --hparam +" + name + "=...");
    }
    for (; depth + 1 < parts.size(); ++depth) {
      nlohmann::json& child = (*node)[parts[depth]];
      if (child.is_null()) child = nlohmann::json::object();
      node = &child;
    }
    (*node)[parts.back()] = value;
  }
}

DTL_INLINE void throw_at(std::string_view source, std::string_view key_path, const std::string& what) {
  std::string message(source);
  if (!key_path.empty()) message += std::string(message.empty() ? "" : ": ") + std::string(key_path);
  throw ConfigError(message + ": " + what);
}

DTL_INLINE double spec_number(const nlohmann::json& spec, std::string_view key, std::string_view source,
                              const std::string& path) {
  auto it = spec.find(key);
  if (it == spec.end()) throw_at(source, path, "missing '" + std::string(key) + "'");
  if (!it->is_number()) throw_at(source, path + "." + std::string(key), "expected a number, got " + describe_json(*it));
  return it->get<double>();
}

DTL_INLINE std::int64_t spec_integer(const nlohmann::json& spec, std::string_view key, std::string_view source,
                                     const std::string& path) {
  auto it = spec.find(key);
  if (it == spec.end()) throw_at(source, path, "missing '" + std::string(key) + "'");
  if (it->is_number_integer() && !it->is_number_unsigned()) return it->get<std::int64_t>();
  if (it->is_number_unsigned() && std::in_range<std::int64_t>(it->get<std::uint64_t>())) {
    return static_cast<std::int64_t>(it->get<std::uint64_t>());
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::abs(d) < 9.2e18) return static_cast<std::int64_t>(d);
  }
  throw_at(source, path + "." + std::string(key), "expected an integer, got " + describe_json(*it));
}

DTL_INLINE nlohmann::json resolve_hyperparameters(const nlohmann::json& section, std::string_view source,
                                                  const std::string& path) {
  if (section.is_null()) return nlohmann::json::object();
  if (!section.is_object()) {
    throw_at(source, path, "expected a mapping of hyperparameter names to values, got " + describe_json(section));
  }
  nlohmann::json resolved = nlohmann::json::object();
  for (const auto& [name, value] : section.items()) {
    resolved[name] = resolve_hparam_value(value, source, path + "." + name);
  }
  return resolved;
}

DTL_INLINE nlohmann::json resolve_hparam_value(const nlohmann::json& value, std::string_view source,
                                               const std::string& path) {
  if (!value.is_object()) return value;
  auto type_it = value.find("type");
  if (type_it == value.end()) return resolve_hyperparameters(value, source, path);

  static constexpr std::string_view types[] = {"const", "int", "double", "log", "categorical"};
  if (!type_it->is_string()) {
    throw_at(source, path + ".type",
             "expected one of const, int, double, log, categorical, got " + describe_json(*type_it));
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  if (type == "const") {
    auto val = value.find("val");
    if (val == value.end()) throw_at(source, path, "a const hyperparameter needs 'val'; write {type: const, val: X}");
    return *val;  // the value is used as written, even a mapping
  }
  if (type == "int") {
    const std::int64_t lo = spec_integer(value, "minval", source, path);
    const std::int64_t hi = spec_integer(value, "maxval", source, path);
    if (lo > hi)
      throw_at(source, path, "minval (" + std::to_string(lo) + ") is greater than maxval (" + std::to_string(hi) + ")");
    return std::midpoint(lo, hi);  // rounds towards lo, i.e. down
  }
  if (type == "double" || type == "log") {
    const double lo = spec_number(value, "minval", source, path);
    const double hi = spec_number(value, "maxval", source, path);
    if (lo > hi)
      throw_at(source, path,
               "minval (" + nlohmann::json(lo).dump() + ") is greater than maxval (" + nlohmann::json(hi).dump() + ")");
    if (type == "double") return std::midpoint(lo, hi);
    const double base = spec_number(value, "base", source, path);
    if (!(base > 0))
      throw_at(source, path + ".base", "expected a positive number, got " + describe_json(value["base"]));
    return std::pow(base, std::midpoint(lo, hi));
  }
  if (type == "categorical") {
    auto vals = value.find("vals");
    if (vals == value.end())
      throw_at(source, path, "a categorical hyperparameter needs 'vals'; write {type: categorical, vals: [a, b]}");
    if (!vals->is_array() || vals->empty()) {
      throw_at(source, path + ".vals", "expected a non-empty list, got " + describe_json(*vals));
    }
    return vals->front();
  }
  throw_at(source, path + ".type",
           "unknown hyperparameter type '" + type + "'" + did_you_mean(type, types) +
               "; expected const, int, double, log or categorical (for a mapping value with a 'type' key, "
               "write {type: const, val: {...}})");
}

DTL_INLINE const nlohmann::json* find_hparam(const nlohmann::json& hparams, std::string_view name) {
  if (!hparams.is_object()) return nullptr;
  if (auto it = hparams.find(name); it != hparams.end()) return &*it;
  const nlohmann::json* node = &hparams;
  for (const auto& part : split_dotted(name)) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

namespace search_space_detail {
inline void collect(const nlohmann::json& section, const nlohmann::json& final_hparams, std::string_view source,
                    const std::string& prefix, std::vector<std::string>& out) {
  if (!section.is_object()) return;
  for (const auto& [name, value] : section.items()) {
    const std::string dotted = prefix.empty() ? name : prefix + "." + name;
    if (!value.is_object()) continue;
    const auto type_it = value.find("type");
    if (type_it == value.end()) {
      collect(value, final_hparams, source, dotted, out);
      continue;
    }
    if (!type_it->is_string() || *type_it == "const") continue;
    const std::string type = type_it->get<std::string>();
    const auto collapsed = resolve_hparam_value(value, source, "hyperparameters." + dotted);
    const auto* now = find_hparam(final_hparams, dotted);
    if (now == nullptr || *now != collapsed) continue;  // something chose another value
    std::string space, why;
    if (type == "categorical") {
      space = "categorical " + value.at("vals").dump();
      why = "the first of its values";
    } else if (type == "log") {
      space = "log, base " + value.at("base").dump() + ", exponents from " + value.at("minval").dump() + " to " +
              value.at("maxval").dump();
      why = "the base to the middle exponent";
    } else {
      space = type + " from " + value.at("minval").dump() + " to " + value.at("maxval").dump();
      why = type == "int" ? "the middle of its range, rounded down" : "the middle of its range";
    }
    out.push_back("hyperparameter '" + dotted + "' is a search space in " + std::string(source) + " (" + space +
                  "): with no searcher it takes " + collapsed.dump() + ", " + why + "; pass --hparam " + dotted +
                  "=VALUE to choose one");
  }
}
}  // namespace search_space_detail

DTL_INLINE std::vector<std::string> search_space_notes(const nlohmann::json& section,
                                                       const nlohmann::json& final_hparams, std::string_view source) {
  std::vector<std::string> out;
  search_space_detail::collect(section, final_hparams, source, "", out);
  return out;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CONFIG_HPARAMS_INL_HPP
