// The profiler schedule (torch.profiler.schedule's arithmetic), Chrome traces written per active
// cycle by a real fit, and profiling_enabled's per-phase timings in metrics.jsonl.
#include "test_trials.hpp"

#include <fstream>

using dtl::detail::ProfilerAction;

TEST_CASE("profiler schedule: skip_first, then wait / warmup / active cycles, repeat times") {
  const dtl::ProfilerSchedule s{.wait = 1, .warmup = 1, .active = 2, .repeat = 2, .skip_first = 1};
  using A = ProfilerAction;
  const std::vector<A> expected = {A::none,                                            // skip_first
                                   A::none, A::warmup, A::record, A::record_and_save,  // cycle 0
                                   A::none, A::warmup, A::record, A::record_and_save,  // cycle 1
                                   A::none, A::none,   A::none};                       // repeat reached
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CAPTURE(k);
    CHECK(dtl::detail::profiler_action(s, static_cast<std::int64_t>(k)) == expected[k]);
  }
  // repeat = 0 cycles for ever; active = 1 saves every cycle's one batch.
  const dtl::ProfilerSchedule forever{.wait = 0, .warmup = 0, .active = 1, .repeat = 0};
  for (std::int64_t k = 0; k < 50; ++k) CHECK(dtl::detail::profiler_action(forever, k) == A::record_and_save);
  CHECK_THROWS_AS(dtl::detail::ScheduledProfiler({.active = 0}, "/tmp"), dtl::InvalidExperimentException);
}

TEST_CASE("set_profiler: a fit writes one Chrome trace per active cycle, with train_batch and ATen ops") {
  test::Record rec;
  auto opts = test::init_options("profiler");
  auto ctx = dtl::init(opts);
  test::LinearTrial trial(ctx, rec, {});
  ctx.set_profiler({.wait = 2, .warmup = 1, .active = 2, .repeat = 2});
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{20}, .quiet = true});
  const auto traces = ctx.profiler_traces();
  REQUIRE(traces.size() == 2);
  for (const auto& t : traces) {
    CHECK(t.parent_path() == ctx.run_dir() / "profiler");
    nlohmann::json trace;
    std::ifstream(t) >> trace;
    // Kineto's trace (LibTorch 2.x) is an object with traceEvents; the autograd profiler's (1.13)
    // Chrome's JSON array.
    REQUIRE((dtl::detail::compat::kineto_profiler ? trace.is_object() : trace.is_array()));
    const auto& events = trace.is_object() ? trace["traceEvents"] : trace;
    REQUIRE(events.is_array());
    int train_batches = 0, aten = 0;
    for (const auto& e : events) {
      CHECK(e.contains("ph"));
      if (e["ph"] != "M") CHECK(e.contains("ts"));  // metadata events carry no time
      const auto name = e.value("name", std::string());
      if (name == "train_batch") ++train_batches;
      if (name.starts_with("aten::")) ++aten;
    }
    CHECK(train_batches == 2);  // the two active batches of the cycle
    CHECK(aten > 0);
  }
  std::filesystem::remove_all(opts.run_dir.value());
}

TEST_CASE("profiling_enabled: per-phase seconds in each training report") {
  test::Record rec;
  auto opts = test::init_options("phases");
  auto ctx = dtl::init(opts);
  test::LinearTrial trial(ctx, rec, {});
  dtl::Trainer(trial, ctx)
      .fit({.max_length = dtl::Batch{20},
            .validation_period = dtl::Batch{10},
            .checkpoint_period = dtl::Batch{10},
            .reporting_period = dtl::Batch{10},
            .profiling_enabled = true,
            .quiet = true});
  std::ifstream in(ctx.run_dir() / "metrics.jsonl");
  int training = 0;
  for (std::string line; std::getline(in, line);) {
    const auto r = nlohmann::json::parse(line);
    if (r["type"] != "training") continue;
    ++training;
    REQUIRE(r.contains("timings"));
    for (const char* k : {"data_wait_seconds", "train_step_seconds", "validation_seconds", "checkpoint_seconds"}) {
      CAPTURE(k);
      CHECK(r["timings"][k].get<double>() >= 0.0);
    }
    CHECK(r["timings"]["train_step_seconds"].get<double>() > 0.0);
    if (training == 2) {  // the validation and checkpoint at batch 10 fall into the second report
      CHECK(r["timings"]["validation_seconds"].get<double>() > 0.0);
      CHECK(r["timings"]["checkpoint_seconds"].get<double>() > 0.0);
    }
  }
  CHECK(training == 2);
  std::filesystem::remove_all(opts.run_dir.value());
}
