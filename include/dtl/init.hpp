// dtl — dtl::init: builds the PyTorchTrialContext from code, an experiment config and the command
// line (Determined's `det.pytorch.init()`), seeds torch, and chooses the run directory.
#ifndef DTL_INIT_HPP
#define DTL_INIT_HPP

#include <torch/torch.h>

#include <dtl/config/command_line.hpp>
#include <dtl/config/experiment_config.hpp>
#include <dtl/config/hparams.hpp>
#include <dtl/context.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/device.hpp>
#include <dtl/detail/signal_count.hpp>
#include <dtl/distributed/distributed_context.hpp>
#include <dtl/distributed/options.hpp>
#include <dtl/errors.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {

/// What code passes to dtl::init; the experiment config overrides it and the command line
/// overrides both.
struct InitOptions {
  nlohmann::json hparams = nlohmann::json::object();  ///< defaults for hyperparameters
  std::optional<std::filesystem::path> config;        ///< an experiment config (YAML or JSON)
  std::int64_t aggregation_frequency = 1;             ///< batches per optimizer step
  bool average_aggregated_gradients = true;
  std::optional<std::uint64_t> seed;             ///< trial seed; random (and printed) if unset
  std::optional<torch::Device> device;           ///< default: cuda:0 when available, else cpu
  std::optional<std::filesystem::path> run_dir;  ///< default: runs/<timestamp>
  /// How to join a distributed run; default: torchrun's environment, or a single process when
  /// there is none (no socket is opened then).
  std::optional<DistributedOptions> distributed;
  /// Whether this process takes the run directory's lock (one run per directory); false only
  /// for a reader, e.g. load_trial_from_checkpoint_path beside a run that is training.
  bool lock_run_dir = true;
  /// Determined's `enable_tensorboard_logging`: false writes no TensorBoard event files for the
  /// Trainer's metrics (metrics.jsonl still has them).
  bool enable_tensorboard_logging = true;
};

namespace detail {

/// The signal (SIGINT/SIGTERM) that asked for a stop, 0 if none.
DTL_INLINE std::atomic<int>& stop_signal_flag();
inline bool stop_signal_received() noexcept { return stop_signal_flag().load(std::memory_order_relaxed) != 0; }

/// Set by the Trainer when a signal stopped a run before its end (after the final checkpoint):
/// the process then exits with 128 + signal, so a supervisor tells preemption from completion.
DTL_INLINE std::atomic<int>& preempted_by_signal();

/// A program built on `dtl::init(argc, argv)` ends every error the same way: an exception nobody
/// caught (a corrupt checkpoint at resume, a full disk, a lost peer) prints one line `error: …`
/// and exits with status 1 — 2 for a ConfigError (a usage or configuration mistake) — instead of
/// std::terminate's abort and core dump.
[[noreturn]] DTL_INLINE void terminate_with_error_line() noexcept;

/// An exception's message as the one error line: LibTorch's errors (c10::Error) append their C++
/// backtrace ("Exception raised from … (most recent call first):" and "frame #N: …" lines),
/// also when dtl quotes them in its own error; that is cut unless the environment sets
/// DTL_BACKTRACE=1.
[[nodiscard]] DTL_INLINE std::string error_line(std::string_view what);

/// SIGINT / SIGTERM ask for a graceful stop: the Trainer checkpoints at the next workload
/// boundary and returns. A second signal changes nothing (under torchrun one Ctrl-C reaches a rank
/// twice: from the terminal's process group, and forwarded by torchrun); a third kills the process
/// as usual.
/// A run they stopped exits with status 128 + signal (130, 143) once main returns; a stop a
/// callback requested still exits 0.
DTL_INLINE void install_stop_signal_handlers();

DTL_INLINE std::filesystem::path default_run_dir();

/// `--resume latest` without `--run-dir`: the newest run under runs/ that has a checkpoint, or
/// none (a new run then starts from the beginning, with a warning).
DTL_INLINE std::optional<std::filesystem::path> newest_run_with_checkpoint();

DTL_INLINE detail::ContextSetup make_setup(InitOptions opts, const CommandLine* cl);

}  // namespace detail

/// Builds the context from code alone (tests, embedding): errors are thrown as ConfigError.
///   auto ctx = dtl::init({.hparams = {{"lr", 0.1}, {"global_batch_size", 64}}, .seed = 1});
[[nodiscard]] DTL_INLINE PyTorchTrialContext init(InitOptions opts = {});

/// Builds the context for a program: parses the standard dtl command line (`--help` lists it).
/// A bad command line, config or hyperparameter file is one error line and exit status 2,
/// before any work starts. SIGINT/SIGTERM then stop training gracefully at the next boundary.
///   int main(int argc, char** argv) { auto ctx = dtl::init(argc, argv, {.hparams = defaults}); ... }
[[nodiscard]] DTL_INLINE PyTorchTrialContext init(int argc, const char* const* argv, InitOptions opts = {});
[[nodiscard]] DTL_INLINE PyTorchTrialContext init(int argc, char** argv, InitOptions opts = {});

}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/init-inl.hpp>
#endif

#endif  // DTL_INIT_HPP
