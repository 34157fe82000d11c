// dtl — the non-template definitions of <dtl/config/experiment_config.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CONFIG_EXPERIMENT_CONFIG_INL_HPP
#define DTL_CONFIG_EXPERIMENT_CONFIG_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/config/experiment_config.hpp>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE std::optional<LengthSpec::Unit> unit_from_name(std::string_view name) {
  for (std::size_t i = 0; i < length_unit_names.size(); ++i) {
    if (length_unit_names[i] == name) return static_cast<LengthSpec::Unit>(i);
  }
  return std::nullopt;
}

DTL_INLINE std::optional<std::int64_t> parse_yaml_int_digits(std::string_view digits, int base, bool negative) {
  std::uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  if (negative) {
    if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) return std::nullopt;
    return static_cast<std::int64_t>(0 - magnitude);  // wraps to the negative value, incl. INT64_MIN
  }
  if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

DTL_INLINE bool all_of_chars(std::string_view s, std::string_view allowed) {
  return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos;
}

DTL_INLINE nlohmann::json resolve_plain_scalar(const std::string& text) {
  const auto one_of = [&](std::initializer_list<std::string_view> spellings) {
    return std::find(spellings.begin(), spellings.end(), text) != spellings.end();
  };
  if (one_of({"", "~", "null", "Null", "NULL"})) return nullptr;
  if (one_of({"true", "True", "TRUE"})) return true;
  if (one_of({"false", "False", "FALSE"})) return false;

  std::string_view s = text;
  const bool negative = !s.empty() && s.front() == '-';
  const bool signed_text = !s.empty() && (s.front() == '-' || s.front() == '+');
  std::string_view body = signed_text ? s.substr(1) : s;

  constexpr std::string_view decimal = "0123456789";
  if (!signed_text && body.size() > 2 && body.substr(0, 2) == "0x" &&
      all_of_chars(body.substr(2), "0123456789abcdefABCDEF")) {
    if (auto v = parse_yaml_int_digits(body.substr(2), 16, false)) return *v;
    return text;  // too large for 64 bits: keep the text rather than lose digits
  }
  if (!signed_text && body.size() > 2 && body.substr(0, 2) == "0o" && all_of_chars(body.substr(2), "01234567")) {
    if (auto v = parse_yaml_int_digits(body.substr(2), 8, false)) return *v;
    return text;
  }
  if (all_of_chars(body, decimal)) {
    if (auto v = parse_yaml_int_digits(body, 10, negative)) return *v;
    if (!negative) {
      std::uint64_t u = 0;
      auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), u);
      if (ec == std::errc() && end == body.data() + body.size()) return u;
    }
    // Beyond 64 bits: fall through and read it as a float, as Python would keep its magnitude.
  }

  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (one_of({".nan", ".NaN", ".NAN"})) return std::numeric_limits<double>::quiet_NaN();

  // [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
  std::size_t i = 0;
  const auto digits_from = [&](std::size_t at) {
    std::size_t j = at;
    while (j < body.size() && body[j] >= '0' && body[j] <= '9') ++j;
    return j;
  };
  std::size_t j = digits_from(i);
  bool mantissa_ok = j > i;
  i = j;
  if (i < body.size() && body[i] == '.') {
    j = digits_from(i + 1);
    mantissa_ok = mantissa_ok || j > i + 1;
    i = j;
  }
  if (!mantissa_ok) return text;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    std::size_t k = i + 1;
    if (k < body.size() && (body[k] == '+' || body[k] == '-')) ++k;
    j = digits_from(k);
    if (j == k) return text;
    i = j;
  }
  if (i != body.size()) return text;
  double magnitude = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), magnitude);
  if (end != body.data() + body.size()) return text;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value unset here; recover Python's answer (inf, or 0 for underflow).
    magnitude = std::strtod(std::string(body).c_str(), nullptr);
  } else if (ec != std::errc()) {
    return text;
  }
  return negative ? -magnitude : magnitude;
}

/// At most this many values in one document once aliases are expanded: aliases of aliases
/// multiply ("billion laughs"), and a few hundred bytes of YAML would otherwise expand without
/// limit in time and memory.
inline constexpr std::size_t kMaxYamlValues = 1'000'000;

/// "source:line:col" of a YAML mark.
DTL_INLINE std::string yaml_position(std::string_view source, const YAML::Mark& mark) {
  std::string where(source);
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  return where;
}

/// A YAML document as JSON, scalars resolved by the core schema, within kMaxYamlValues.
DTL_INLINE nlohmann::json yaml_to_json(const YAML::Node& node, std::string_view source, int depth = 0,
                                       std::size_t* budget = nullptr) {
  std::size_t own_budget = kMaxYamlValues;
  if (budget == nullptr) budget = &own_budget;
  if ((*budget)-- == 0)
    throw ConfigError(std::string(source) + ": the document expands to more than " + std::to_string(kMaxYamlValues) +
                      " values (aliases that refer to aliases multiply); write the values out or use fewer aliases");
  // yaml-cpp bounds its own parser's nesting; aliases can still nest a node inside itself.
  constexpr int max_depth = 256;
  if (depth > max_depth) {
    throw ConfigError(yaml_position(source, node.Mark()) + ": values nest more than " + std::to_string(max_depth) +
                      " levels deep (a recursive alias?); flatten the document");
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      const std::string& text = node.Scalar();
      // yaml-cpp tags quoted and block scalars "!" and plain ones "?": only plain ones are typed.
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return text;
      nlohmann::json value = resolve_plain_scalar(text);
      const auto must_be = [&](bool ok, std::string_view what) {
        if (!ok) {
          throw ConfigError(yaml_position(source, node.Mark()) + ": '" + text + "' is tagged " + tag + " but is not " +
                            std::string(what) + "; remove the tag or fix the value");
        }
      };
      if (tag == "tag:yaml.org,2002:int") must_be(value.is_number_integer(), "an integer");
      if (tag == "tag:yaml.org,2002:float") {
        must_be(value.is_number(), "a number");
        value = value.get<double>();
      }
      if (tag == "tag:yaml.org,2002:bool") must_be(value.is_boolean(), "true or false");
      if (tag == "tag:yaml.org,2002:null") must_be(value.is_null(), "null");
      return value;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& element : node) array.push_back(yaml_to_json(element, source, depth + 1, budget));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        const YAML::Node& key = entry.first;
        if (!key.IsScalar()) {
          throw ConfigError(yaml_position(source, key.Mark()) +
                            ": a mapping key must be a plain name, not a list, mapping or null; quote it or rename it");
        }
        const std::string& name = key.Scalar();
        if (object.contains(name)) {
          throw ConfigError(yaml_position(source, key.Mark()) + ": duplicate key '" + name +
                            "'; a key may appear once per mapping, remove one");
        }
        object[name] = yaml_to_json(entry.second, source, depth + 1, budget);
      }
      return object;
    }
  }
  return nullptr;
}

DTL_INLINE nlohmann::json parse_yaml_text(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's parser guard (its message says "bad file")
    throw ConfigError(yaml_position(source, e.mark) + ": values nest more than " + std::to_string(e.depth()) +
                      " levels deep; flatten the document");
  } catch (const YAML::Exception& e) {
    throw ConfigError(yaml_position(source, e.mark) + ": " + e.msg + "; fix the YAML syntax there");
  }
  return yaml_to_json(root, source);
}

DTL_INLINE bool has_json_extension(std::string_view source) {
  if (source.size() < 5) return false;
  std::string ext(source.substr(source.size() - 5));
  for (char& c : ext) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return ext == ".json";
}

DTL_INLINE nlohmann::json parse_json_text(std::string_view text, std::string_view source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the offending character; count lines and columns up to it.
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string reason = e.what();
    if (const auto col = reason.find("column "); col != std::string::npos) {
      if (const auto colon = reason.find(": ", col); colon != std::string::npos) reason = reason.substr(colon + 2);
    }
    throw ConfigError(std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + reason +
                      "; fix the JSON syntax there");
  }
}

DTL_INLINE nlohmann::json parse_config_text(std::string_view text, std::string_view source) {
  return has_json_extension(source) ? parse_json_text(text, source) : parse_yaml_text(text, source);
}

DTL_INLINE std::string read_config_file(const std::filesystem::path& path, std::string_view what,
                                        std::string_view flag) {
  const std::string prefix = "cannot read " + std::string(what) + " '" + path.string() + "': ";
  const std::string fix = "; check the path given to " + std::string(flag);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) throw ConfigError(prefix + "no such file" + fix);
  if (status.type() == std::filesystem::file_type::directory)
    throw ConfigError(prefix + "it is a directory, not a file" + fix);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string reason = errno != 0 ? std::strerror(errno) : (ec ? ec.message() : "the file cannot be opened");
    throw ConfigError(prefix + reason + fix);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(prefix + "reading failed" + fix);
  return text.str();
}

DTL_INLINE nlohmann::json parse_top_level_mapping(std::string_view text, std::string_view source,
                                                  std::string_view example) {
  nlohmann::json value = parse_config_text(text, source);
  if (value.is_null()) {
    throw ConfigError(std::string(source) + ": the document is empty; expected a mapping such as " +
                      std::string(example));
  }
  if (!value.is_object()) {
    throw ConfigError(std::string(source) + ": expected a mapping at the top level (such as " + std::string(example) +
                      "), got " + describe_json(value));
  }
  return value;
}

DTL_INLINE std::string join_key_path(std::initializer_list<std::string_view> keys) {
  std::string path;
  for (auto key : keys) path += (path.empty() ? "" : ".") + std::string(key);
  return path;
}

DTL_INLINE const nlohmann::json* config_find(const nlohmann::json& root, std::string_view source,
                                             std::initializer_list<std::string_view> keys) {
  const nlohmann::json* node = &root;
  std::string path;
  for (auto key : keys) {
    if (node->is_null()) return nullptr;
    if (!node->is_object()) throw_at(source, path, "expected a mapping, got " + describe_json(*node));
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    path += (path.empty() ? "" : ".") + std::string(key);
  }
  return node->is_null() ? nullptr : node;
}

DTL_INLINE std::optional<std::int64_t> json_to_int64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (std::in_range<std::int64_t>(u)) return static_cast<std::int64_t>(u);
    return std::nullopt;
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) {
    // `batches: 1e3` is a float in YAML; accept it when it names a whole number.
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::abs(d) < 9.2e18) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

DTL_INLINE std::optional<std::int64_t> config_int(const nlohmann::json& root, std::string_view source,
                                                  std::initializer_list<std::string_view> keys, std::int64_t minimum) {
  const nlohmann::json* value = config_find(root, source, keys);
  if (value == nullptr) return std::nullopt;
  const auto number = json_to_int64(*value);
  const char* wanted = minimum > 0 ? "a positive integer" : minimum == 0 ? "a non-negative integer" : "an integer";
  if (!number || *number < minimum)
    throw_at(source, join_key_path(keys), std::string("expected ") + wanted + ", got " + describe_json(*value));
  return number;
}

DTL_INLINE std::optional<bool> config_bool(const nlohmann::json& root, std::string_view source,
                                           std::initializer_list<std::string_view> keys) {
  const nlohmann::json* value = config_find(root, source, keys);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean())
    throw_at(source, join_key_path(keys), "expected true or false, got " + describe_json(*value));
  return value->get<bool>();
}

DTL_INLINE std::optional<std::string> config_string(const nlohmann::json& root, std::string_view source,
                                                    std::initializer_list<std::string_view> keys) {
  const nlohmann::json* value = config_find(root, source, keys);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) throw_at(source, join_key_path(keys), "expected a string, got " + describe_json(*value));
  return value->get<std::string>();
}

DTL_INLINE void config_expect(const nlohmann::json& root, std::string_view source,
                              std::initializer_list<std::string_view> keys,
                              bool (nlohmann::json::*is_kind)() const noexcept, std::string_view expected) {
  const nlohmann::json* value = config_find(root, source, keys);
  if (value != nullptr && !((*value).*is_kind)()) {
    throw_at(source, join_key_path(keys), "expected " + std::string(expected) + ", got " + describe_json(*value));
  }
}

DTL_INLINE std::optional<LengthSpec> config_length(const nlohmann::json& root, std::string_view source,
                                                   std::initializer_list<std::string_view> keys,
                                                   bool bare_int_is_batches, std::int64_t minimum) {
  const nlohmann::json* value = config_find(root, source, keys);
  if (value == nullptr) return std::nullopt;
  const std::string path = join_key_path(keys);
  const std::string shape = std::string("expected {batches: N} or {epochs: N} or {records: N}") +
                            (bare_int_is_batches ? " or a number of batches" : "");
  const char* wanted = minimum > 0 ? "a positive integer" : "a non-negative integer";
  if (bare_int_is_batches && value->is_number()) {
    const auto n = json_to_int64(*value);
    if (!n || *n < minimum)
      throw_at(source, path, std::string("expected ") + wanted + " of batches, got " + describe_json(*value));
    return LengthSpec{LengthSpec::Unit::batches, *n};
  }
  if (!value->is_object() || value->empty()) throw_at(source, path, shape + ", got " + describe_json(*value));
  if (value->size() > 1) {
    std::string keys_given;
    for (const auto& [key, v] : value->items()) keys_given += (keys_given.empty() ? "'" : ", '") + key + "'";
    throw_at(source, path, "give exactly one unit, got " + keys_given + "; " + shape);
  }
  const std::string& unit_text = value->begin().key();
  const nlohmann::json& count = value->begin().value();
  const auto unit = unit_from_name(unit_text);
  if (!unit) {
    throw_at(source, path,
             "unknown unit '" + unit_text + "'" + did_you_mean(unit_text, length_unit_names) + "; " + shape);
  }
  const auto n = json_to_int64(count);
  if (!n || *n < minimum)
    throw_at(source, path + "." + unit_text, std::string("expected ") + wanted + ", got " + describe_json(count));
  return LengthSpec{*unit, *n};
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE nlohmann::json ExperimentConfig::hyperparameters() const {
  const nlohmann::json* section = detail::config_find(raw, source, {"hyperparameters"});
  return detail::resolve_hyperparameters(section ? *section : nlohmann::json(), source);
}

DTL_INLINE std::optional<LengthSpec> ExperimentConfig::max_length() const {
  return detail::config_length(raw, source, {"searcher", "max_length"}, true, 1);
}

DTL_INLINE std::optional<LengthSpec> ExperimentConfig::min_validation_period() const {
  return detail::config_length(raw, source, {"min_validation_period"}, false, 0);
}

DTL_INLINE std::optional<LengthSpec> ExperimentConfig::min_checkpoint_period() const {
  return detail::config_length(raw, source, {"min_checkpoint_period"}, false, 0);
}

DTL_INLINE std::optional<std::int64_t> ExperimentConfig::records_per_epoch() const {
  return detail::config_int(raw, source, {"records_per_epoch"}, 1);
}

DTL_INLINE std::optional<std::int64_t> ExperimentConfig::scheduling_unit() const {
  return detail::config_int(raw, source, {"scheduling_unit"}, 1);
}

DTL_INLINE std::string ExperimentConfig::searcher_metric() const {
  return detail::config_string(raw, source, {"searcher", "metric"}).value_or("");
}

DTL_INLINE bool ExperimentConfig::smaller_is_better() const {
  return detail::config_bool(raw, source, {"searcher", "smaller_is_better"}).value_or(true);
}

DTL_INLINE std::optional<std::string> ExperimentConfig::checkpoint_policy() const {
  auto policy = detail::config_string(raw, source, {"checkpoint_policy"});
  if (policy && std::find(detail::checkpoint_policies.begin(), detail::checkpoint_policies.end(), *policy) ==
                    detail::checkpoint_policies.end()) {
    detail::throw_at(source, "checkpoint_policy",
                     "expected \"best\", \"all\" or \"none\", got '" + *policy + "'" +
                         detail::did_you_mean(*policy, detail::checkpoint_policies));
  }
  return policy;
}

DTL_INLINE std::optional<std::int64_t> ExperimentConfig::save_trial_latest() const {
  return detail::config_int(raw, source, {"checkpoint_storage", "save_trial_latest"}, 0);
}

DTL_INLINE std::optional<std::int64_t> ExperimentConfig::save_trial_best() const {
  return detail::config_int(raw, source, {"checkpoint_storage", "save_trial_best"}, 0);
}

DTL_INLINE std::optional<std::uint64_t> ExperimentConfig::experiment_seed() const {
  // 0 to 2^32-1, as --seed takes (detail::kMaxSeed); YAML reads a longer integer as a float, which
  // is named as what the user wrote: a larger integer.
  const nlohmann::json* value = detail::config_find(raw, source, {"reproducibility", "experiment_seed"});
  if (value == nullptr) return std::nullopt;
  const double d = value->is_number() ? value->get<double>() : -1.0;
  const bool integer = value->is_number_integer() || (value->is_number_float() && std::isfinite(d) && d == std::trunc(d));
  if (integer && d >= 0 && d <= static_cast<double>(detail::kMaxSeed))
    return value->is_number_integer() ? value->get<std::uint64_t>() : static_cast<std::uint64_t>(d);
  detail::throw_at(source, "reproducibility.experiment_seed",
                   integer && d >= 0 ? "expected a seed from 0 to 4294967295 (2^32-1, numpy's RandomState range, which "
                                       "the samplers use), got a larger integer (" + value->dump() + ")"
                                     : "expected a non-negative integer, got " + detail::describe_json(*value));
}

DTL_INLINE std::int64_t ExperimentConfig::aggregation_frequency() const {
  return detail::config_int(raw, source, {"optimizations", "aggregation_frequency"}, 1).value_or(1);
}

DTL_INLINE std::int64_t ExperimentConfig::slots_per_trial() const {
  return detail::config_int(raw, source, {"resources", "slots_per_trial"}, 1).value_or(1);
}

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE void validate_experiment_config(const ExperimentConfig& config) {
  const nlohmann::json& raw = config.raw;
  const std::string_view src = config.source;
  for (const auto& [key, value] : raw.items()) {
    if (std::find(experiment_config_keys.begin(), experiment_config_keys.end(), key) == experiment_config_keys.end()) {
      throw ConfigError(std::string(src) + ": unknown top-level key '" + key + "'" +
                        did_you_mean(key, experiment_config_keys) +
                        "; fix its spelling or remove it (see Determined's experiment-config reference)");
    }
  }
  for (auto key : {"name", "description", "workspace", "project"}) config_string(raw, src, {key});
  for (auto key : {"searcher", "checkpoint_storage", "reproducibility", "resources", "environment", "profiling",
                   "optimizations"}) {
    config_expect(raw, src, {key}, &nlohmann::json::is_object, "a mapping");
  }
  if (const auto* entrypoint = config_find(raw, src, {"entrypoint"})) {
    const bool ok =
        entrypoint->is_string() ||
        (entrypoint->is_array() && std::all_of(entrypoint->begin(), entrypoint->end(),
                                               [](const nlohmann::json& part) { return part.is_string(); }));
    if (!ok)
      throw_at(src, "entrypoint", "expected a command string or a list of strings, got " + describe_json(*entrypoint));
  }
  config_expect(raw, src, {"bind_mounts"}, &nlohmann::json::is_array, "a list");
  if (const auto* labels = config_find(raw, src, {"labels"})) {
    if (!labels->is_array()) throw_at(src, "labels", "expected a list of strings, got " + describe_json(*labels));
    for (std::size_t i = 0; i < labels->size(); ++i) {
      if (!(*labels)[i].is_string()) {
        throw_at(src, "labels[" + std::to_string(i) + "]", "expected a string, got " + describe_json((*labels)[i]));
      }
    }
  }
  config_bool(raw, src, {"perform_initial_validation"});
  config_int(raw, src, {"max_restarts"}, 0);
  config_int(raw, src, {"scheduling_unit"}, 1);

  config_string(raw, src, {"searcher", "name"});
  config_int(raw, src, {"searcher", "max_trials"}, 1);

  for (auto key : {"type", "host_path", "storage_path"}) config_string(raw, src, {"checkpoint_storage", key});
  for (auto key : {"save_experiment_best", "save_trial_best", "save_trial_latest"}) {
    config_int(raw, src, {"checkpoint_storage", key}, 0);
  }

  config_bool(raw, src, {"profiling", "enabled"});
  config_int(raw, src, {"profiling", "begin_on_batch"}, 0);
  config_int(raw, src, {"profiling", "end_after_batch"}, 0);
  config_bool(raw, src, {"optimizations", "average_aggregated_gradients"});

  // The typed accessors carry the remaining checks.
  (void)config.hyperparameters();
  (void)config.max_length();
  (void)config.min_validation_period();
  (void)config.min_checkpoint_period();
  (void)config.records_per_epoch();
  (void)config.searcher_metric();
  (void)config.smaller_is_better();
  (void)config.checkpoint_policy();
  (void)config.experiment_seed();
  (void)config.aggregation_frequency();
  (void)config.slots_per_trial();
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE ExperimentConfig parse_experiment_config(std::string_view text, std::string_view source_name) {
  ExperimentConfig config;
  config.source = std::string(source_name);
  config.raw = detail::parse_top_level_mapping(text, source_name, "'searcher: {metric: validation_loss}'");
  detail::validate_experiment_config(config);
  return config;
}

DTL_INLINE ExperimentConfig load_experiment_config(const std::filesystem::path& path) {
  return parse_experiment_config(detail::read_config_file(path, "experiment config", "--config"), path.string());
}

DTL_INLINE nlohmann::json load_hparams_file(const std::filesystem::path& path) {
  const std::string text = detail::read_config_file(path, "hyperparameters file", "--hparams");
  return detail::parse_top_level_mapping(text, path.string(), "'lr: 0.1'");
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CONFIG_EXPERIMENT_CONFIG_INL_HPP
