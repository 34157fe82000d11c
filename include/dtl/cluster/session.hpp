// dtl — a dtl trial as a Determined cluster trial: ClusterSession (made by dtl::init when the
// process runs in a trial container) and the seams it plugs into the Trainer — where metrics go
// (the master's metrics, progress and state), where checkpoints go (the experiment's storage,
// registered with the master) and where stop requests come from (the master's preemption).
#ifndef DTL_CLUSTER_SESSION_HPP
#define DTL_CLUSTER_SESSION_HPP

#include <dtl/detail/file_io.hpp>
#include <dtl/checkpoint/store.hpp>
#include <dtl/errors.hpp>
#include <dtl/cluster/info.hpp>
#include <dtl/cluster/master.hpp>
#include <dtl/environment.hpp>
#include <dtl/log/metrics_sink.hpp>
#include <dtl/stop_source.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// One trial container's link to its master: the info every rank reads, and on the chief the
/// MasterSession (the run started with the master, the preemption watch running).
class ClusterSession {
 public:
  ClusterSession(ClusterInfo info, bool chief) : info_(std::move(info)) {
    if (!chief) return;
    master_ = std::make_unique<MasterSession>(info_, master_options_from_environment());
    master_->watch_preemption();
    settle_unregistered_checkpoints();
  }
  /// The file on storage that says checkpoint `uuid` of this trial is written but its
  /// registration not yet taken by the master (ClusterStore writes it, and removes it then).
  [[nodiscard]] std::filesystem::path unregistered_marker(const std::string& uuid) const {
    return info_.checkpoint_dir / (".dtl-unregistered-" + std::to_string(info_.trial_id) + "-" + uuid);
  }
  [[nodiscard]] const ClusterInfo& info() const noexcept { return info_; }
  /// The chief's connection; null on the other ranks.
  [[nodiscard]] MasterSession* master() noexcept { return master_.get(); }
  /// DET_LATEST_CHECKPOINT's directory on the experiment's storage, if the trial has one.
  [[nodiscard]] std::optional<std::filesystem::path> latest_checkpoint() const {
    if (!info_.latest_checkpoint) return std::nullopt;
    return info_.checkpoint_dir / *info_.latest_checkpoint;
  }

 private:
  /// An earlier run of this trial killed (SIGKILL, the node lost) while writing a checkpoint left
  /// its temporary directory (`.tmp-<uuid>`, claimed by the marker written before the write): it
  /// is removed, and said so. One killed between writing a checkpoint and
  /// the master taking its registration left it on storage, unknown to the master, which will
  /// never collect it. One newer than the master's latest checkpoint (the one this run resumes
  /// from) was certainly not registered (registrations go in order): it is removed, and said so.
  /// An older one may have been (the run died before the marker went): it stays, and is named.
  void settle_unregistered_checkpoints() {
    namespace fs = std::filesystem;
    const auto& dir = info_.checkpoint_dir;
    const std::string prefix = unregistered_marker("").filename().string();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    auto steps_of = [&](const std::string& uuid) -> std::optional<std::int64_t> {
      try {
        const auto m = nlohmann::json::parse(read_file(dir / uuid / "metadata.json"));
        return m.at("steps_completed").get<std::int64_t>();
      } catch (const std::exception&) {
        return std::nullopt;
      }
    };
    const auto latest = info_.latest_checkpoint;
    const auto latest_steps = latest ? steps_of(*latest) : std::optional<std::int64_t>(0);
    std::vector<fs::path> markers;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().starts_with(prefix)) markers.push_back(e.path());
    for (const auto& marker : markers) {
      const auto uuid = marker.filename().string().substr(prefix.size());
      const auto ckpt = dir / uuid;
      if (const auto tmp = dir / (".tmp-" + uuid); fs::exists(tmp, ec)) {
        fs::remove_all(tmp, ec);
        std::cerr << "dtl: removed " << tmp.filename().string() << " from " << dir.string()
                  << ": an earlier run of this trial was stopped while writing that checkpoint\n";
      }
      if (fs::exists(ckpt, ec) && (!latest || uuid != *latest)) {
        const auto steps = steps_of(uuid);
        const std::string batch = steps ? " (batch " + std::to_string(*steps) + ")" : std::string();
        if (latest_steps && (!steps || *steps > *latest_steps)) {
          fs::remove_all(ckpt, ec);
          std::cerr << "dtl: removed checkpoint " << uuid << batch << " from " << dir.string()
                    << ": an earlier run of this trial wrote it and stopped before the master registered it; this "
                       "run resumes from "
                    << (latest ? "the master's latest checkpoint " + *latest : std::string("the beginning")) << "\n";
        } else {
          std::cerr << "dtl: checkpoint " << ckpt.string() << batch
                    << " may not be registered with the master (an earlier run of this trial stopped while "
                       "registering it); it is older than the master's latest and stays on storage\n";
        }
      }
      fs::remove(marker, ec);
    }
  }

  ClusterInfo info_;
  std::unique_ptr<MasterSession> master_;
};

/// Training and validation metrics (POST /trials/{id}/metrics, with the run id and `batches`
/// and `epochs` added as Determined's Trainer adds them), progress and the trial's state.
class ClusterMetrics final : public MetricsSink {
 public:
  explicit ClusterMetrics(std::shared_ptr<ClusterSession> s) : s_(std::move(s)) {}

  void report(const MetricsRecord& r) override {
    auto* m = s_->master();
    if (!m) return;
    const auto& info = s_->info();
    const bool training = r.type == MetricsRecord::Type::training;
    if (!training) check_searcher_metric(r.metrics);
    nlohmann::json avg = master_json(r.metrics);
    if (!avg.contains("batches")) avg["batches"] = r.steps_completed;
    if (!avg.contains("epochs")) avg["epochs"] = r.epochs;
    nlohmann::json metrics = {{"avgMetrics", std::move(avg)}};
    if (training) {
      nlohmann::json batches = nlohmann::json::array();
      if (r.report)
        for (const auto& b : r.report->batch_metrics) batches.push_back(master_json(b));
      metrics["batchMetrics"] = std::move(batches);
    } else {
      metrics["batchMetrics"] = nullptr;  // as Determined's client sends a validation
    }
    const std::string group = training ? "training" : "validation";
    const std::string trial = std::to_string(info.trial_id);
    m->send("POST", "/api/v1/trials/" + trial + "/metrics",
            {{"metrics",
              {{"trialId", info.trial_id},
               {"trialRunId", info.trial_run_id},
               {"stepsCompleted", r.steps_completed},
               {"reportTime", iso_now()},
               {"metrics", std::move(metrics)}}},
             {"group", group}},
            "the " + group + " metrics at batch " + std::to_string(r.steps_completed));
    if (training && r.progress_due)
      m->send("POST", "/api/v1/trials/" + trial + "/progress", {{"progress", r.progress}, {"is_raw", true}},
              "the progress at batch " + std::to_string(r.steps_completed));
  }

  /// The master's searcher reads `searcher.metric` from every validation, and a validation
  /// without it (or with a value that is not a number) fails the whole experiment there;
  /// Determined's client sends it anyway. dtl stops the trial with the reason instead.
  void check_searcher_metric(const MetricsJson& metrics) const {
    const auto name = s_->info().config.searcher_metric();
    if (name.empty()) return;
    const auto it = metrics.find(name);
    if (it != metrics.end() && it->is_number()) return;
    std::string have;
    for (const auto& [k, v] : metrics.items()) have += (have.empty() ? "" : ", ") + k;
    throw InvalidExperimentException(
        "dtl: the experiment's searcher.metric '" + name + "' is " +
        (it == metrics.end() ? "not among this validation's metrics (" + have + ")"
                             : "not a number (" + it->dump() + ")") +
        ": the master's searcher needs it in every validation; return it from evaluate_batch (or "
        "evaluate_full_dataset), or set searcher.metric in the experiment config to one of them");
  }

  void phase_started(RunPhase phase) override {
    auto* m = s_->master();
    if (!m) return;
    const char* state = phase == RunPhase::training     ? "training"
                        : phase == RunPhase::validating ? "validating"
                                                        : "checkpointing";
    m->send("POST", "/api/v1/trials/" + std::to_string(s_->info().trial_id) + "/runner/metadata", {{"state", state}},
            std::string("the trial's state \"") + state + "\"");
  }

  void flush() override {
    if (auto* m = s_->master()) m->flush();
  }

 private:
  std::shared_ptr<ClusterSession> s_;
};

/// The experiment's checkpoint storage: each checkpoint written to <storage>/<uuid>/ as
/// Determined's Trainer writes it, then registered (POST /checkpoints) with its file listing.
/// The storage is shared by the experiment's trials, so dtl keeps no `latest` there and deletes
/// nothing: the master's checkpoint GC does.
class ClusterStore final : public CheckpointStore {
 public:
  explicit ClusterStore(std::shared_ptr<ClusterSession> s) : s_(std::move(s)) {}
  [[nodiscard]] std::filesystem::path directory() const override { return s_->info().checkpoint_dir; }
  [[nodiscard]] bool owns_directory() const override { return false; }

  /// The marker that says a checkpoint is not registered goes before its write starts, so that
  /// it also claims the write's temporary directory on the shared storage.
  void writing(const std::string& uuid) override {
    if (!s_->master()) return;
    std::error_code ec;
    std::filesystem::create_directories(directory(), ec);  // the first checkpoint makes the directory
    if (ec) return;  // the write that follows names what is wrong with it
    write_file(s_->unregistered_marker(uuid), "writing\n");
  }

  void register_checkpoint(const StoredCheckpoint& c) override {
    auto* m = s_->master();
    if (!m) return;
    namespace fs = std::filesystem;
    // Determined's listing: every file by its relative path and size (a string, as the Python
    // client sends it), every directory with a trailing "/" and size 0.
    nlohmann::json resources = nlohmann::json::object();
    for (const auto& e : fs::recursive_directory_iterator(c.dir)) {
      const auto rel = e.path().lexically_relative(c.dir).generic_string();
      if (e.is_directory())
        resources[rel + "/"] = "0";
      else
        resources[rel] = std::to_string(e.file_size());
    }
    auto metadata = nlohmann::json::parse(read_file(c.dir / "metadata.json"));  // what dtl just wrote
    const auto& info = s_->info();
    nlohmann::json body = {{"taskId", info.task_id},
                           {"allocationId", info.allocation_id},
                           {"uuid", c.uuid},
                           {"reportTime", iso_now()},
                           {"resources", std::move(resources)},
                           {"metadata", std::move(metadata)},
                           {"state", "STATE_COMPLETED"},
                           {"training", nlohmann::json::object()}};
    if (!m->storage_id().is_null()) body["storageId"] = m->storage_id();
    // Until the master takes the registration, a marker beside the checkpoint says it is not
    // registered: a run killed before that leaves it for the next run (settle_unregistered_checkpoints).
    auto marker = s_->unregistered_marker(c.uuid);
    write_file(marker, std::to_string(c.steps_completed) + "\n");
    m->send(
        "POST", "/api/v1/checkpoints", body,
        "the registration of checkpoint " + c.uuid + " (batch " + std::to_string(c.steps_completed) +
            "), which is on storage at " + c.dir.string(),
        [marker] {
          std::error_code ec;
          std::filesystem::remove(marker, ec);
        });
  }

  [[nodiscard]] std::optional<std::optional<double>> experiment_best_validation() override {
    auto* m = s_->master();
    if (!m) return std::nullopt;
    const auto& info = s_->info();
    const auto r = m->ask("GET",
                          "/api/v1/experiments/" + std::to_string(info.experiment_id) +
                              "/searcher/best_searcher_validation_metric",
                          "the experiment's best validation", std::chrono::seconds(30));
    if (r.status == 404) return std::optional<double>();  // no validation in the experiment yet
    const auto answer = nlohmann::json::parse(r.body, nullptr, false);
    if (r.ok() && answer.is_object() && answer.contains("metric") && answer["metric"].is_number())
      return std::optional<double>(answer["metric"].get<double>());
    if (r.ok() && answer.is_object() && answer.contains("metric") && !answer["metric"].is_null()) {
      std::cerr << "dtl: warning: the master answered the experiment's best validation with \"metric\": "
                << master_detail::excerpt(answer["metric"].dump())
                << ", not a number; checkpoint_policy best compares with this trial's own best this time\n";
      return std::nullopt;
    }
    if (r.ok()) return std::optional<double>();
    std::cerr << "dtl: warning: could not ask the master for the experiment's best validation (" << r.describe()
              << "); checkpoint_policy best compares with this trial's own best this time\n";
    return std::nullopt;
  }

 private:
  std::shared_ptr<ClusterSession> s_;
};

/// The master's preemption (the long poll's answer), asked at every boundary on the chief; the
/// Trainer's stop all-reduce makes every rank stop at the same boundary. Acknowledged when first
/// seen, as Determined's client does; the run then checkpoints and returns, and the program exits
/// 0 so the master reschedules the trial, which resumes from that checkpoint.
class ClusterPreemption final : public StopSource {
 public:
  explicit ClusterPreemption(std::shared_ptr<ClusterSession> s) : s_(std::move(s)) {}
  std::optional<std::string> stop_requested() override {
    auto* m = s_->master();
    if (!m) return std::nullopt;
    // A master that refused a report or stayed away past the budget: stop now, so that the run
    // checkpoints what it trained before it fails (fit's flush raises the error).
    if (m->failed()) return "the Determined master's failure";
    if (!m->preemption_requested()) return std::nullopt;
    if (!acked_) {
      m->send("POST", "/api/v1/allocations/" + url_segment(s_->info().allocation_id) + "/signals/ack_preemption", nullptr,
              "the acknowledgement of the preemption");
      acked_ = true;
    }
    return "the Determined master's preemption";
  }
  std::optional<std::string> stopped(std::int64_t batches) override {
    if (auto* m = s_->master(); m && m->failed())
      return "stopped at batch " + std::to_string(batches) +
             " because the Determined master failed (below); the checkpoint is on storage";
    if (!acked_) return std::nullopt;
    // Said before fit's flush delivers the registration and the acknowledgement: what has
    // happened, and what is still to (a refused acknowledgement then fails the run, saying so).
    return "preempted by the Determined master at batch " + std::to_string(batches) +
           ": checkpoint saved; once the master has its registration and the acknowledgement, the trial exits 0 "
           "and the master reschedules it";
  }

 private:
  std::shared_ptr<ClusterSession> s_;
  bool acked_ = false;
};

/// The seams a cluster trial adds to every fit.
inline EnvironmentSeams environment_seams(const std::shared_ptr<ClusterSession>& cluster) {
  if (!cluster) return {};
  return {.sinks = {std::make_shared<ClusterMetrics>(cluster)},
          .stop_sources = {std::make_shared<ClusterPreemption>(cluster)},
          .store = std::make_shared<ClusterStore>(cluster)};
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CLUSTER_SESSION_HPP
