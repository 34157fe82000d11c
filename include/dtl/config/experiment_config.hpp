// dtl — Determined's experiment config (YAML, or JSON) read into one JSON value, checked once
// up front, with typed accessors for the parts a local run uses.
// Link with yaml-cpp (-lyaml-cpp, or pkg-config yaml-cpp).
#ifndef DTL_CONFIG_EXPERIMENT_CONFIG_HPP
#define DTL_CONFIG_EXPERIMENT_CONFIG_HPP

#include <dtl/config/hparams.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/did_you_mean.hpp>
#include <dtl/errors.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {

/// A training length or period in one of Determined's units, as written in a config
/// (`max_length: {epochs: 3}`) or on the command line (`--max-length epochs=3`).
///
///     LengthSpec len{LengthSpec::Unit::epochs, 3};
struct LengthSpec {
  enum class Unit { batches, epochs, records };
  Unit unit;
  std::int64_t value;

  friend bool operator==(const LengthSpec&, const LengthSpec&) = default;
};

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// The largest trial seed: it also seeds the samplers' numpy RandomState, whose range is
/// [0, 2^32 - 1] (read where the seed is given: --seed, experiment_seed, InitOptions.seed).
inline constexpr std::uint64_t kMaxSeed = 0xffffffffu;

inline constexpr std::array<std::string_view, 3> length_unit_names = {"batches", "epochs", "records"};

/// "batches", "epochs" or "records": the spelling Determined's configs use.
inline std::string_view unit_name(LengthSpec::Unit unit) { return length_unit_names[static_cast<std::size_t>(unit)]; }

DTL_INLINE std::optional<LengthSpec::Unit> unit_from_name(std::string_view name);

// ---- YAML → JSON -------------------------------------------------------------------------------

DTL_INLINE std::optional<std::int64_t> parse_yaml_int_digits(std::string_view digits, int base, bool negative);

DTL_INLINE bool all_of_chars(std::string_view s, std::string_view allowed);

/// Resolves an unquoted scalar the way YAML 1.2's core schema does (the schema Determined's
/// ruamel.yaml loader uses): so `1e-3` is a float and `yes` stays the string "yes".
DTL_INLINE nlohmann::json resolve_plain_scalar(const std::string& text);

/// Parses YAML (and therefore JSON) text into a JSON value; syntax errors become ConfigErrors
/// that start with "source:line:col".
DTL_INLINE nlohmann::json parse_yaml_text(std::string_view text, std::string_view source);

DTL_INLINE bool has_json_extension(std::string_view source);

/// Parses strict JSON; errors start with "source:line:col" like YAML's.
DTL_INLINE nlohmann::json parse_json_text(std::string_view text, std::string_view source);

/// Parses a config's text: strict JSON when the source is a .json file (YAML would accept
/// broken JSON such as `{"lr": }` as something else), YAML otherwise.
DTL_INLINE nlohmann::json parse_config_text(std::string_view text, std::string_view source);

/// Reads a whole config file; a missing, unreadable or directory path is a ConfigError naming
/// the path and the flag that usually supplies it.
DTL_INLINE std::string read_config_file(const std::filesystem::path& path, std::string_view what,
                                        std::string_view flag);

/// A config text's top-level mapping; anything else (an empty file, a list) is a ConfigError.
DTL_INLINE nlohmann::json parse_top_level_mapping(std::string_view text, std::string_view source,
                                                  std::string_view example);

// ---- checked access to config values ------------------------------------------------------------

DTL_INLINE std::string join_key_path(std::initializer_list<std::string_view> keys);

/// The value at `keys`, or nullptr when it or a parent is absent or null (YAML's `key:` with
/// nothing after it). A parent that is present but not a mapping is an error at its path.
DTL_INLINE const nlohmann::json* config_find(const nlohmann::json& root, std::string_view source,
                                             std::initializer_list<std::string_view> keys);

DTL_INLINE std::optional<std::int64_t> json_to_int64(const nlohmann::json& value);

DTL_INLINE std::optional<std::int64_t> config_int(const nlohmann::json& root, std::string_view source,
                                                  std::initializer_list<std::string_view> keys, std::int64_t minimum);

DTL_INLINE std::optional<bool> config_bool(const nlohmann::json& root, std::string_view source,
                                           std::initializer_list<std::string_view> keys);

DTL_INLINE std::optional<std::string> config_string(const nlohmann::json& root, std::string_view source,
                                                    std::initializer_list<std::string_view> keys);

DTL_INLINE void config_expect(const nlohmann::json& root, std::string_view source,
                              std::initializer_list<std::string_view> keys,
                              bool (nlohmann::json::*is_kind)() const noexcept, std::string_view expected);

/// A length in Determined's form, `{batches|epochs|records: N}`, with N >= `minimum`. When
/// `bare_int_is_batches`, a plain integer means batches (Determined's legacy `max_length: 100`).
DTL_INLINE std::optional<LengthSpec> config_length(const nlohmann::json& root, std::string_view source,
                                                   std::initializer_list<std::string_view> keys,
                                                   bool bare_int_is_batches, std::int64_t minimum);

/// The top-level keys of Determined's experiment config. Keys Determined knows but a local run
/// ignores (debug, log_policies, …) are accepted too, so a cluster config runs unchanged; any
/// other key is most likely a typo and is an error.
inline constexpr std::array<std::string_view, 34> experiment_config_keys = {
    "name", "description", "hyperparameters", "searcher", "min_validation_period", "min_checkpoint_period",
    "records_per_epoch", "scheduling_unit", "checkpoint_policy", "checkpoint_storage", "max_restarts",
    "reproducibility", "resources", "entrypoint", "environment", "bind_mounts", "data", "profiling", "optimizations",
    "perform_initial_validation", "labels", "workspace", "project",
    // Determined's, read by its cluster only:
    "debug", "log_policies", "integrations", "pbs", "slurm", "preemption_timeout", "tensorboard_storage", "internal",
    "security", "data_layer", "retention_policy"};

inline constexpr std::array<std::string_view, 3> checkpoint_policies = {"best", "all", "none"};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

/// An experiment config in Determined's format. `raw` is the whole document as JSON (YAML
/// scalars typed by YAML 1.2's core schema); the accessors read the parts a local run uses and
/// throw a ConfigError naming `source` and the key path if a value has the wrong shape.
/// `parse_experiment_config` and `load_experiment_config` run every accessor once, so a config
/// they return is known to be well formed.
///
///     auto cfg = dtl::load_experiment_config("const.yaml");
///     if (auto len = cfg.max_length()) std::cout << len->value;
///     double lr = dtl::detail::hparam_as<double>(cfg.hyperparameters(), "learning_rate");
struct ExperimentConfig {
  nlohmann::json raw = nlohmann::json::object();
  /// The file name (or other label) errors start with.
  std::string source = "experiment config";

  /// The `hyperparameters` section as plain values. A local run has no searcher, so search
  /// spaces collapse to one point: `const` → val, `int`/`double` → the midpoint of
  /// [minval, maxval] (rounded down for int), `log` → base^midpoint, `categorical` → the first of
  /// `vals`. Nested mappings without `type` resolve recursively. Empty object when absent.
  DTL_INLINE nlohmann::json hyperparameters() const;

  /// `searcher.max_length`: `{batches|epochs|records: N}` with N > 0, or a bare N meaning batches.
  DTL_INLINE std::optional<LengthSpec> max_length() const;

  /// `min_validation_period`: `{batches|epochs|records: N}`, N >= 0. As in Determined's config
  /// path, 0 means "never" (unlike `Batch(0)` passed in code, which means every batch).
  DTL_INLINE std::optional<LengthSpec> min_validation_period() const;

  /// `min_checkpoint_period`: `{batches|epochs|records: N}`, N >= 0; 0 means "never".
  DTL_INLINE std::optional<LengthSpec> min_checkpoint_period() const;

  /// `records_per_epoch` (> 0). Determined ignores it since 0.21; dtl uses it as an explicit
  /// epoch length where the data loader has none.
  DTL_INLINE std::optional<std::int64_t> records_per_epoch() const;

  /// `scheduling_unit` (> 0): batches per training report (Determined's legacy harness makes it
  /// `Trainer.fit`'s `reporting_period`); preemption and stop requests are also observed there.
  DTL_INLINE std::optional<std::int64_t> scheduling_unit() const;

  /// `searcher.metric`, the validation metric that "best" refers to; empty when absent.
  DTL_INLINE std::string searcher_metric() const;

  /// `searcher.smaller_is_better`, default true (as in Determined).
  DTL_INLINE bool smaller_is_better() const;

  /// `checkpoint_policy`: "best", "all" or "none".
  DTL_INLINE std::optional<std::string> checkpoint_policy() const;

  /// `checkpoint_storage.save_trial_latest` (>= 0): how many of the newest checkpoints to keep.
  DTL_INLINE std::optional<std::int64_t> save_trial_latest() const;
  /// `checkpoint_storage.save_trial_best` (>= 0): how many of the best checkpoints to keep.
  DTL_INLINE std::optional<std::int64_t> save_trial_best() const;

  /// `reproducibility.experiment_seed` (0 to 2^32-1, detail::kMaxSeed).
  DTL_INLINE std::optional<std::uint64_t> experiment_seed() const;

  /// `optimizations.aggregation_frequency` (> 0), default 1.
  DTL_INLINE std::int64_t aggregation_frequency() const;

  /// `resources.slots_per_trial` (> 0), default 1.
  DTL_INLINE std::int64_t slots_per_trial() const;
};

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Checks every key dtl knows the shape of, so a bad config fails before any work starts.
DTL_INLINE void validate_experiment_config(const ExperimentConfig& config);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

/// Parses and checks an experiment config given as text: YAML, or strict JSON when
/// `source_name` ends in `.json`. `source_name` starts every error message, e.g. the file name.
///
///     auto cfg = dtl::parse_experiment_config("searcher: {metric: acc, max_length: {epochs: 2}}", "inline");
DTL_INLINE ExperimentConfig parse_experiment_config(std::string_view text, std::string_view source_name);

/// Reads, parses and checks an experiment config file (`--config`).
///
///     auto cfg = dtl::load_experiment_config("experiments/const.yaml");
DTL_INLINE ExperimentConfig load_experiment_config(const std::filesystem::path& path);

/// Reads a hyperparameters file (`--hparams`): a mapping of names to plain values, in strict
/// JSON for a `.json` file and YAML otherwise. Determined's search specs (`{type: int, ...}`) are not resolved here; a
/// mapping is a value.
///
///     nlohmann::json hp = dtl::load_hparams_file("hparams.json");   // {"lr": 0.1, ...}
DTL_INLINE nlohmann::json load_hparams_file(const std::filesystem::path& path);

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/config/experiment_config-inl.hpp>
#endif

#endif  // DTL_CONFIG_EXPERIMENT_CONFIG_HPP
