// dtl — the non-template definitions of <dtl/config/command_line.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CONFIG_COMMAND_LINE_INL_HPP
#define DTL_CONFIG_COMMAND_LINE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/config/command_line.hpp>

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE std::string CommandLine::usage(std::string_view program) {
  std::string text = "usage: " + std::string(program.empty() ? "<program>" : program) +
                     " [--config FILE] [--hparams FILE] [--hparam NAME=VALUE]...\n"
                     "       [--max-length UNIT=N] [--run-dir DIR] [--resume latest|DIR] [--seed N] [--device DEV]\n"
                     "       [--scheduling-unit N] [--test-mode]\n";
  text +=
      "\n"
      "Trains this trial locally with dtl, the way Determined would run it.\n"
      "\n"
      "options:\n"
      "  --config FILE         experiment config in Determined's format (YAML or JSON)\n"
      "  --hparams FILE        hyperparameters: a JSON or YAML mapping of names to values\n"
      "  --hparam NAME=VALUE   set one hyperparameter (repeatable; later ones win). VALUE is read as\n"
      "                        JSON when it parses (0.1, 3, true, null, [1,2], {\"a\":1}, '\"text\"'),\n"
      "                        else taken as text. A dotted NAME sets a nested value: optimizer.lr=0.1.\n"
      "                        NAME must exist (config, --hparams file or the code's defaults);\n"
      "                        +NAME=VALUE adds a new one\n"
      "  --max-length UNIT=N   train for N batches, epochs or records, e.g. --max-length epochs=3\n"
      "  --run-dir DIR         where metrics.jsonl, checkpoints/ and tensorboard/ go\n"
      "                        (default ./runs/<timestamp>)\n"
      "  --resume latest|DIR   continue from the run directory's newest complete checkpoint,\n"
      "                        or from the checkpoint directory DIR\n"
      "  --seed N              seed for every random number generator, 0 to 4294967295\n"
      "                        (overrides reproducibility.experiment_seed)\n"
      "  --device DEV          cpu, cuda or cuda:N (default: cuda:<local rank> where CUDA is\n"
      "                        available, else cpu)\n"
      "  --scheduling-unit N   report training metrics (and observe preemption and stop requests)\n"
      "                        every N batches (overrides the config's scheduling_unit; default 100)\n"
      "  --test-mode           train and validate one batch, checkpoint, and exit\n"
      "  -h, --help            print this help and exit\n"
      "\n"
      "Both --flag VALUE and --flag=VALUE work. Command-line values override the config file,\n"
      "which overrides the code.\n";
  return text;
}

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE void throw_bad_value(std::string_view flag, const std::string& what) {
  throw ConfigError("invalid value for '" + std::string(flag) + "': " + what);
}

DTL_INLINE bool is_decimal_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

DTL_INLINE LengthSpec parse_length_flag(std::string_view value) {
  constexpr std::string_view flag = "--max-length";
  const std::size_t eq = value.find('=');
  if (eq == std::string_view::npos) {
    const std::string text(value);
    if (is_decimal_digits(value)) {
      throw_bad_value(flag, "'" + text + "' has no unit; write --max-length batches=" + text + " (or epochs=" + text +
                                ", records=" + text + ")");
    }
    throw_bad_value(flag,
                    "'" + text + "' is not UNIT=N; write e.g. --max-length epochs=1 (units: batches, epochs, records)");
  }
  const std::string_view unit_text = value.substr(0, eq);
  const std::string_view count_text = value.substr(eq + 1);
  const auto unit = unit_from_name(unit_text);
  if (!unit) {
    throw_bad_value(flag, "unknown unit '" + std::string(unit_text) + "'" + did_you_mean(unit_text, length_unit_names) +
                              "; write batches=N, epochs=N or records=N");
  }
  std::int64_t count = 0;
  const auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || end != count_text.data() + count_text.size() || count < 1) {
    throw_bad_value(flag, "the length must be a positive integer, got '" + std::string(count_text) +
                              "'; write e.g. --max-length " + std::string(unit_text) + "=1");
  }
  return LengthSpec{*unit, count};
}

DTL_INLINE std::pair<std::string, nlohmann::json> parse_hparam_flag(std::string_view value) {
  constexpr std::string_view flag = "--hparam";
  const std::size_t eq = value.find('=');
  if (eq == std::string_view::npos) {
    throw_bad_value(flag, "'" + std::string(value) + "' has no '='; write --hparam " +
                              std::string(value.empty() ? "NAME" : value) + "=VALUE");
  }
  const std::string name(value.substr(0, eq));
  const std::string text(value.substr(eq + 1));
  if (name.empty())
    throw_bad_value(flag, "'" + std::string(value) + "' has no name before '='; write --hparam NAME=VALUE");
  if (has_empty_segment(name)) {
    throw_bad_value(flag, "'" + name + "' has an empty part between dots; write a dotted name like optimizer.lr=0.1");
  }
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) parsed = text;
  return {name, std::move(parsed)};
}

DTL_INLINE std::uint64_t parse_seed_flag(std::string_view value) {
  std::uint64_t seed = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seed);
  if (!is_decimal_digits(value) || ec != std::errc() || end != value.data() + value.size()) {
    throw_bad_value("--seed", "'" + std::string(value) + "' is not a non-negative integer; write e.g. --seed 42");
  }
  // The trial seed also seeds the samplers' numpy RandomState, whose range this is (a larger seed
  // passed here and failed later, in the shuffle).
  if (seed > kMaxSeed)
    throw_bad_value("--seed", "'" + std::string(value) + "' is out of range: a seed is from 0 to 4294967295 (2^32-1, "
                              "numpy's RandomState range, which the samplers use); write e.g. --seed 42");
  return seed;
}

DTL_INLINE void throw_positional(std::string_view arg) {
  std::string hint;
  const std::string text(arg);
  if (arg.find('=') != std::string_view::npos && arg.front() != '=') {
    hint = " (did you mean '--hparam " + text + "'?)";
  } else if (arg.ends_with(".yaml") || arg.ends_with(".yml")) {
    hint = " (did you mean '--config " + text + "'?)";
  } else if (arg.ends_with(".json")) {
    hint = " (did you mean '--hparams " + text + "' or '--config " + text + "'?)";
  }
  throw ConfigError("unexpected argument '" + text + "'" + hint + "; dtl programs take flags only, see --help");
}

/// A flag given without its value: the error shows one for that flag.
[[noreturn]] DTL_INLINE void throw_missing_value(std::string_view flag) {
  static constexpr std::pair<std::string_view, std::string_view> examples[] = {{"--config", "experiment.yaml"},
                                                                               {"--hparams", "hparams.json"},
                                                                               {"--hparam", "lr=0.1"},
                                                                               {"--max-length", "epochs=1"},
                                                                               {"--run-dir", "runs/mnist"},
                                                                               {"--resume", "latest"},
                                                                               {"--seed", "42"},
                                                                               {"--device", "cuda:0"},
                                                                               {"--scheduling-unit", "100"}};
  std::string_view example = "VALUE";
  for (const auto& [name, sample] : examples) {
    if (name == flag) example = sample;
  }
  throw ConfigError("missing value for '" + std::string(flag) + "'; write e.g. " + std::string(flag) + " " +
                    std::string(example));
}

/// The value of `flag`: its `=VALUE`, else the next argument (`i` then moves past it) unless
/// that is another flag. A missing or empty value is an error.
DTL_INLINE std::string_view flag_value(std::string_view flag, std::optional<std::string_view> inline_value,
                                       const std::vector<std::string_view>& args, std::size_t& i) {
  std::string_view value;
  if (inline_value) {
    value = *inline_value;
  } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
    value = args[++i];
  } else {
    throw_missing_value(flag);
  }
  if (value.empty()) {
    throw ConfigError("empty value for '" + std::string(flag) + "'; give it a value, e.g. " + std::string(flag) +
                      (flag == "--seed"         ? " 42"
                       : flag == "--max-length" ? " epochs=1"
                                                : " VALUE"));
  }
  return value;
}

/// `--scheduling-unit N`: a positive number of batches.
DTL_INLINE std::int64_t parse_scheduling_unit_flag(std::string_view value) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (!is_decimal_digits(value) || ec != std::errc() || end != value.data() + value.size() || n < 1)
    throw_bad_value("--scheduling-unit", "'" + std::string(value) +
                                             "' is not a positive number of batches; write e.g. --scheduling-unit 100");
  return n;
}

/// Records `flag`'s value in `result`.
DTL_INLINE void set_flag(CommandLine& result, std::string_view flag, std::string_view value) {
  if (flag == "--config") {
    result.config = std::filesystem::path(value);
  } else if (flag == "--hparams") {
    result.hparams_file = std::filesystem::path(value);
  } else if (flag == "--run-dir") {
    result.run_dir = std::filesystem::path(value);
  } else if (flag == "--resume") {
    result.resume = std::string(value);
  } else if (flag == "--hparam") {
    result.hparam_overrides.push_back(parse_hparam_flag(value));
  } else if (flag == "--max-length") {
    result.max_length = parse_length_flag(value);
  } else if (flag == "--seed") {
    result.seed = parse_seed_flag(value);
  } else if (flag == "--device") {
    result.device = std::string(value);
  } else if (flag == "--scheduling-unit") {
    result.scheduling_unit = parse_scheduling_unit_flag(value);
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine result;
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");

  if (std::any_of(args.begin(), args.end(), [](std::string_view a) { return a == "--help" || a == "-h"; })) {
    result.help = true;
    return result;
  }

  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.size() < 2 || arg.front() != '-' || arg == "--") detail::throw_positional(arg);

    const std::size_t eq = arg.find('=');
    const std::string_view flag = arg.substr(0, eq);
    const std::optional<std::string_view> inline_value =
        eq == std::string_view::npos ? std::nullopt : std::optional<std::string_view>(arg.substr(eq + 1));

    if (std::find(detail::command_line_flags.begin(), detail::command_line_flags.end(), flag) ==
        detail::command_line_flags.end()) {
      throw ConfigError("unknown flag '" + std::string(flag) + "'" +
                        detail::did_you_mean(flag, detail::command_line_flags) + "; see --help");
    }

    if (flag == "--test-mode" || flag == "--help") {
      if (inline_value) {
        throw ConfigError("flag '" + std::string(flag) + "' takes no value; write just " + std::string(flag));
      }
      result.test_mode = true;  // a bare --help returned above
      continue;
    }

    // Every other flag takes a value. Only --hparam may repeat: a second --seed is a mistake
    // (two scripts both setting it), and silently picking one would hide it.
    if (flag != "--hparam") {
      if (std::find(seen.begin(), seen.end(), flag) != seen.end()) {
        throw ConfigError("flag '" + std::string(flag) + "' is given twice; give it once");
      }
      seen.push_back(flag);
    }
    detail::set_flag(result, flag, detail::flag_value(flag, inline_value, args, i));
  }
  return result;
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CONFIG_COMMAND_LINE_INL_HPP
