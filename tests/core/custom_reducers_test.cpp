// Custom reducers (wrap_reducer): Determined's T10 and T11 with their numbers, the naming rules,
// and the lifecycle (reset per workload and validation, training values overriding averages).
#include "test_trials.hpp"

#include "../support/t10_reducers.hpp"

#include <fstream>
#include <numeric>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;
using Pair = std::pair<double, std::int64_t>;

// T10's reducer, as a class and as a function (tests/support/t10_reducers.hpp).
using test_support::weighted_sum;
using test_support::WeightedSum;

// Unnamed: returns a map, merged into the metrics (here overriding the batch-averaged "loss").
struct CountAsLoss {
  std::map<std::string, double> operator()(const std::vector<double>& v) const {
    return {{"loss", static_cast<double>(v.size())}};
  }
};

// T10: OnesDataset, gbs 4; both reducers are fed the label sum and the batch index.
class ReducerTrial : public dtl::PyTorchTrial<ReducerTrial> {
 public:
  explicit ReducerTrial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.001));
    by_class_ = ctx.wrap_reducer(WeightedSum{}, "by_class");
    by_function_ = ctx.wrap_reducer(weighted_sum, "by_function");
    count_ = ctx.wrap_reducer(CountAsLoss{}, dtl::ReducerPhases{.for_validation = false});
  }
  auto build_training_data_loader() { return dtl::DataLoader(test::ones(64), {.batch_size = 4}); }
  auto build_validation_data_loader() { return dtl::DataLoader(test::ones(64), {.batch_size = 4}); }
  dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t batch_idx) {
    feed(b, batch_idx);
    count_->update(1.0);
    auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b));
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return {{"loss", loss}};
  }
  dtl::Metrics evaluate_batch(Batch& b, std::int64_t batch_idx) {
    feed(b, batch_idx);
    return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b))}};
  }

 private:
  void feed(Batch& b, std::int64_t idx) {
    const double label_sum = std::get<1>(b).sum().item<double>();
    by_class_->update(label_sum, idx);
    by_function_->update({label_sum, idx});
  }
  dtl::PyTorchTrialContext& ctx_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<WeightedSum> by_class_;
  std::shared_ptr<dtl::SimpleReducer<Pair, double (*)(const std::vector<Pair>&)>> by_function_;
  std::shared_ptr<dtl::SimpleReducer<double, CountAsLoss>> count_;
};

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("T10: custom reducers per training workload and validation; class and function agree") {
  auto ctx = dtl::init(test::init_options("t10"));
  ReducerTrial trial(ctx);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{30}, .reporting_period = dtl::Batch{10}, .quiet = true});
  std::vector<double> by_class, by_function, loss;
  nlohmann::json validation;
  for (const auto& rec : read_jsonl(ctx.run_dir() / "metrics.jsonl")) {
    const auto& m = rec["metrics"];
    if (rec["type"] == "training") {
      by_class.push_back(m["by_class"]);
      by_function.push_back(m["by_function"]);
      loss.push_back(m["loss"]);
    } else {
      validation = m;
    }
  }
  CHECK(by_class == std::vector<double>{180, 580, 980});
  CHECK(by_function == by_class);
  CHECK(loss == std::vector<double>{10, 10, 10});  // the unnamed reducer's map overrides the average
  CHECK(validation["by_class"] == 480);            // 16 batches: 4 * (0 + ... + 15)
  CHECK(validation["by_function"] == 480);
  CHECK_FALSE(validation.contains("loss"));  // that reducer is training-only
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("T11: a function reducer sees every rank's values in data order (1, 3, 9 ranks)") {
  auto labels = torch::arange(47);
  dtl::TensorDataset data(labels);
  dtl::DataLoader loader(data, {.batch_size = 2});
  auto concat = [](const std::vector<std::vector<std::int64_t>>& batches) {
    std::vector<std::int64_t> flat;
    for (const auto& b : batches) flat.insert(flat.end(), b.begin(), b.end());
    return flat;
  };
  using Reducer = dtl::SimpleReducer<std::vector<std::int64_t>, decltype(concat)>;
  std::vector<std::int64_t> expected(47);
  std::iota(expected.begin(), expected.end(), 0);
  for (std::int64_t world : {1, 3, 9}) {
    CAPTURE(world);
    // Each simulated rank feeds its shard, one update per batch, then reduces its slot.
    std::vector<std::shared_ptr<Reducer>> ranks;
    nlohmann::json gathered = nlohmann::json::array();
    for (std::int64_t r = 0; r < world; ++r) {
      ranks.push_back(std::make_shared<Reducer>(concat));
      auto stream = loader.adapt_evaluation({.rank = r, .world = world});
      for (auto& [y] : stream)
        ranks.back()->update(
            std::vector<std::int64_t>(y.data_ptr<std::int64_t>(), y.data_ptr<std::int64_t>() + y.numel()));
      dtl::detail::WrappedReducer::OpsFor<Reducer> ops(ranks.back());
      gathered.push_back(ops.per_slot());  // what crosses ranks: JSON
    }
    for (std::int64_t r = 0; r < world; ++r) {  // every rank computes the same result
      dtl::detail::WrappedReducer::OpsFor<Reducer> ops(ranks[static_cast<std::size_t>(r)]);
      const auto values = ops.cross_slot(std::vector<nlohmann::json>(gathered.begin(), gathered.end()));
      const auto got = values.get<std::vector<std::int64_t>>();
      CHECK(got == expected);
      CHECK(std::accumulate(got.begin(), got.end(), std::int64_t{0}) == 1081);
    }
  }
}

TEST_CASE("wrap_reducer: naming rules checked at run time when the result type is dynamic, and no double wrap") {
  auto ctx = dtl::init(test::init_options("reducer-rules"));
  auto named_dict = ctx.wrap_reducer([](const std::vector<double>&) { return nlohmann::json{{"a", 1}}; }, "named");
  std::vector<dtl::detail::WrappedReducer> one;
  one.push_back(
      {std::make_unique<dtl::detail::WrappedReducer::OpsFor<std::remove_cvref_t<decltype(*named_dict)>>>(named_dict),
       named_dict.get(),
       "named",
       {}});
  dtl::MetricsJson m = dtl::MetricsJson::object();
  auto gather = [](nlohmann::json mine) { return std::vector<nlohmann::json>{std::move(mine)}; };
  CHECK_THROWS_WITH_AS(dtl::detail::report_reducers(one, true, m, gather),
                       "dtl: the reducer wrapped with name 'named' returned a map of metrics; with a name it must "
                       "return one value",
                       dtl::InvalidExperimentException);
  auto unnamed_scalar = ctx.wrap_reducer([](const std::vector<double>&) { return nlohmann::json(3.0); });
  one.clear();
  one.push_back({std::make_unique<dtl::detail::WrappedReducer::OpsFor<std::remove_cvref_t<decltype(*unnamed_scalar)>>>(
                     unnamed_scalar),
                 unnamed_scalar.get(),
                 std::nullopt,
                 {}});
  CHECK_THROWS_AS(dtl::detail::report_reducers(one, true, m, gather), dtl::InvalidExperimentException);
  auto shared = std::make_shared<WeightedSum>();
  ctx.wrap_reducer(shared, "x");
  CHECK_THROWS_AS(ctx.wrap_reducer(shared, "y"), dtl::InvalidExperimentException);
  std::filesystem::remove_all(ctx.run_dir());
}

namespace {
// A confusion matrix kept as a tensor per rank (as a Python trial's reducer may keep one).
struct Confusion {
  torch::Tensor counts = torch::zeros({2, 2}, torch::kLong);
  void update(std::int64_t truth, std::int64_t guess) { counts[truth][guess] += 1; }
  void reset() { counts.zero_(); }
  torch::Tensor per_slot_reduce() const { return counts; }
  torch::Tensor cross_slot_reduce(const std::vector<torch::Tensor>& slots) const {
    auto total = torch::zeros({2, 2}, torch::kLong);
    for (const auto& s : slots) total += s;
    return total.diagonal().sum().to(torch::kDouble) / total.sum();
  }
};
struct Spread {  // float per-slot tensors, a map of results
  torch::Tensor v = torch::zeros({3}, torch::kFloat32);
  void reset() { v.zero_(); }
  torch::Tensor per_slot_reduce() const { return v; }
  std::map<std::string, double> cross_slot_reduce(const std::vector<torch::Tensor>& slots) const {
    double hi = 0;
    for (const auto& s : slots) {
      CHECK((s.scalar_type() == torch::kFloat32));
      CHECK((s.sizes() == torch::IntArrayRef{3}));
      hi = std::max(hi, s.max().item<double>());
    }
    return {{"spread_max", hi}};
  }
};
}  // namespace

TEST_CASE("wrap_reducer: per-rank tensors cross ranks with their dtype, shape and values; a tensor result is a number") {
  static_assert(dtl::MetricReducer<Confusion> && dtl::MetricReducer<Spread>);
  auto c = std::make_shared<Confusion>();
  c->update(0, 0), c->update(1, 1), c->update(1, 0);
  dtl::detail::WrappedReducer::OpsFor<Confusion> ops(c);
  const auto mine = ops.per_slot();
  // Two ranks: this one's and another's (exact int64 values, through JSON as allgather carries them).
  auto other = dtl::detail::tensor_slot_to_json(torch::tensor({{5, 0}, {0, 1}}, torch::kLong));
  const auto metric = ops.cross_slot({nlohmann::json::from_cbor(nlohmann::json::to_cbor(mine)), other});
  CHECK(metric.is_number());
  CHECK(metric.get<double>() == doctest::Approx(8.0 / 9.0));

  const auto big = torch::tensor({(std::int64_t{1} << 62) + 1}, torch::kLong);
  CHECK(torch::equal(dtl::detail::tensor_slot_from_json(dtl::detail::tensor_slot_to_json(big)), big));
  const auto f = torch::tensor({{0.1f, -2.5f}}, torch::kFloat32);
  const auto back = dtl::detail::tensor_slot_from_json(dtl::detail::tensor_slot_to_json(f));
  CHECK((back.scalar_type() == torch::kFloat32));
  CHECK(torch::equal(back, f));

  auto s = std::make_shared<Spread>();
  s->v = torch::tensor({1.0f, 4.0f, 2.0f});
  dtl::detail::WrappedReducer::OpsFor<Spread> sops(s);
  const auto m = sops.cross_slot({sops.per_slot(), dtl::detail::tensor_slot_to_json(torch::tensor({0.5f, 0.f, 9.f}))});
  CHECK(m["spread_max"] == 9.0);
}
