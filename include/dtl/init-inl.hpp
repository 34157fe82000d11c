// dtl — the non-template definitions of <dtl/init.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_INIT_INL_HPP
#define DTL_INIT_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/init.hpp>

#include <dtl/cluster/session.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE std::atomic<int>& stop_signal_flag() {
  static std::atomic<int> sig{0};
  return sig;
}

DTL_INLINE std::atomic<int>& preempted_by_signal() {
  static std::atomic<int> sig{0};
  return sig;
}

DTL_INLINE std::string error_line(std::string_view what) {
  const char* env = std::getenv("DTL_BACKTRACE");
  if (env != nullptr && std::string_view(env) == "1") return std::string(what);
  std::string line(what);
  for (std::string_view marker : {"\nException raised from ", "\nframe #0: "}) {
    if (const auto at = line.find(marker); at != std::string::npos) line.erase(at);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

DTL_INLINE void terminate_with_error_line() noexcept {
  int status = 1;
  if (const auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const InvalidHP& x) {
      // Determined's contract: the searcher hears of it as an early exit, and the trial ends 0.
      if (cluster_trial_flag().load()) status = 0;
      if (auto* m = active_master_session().load()) {
        m->send("POST", "/api/v1/trials/" + std::to_string(m->info().trial_id) + "/early_exit",
                {{"reason", "EXITED_REASON_INVALID_HP"}}, "the early exit for invalid hyperparameters");
        std::cerr << "dtl: invalid hyperparameters: " << error_line(x.what())
                  << "; reported to the master as an early exit (the searcher moves on)" << std::endl;
      } else {
        std::cerr << (status == 0 ? "dtl: " : "error: ") << "invalid hyperparameters: " << error_line(x.what())
                  << std::endl;
      }
    } catch (const ConfigError& x) {
      status = 2;
      std::cerr << "error: " << error_line(x.what()) << std::endl;
    } catch (const std::exception& x) {
      std::cerr << "error: " << error_line(x.what()) << std::endl;
    } catch (...) {
      std::cerr << "error: an exception that is not a std::exception reached main" << std::endl;
    }
  } else {
    std::cerr << "error: std::terminate called without an exception (a noexcept function threw, or a thread "
                 "was destroyed while joinable)"
              << std::endl;
  }
  // A cluster trial's queued reports (a checkpoint's registration above all) get a last chance.
  if (auto* m = active_master_session().load()) m->drain(std::chrono::seconds(30));
  std::cout.flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

DTL_INLINE void install_stop_signal_handlers() {
  // Async-signal-safe only: lock-free atomics, write(2), signal, raise.
  auto handler = +[](int sig) {
    const int n = stop_signal_count().fetch_add(1) + 1;
    int none = 0;
    stop_signal_flag().compare_exchange_strong(none, sig);  // the first signal names the exit status
    if (n == 1) {
      // Under torchrun one Ctrl-C arrives twice (from the terminal's process group, then forwarded
      // by torchrun as it shuts its workers down), so the second signal is not the user's second press.
      static constexpr char note[] =
          "\n[dtl] stop requested: a checkpoint at the next workload boundary, then exit "
          "(a third Ctrl-C stops at once, without it)\n";
      [[maybe_unused]] const auto written = ::write(2, note, sizeof note - 1);
    } else if (n >= 3) {
      std::signal(sig, SIG_DFL);
      std::raise(sig);
    }
  };
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
  // A file-size limit (ulimit -f) kills with SIGXFSZ by default, printing nothing and leaving a
  // half-written checkpoint directory; ignored, as Python ignores it, a write past the limit fails
  // with EFBIG ("File too large") and is reported like a full disk. A handler of the program's own
  // is left in place.
  struct sigaction xfsz {};
  if (::sigaction(SIGXFSZ, nullptr, &xfsz) == 0 && xfsz.sa_handler == SIG_DFL) std::signal(SIGXFSZ, SIG_IGN);
  static bool registered = false;
  if (!std::exchange(registered, true))
    std::atexit(+[] {
      if (const int sig = preempted_by_signal().load()) {
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        std::_Exit(128 + sig);
      }
    });
}

DTL_INLINE std::filesystem::path default_run_dir() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return std::filesystem::path("runs") / buf;
}

DTL_INLINE std::optional<std::filesystem::path> newest_run_with_checkpoint() {
  std::optional<std::filesystem::path> best;
  std::filesystem::file_time_type best_time{};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("runs", ec)) {
    const auto latest = entry.path() / "checkpoints" / "latest";
    if (!std::filesystem::exists(latest, ec)) continue;
    const auto t = std::filesystem::last_write_time(latest, ec);
    if (!best || t > best_time) best = entry.path(), best_time = t;
  }
  return best;
}

/// How this process joins the run: InitOptions::distributed, else the launcher's environment
/// (none for a single process), validated.
DTL_INLINE std::optional<DistributedOptions> distributed_options(const InitOptions& opts) {
  std::optional<DistributedOptions> dist = opts.distributed;
  if (!dist) dist = distributed_options_from_environment();
  if (dist) dist->validate();
  return dist;
}

/// The trial's device, checked usable: --device, else the code's, else cuda:<local_rank> for one
/// of several processes, cuda:0 for one, else the CPU (Determined's rule).
DTL_INLINE torch::Device choose_device(const InitOptions& opts, const CommandLine* cl,
                                       const std::optional<DistributedOptions>& dist) {
  const std::int64_t local_rank = dist && dist->size > 1 ? dist->local_rank : 0;
  const std::string device_source = cl && cl->device ? "--device " + *cl->device : "InitOptions::device";
  torch::Device device = torch::kCPU;
  if (cl && cl->device)
    device = detail::parse_device(*cl->device, device_source);
  else if (opts.device)
    device = *opts.device;
  else
    device = torch::cuda::is_available() ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank))
                                         : torch::Device(torch::kCPU);
  detail::check_device_usable(device, device_source);
  return device;
}

/// What the experiment config file sets: the config, its hyperparameters over the code's, its
/// experiment_seed and its aggregation frequency.
DTL_INLINE void apply_config_file(ContextSetup& s, const std::filesystem::path& config_path, nlohmann::json& hparams,
                                  std::optional<std::uint64_t>& seed) {
  s.config = load_experiment_config(config_path);
  hparams = merge_hparams(std::move(hparams), s.config->hyperparameters());
  if (auto es = s.config->experiment_seed()) seed = es;
  if (s.config->raw.contains("optimizations")) s.aggregation_frequency = s.config->aggregation_frequency();
}

/// What the master sets in a trial container: the experiment's config (unless `config_given`),
/// the searcher's hyperparameters and the trial's seed.
DTL_INLINE void apply_cluster_info(ContextSetup& s, const ClusterInfo& cluster, bool config_given,
                                   nlohmann::json& hparams, std::optional<std::uint64_t>& seed) {
  if (!config_given) {
    s.config = cluster.config;
    if (s.config->raw.contains("optimizations")) s.aggregation_frequency = s.config->aggregation_frequency();
  }
  hparams = merge_hparams(std::move(hparams), cluster.hparams);
  seed = cluster.trial_seed;
}

/// What the command line sets, over everything else: hyperparameters (a file, then each
/// --hparam), the seed and the run's overrides.
DTL_INLINE void apply_command_line(ContextSetup& s, const CommandLine& cl, nlohmann::json& hparams,
                                   std::optional<std::uint64_t>& seed) {
  if (cl.hparams_file) hparams = merge_hparams(std::move(hparams), load_hparams_file(*cl.hparams_file));
  apply_overrides(hparams, cl.hparam_overrides);
  if (cl.seed) seed = cl.seed;
  s.overrides.max_length = cl.max_length;
  s.overrides.test_mode = cl.test_mode;
  s.overrides.scheduling_unit = cl.scheduling_unit;
  s.overrides.resume = cl.resume;
}

/// The run directory: --run-dir, else the code's, else for --resume latest the newest run with a
/// checkpoint, else a new one named by the time.
DTL_INLINE std::filesystem::path choose_run_dir(const InitOptions& opts, const CommandLine* cl) {
  if (cl && cl->run_dir) return *cl->run_dir;
  if (opts.run_dir) return *opts.run_dir;
  if (auto newest = cl && cl->resume == "latest" ? newest_run_with_checkpoint() : std::nullopt) return *newest;
  return default_run_dir();
}

/// The chief's part before the others hear from it: the run directory (chosen, created and
/// locked) and, in a trial container, the cluster session (`session`). Returns the ConfigError or
/// ClusterError that must stop every rank, or "" when there is none.
DTL_INLINE std::string prepare_run_as_chief(ContextSetup& s, const InitOptions& opts, const CommandLine* cl,
                                            const std::optional<ClusterInfo>& cluster,
                                            std::shared_ptr<ClusterSession>& session) {
  try {
    s.run_dir = choose_run_dir(opts, cl);
    std::error_code ec;
    std::filesystem::create_directories(s.run_dir, ec);
    if (ec) throw ConfigError("dtl: cannot create run directory " + s.run_dir.string() + ": " + ec.message());
    if (opts.lock_run_dir) s.run_dir_lock = std::make_shared<RunDirLock>(s.run_dir);  // one run dir, one process
    if (cluster) {
      if (cluster->latest_checkpoint && !std::filesystem::is_directory(*s.overrides.resume) && !(cl && cl->resume))
        throw ConfigError("dtl: the master asks to resume from checkpoint " + *cluster->latest_checkpoint +
                          " (DET_LATEST_CHECKPOINT), but " + *s.overrides.resume +
                          " is not a directory: is the experiment's checkpoint storage mounted at " +
                          cluster->checkpoint_dir.string() + "?");
      session = std::make_shared<ClusterSession>(*cluster, true);  // POST /runs/start
    }
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const ClusterError& e) {
    return e.what();
  }
  return "";
}

DTL_INLINE detail::ContextSetup make_setup(InitOptions opts, const CommandLine* cl) {
  detail::ContextSetup s;
  // Join the run first: the chief's seed and run directory are everyone's.
  std::optional<DistributedOptions> dist = distributed_options(opts);
  // The device before joining, since it picks the backend.
  s.device = choose_device(opts, cl, dist);
  if (dist) {
    if (dist->backend == DistributedBackend::automatic)
      dist->backend = s.device.is_cuda() && detail::built_with_cuda ? DistributedBackend::nccl : DistributedBackend::gloo;
    s.distributed = DistributedContext(*dist);
  }
  const bool chief = s.distributed.is_chief();
  std::optional<std::filesystem::path> config_path = opts.config;
  if (cl && cl->config) config_path = cl->config;
  nlohmann::json hparams = opts.hparams.is_null() ? nlohmann::json::object() : opts.hparams;
  std::optional<std::uint64_t> seed = opts.seed;
  if (seed && *seed > kMaxSeed)
    throw ConfigError("dtl: InitOptions.seed " + std::to_string(*seed) +
                      " is out of range: a seed is from 0 to 4294967295 (2^32-1, numpy's RandomState range, which "
                      "the samplers use)");
  s.aggregation_frequency = opts.aggregation_frequency;
  s.enable_tensorboard_logging = opts.enable_tensorboard_logging;
  s.average_aggregated_gradients = opts.average_aggregated_gradients;
  if (config_path) apply_config_file(s, *config_path, hparams, seed);
  // In a Determined trial container the master's values come next. The command line still
  // overrides them; DET_LATEST_CHECKPOINT becomes --resume unless one is given.
  std::optional<ClusterInfo> cluster = cluster_info_from_environment();
  if (cluster) apply_cluster_info(s, *cluster, config_path.has_value(), hparams, seed);
  if (cl) apply_command_line(s, *cl, hparams, seed);
  if (cluster && cluster->latest_checkpoint && !s.overrides.resume)
    s.overrides.resume = (cluster->checkpoint_dir / *cluster->latest_checkpoint).string();
  s.hparams = std::move(hparams);
  // A search space in a config outside a cluster has no searcher to pick from it: say which value
  // each takes (unless the command line or an hparams file chose one), on the chief.
  if (chief && config_path && !cluster && s.config->raw.contains("hyperparameters"))
    for (const auto& line : detail::search_space_notes(s.config->raw.at("hyperparameters"), s.hparams, s.config->source))
      std::cerr << "dtl: " << line << "\n";
  const bool random_seed = !seed;
  if (!seed) seed = std::random_device{}() & 0x7fffffffu;

  std::string error;  // the chief's ConfigError, shared so that every rank stops with it
  std::shared_ptr<ClusterSession> session;  // in a trial container: its seams are every fit's
  if (chief) error = prepare_run_as_chief(s, opts, cl, cluster, session);
  if (s.distributed.connected()) {
    const auto shared =
        s.distributed.broadcast(nlohmann::json{{"seed", *seed}, {"run_dir", s.run_dir.string()}, {"error", error}});
    seed = shared.at("seed").get<std::uint64_t>();
    s.run_dir = shared.at("run_dir").get<std::string>();
    error = shared.at("error").get<std::string>();
  }
  if (!error.empty()) throw ConfigError(error);
  // (A resume continues with its checkpoint's seed, which it names itself.)
  if (random_seed && chief && !s.overrides.resume)
    std::cerr << "dtl: trial seed " << *seed << " (pass --seed " << *seed << " to repeat this run)\n";
  if (cluster) {
    cluster_trial_flag() = true;
    s.cluster_info = std::make_shared<const ClusterInfo>(*cluster);
    if (!session) session = std::make_shared<ClusterSession>(std::move(*cluster), false);
    s.environment = [session] { return environment_seams(session); };
  }
  s.trial_seed = *seed;
  s.trial_seed_given = !random_seed;
  return s;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE PyTorchTrialContext init(InitOptions opts) {
  auto setup = detail::make_setup(std::move(opts), nullptr);
  torch::manual_seed(setup.trial_seed);
  return PyTorchTrialContext(std::move(setup));
}

DTL_INLINE PyTorchTrialContext init(int argc, const char* const* argv, InitOptions opts) {
  std::optional<detail::ContextSetup> setup;
  try {
    auto cl = parse_command_line(argc, argv);
    if (cl.help) {
      std::cout << CommandLine::usage(argc > 0 ? argv[0] : "");
      std::exit(0);
    }
    setup.emplace(detail::make_setup(std::move(opts), &cl));
  } catch (const ConfigError& e) {
    std::cerr << "error: " << detail::error_line(e.what()) << "\n";
    std::exit(2);
  } catch (const DistributedError& e) {  // could not join the run: a peer missing, a port taken
    std::cerr << "error: " << detail::error_line(e.what()) << "\n";
    std::exit(1);
  }
  detail::install_stop_signal_handlers();
  std::set_terminate(&detail::terminate_with_error_line);
  torch::manual_seed(setup->trial_seed);
  return PyTorchTrialContext(std::move(*setup));
}

DTL_INLINE PyTorchTrialContext init(int argc, char** argv, InitOptions opts) {
  return init(argc, const_cast<const char* const*>(argv), std::move(opts));
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_INIT_INL_HPP
