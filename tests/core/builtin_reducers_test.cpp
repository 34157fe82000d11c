#include "../prelude.hpp"
#include "../support/external.hpp"

#include <array>
#include <fstream>
#include <random>

namespace {
dtl::Metrics one(const char* k, double v) { return dtl::Metrics{{k, torch::tensor(v)}}; }
}  // namespace

TEST_CASE("built-in reducers: Determined's test vector (semantics §5.1)") {
  auto x = torch::tensor({0.25, 0.5, 0.75, 1.0, 25.5, 1.9});
  CHECK(dtl::detail::reduce_per_slot(dtl::Reducer::avg, x) ==
        doctest::Approx(4.98).epsilon(1e-3));  // reference rounds to 2 places
  CHECK(dtl::detail::reduce_per_slot(dtl::Reducer::sum, x) == doctest::Approx(29.9));
  CHECK(dtl::detail::reduce_per_slot(dtl::Reducer::min, x) == doctest::Approx(0.25));
  CHECK(dtl::detail::reduce_per_slot(dtl::Reducer::max, x) == doctest::Approx(25.5));
  // Weighted cross-slot average: each value a slot with that many batches.
  std::vector<dtl::detail::SlotValue> slots;
  const double vals[] = {0.25, 0.5, 0.75, 1, 25.5, 1.9};
  const std::int64_t w[] = {1, 2, 5, 4, 5, 6};
  for (int i = 0; i < 6; ++i) slots.push_back({vals[i], w[i]});
  CHECK(dtl::detail::reduce_cross_slot(dtl::Reducer::avg, slots) == doctest::Approx(6.43).epsilon(1e-3));
}

TEST_CASE("T13: two ranks [1,2,3] and [4,5] reduce to AVG 3, SUM 15, MAX 5, MIN 1") {
  for (auto [r, want] : {std::pair{dtl::Reducer::avg, 3.0},
                         {dtl::Reducer::sum, 15.0},
                         {dtl::Reducer::max, 5.0},
                         {dtl::Reducer::min, 1.0}}) {
    std::vector<dtl::detail::SlotValue> slots = {
        {dtl::detail::reduce_per_slot(r, torch::tensor({1.0, 2.0, 3.0})), 3},
        {dtl::detail::reduce_per_slot(r, torch::tensor({4.0, 5.0})), 2},
        {0.0, 0},  // a rank with no batches is dropped
    };
    CHECK(dtl::detail::reduce_cross_slot(r, slots) == doctest::Approx(want));
  }
}

TEST_CASE("T13: a vector metric collapses to a scalar under AVG; key sets must match") {
  dtl::detail::MetricCollector c;
  c.add(dtl::Metrics{{"v", torch::tensor({1.0, 2.0})}}, "validation");
  c.add(dtl::Metrics{{"v", torch::tensor({3.0, 4.0})}}, "validation");
  auto slots = dtl::detail::reduce_validation_slot(c, dtl::Reducer::avg);
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].value == doctest::Approx(2.5));
  CHECK(slots[0].num_batches == 2);
  CHECK_THROWS_WITH_AS(c.add(one("w", 1), "validation"), doctest::Contains("same names in every batch"),
                       std::invalid_argument);
}

TEST_CASE("per-metric reducer maps must name every metric") {
  dtl::detail::MetricCollector c;
  c.add(dtl::Metrics{{"a", 1.0}, {"b", 5.0}}, "validation");
  c.add(dtl::Metrics{{"a", 3.0}, {"b", 2.0}}, "validation");
  auto slots =
      dtl::detail::reduce_validation_slot(c, dtl::ReducerMap{{"a", dtl::Reducer::sum}, {"b", dtl::Reducer::max}});
  CHECK(slots[0].value == doctest::Approx(4.0));
  CHECK(slots[1].value == doctest::Approx(5.0));
  CHECK_THROWS_WITH(dtl::detail::reduce_validation_slot(c, dtl::ReducerMap{{"a", dtl::Reducer::sum}}),
                    doctest::Contains("keys must match"));
}

TEST_CASE("training metrics: mean over batches, vectors stay vectors, ragged values become null") {
  dtl::detail::MetricCollector c;
  c.add(dtl::Metrics{{"loss", torch::tensor(1.0)}, {"v", torch::tensor({1.0, 2.0})}, {"r", torch::ones({1})}}, "t");
  c.add(dtl::Metrics{{"loss", torch::tensor(3.0)}, {"v", torch::tensor({3.0, 4.0})}, {"r", torch::ones({2})}}, "t");
  auto rep = dtl::detail::reduce_training(c);
  CHECK(rep.avg_metrics["loss"].get<double>() == doctest::Approx(2.0));
  CHECK(rep.avg_metrics["v"][1].get<double>() == doctest::Approx(3.0));
  CHECK(rep.avg_metrics["r"].is_null());
  REQUIRE(rep.batch_metrics.size() == 2);
  CHECK(rep.batch_metrics[1]["loss"].get<double>() == doctest::Approx(3.0));
  // Per-batch values of a vector metric are that batch's slice (read from one host copy).
  CHECK(rep.batch_metrics[0]["v"] == dtl::MetricsJson::array({1.0, 2.0}));
  CHECK(rep.batch_metrics[1]["v"] == dtl::MetricsJson::array({3.0, 4.0}));
  CHECK(rep.batch_metrics[1]["r"] == dtl::MetricsJson::array({1.0, 1.0}));
  CHECK(dtl::detail::tensor_to_json(torch::arange(6).reshape({2, 3}))[1][2].get<double>() == 5.0);
}

TEST_CASE("Metrics: a bare loss tensor becomes {\"loss\": t}; numbers are allowed") {
  dtl::Metrics m(torch::tensor(0.5));
  CHECK(m.size() == 1);
  CHECK(m.at("loss").tensor().item<double>() == doctest::Approx(0.5));
  dtl::Metrics n{{"acc", 0.75}, {"count", 3}};
  CHECK(n.at("acc").number() == doctest::Approx(0.75));
  CHECK(n.at("count").as_tensor().item<double>() == doctest::Approx(3.0));
  CHECK_THROWS(static_cast<void>(n.at("missing")));
}

namespace {

/// What `script` (Python with numpy; `sys.argv[1]` names a JSON file holding `cases`) prints as
/// JSON: the reference values the numpy-exact averaging tests compare with.
nlohmann::json numpy_reference(const nlohmann::json& cases, const std::string& script) {
  namespace fs = std::filesystem;
  const auto file = fs::temp_directory_path() / ("dtl_numpy_cases_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << cases.dump();
  const auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " -c " +
                                           test_support::shell_quote(script) + " " +
                                           test_support::shell_quote(file.string()));
  fs::remove(file);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  return nlohmann::json::parse(r.output);
}

}  // namespace

TEST_CASE("the distributed training average is Determined's: np.mean across ranks per batch, then np.mean over batches") {
  // Determined (_average_training_metrics): each batch's values from every rank as one numpy
  // array (float32 for tensor metrics, float64 for Python floats), np.mean of it; then np.mean
  // of those per-batch averages. Sums in the arrays' precision, so float64 arithmetic differs.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::array<double, 4>> mine;  // loss avg, loss batch 0, lr avg, lr batch 0
  for (const auto& [ranks, n] : std::vector<std::pair<int, int>>{{2, 1}, {2, 7}, {3, 130}, {8, 9}, {9, 100}, {16, 3}}) {
    std::vector<dtl::MetricsJson> per_rank(static_cast<std::size_t>(ranks), dtl::MetricsJson::array());
    nlohmann::json losses = nlohmann::json::array(), lrs = nlohmann::json::array();
    for (int r = 0; r < ranks; ++r) {
      nlohmann::json l = nlohmann::json::array(), g = nlohmann::json::array();
      for (int b = 0; b < n; ++b) {
        const float loss = u(rng);
        const double lr = static_cast<double>(u(rng)) / 3.0;
        per_rank[static_cast<std::size_t>(r)].push_back({{"loss", static_cast<double>(loss)}, {"lr", lr}});
        l.push_back(static_cast<double>(loss));
        g.push_back(lr);
      }
      losses.push_back(l);
      lrs.push_back(g);
    }
    const auto rep = dtl::detail::average_training_across_ranks(per_rank, {"loss", "lr"}, {"loss"});
    const auto& first = rep.batch_metrics[0];
    mine.push_back({rep.avg_metrics["loss"].get<double>(), first["loss"].get<double>(),
                    rep.avg_metrics["lr"].get<double>(), first["lr"].get<double>()});
    CHECK(static_cast<double>(static_cast<float>(mine.back()[0])) == mine.back()[0]);  // a float32 value
    cases.push_back({{"loss", losses}, {"lr", lrs}});
  }
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped the comparison with numpy: " << *why);
    return;
  }
  const auto numpy = numpy_reference(cases,
                                     "import json, sys, numpy as np\n"
                                     "def avg(ranks, f32):\n"
                                     "    per_batch = []\n"
                                     "    for b in range(len(ranks[0])):\n"
                                     "        a = np.array([np.array(r[b], dtype=np.float32) if f32 else r[b] for r in ranks])\n"
                                     "        m = np.mean(a[a != None])\n"
                                     "        per_batch.append(np.array(m) if f32 else m)\n"
                                     "    return [float(np.mean(per_batch)), float(per_batch[0])]\n"
                                     "cases = json.load(open(sys.argv[1]))\n"
                                     "print(json.dumps([avg(c['loss'], True) + avg(c['lr'], False) for c in cases]))");
  REQUIRE(numpy.size() == mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    INFO("case " << i);
    for (std::size_t k = 0; k < 4; ++k) CHECK(mine[i][k] == numpy[i][k].get<double>());
  }
}

TEST_CASE("the training average is numpy's mean bit for bit: float32 metrics in float32, Python floats in float64") {
  // Determined averages a workload's per-batch values with np.mean: pairwise summation in the
  // array's precision. A float64 sum of float32 values differs in the last bits.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::pair<double, double>> mine;  // (float32 loss mean, float64 lr mean) per case
  for (int n : {1, 3, 7, 8, 9, 16, 100, 127, 128, 129, 300, 1000, 8193}) {
    dtl::detail::MetricCollector c;
    nlohmann::json losses = nlohmann::json::array(), lrs = nlohmann::json::array();
    for (int b = 0; b < n; ++b) {
      const float loss = u(rng);
      const double lr = static_cast<double>(u(rng)) / 3.0;
      c.add(dtl::Metrics{{"loss", torch::tensor(loss)}, {"lr", lr}}, "training");
      losses.push_back(static_cast<double>(loss));
      lrs.push_back(lr);
    }
    const auto rep = dtl::detail::reduce_training(c);
    mine.emplace_back(rep.avg_metrics["loss"].get<double>(), rep.avg_metrics["lr"].get<double>());
    cases.push_back({{"loss", losses}, {"lr", lrs}});
    // The float32 mean is a float32 value.
    CHECK(static_cast<double>(static_cast<float>(mine.back().first)) == mine.back().first);
  }
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped the comparison with numpy: " << *why);
    return;
  }
  const auto numpy = numpy_reference(
      cases,
      "import json, sys, numpy as np\n"
      "cases = json.load(open(sys.argv[1]))\n"
      "print(json.dumps([[float(np.mean([np.array(v, dtype=np.float32) for v in c['loss']])),"
      " float(np.mean(c['lr']))] for c in cases]))");
  REQUIRE(numpy.size() == mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    INFO("case " << i);
    CHECK(mine[i].first == numpy[i][0].get<double>());
    CHECK(mine[i].second == numpy[i][1].get<double>());
  }
}

TEST_CASE("validation reducers are Determined's numpy bit for bit: per rank in float32, across ranks weighted in float64") {
  // Determined: np.average / np.sum of np.stack(batch values) per rank (float32 for float32
  // tensors), then np.average(per_rank, weights=batches) (float64: the int weights promote it)
  // or np.sum(per_rank). The oracle (tests/oracle) found float32 metrics averaged in float64.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 3.0f);
  nlohmann::json cases = nlohmann::json::array();
  std::vector<std::array<double, 4>> mine;  // rank 0's avg and sum, the cross-rank avg and sum
  for (int n : {1, 5, 8, 9, 40, 129, 300}) {
    std::vector<dtl::detail::SlotValue> avg_slots, sum_slots;
    nlohmann::json ranks = nlohmann::json::array();
    for (int rank = 0; rank < 3; ++rank) {
      dtl::detail::MetricCollector c;
      nlohmann::json values = nlohmann::json::array();
      for (int b = 0; b < n + rank; ++b) {
        const float v = u(rng);
        c.add(dtl::Metrics{{"m", torch::tensor(v)}}, "validation");
        values.push_back(static_cast<double>(v));
      }
      avg_slots.push_back(dtl::detail::reduce_validation_slot(c, dtl::Reducer::avg).at(0));
      sum_slots.push_back(dtl::detail::reduce_validation_slot(c, dtl::Reducer::sum).at(0));
      CHECK(avg_slots.back().float32);
      ranks.push_back(values);
    }
    mine.push_back({avg_slots[0].value, sum_slots[0].value, dtl::detail::reduce_cross_slot(dtl::Reducer::avg, avg_slots),
                    dtl::detail::reduce_cross_slot(dtl::Reducer::sum, sum_slots)});
    cases.push_back(ranks);
  }
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped the comparison with numpy: " << *why);
    return;
  }
  const auto numpy = numpy_reference(
      cases,
      "import json, sys, numpy as np\n"
      "out = []\n"
      "for ranks in json.load(open(sys.argv[1])):\n"
      "    st = [np.stack([np.array(v, dtype=np.float32) for v in r]) for r in ranks]\n"
      "    avg = [np.average(s) for s in st]\n"
      "    sums = [np.sum(s) for s in st]\n"
      "    out.append([float(avg[0]), float(sums[0]), float(np.average(avg, weights=[len(r) for r in ranks])),"
      " float(np.sum(sums))])\n"
      "print(json.dumps(out))");
  REQUIRE(numpy.size() == mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i)
    for (std::size_t k = 0; k < 4; ++k) {
      INFO("case " << i << ", value " << k);
      CHECK(mine[i][k] == numpy[i][k].get<double>());
    }
}

TEST_CASE("the progress line's loss: the latest batch's, where it is on the host without a sync") {
  dtl::detail::MetricCollector c;
  CHECK_FALSE(c.latest_on_host("loss").has_value());
  c.add({{"loss", torch::tensor(0.5f)}, {"acc", 0.25}}, "training");
  c.add({{"loss", torch::tensor(0.375f)}, {"acc", 0.5}}, "training");
  CHECK(c.latest_on_host("loss") == 0.375);
  CHECK(c.latest_on_host("acc") == 0.5);  // a plain number
  CHECK_FALSE(c.latest_on_host("missing").has_value());
  dtl::detail::MetricCollector v;
  v.add({{"loss", torch::ones({2})}}, "training");  // not a scalar: nothing to show
  CHECK_FALSE(v.latest_on_host("loss").has_value());
}
