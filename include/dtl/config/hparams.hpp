// dtl — hyperparameters as one JSON value: typed lookup by (dotted) name, deep merge of the
// layers (code < config < --hparams file < --hparam), and Determined's hyperparameter specs.
#ifndef DTL_CONFIG_HPARAMS_HPP
#define DTL_CONFIG_HPARAMS_HPP

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/diagnostics.hpp>
#include <dtl/detail/did_you_mean.hpp>
#include <dtl/errors.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// How an error message names a JSON value: its kind, and the value itself when short, so the
/// user sees what dtl saw ("a string (\"abc\")", "an integer (3)", "an empty mapping").
///
///     describe_json(nlohmann::json("abc")) == "a string (\"abc\")"
DTL_INLINE std::string describe_json(const nlohmann::json& value);

/// Splits a dotted hyperparameter name into its segments; an empty segment ("a..b", ".a") is
/// reported by the caller, who knows where the name came from.
DTL_INLINE std::vector<std::string> split_dotted(std::string_view name);

DTL_INLINE bool has_empty_segment(std::string_view name);

/// The value a (possibly dotted) name refers to, or nullptr. A key that itself contains dots is
/// found first, so hyperparameters named "model.lr" in a flat mapping still work.
DTL_INLINE const nlohmann::json* find_hparam(const nlohmann::json& hparams, std::string_view name);

/// Every name `find_hparam` accepts for a leaf value, dotted, in key order: what a "not set"
/// error lists and matches typos against.
DTL_INLINE void collect_hparam_names(const nlohmann::json& node, const std::string& prefix,
                                     std::vector<std::string>& out);

[[noreturn]] DTL_INLINE void throw_hparam_not_set(const nlohmann::json& hparams, std::string_view name);

[[noreturn]] DTL_INLINE void throw_hparam_type(std::string_view name, const nlohmann::json& value,
                                               std::string_view expected, bool numeric_expected = false);

template <class T>
inline constexpr bool is_hparam_integer =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

template <class T>
struct is_std_vector : std::false_type {};
template <class U, class A>
struct is_std_vector<std::vector<U, A>> : std::true_type {};

template <class T>
inline constexpr bool dependent_false = false;

template <class T>
T hparam_integer(const nlohmann::json& value, std::string_view name) {
  // Route every representation through a 64-bit integer, then range-check into T.
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (value.is_number_integer()) {
    const auto i = value.get<std::int64_t>();
    if (std::in_range<T>(i)) return static_cast<T>(i);
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) throw_hparam_type(name, value, "an integer", true);
    constexpr double two_to_63 = 9223372036854775808.0;
    if (d >= -two_to_63 && d < two_to_63 && std::in_range<T>(static_cast<std::int64_t>(d))) {
      return static_cast<T>(static_cast<std::int64_t>(d));
    }
    if (d >= 0 && d < 2 * two_to_63 && std::in_range<T>(static_cast<std::uint64_t>(d))) {
      return static_cast<T>(static_cast<std::uint64_t>(d));
    }
  } else {
    throw_hparam_type(name, value, "an integer", true);
  }
  throw ConfigError("hyperparameter '" + std::string(name) + "' is " + describe_json(value) +
                    ", out of range for the requested integer type [" + std::to_string(std::numeric_limits<T>::min()) +
                    ", " + std::to_string(std::numeric_limits<T>::max()) + "]; choose a value in range");
}

/// Converts one hyperparameter value to T; `name` is how errors refer to it ("sizes[2]" for an
/// element of a list).
template <class T>
T hparam_convert(const nlohmann::json& value, std::string_view name) {
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    return value;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) throw_hparam_type(name, value, "true or false");
    return value.get<bool>();
  } else if constexpr (is_hparam_integer<T>) {
    return hparam_integer<T>(value, name);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) throw_hparam_type(name, value, "a floating-point number", true);
    return value.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) throw_hparam_type(name, value, "a string");
    return value.get<std::string>();
  } else if constexpr (is_std_vector<T>::value) {
    if (!value.is_array()) throw_hparam_type(name, value, "a list");
    T out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
      out.push_back(
          hparam_convert<typename T::value_type>(value[i], std::string(name) + "[" + std::to_string(i) + "]"));
    }
    return out;
  } else {
    static_assert(dependent_false<T>, DTL_DIAG_HPARAM_TYPE);
  }
}

#ifdef DTL_COMPILED_LIB
// The common conversions are instantiated once, in libdtl (config/hparams-inl.hpp): a trial's
// translation unit then instantiates none of nlohmann's conversions for them.
extern template double hparam_convert<double>(const nlohmann::json&, std::string_view);
extern template std::int64_t hparam_convert<std::int64_t>(const nlohmann::json&, std::string_view);
extern template bool hparam_convert<bool>(const nlohmann::json&, std::string_view);
extern template std::string hparam_convert<std::string>(const nlohmann::json&, std::string_view);
#endif

/// Reads hyperparameter `name` (dotted names reach into nested mappings) as a T: bool, any
/// integer type, any floating-point type, std::string, nlohmann::json or std::vector<T>.
/// An integer converts to a floating-point T; a floating-point value converts to an integer T
/// only when it is integral (3.0, not 3.5). Errors are ConfigErrors that name the fix.
///
///     auto hp = nlohmann::json{{"lr", 0.1}, {"model", {{"layers", {64, 32}}}}};
///     double lr = hparam_as<double>(hp, "lr");
///     auto layers = hparam_as<std::vector<int>>(hp, "model.layers");
template <class T>
T hparam_as(const nlohmann::json& hparams, std::string_view name) {
  const nlohmann::json* value = find_hparam(hparams, name);
  if (value == nullptr) throw_hparam_not_set(hparams, name);
  return hparam_convert<T>(*value, name);
}

DTL_INLINE nlohmann::json merge_hparams_into(nlohmann::json base, nlohmann::json override_value);

/// Deep merge of two hyperparameter layers: mappings merge key by key, anything else in
/// `override_value` replaces what `base` had. A null `override_value` (no layer at all, e.g. a
/// config without hyperparameters) leaves `base` as it is.
///
///     merge_hparams({{"opt", {{"lr", 1}, {"m", 0.9}}}}, {{"opt", {{"lr", 2}}}})
///       == {{"opt", {{"lr", 2}, {"m", 0.9}}}}
DTL_INLINE nlohmann::json merge_hparams(nlohmann::json base, nlohmann::json override_value);

/// Applies `--hparam name=value` overrides in order (a later one wins). A dotted name sets a
/// value inside nested mappings; a key that literally contains the dots is set instead when it
/// exists. The value replaces what was there (a mapping is not merged). The name must already
/// exist — in the config, the hparams file or the code's defaults — so a misspelled one is an
/// error with a did-you-mean, not an ignored value; a deliberate new name is written with a
/// leading `+` (`--hparam +warmup_steps=100`, as Hydra spells it), which creates the mappings
/// it needs.
///
///     apply_overrides(hp, {{"optimizer.lr", 0.01}, {"+epochs", 3}});
DTL_INLINE void apply_overrides(nlohmann::json& hparams,
                                const std::vector<std::pair<std::string, nlohmann::json>>& overrides);

/// Prefix for errors about a config value: "experiment.yaml: searcher.max_length: ".
[[noreturn]] DTL_INLINE void throw_at(std::string_view source, std::string_view key_path, const std::string& what);

DTL_INLINE double spec_number(const nlohmann::json& spec, std::string_view key, std::string_view source,
                              const std::string& path);

DTL_INLINE std::int64_t spec_integer(const nlohmann::json& spec, std::string_view key, std::string_view source,
                                     const std::string& path);

inline nlohmann::json resolve_hparam_value(const nlohmann::json& value, std::string_view source,
                                           const std::string& path);

/// Turns Determined's `hyperparameters` section into plain values for a local run. A local run
/// has no searcher, so each search space collapses to one representative point:
/// `const` → `val`; `int` → floor((minval + maxval) / 2); `double` → (minval + maxval) / 2;
/// `log` → base^((minval + maxval) / 2); `categorical` → the first of `vals`. A mapping without
/// `type` is a nested group and resolves recursively; anything else is already a value.
/// `source` and `path` name the place in errors ("experiment.yaml: hyperparameters.lr.minval").
///
///     resolve_hyperparameters({{"lr", {{"type", "log"}, {"base", 10}, {"minval", -4}, {"maxval", -2}}}},
///                             "experiment.yaml")   // {"lr": 0.001}
DTL_INLINE nlohmann::json resolve_hyperparameters(const nlohmann::json& section, std::string_view source,
                                                  const std::string& path = "hyperparameters");

DTL_INLINE nlohmann::json resolve_hparam_value(const nlohmann::json& value, std::string_view source,
                                               const std::string& path);

/// One line per search space of `section` (Determined's `hyperparameters`) whose collapsed value
/// (resolve_hyperparameters) is still the value in `final_hparams` — nothing (the cluster's
/// searcher, --hparam, an hparams file) chose another: which value it takes and why, and how to
/// choose one. What init prints, so that nobody trains on a value they did not see.
///     "hyperparameter 'lr' is a search space in experiment.yaml (double from 0.0001 to 1): with no
///      searcher it takes 0.50005, the middle of its range; pass --hparam lr=VALUE to choose one"
DTL_INLINE std::vector<std::string> search_space_notes(const nlohmann::json& section,
                                                       const nlohmann::json& final_hparams, std::string_view source);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/config/hparams-inl.hpp>
#endif

#endif  // DTL_CONFIG_HPARAMS_HPP
