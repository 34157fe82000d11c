// The Trainer's seams (docs/architecture.md): a metrics destination, a checkpoint store and a stop
// source of a user's own, each plugged in with one line; the examples the architecture page shows.
#include "test_trials.hpp"

#include <fstream>

using test::LinearTrial;
using test::Record;

namespace {

/// A metrics destination: keeps every record it is given.
struct CollectingSink : dtl::MetricsSink {
  struct Seen {
    std::string type;
    std::int64_t steps;
    dtl::MetricsJson metrics;
  };
  std::vector<Seen> seen;
  std::vector<std::int64_t> resumes;
  void report(const dtl::MetricsRecord& r) override {
    seen.push_back({r.type == dtl::MetricsRecord::Type::training ? "training" : "validation", r.steps_completed,
                    r.metrics});
  }
  void resumed_at(std::int64_t steps) override { resumes.push_back(steps); }
};

/// A checkpoint store: checkpoints in a directory of its choosing, each registered in a list.
struct ListingStore : dtl::CheckpointStore {
  std::filesystem::path dir;
  std::vector<dtl::StoredCheckpoint> registered;
  explicit ListingStore(std::filesystem::path d) : dir(std::move(d)) {}
  std::filesystem::path directory() const override { return dir; }
  void register_checkpoint(const dtl::StoredCheckpoint& c) override { registered.push_back(c); }
};

/// A stop source: asks to stop at its `at`-th boundary, and hears when the run has stopped.
struct StopAtBoundary : dtl::StopSource {
  int at;
  int asked = 0;
  std::optional<std::int64_t> stopped_at;
  explicit StopAtBoundary(int n) : at(n) {}
  std::optional<std::string> stop_requested() override {
    if (++asked >= at) return "boundary " + std::to_string(at);
    return std::nullopt;
  }
  std::optional<std::string> stopped(std::int64_t batches) override {
    stopped_at = batches;
    return "stopped by the test's source at batch " + std::to_string(batches);
  }
};

std::vector<nlohmann::json> jsonl(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("seams: a MetricsSink receives every report that metrics.jsonl holds") {
  Record rec;
  auto ctx = dtl::init(test::init_options("seam-sink"));
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer trainer(trial, ctx);
  auto sink = std::make_shared<CollectingSink>();
  trainer.add_metrics_sink(sink);
  trainer.fit({.max_length = dtl::Batch{12}, .validation_period = dtl::Batch{6}, .reporting_period = dtl::Batch{4},
               .quiet = true});
  const auto lines = jsonl(ctx.run_dir() / "metrics.jsonl");
  REQUIRE(lines.size() == sink->seen.size());
  REQUIRE(lines.size() == 6);  // training at 4, 6, 8, 12; validation at 6, 12
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i]["type"] == sink->seen[i].type);
    CHECK(lines[i]["steps_completed"] == sink->seen[i].steps);
    CHECK(lines[i]["metrics"] == nlohmann::json(sink->seen[i].metrics));
  }
  CHECK(sink->resumes.empty());
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("seams: a CheckpointStore places and registers checkpoints; --resume latest reads it") {
  const auto run = test::temp_run_dir("seam-store");
  const auto elsewhere = run / "elsewhere";
  {
    Record rec;
    auto opts = test::init_options("seam-store");
    opts.run_dir = run;
    auto ctx = dtl::init(opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer trainer(trial, ctx);
    auto store = std::make_shared<ListingStore>(elsewhere);
    trainer.set_checkpoint_store(store);
    trainer.fit({.max_length = dtl::Batch{10}, .checkpoint_period = dtl::Batch{5}, .quiet = true});
    REQUIRE(store->registered.size() == 2);
    CHECK(store->registered[0].steps_completed == 5);
    CHECK(store->registered[1].steps_completed == 10);
    for (const auto& c : store->registered) {
      CHECK(c.dir == elsewhere / c.uuid);
      CHECK(std::filesystem::exists(c.dir / "metadata.json"));
    }
    CHECK(dtl::detail::Checkpointer(elsewhere).resolve("latest") == store->registered[1].dir);
    CHECK_FALSE(std::filesystem::exists(run / "checkpoints"));
  }
  // Resumed with --resume latest: the store's latest, and the run goes on to 15.
  Record rec;
  const char* argv[] = {"seams_test", "--run-dir", run.c_str(), "--resume", "latest"};
  auto ctx = dtl::init(5, argv, {.hparams = {{"learning_rate", 0.001}, {"global_batch_size", 4}}, .seed = 1});
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer trainer(trial, ctx);
  auto store = std::make_shared<ListingStore>(elsewhere);
  trainer.set_checkpoint_store(store);
  trainer.fit({.max_length = dtl::Batch{15}, .checkpoint_period = dtl::Batch{5}, .quiet = true});
  CHECK(rec.batches == 5);
  REQUIRE(store->registered.size() == 1);
  CHECK(store->registered[0].steps_completed == 15);
  std::filesystem::remove_all(run);
}

TEST_CASE("seams: a StopSource stops the run at a boundary, after a checkpoint, and hears stopped()") {
  Record rec;
  auto ctx = dtl::init(test::init_options("seam-stop"));
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer trainer(trial, ctx);
  auto source = std::make_shared<StopAtBoundary>(3);
  trainer.add_stop_source(source);
  trainer.fit({.max_length = dtl::Batch{40}, .reporting_period = dtl::Batch{5}, .quiet = true});
  CHECK(rec.batches == 15);  // boundaries at 5, 10, 15: the third asks
  CHECK(source->stopped_at == 15);
  CHECK(trainer.state().last_ckpt == 15);
  CHECK(std::filesystem::exists(test::latest_checkpoint(ctx.run_dir()) / "metadata.json"));
  std::filesystem::remove_all(ctx.run_dir());
}

namespace {

/// A store in a directory other runs share (a Determined experiment's checkpoint storage), that
/// knows the experiment's best validation (its master does).
struct SharedStore : ListingStore {
  std::optional<double> experiment_best;  // none: the experiment has no validation yet
  int asked = 0;
  using ListingStore::ListingStore;
  bool owns_directory() const override { return false; }
  std::optional<std::optional<double>> experiment_best_validation() override {
    ++asked;
    return experiment_best;
  }
};

/// Phases and flushes, in order.
struct PhaseSink : dtl::MetricsSink {
  std::vector<std::string> events;
  void report(const dtl::MetricsRecord& r) override {
    events.push_back(r.type == dtl::MetricsRecord::Type::training
                         ? "report training " + std::to_string(r.steps_completed) + (r.progress_due ? " progress" : "")
                         : "report validation " + std::to_string(r.steps_completed));
  }
  void phase_started(dtl::RunPhase p) override {
    events.push_back(p == dtl::RunPhase::training     ? "training"
                     : p == dtl::RunPhase::validating ? "validating"
                                                      : "checkpointing");
  }
  void flush() override { events.push_back("flush"); }
};

}  // namespace

TEST_CASE("seams: a store in shared storage gets no `latest`, no retention and no cleanup of others' files") {
  const auto run = test::temp_run_dir("seam-shared");
  const auto shared = run / "shared";
  // Another trial's checkpoint and an in-flight write of another trial, in the same storage.
  std::filesystem::create_directories(shared / "other-trial-ckpt");
  std::ofstream(shared / "other-trial-ckpt" / "metadata.json") << R"({"steps_completed": 3, "format": "pickle"})";
  std::filesystem::create_directories(shared / ".tmp-another-trials-write");
  Record rec;
  auto opts = test::init_options("seam-shared");
  opts.run_dir = run;
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer trainer(trial, ctx);
  auto store = std::make_shared<SharedStore>(shared);
  trainer.set_checkpoint_store(store);
  trainer.fit({.max_length = dtl::Batch{15}, .checkpoint_period = dtl::Batch{5}, .quiet = true, .save_trial_latest = 1});
  REQUIRE(store->registered.size() == 3);
  for (const auto& c : store->registered) CHECK(std::filesystem::exists(c.dir / "state_dict.pth"));  // none collected
  CHECK_FALSE(std::filesystem::exists(shared / "latest"));
  CHECK(std::filesystem::exists(shared / "other-trial-ckpt" / "metadata.json"));
  CHECK(std::filesystem::exists(shared / ".tmp-another-trials-write"));
  std::filesystem::remove_all(run);
}

TEST_CASE("seams: checkpoint policy best compares with the experiment's best where the store knows it") {
  for (const bool beaten : {false, true}) {
    CAPTURE(beaten);
    Record rec;
    auto ctx = dtl::init(test::init_options("seam-best"));
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer trainer(trial, ctx);
    auto store = std::make_shared<SharedStore>(ctx.run_dir() / "shared");
    // Another trial of the experiment validated at a loss nothing here reaches, or at one
    // everything here beats.
    store->experiment_best = beaten ? 1e30 : -1e30;
    trainer.set_checkpoint_store(store);
    trainer.fit({.max_length = dtl::Batch{10}, .validation_period = dtl::Batch{5},
                 .checkpoint_policy = dtl::CheckpointPolicy::best, .quiet = true});
    CHECK(store->asked == 2);  // before each validation's report
    std::vector<std::int64_t> steps;
    for (const auto& c : store->registered) steps.push_back(c.steps_completed);
    // Beaten: both validations checkpoint; never best: only the final checkpoint at the end.
    CHECK(steps == (beaten ? std::vector<std::int64_t>{5, 10} : std::vector<std::int64_t>{10}));
    std::filesystem::remove_all(ctx.run_dir());
  }
}

TEST_CASE("seams: a MetricsSink hears each phase start, progress where Determined reports it, and a final flush") {
  Record rec;
  auto ctx = dtl::init(test::init_options("seam-phase"));
  LinearTrial trial(ctx, rec, {});
  dtl::Trainer trainer(trial, ctx);
  auto sink = std::make_shared<PhaseSink>();
  trainer.add_metrics_sink(sink);
  trainer.fit({.max_length = dtl::Batch{8}, .validation_period = dtl::Batch{4}, .checkpoint_period = dtl::Batch{4},
               .quiet = true, .checkpoint_in_background = false});
  const std::vector<std::string> want = {
      "training",   "report training 4",  "validating", "report validation 4", "checkpointing",
      "training",   "report training 8 progress", "validating", "report validation 8", "checkpointing", "flush"};
  CHECK(sink->events == want);
  std::filesystem::remove_all(ctx.run_dir());
}
