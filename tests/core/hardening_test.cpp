// Issue 12's failure classes, each with the test that would have caught it: a diverging run
// stops with a clear error and keeps its last finite checkpoint; a changed hyperparameter at
// resume is named; the TensorBoard switch; one run directory, one process; foreign and leftover
// directories under checkpoints/ never stop training.
#include "test_trials.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace {

using test::LinearTrial;
using test::Record;

/// What `f` writes to std::cerr (restored on every exit).
template <class F>
std::string stderr_of(F&& f) {
  std::ostringstream err;
  struct Restore {
    std::streambuf* old;
    ~Restore() { std::cerr.rdbuf(old); }
  } restore{std::cerr.rdbuf(err.rdbuf())};
  f();
  return err.str();
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("a diverging run stops with a clear error at the first non-finite searcher metric; the last finite checkpoint stays latest") {
  // lr = 10 on LinearTrial's identity data explodes to inf, then NaN, within a few dozen batches.
  Record rec;
  auto opts = test::init_options("diverge", 4, 10.0);
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, rec, {.train_size = 64, .identity = true});
  std::string err;
  std::string what;
  err = stderr_of([&] {
    try {
      dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{400},
                                    .validation_period = dtl::Batch{4},
                                    .checkpoint_period = dtl::Batch{4},
                                    .quiet = true});
    } catch (const dtl::NonFiniteMetricError& e) {
      what = e.what();
    }
  });
  INFO(err);
  REQUIRE_MESSAGE(!what.empty(), "the run did not stop at the non-finite metric");
  CHECK(what.find("the searcher metric 'validation_loss' is ") != std::string::npos);
  CHECK(what.find("training stopped (it diverged); the last finite checkpoint is ") != std::string::npos);
  CHECK(err.find("[dtl] warning: training metric 'loss' is ") != std::string::npos);  // warned first, once
  CHECK(err.find("training metric 'loss'") == err.rfind("training metric 'loss'"));
  // latest is a checkpoint with a finite metric, and no checkpoint holds a non-finite one.
  const auto latest = test::latest_checkpoint(ctx.run_dir());
  const auto meta = read_json(latest / "metadata.json");
  REQUIRE(meta.contains("validation_metric"));
  CHECK(std::isfinite(meta["validation_metric"].get<double>()));
  for (const auto& e : std::filesystem::directory_iterator(ctx.run_dir() / "checkpoints")) {
    if (!e.is_directory()) continue;
    const auto m = read_json(e.path() / "metadata.json");  // JSON writes NaN as null
    if (m.contains("validation_metric")) CHECK((m["validation_metric"].is_number() && std::isfinite(m["validation_metric"].get<double>())));
  }
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("continue_on_non_finite trains on, warns once, and never takes a non-finite metric as best") {
  Record rec;
  auto ctx = dtl::init(test::init_options("diverge_on", 4, 10.0));
  LinearTrial trial(ctx, rec, {.train_size = 64, .identity = true});
  const auto err = stderr_of([&] {
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{80},
                                  .validation_period = dtl::Batch{4},
                                  .checkpoint_policy = dtl::CheckpointPolicy::best,
                                  .quiet = true,
                                  .continue_on_non_finite = true});
  });
  INFO(err);
  CHECK(rec.batches == 80);
  CHECK(err.find("training continues (continue_on_non_finite)") != std::string::npos);
  CHECK(err.find("training continues") == err.rfind("training continues"));
  for (const auto& e : std::filesystem::directory_iterator(ctx.run_dir() / "checkpoints")) {
    if (!e.is_directory()) continue;
    const auto meta = read_json(e.path() / "metadata.json");
    if (meta.contains("validation_metric")) CHECK(std::isfinite(meta["validation_metric"].get<double>()));
  }
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("resuming with a changed hyperparameter names it and records it in the next checkpoints") {
  Record rec;
  auto opts = test::init_options("hp_change", 4, 0.01);
  {
    auto ctx = dtl::init(opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{8}, .quiet = true});
  }
  auto changed = opts;
  changed.hparams["learning_rate"] = 0.05;
  auto ctx = dtl::init(changed);
  LinearTrial trial(ctx, rec, {});
  const auto err = stderr_of([&] {
    dtl::Trainer(trial, ctx).fit(
        {.max_length = dtl::Batch{16}, .latest_checkpoint = test::latest_checkpoint(*opts.run_dir), .quiet = true});
  });
  INFO(err);
  CHECK(err.find("resuming with hyperparameters that differ from the checkpoint's: learning_rate = 0.05 "
                 "(checkpoint: 0.01)") != std::string::npos);
  CHECK(err.find("each optimizer group's learning rate and momentum") != std::string::npos);
  const auto load_data = read_json(test::latest_checkpoint(*opts.run_dir) / "load_data.json");
  CHECK(load_data["hparams"]["learning_rate"] == 0.05);
  CHECK(load_data["hparams_changed_at_resume"]["learning_rate"]["checkpoint"] == 0.01);
  CHECK(load_data["hparams_changed_at_resume"]["learning_rate"]["given"] == 0.05);
  std::filesystem::remove_all(*opts.run_dir);
}

TEST_CASE("a resume names a seed that differs only when one was asked for; a drawn one is replaced silently") {
  Record rec;
  auto opts = test::init_options("seed_resume");  // seed 1
  {
    auto ctx = dtl::init(opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{4}, .quiet = true});
  }
  for (const bool given : {false, true}) {
    auto again = opts;
    again.seed = given ? std::optional<std::uint64_t>(7) : std::nullopt;
    auto ctx = dtl::init(again);
    LinearTrial trial(ctx, rec, {});
    const auto err = stderr_of([&] {
      dtl::Trainer(trial, ctx).fit(
          {.max_length = dtl::Batch{4}, .latest_checkpoint = test::latest_checkpoint(*opts.run_dir), .quiet = true});
    });
    INFO(given, " ", err);
    CHECK(ctx.get_trial_seed() == 1);  // the checkpoint's
    CHECK((err.find("resuming with the checkpoint's trial seed 1, not 7") != std::string::npos) == given);
    CHECK((err.find("trial seed") != std::string::npos) == given);
  }
  std::filesystem::remove_all(*opts.run_dir);
}

TEST_CASE("enable_tensorboard_logging = false writes no event files; true (the default) does") {
  for (bool on : {true, false}) {
    Record rec;
    auto opts = test::init_options(on ? "tb_on" : "tb_off", 4, 0.01);
    opts.enable_tensorboard_logging = on;
    auto ctx = dtl::init(opts);
    CHECK(ctx.get_enable_tensorboard_logging() == on);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{8}, .quiet = true});
    const auto tb = ctx.run_dir() / "tensorboard";
    bool any = false;
    if (std::filesystem::exists(tb))
      for (const auto& e : std::filesystem::recursive_directory_iterator(tb))
        any = any || e.path().filename().string().starts_with("events.out.tfevents");
    CHECK(any == on);
    std::filesystem::remove_all(ctx.run_dir());
  }
}

TEST_CASE("one run directory, one process: a second context on it fails at once naming the holder") {
  auto opts = test::init_options("locked", 4, 0.01);
  {
    auto first = dtl::init(opts);
    CHECK_THROWS_WITH_AS(dtl::init(opts), doctest::Contains("is in use by another run (pid "), dtl::ConfigError);
    auto reader = opts;
    reader.lock_run_dir = false;  // a reader (load_trial_from_checkpoint_path) does not take it
    CHECK_NOTHROW(dtl::init(reader));
  }
  CHECK_NOTHROW(dtl::init(opts));  // released with the first context
  std::filesystem::remove_all(*opts.run_dir);
}

TEST_CASE("a foreign directory under checkpoints/ never stops training; a crash's leftovers are removed at start") {
  Record rec;
  auto opts = test::init_options("foreign", 4, 0.01);
  const auto ckpts = *opts.run_dir / "checkpoints";
  std::filesystem::create_directories(ckpts / "my-notes");
  std::ofstream(ckpts / "my-notes" / "README") << "not a checkpoint\n";
  std::filesystem::create_directories(ckpts / "broken");
  std::ofstream(ckpts / "broken" / "metadata.json") << "{not json";
  std::filesystem::create_directories(ckpts / ".tmp-0123");
  std::ofstream(ckpts / ".latest.tmp") << "x";
  auto ctx = dtl::init(opts);
  LinearTrial trial(ctx, rec, {});
  const auto err = stderr_of([&] {
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{12},
                                  .validation_period = dtl::Batch{2},
                                  .checkpoint_period = dtl::Batch{2},
                                  .quiet = true,
                                  .save_trial_latest = 1});
  });
  INFO(err);
  CHECK(rec.batches == 12);
  CHECK(std::filesystem::exists(ckpts / "my-notes" / "README"));  // left alone
  CHECK(std::filesystem::exists(ckpts / "broken" / "metadata.json"));
  CHECK_FALSE(std::filesystem::exists(ckpts / ".tmp-0123"));
  CHECK_FALSE(std::filesystem::exists(ckpts / ".latest.tmp"));
  CHECK(err.find("removed " + (ckpts / ".tmp-0123").string() + ", left by an interrupted checkpoint write") !=
        std::string::npos);
  CHECK(err.find((ckpts / "my-notes").string() + " is not a dtl checkpoint") != std::string::npos);
  CHECK(err.find((ckpts / "broken").string() + " is not a dtl checkpoint") != std::string::npos);
  // Named once each, though retention ran at every checkpoint.
  CHECK(err.find("my-notes is not") == err.rfind("my-notes is not"));
  std::filesystem::remove_all(*opts.run_dir);
}

TEST_CASE("`latest` names a checkpoint of this run: a path out of it, an empty file or a directory is a clear error") {
  Record rec;
  auto other = test::init_options("latest_other", 4, 0.01);
  {
    auto ctx = dtl::init(other);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{4}, .quiet = true});
  }
  const auto other_ckpt = test::latest_checkpoint(*other.run_dir);
  REQUIRE(std::filesystem::is_directory(other_ckpt));

  auto opts = test::init_options("latest_escape", 4, 0.01);
  const auto ckpts = *opts.run_dir / "checkpoints";
  std::filesystem::create_directories(ckpts);
  const auto run_dir = opts.run_dir->string();
  const auto resume = [&](const std::string& what) {
    const char* argv[] = {"hardening_test", "--run-dir", run_dir.c_str(), "--resume", what.c_str()};
    auto ctx = dtl::init(5, argv, opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{8}, .quiet = true});
  };
  const auto resume_latest = [&] { resume("latest"); };
  // Another run's checkpoint through a relative path, and through an absolute one.
  const auto escape = std::filesystem::relative(other_ckpt, ckpts).string();
  REQUIRE(escape.starts_with(".."));
  for (const auto& held : {escape, other_ckpt.string()}) {
    std::ofstream(ckpts / "latest") << held << "\n";
    CHECK_THROWS_WITH_AS(resume_latest(), doctest::Contains(("holds \"" + held + "\", which is not a checkpoint directory name inside").c_str()),
                         dtl::CheckpointError);
  }
  std::ofstream(ckpts / "latest", std::ios::trunc);
  CHECK_THROWS_WITH_AS(resume_latest(), doctest::Contains(((ckpts / "latest").string() + " is empty; dtl writes it as the name of one checkpoint directory").c_str()),
                       dtl::CheckpointError);
  std::ofstream(ckpts / "latest") << "0123-not-here\n";
  CHECK_THROWS_WITH_AS(resume_latest(), doctest::Contains(("names 0123-not-here, but " + (ckpts / "0123-not-here").string() + " does not exist").c_str()),
                       dtl::CheckpointError);
  std::filesystem::remove(ckpts / "latest");
  std::filesystem::create_directories(ckpts / "latest");
  CHECK_THROWS_WITH_AS(resume_latest(), doctest::Contains(((ckpts / "latest").string() + " is not a file").c_str()),
                       dtl::CheckpointError);
  CHECK(rec.batches == 4);  // none of them trained
  // An explicit --resume DIR may still point anywhere.
  std::filesystem::remove_all(ckpts / "latest");
  resume(other_ckpt.string());
  CHECK(rec.batches == 8);  // resumed at 4
  std::filesystem::remove_all(*opts.run_dir);
  std::filesystem::remove_all(*other.run_dir);
}

TEST_CASE("an error from inside LibTorch is one line; DTL_BACKTRACE=1 keeps c10's backtrace") {
  std::string what;
  try {
    torch::nn::Dropout dropout(torch::nn::DropoutOptions(2.0));
  } catch (const c10::Error& e) {
    what = e.what();
  }
  REQUIRE(what.find("dropout probability has to be between 0 and 1") != std::string::npos);
  REQUIRE(what.find("\nException raised from ") != std::string::npos);  // c10 appends where and the frames
  ::unsetenv("DTL_BACKTRACE");
  const auto line = dtl::detail::error_line(what);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.starts_with("dropout probability has to be between 0 and 1, but got 2"));
  // Quoted inside dtl's own message, as a callback error is.
  CHECK(dtl::detail::error_line("dtl: on_validation_end: " + what) ==
        "dtl: on_validation_end: " + line);
  ::setenv("DTL_BACKTRACE", "1", 1);
  CHECK(dtl::detail::error_line(what) == what);
  ::unsetenv("DTL_BACKTRACE");
}

TEST_CASE("after a resume, metrics.jsonl holds each step once; the interrupted run's later records are set aside") {
  Record rec;
  auto opts = test::init_options("metrics_resume", 4, 0.01);
  const auto run_dir = opts.run_dir->string();
  const auto metrics = *opts.run_dir / "metrics.jsonl";
  const auto aside = *opts.run_dir / "metrics.superseded.jsonl";
  std::filesystem::path at4;
  {  // the "interrupted" run: reports every 2 batches, checkpoints every 4, reaches 10
    auto ctx = dtl::init(opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{10},
                                  .validation_period = dtl::Batch{4},
                                  .checkpoint_period = dtl::Batch{4},
                                  .quiet = true});
    for (const auto& e : std::filesystem::directory_iterator(*opts.run_dir / "checkpoints"))
      if (e.is_directory() && read_json(e.path() / "metadata.json")["steps_completed"] == 4) at4 = e.path();
  }
  REQUIRE_FALSE(at4.empty());
  std::ofstream(metrics, std::ios::app) << "{\"type\":\"training\",\"steps_com";  // a line torn by a kill
  const auto steps_of = [](const std::filesystem::path& p) {
    std::vector<std::pair<std::string, std::int64_t>> out;
    std::ifstream in(p);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line);
      out.emplace_back(j.value("type", "?"), j.value("steps_completed", std::int64_t{-1}));
    }
    return out;
  };
  const auto before = steps_of(aside);
  CHECK(before.empty());
  {  // resumed from the checkpoint at 4, to 12
    const char* argv[] = {"hardening_test", "--run-dir", run_dir.c_str(), "--resume", at4.c_str()};
    auto ctx = dtl::init(5, argv, opts);
    LinearTrial trial(ctx, rec, {});
    dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{12},
                                  .validation_period = dtl::Batch{4},
                                  .checkpoint_period = dtl::Batch{4},
                                  .quiet = true});
  }
  const auto now = steps_of(metrics);
  std::map<std::pair<std::string, std::int64_t>, int> count;
  for (const auto& s : now) ++count[s];
  for (const auto& [s, n] : count) {
    CAPTURE(s.first);
    CAPTURE(s.second);
    CHECK(n == 1);
  }
  CHECK(count.contains({"validation", 4}));
  CHECK(count.contains({"validation", 12}));
  const auto set_aside = steps_of(aside);
  CHECK(set_aside.size() >= 4);  // training at 6, 8, 10 (or as reported) and validation at 8, and the torn line
  for (const auto& s : set_aside) CHECK((s.second > 4 || s.first == "?"));
  std::ifstream in(aside);
  for (std::string line; std::getline(in, line);) CHECK(nlohmann::json::parse(line)["superseded_at_resume"] == 4);
  std::filesystem::remove_all(*opts.run_dir);
}
