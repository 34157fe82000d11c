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
