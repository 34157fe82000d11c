// dtl — the command line every dtl program accepts, so any trial is driven the same way.
#ifndef DTL_CONFIG_COMMAND_LINE_HPP
#define DTL_CONFIG_COMMAND_LINE_HPP

#include <dtl/config/experiment_config.hpp>
#include <dtl/config/hparams.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/did_you_mean.hpp>
#include <dtl/errors.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {

/// What the command line asked for; unset members were not given. Command-line values
/// override the config file, which overrides code; `hparam_overrides` apply last, in order.
///
///     auto cl = dtl::parse_command_line(argc, argv);
///     if (cl.help) { std::cout << dtl::CommandLine::usage(argv[0]); return 0; }
struct CommandLine {
  std::optional<std::filesystem::path> config;
  std::optional<std::filesystem::path> hparams_file;
  std::optional<std::filesystem::path> run_dir;
  /// `--hparam name=value`, in order; the value is JSON when it parses, else the text as a
  /// string; a dotted name addresses a nested mapping (see detail::apply_overrides).
  std::vector<std::pair<std::string, nlohmann::json>> hparam_overrides;
  std::optional<LengthSpec> max_length;
  /// "latest" or a checkpoint directory.
  std::optional<std::string> resume;
  std::optional<std::uint64_t> seed;
  /// `--device cpu|cuda|cuda:N`, checked against the machine by dtl::init.
  std::optional<std::string> device;
  /// `--scheduling-unit N`: batches per training report (the config's `scheduling_unit`).
  std::optional<std::int64_t> scheduling_unit;
  bool test_mode = false;
  bool help = false;

  /// The `--help` text for `program` (usually argv[0]).
  ///
  ///     std::cout << dtl::CommandLine::usage("./mnist");
  DTL_INLINE static std::string usage(std::string_view program);
};

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

inline constexpr std::array<std::string_view, 11> command_line_flags = {
    "--config", "--hparams", "--hparam",    "--max-length",      "--run-dir", "--resume",
    "--seed",   "--device",  "--test-mode", "--scheduling-unit", "--help"};

[[noreturn]] DTL_INLINE void throw_bad_value(std::string_view flag, const std::string& what);

DTL_INLINE bool is_decimal_digits(std::string_view text);

/// `--max-length UNIT=N`.
DTL_INLINE LengthSpec parse_length_flag(std::string_view value);

/// `--hparam NAME=VALUE`: VALUE as JSON when it parses, else as text, so `lr=0.1` is a number,
/// `arch=resnet` a string and `arch='"1"'` the string "1".
DTL_INLINE std::pair<std::string, nlohmann::json> parse_hparam_flag(std::string_view value);

DTL_INLINE std::uint64_t parse_seed_flag(std::string_view value);

[[noreturn]] DTL_INLINE void throw_positional(std::string_view arg);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

/// Parses the dtl command line (see CommandLine::usage): `--flag value` and `--flag=value` both
/// work. `--help` (or `-h`) anywhere wins over everything else, so a broken command line can
/// still ask for help. Every mistake is a ConfigError with one line naming the problem and the
/// fix: unknown flags (with a suggestion), missing or malformed values, a single-valued flag
/// given twice, and positional arguments.
///
///     int main(int argc, char** argv) {
///       auto cl = dtl::parse_command_line(argc, argv);   // e.g. --max-length epochs=2 --hparam lr=0.1
///     }
DTL_INLINE CommandLine parse_command_line(int argc, const char* const* argv);

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/config/command_line-inl.hpp>
#endif

#endif  // DTL_CONFIG_COMMAND_LINE_HPP
