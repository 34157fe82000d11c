// DataLoader: worker threads, errors with the failing index, sampler state for resume, user batch
// samplers, and loaders dtl cannot adapt (the reproducibility opt-out).
#include "../core/test_trials.hpp"

#include <atomic>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

namespace {

using Batch = std::tuple<torch::Tensor, torch::Tensor>;

// A map-style dataset fetched example by example: example i is (i as a float row, i); it can be
// told to throw at one index, and counts its calls (from any thread).
struct CountingDataset {
  std::int64_t n = 20;
  std::int64_t fail_at = -1;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::int64_t size() const { return n; }
  Batch get(std::int64_t i) const {
    ++*calls;
    if (i == fail_at) throw std::out_of_range("record " + std::to_string(i) + " is unreadable");
    return {torch::full({1}, static_cast<float>(i)), torch::tensor(i)};
  }
};

// The example indices of a batch, read back from its label column.
std::vector<std::int64_t> ids(const Batch& b) {
  auto y = std::get<1>(b).contiguous();
  return {y.data_ptr<std::int64_t>(), y.data_ptr<std::int64_t>() + y.numel()};
}

template <class Stream>
std::vector<std::vector<std::int64_t>> take(Stream& s, std::int64_t n) {
  std::vector<std::vector<std::int64_t>> out;
  auto it = s.begin();
  for (std::int64_t k = 0; k < n && it != s.end(); ++k, ++it) out.push_back(ids(*it));
  return out;
}

template <class Stream>
std::vector<std::vector<std::int64_t>> drain(Stream& s) {
  std::vector<std::vector<std::int64_t>> out;
  for (auto& b : s) out.push_back(ids(b));
  return out;
}

}  // namespace

TEST_CASE("DataLoader streams are C++20 input ranges") {
  dtl::DataLoader loader(CountingDataset{}, {.batch_size = 4});
  static_assert(std::ranges::input_range<decltype(loader.stream())>);
  static_assert(std::ranges::input_range<decltype(loader.adapt_training({}))>);
}

TEST_CASE("workers give the same batches in the same order as the training thread alone") {
  for (bool shuffle : {false, true}) {
    dtl::DataLoader serial(CountingDataset{.n = 23}, {.batch_size = 3, .shuffle = shuffle, .seed = 5});
    auto expected_pass = serial.stream();
    const auto pass = drain(expected_pass);
    auto expected_train = serial.adapt_training({.skip = 2, .rank = 1, .world = 3, .seed = 9});
    const auto train = take(expected_train, 25);
    for (std::int64_t workers : {1, 2, 3})
      for (std::int64_t prefetch : {1, 2, 4}) {
        CAPTURE(shuffle);
        CAPTURE(workers);
        CAPTURE(prefetch);
        dtl::DataLoader parallel(
            CountingDataset{.n = 23},
            {.batch_size = 3, .shuffle = shuffle, .num_workers = workers, .prefetch_factor = prefetch, .seed = 5});
        auto p = parallel.stream();
        CHECK(drain(p) == pass);
        auto t = parallel.adapt_training({.skip = 2, .rank = 1, .world = 3, .seed = 9});
        CHECK(take(t, 25) == train);
      }
  }
}

TEST_CASE("workers load ahead on their own threads, at most num_workers * prefetch_factor batches") {
  struct ThreadRecorder {
    std::shared_ptr<std::mutex> m = std::make_shared<std::mutex>();
    std::shared_ptr<std::set<std::thread::id>> threads = std::make_shared<std::set<std::thread::id>>();
    std::int64_t size() const { return 40; }
    torch::Tensor get(std::int64_t i) const {
      std::lock_guard lock(*m);
      threads->insert(std::this_thread::get_id());
      return torch::tensor(i);
    }
  };
  ThreadRecorder data;
  CountingDataset counted{.n = 40};
  dtl::DataLoader loader(data, {.batch_size = 2, .num_workers = 2});
  auto s = loader.stream();
  std::int64_t n = 0;
  for (auto& b : s) n += b.numel();
  CHECK(n == 40);
  CHECK(data.threads->count(std::this_thread::get_id()) == 0);

  dtl::DataLoader bounded(counted, {.batch_size = 2, .num_workers = 2, .prefetch_factor = 3});
  auto b = bounded.stream();
  auto it = b.begin();
  static_cast<void>(*it);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // One batch taken plus at most 6 in flight, of 2 examples each.
  CHECK(counted.calls->load() <= 2 * 7);
}

TEST_CASE("a failing example surfaces on the training thread with its index, original exception nested") {
  for (std::int64_t workers : {0, 2}) {
    CAPTURE(workers);
    dtl::DataLoader loader(CountingDataset{.n = 20, .fail_at = 13}, {.batch_size = 4, .num_workers = workers});
    auto s = loader.stream();
    auto it = s.begin();
    for (int k = 0; k < 3; ++k, ++it) CHECK(ids(*it).size() == 4);  // batches 0..2 are fine
    try {
      static_cast<void>(*it);  // batch 3 holds 12..15
      FAIL("no exception");
    } catch (const dtl::DataError& e) {
      CHECK(std::string(e.what()).find("dataset.get(13) failed: record 13 is unreadable") != std::string::npos);
      try {
        std::rethrow_if_nested(e);
        FAIL("nothing nested");
      } catch (const std::out_of_range& inner) {
        CHECK(std::string(inner.what()) == "record 13 is unreadable");
      }
    }
  }
}

TEST_CASE("a failing batched fetch names the batch's indices") {
  struct Broken {
    std::int64_t size() const { return 8; }
    torch::Tensor get(std::int64_t i) const { return torch::tensor(i); }
    torch::Tensor get_batch(std::span<const std::int64_t>) const { throw std::runtime_error("disk gone"); }
  };
  dtl::DataLoader loader(Broken{}, {.batch_size = 3, .num_workers = 1});
  auto s = loader.stream();
  CHECK_THROWS_WITH_AS(static_cast<void>(*s.begin()),
                       "dtl::DataLoader: dataset.get_batch failed for the batch with indices [0, 1, 2]: disk gone",
                       dtl::DataError);
}

TEST_CASE("a stream with workers destroyed mid-epoch stops them and returns promptly") {
  CountingDataset data{.n = 1000};
  dtl::DataLoader loader(data, {.batch_size = 5, .num_workers = 2, .prefetch_factor = 4});
  for (int round = 0; round < 10; ++round) {
    auto s = loader.adapt_training({.seed = 1});
    auto it = s.begin();
    for (int k = 0; k < round; ++k, ++it) static_cast<void>(*it);
  }
  { auto never_begun = loader.stream(); }
  // Each stream loaded at most what it consumed plus its 8 slots ahead.
  CHECK(data.calls->load() <= 5 * (45 + 10 * 8));
}

TEST_CASE("a stream's state resumes exactly where it stopped, with or without workers") {
  for (std::int64_t workers : {0, 2}) {
    CAPTURE(workers);
    dtl::DataLoader loader(CountingDataset{.n = 20}, {.batch_size = 3, .shuffle = true, .num_workers = workers});
    const dtl::AdaptOptions at0{.seed = 42};
    auto straight = loader.adapt_training(at0);
    const auto all = take(straight, 40);

    auto first = loader.adapt_training(at0);
    CHECK_FALSE(first.state().has_value());  // nothing consumed, nothing restored
    std::optional<dtl::samplers::sampler_state> saved;
    {
      auto it = first.begin();
      for (int k = 0; k < 17; ++k, ++it) CHECK(ids(*it) == all[static_cast<std::size_t>(k)]);
      saved = first.state();  // after 17 consumed batches, whatever the workers loaded ahead
    }
    REQUIRE(saved);
    CHECK(saved->position == 17);
    CHECK(saved->epoch == 2);  // 7 batches per epoch: the third epoch has begun

    auto resumed = loader.adapt_training({.skip = 17, .seed = 42, .resume = &*saved});
    auto skipped = loader.adapt_training({.skip = 17, .seed = 42});
    const std::vector<std::vector<std::int64_t>> rest(all.begin() + 17, all.end());
    CHECK(take(resumed, 23) == rest);
    CHECK(take(skipped, 23) == rest);
    // The JSON form a checkpoint stores round-trips.
    nlohmann::json j = *saved;
    CHECK(j.get<dtl::samplers::sampler_state>() == *saved);
    // A state that does not belong to this position is refused.
    CHECK_THROWS_AS(static_cast<void>(loader.adapt_training({.skip = 16, .seed = 42, .resume = &*saved})),
                    dtl::DataError);
  }
}

TEST_CASE("a user batch_sampler is repeated, sharded and skipped like Determined's adapt_batch_sampler") {
  namespace s = dtl::samplers;
  // Reference §4: training chain, range(10), bs=2, R=3.
  dtl::DataLoader loader(CountingDataset{.n = 10}, s::sequential(10) | s::batch(2));
  CHECK(loader.size() == 5);
  CHECK(loader.epoch_length(3) == 2);
  using V = std::vector<std::vector<std::int64_t>>;
  auto r0 = loader.adapt_training({.rank = 0, .world = 3});
  CHECK(take(r0, 6) == V{{0, 1}, {6, 7}, {2, 3}, {8, 9}, {4, 5}, {0, 1}});
  auto r2 = loader.adapt_training({.rank = 2, .world = 3});
  CHECK(take(r2, 6) == V{{4, 5}, {0, 1}, {6, 7}, {2, 3}, {8, 9}, {4, 5}});
  auto r0_skip = loader.adapt_training({.skip = 2, .rank = 0, .world = 3});
  CHECK(take(r0_skip, 4) == V{{2, 3}, {8, 9}, {4, 5}, {0, 1}});
  // A user pipeline may shuffle with its own seed, and workers apply to it too.
  dtl::DataLoader shuffled(CountingDataset{.n = 10}, s::sequential(10) | s::shuffle(3) | s::batch(4, true),
                           {.num_workers = 2});
  auto pass = shuffled.stream();
  const auto batches = drain(pass);
  CHECK(batches.size() == 2);
  CHECK(batches[0].size() == 4);
  // torch's mutual exclusion: batch_size, shuffle, drop_last belong to the batch sampler.
  CHECK_THROWS_AS(dtl::DataLoader(CountingDataset{}, s::sequential(20) | s::batch(2), {.batch_size = 4}),
                  dtl::DataError);
}

TEST_CASE("a batch_sampler that repeats before batching yields Python's BatchSampler(RepeatSampler(...)) batches") {
  namespace s = dtl::samplers;
  using V = std::vector<std::vector<std::int64_t>>;
  // Python (Determined's samplers on numpy):
  //   BatchSampler(RepeatSampler(ReproducibleShuffleSampler(SequentialSampler(range(10)), 7)), 4, False)
  // = rs = np.random.RandomState(7); each pass x = list(range(10)); rs.shuffle(x); chained; chunks of 4.
  const V python = {{8, 5, 0, 2}, {1, 9, 7, 3}, {6, 4, 1, 3}, {2, 5, 9, 0}, {4, 6, 7, 8},
                    {2, 4, 1, 9}, {6, 8, 7, 0}, {5, 3, 9, 5}, {0, 3, 7, 4}, {6, 1, 8, 2}};
  for (std::int64_t workers : {0, 2}) {
    CAPTURE(workers);
    dtl::DataLoader loader(CountingDataset{.n = 10}, s::sequential(10) | s::shuffle(7) | s::repeat() | s::batch(4),
                           {.num_workers = workers});
    CHECK(loader.size() == 3);  // len(BatchSampler(RepeatSampler(s), 4)) == ceil(10 / 4): the nominal epoch
    CHECK(loader.epoch_length(2) == 2);
    auto one = loader.adapt_training({});
    CHECK(take(one, 10) == python);  // batches run across epoch ends: {6, 4 | 1, 3} is batch 2
    // Sharded after the repeat, as Determined's DistributedBatchSampler: rank r takes batches r, r + w, ...
    auto r1 = loader.adapt_training({.rank = 1, .world = 2});
    CHECK(take(r1, 5) == V{python[1], python[3], python[5], python[7], python[9]});
    // Skipped, and resumed from a saved state, to the same batches.
    auto skipped = loader.adapt_training({.skip = 6});
    CHECK(take(skipped, 4) == V(python.begin() + 6, python.end()));
    std::optional<dtl::samplers::sampler_state> saved;
    {
      auto first = loader.adapt_training({});
      auto it = first.begin();
      for (int k = 0; k < 6; ++k) ++it;
      saved = first.state();
    }
    REQUIRE(saved);
    auto resumed = loader.adapt_training({.skip = 6, .resume = &*saved});
    CHECK(take(resumed, 4) == V(python.begin() + 6, python.end()));
  }
  // drop_last changes only the nominal epoch: the stream never ends, so no batch is short.
  dtl::DataLoader dropping(CountingDataset{.n = 10}, s::sequential(10) | s::shuffle(7) | s::repeat() | s::batch(4, true));
  CHECK(dropping.size() == 2);
  auto d = dropping.adapt_training({});
  CHECK(take(d, 10) == python);
}

TEST_CASE("the Trainer trains on a batch_sampler that repeats before batching, and resumes it exactly") {
  namespace s = dtl::samplers;
  struct Trial : dtl::PyTorchTrial<Trial> {
    explicit Trial(dtl::PyTorchTrialContext& ctx) : ctx_(ctx) {
      model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
      opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.01));
    }
    auto build_training_data_loader() {
      return dtl::DataLoader(CountingDataset{.n = 10}, s::sequential(10) | s::shuffle(7) | s::repeat() | s::batch(4));
    }
    auto build_validation_data_loader() { return dtl::DataLoader(CountingDataset{.n = 10}, s::sequential(10) | s::batch(5)); }
    dtl::Metrics train_batch(Batch& b, std::int64_t, std::int64_t) {
      seen.push_back(ids(b));
      auto loss = torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b).to(torch::kFloat).unsqueeze(1));
      ctx_.backward(loss);
      ctx_.step_optimizer(opt_);
      return {{"loss", loss}};
    }
    dtl::Metrics evaluate_batch(Batch& b) {
      return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<1>(b).to(torch::kFloat).unsqueeze(1))}};
    }
    std::vector<std::vector<std::int64_t>> seen;
    dtl::PyTorchTrialContext& ctx_;
    torch::nn::Linear model_{nullptr};
    std::shared_ptr<torch::optim::SGD> opt_;
  };
  const auto dir = std::filesystem::temp_directory_path() / ("dtl-repeat-before-batch-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<std::vector<std::int64_t>> straight, resumed;
  {
    auto ctx = dtl::init({.seed = 1, .run_dir = dir / "a"});
    Trial t(ctx);
    dtl::Trainer(t, ctx).fit({.max_length = dtl::Epoch{3}, .quiet = true});  // 3 nominal epochs of 3 batches
    straight = t.seen;
  }
  CHECK(straight.size() == 9);
  {
    auto ctx = dtl::init({.seed = 1, .run_dir = dir / "b"});
    Trial t(ctx);
    dtl::Trainer(t, ctx).fit({.max_length = dtl::Batch{5}, .quiet = true});
    resumed = t.seen;
  }
  {
    auto ctx = dtl::init({.seed = 1, .run_dir = dir / "b"});
    Trial t(ctx);
    dtl::Trainer(t, ctx).fit({.max_length = dtl::Epoch{3}, .latest_checkpoint = test::latest_checkpoint(dir / "b"), .quiet = true});
    resumed.insert(resumed.end(), t.seen.begin(), t.seen.end());
  }
  CHECK(resumed == straight);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad loader options are errors that name the option") {
  CHECK_THROWS_WITH_AS(dtl::DataLoader(CountingDataset{}, {.batch_size = 2, .num_workers = -1}),
                       "dtl::DataLoader: num_workers must be >= 0 (got -1)", dtl::DataError);
  CHECK_THROWS_WITH_AS(dtl::DataLoader(CountingDataset{}, {.batch_size = 2, .prefetch_factor = 0}),
                       "dtl::DataLoader: prefetch_factor must be >= 1 (got 0)", dtl::DataError);
}

TEST_CASE("a TensorDataset's consecutive batches are views of its data; a batch changed in place stops the next") {
  auto x = torch::arange(40, torch::kFloat).reshape({20, 2});
  auto y = torch::arange(20);
  dtl::TensorDataset data(x, y);
  {
    dtl::DataLoader sequential(data, {.batch_size = 4});
    auto s = sequential.stream();
    auto it = s.begin();
    auto& [bx, by] = *it;
    CHECK(bx.data_ptr() == x.data_ptr());  // the first batch is x[0:4], not a copy
    CHECK(torch::equal(by, torch::arange(4)));
    ++it;
    CHECK(std::get<0>(*it).data_ptr<float>() == x.data_ptr<float>() + 8);
    std::get<0>(*it).mul_(2);  // a trial that changes its batch in place changes the dataset...
    // ...caught when the next batch is fetched (a stream fetches on dereference).
    CHECK_THROWS_WITH_AS((void)*++it, doctest::Contains("its tensors were changed in place"), dtl::DataError);
  }
  // Gathered batches (a shuffled order) are copies.
  auto fresh = torch::arange(40, torch::kFloat).reshape({20, 2});
  dtl::DataLoader shuffled(dtl::TensorDataset(fresh, torch::arange(20)), {.batch_size = 4, .shuffle = true});
  auto s = shuffled.stream();
  for (auto& [bx, by] : s) CHECK(bx.data_ptr() != fresh.data_ptr());
}

TEST_CASE("pin_memory is ignored without CUDA, as torch does") {
  dtl::DataLoader loader(CountingDataset{}, {.batch_size = 4, .num_workers = 1, .pin_memory = true});
  auto s = loader.stream();
  auto& b = *s.begin();
  CHECK(std::get<0>(b).sizes() == torch::IntArrayRef{4, 1});
  if (!torch::cuda::is_available()) CHECK_FALSE(std::get<0>(b).is_pinned());
}

// ---- through the Trainer ---------------------------------------------------------------------

namespace {

// Trains on shuffled data with workers; records which examples each batch held.
class ShuffleTrial : public dtl::PyTorchTrial<ShuffleTrial> {
 public:
  ShuffleTrial(dtl::PyTorchTrialContext& ctx, std::vector<std::vector<std::int64_t>>& seen, std::int64_t workers,
               std::int64_t fail_at = -1)
      : ctx_(ctx), seen_(seen), workers_(workers), fail_at_(fail_at) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)));
  }
  auto build_training_data_loader() {
    return dtl::DataLoader(CountingDataset{.n = 22, .fail_at = fail_at_},
                           {.batch_size = 4, .shuffle = true, .num_workers = workers_});
  }
  auto build_validation_data_loader() { return dtl::DataLoader(CountingDataset{.n = 8}, {.batch_size = 4}); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    seen_.push_back(ids(b));
    auto loss = torch::mse_loss(model_(std::get<0>(b) / 22.0), std::get<1>(b).to(torch::kFloat).unsqueeze(1) / 22.0);
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b, std::int64_t) {
    return {{"validation_loss", torch::mse_loss(model_(std::get<0>(b)), std::get<0>(b))}};
  }
  torch::Tensor weight() const { return model_->weight.detach().clone(); }

 private:
  dtl::PyTorchTrialContext& ctx_;
  std::vector<std::vector<std::int64_t>>& seen_;
  std::int64_t workers_;
  std::int64_t fail_at_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

struct ShuffleRun {
  std::vector<std::vector<std::int64_t>> seen;
  torch::Tensor weight;
};

ShuffleRun run_shuffle(const std::filesystem::path& dir, std::int64_t workers, std::int64_t batches,
                       std::optional<std::filesystem::path> resume = std::nullopt) {
  ShuffleRun r;
  auto opts = test::init_options("shuffle", 4, 0.01);
  opts.run_dir = dir;
  auto ctx = dtl::init(opts);
  ShuffleTrial trial(ctx, r.seen, workers);
  dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{batches}, .latest_checkpoint = resume});
  r.weight = trial.weight();
  return r;
}

}  // namespace

TEST_CASE("resume continues the shuffled data exactly, from the checkpoint's sampler state") {
  for (std::int64_t workers : {0, 2}) {
    CAPTURE(workers);
    const auto base = test::temp_run_dir("resume-data");
    const auto straight = run_shuffle(base / "straight", workers, 15);
    const auto first = run_shuffle(base / "first", workers, 7);
    const auto ckpt = test::latest_checkpoint(base / "first");
    // The checkpoint holds the data position: 7 batches, in the 2nd epoch (6 batches per epoch).
    nlohmann::json st;
    std::ifstream(ckpt / "trial_state.json") >> st;
    REQUIRE(st.at("data_position").is_object());
    CHECK(st["data_position"]["sampler"]["position"] == 7);
    CHECK(st["data_position"]["sampler"]["epoch"] == 1);

    const auto second = run_shuffle(base / "second", workers, 15, ckpt);
    auto seen = first.seen;
    seen.insert(seen.end(), second.seen.begin(), second.seen.end());
    CHECK(seen == straight.seen);
    CHECK(torch::equal(second.weight, straight.weight));

    // Without the saved position (an older checkpoint) the data is skipped to the same place.
    st.erase("data_position");
    std::ofstream(ckpt / "trial_state.json") << st.dump();
    const auto skipped = run_shuffle(base / "skipped", workers, 15, ckpt);
    CHECK(skipped.seen == second.seen);
    CHECK(torch::equal(skipped.weight, straight.weight));
    std::filesystem::remove_all(base);
  }
}

namespace {

// A loader dtl cannot adapt: a plain vector of batches, allowed by the opt-out.
class RawLoaderTrial : public dtl::PyTorchTrial<RawLoaderTrial> {
 public:
  static constexpr bool disable_dataset_reproducibility_checks = true;
  RawLoaderTrial(dtl::PyTorchTrialContext& ctx, std::vector<std::int64_t>& seen) : ctx_(ctx), seen_(seen) {
    model_ = ctx.wrap_model(torch::nn::Linear(1, 1));
    opt_ = ctx.wrap_optimizer(torch::optim::SGD(model_->parameters(), 0.01));
  }
  std::vector<Batch> build_training_data_loader() {
    std::vector<Batch> v;
    for (std::int64_t i = 0; i < 3; ++i) v.emplace_back(torch::full({2, 1}, float(i)), torch::full({2}, i));
    return v;
  }
  std::vector<Batch> build_validation_data_loader() { return build_training_data_loader(); }
  torch::Tensor train_batch(Batch& b, std::int64_t, std::int64_t) {
    seen_.push_back(std::get<1>(b)[0].item<std::int64_t>());
    auto loss = model_(std::get<0>(b)).pow(2).mean();
    ctx_.backward(loss);
    ctx_.step_optimizer(opt_);
    return loss;
  }
  dtl::Metrics evaluate_batch(Batch& b, std::int64_t) { return {{"validation_loss", model_(std::get<0>(b)).mean()}}; }

 private:
  dtl::PyTorchTrialContext& ctx_;
  std::vector<std::int64_t>& seen_;
  torch::nn::Linear model_{nullptr};
  std::shared_ptr<torch::optim::SGD> opt_;
};

}  // namespace

TEST_CASE("with the reproducibility checks disabled, any range of batches trains, repeated as it is") {
  std::vector<std::int64_t> seen;
  auto ctx = dtl::init(test::init_options("raw-loader"));
  RawLoaderTrial trial(ctx, seen);
  test::Record rec;
  dtl::Trainer trainer(trial, ctx);
  // Validation after every epoch: the same validation range is iterated twice and must still hold
  // its batches (the Trainer must not move out of a loader it does not own the batches of).
  trainer.fit({.max_length = dtl::Epoch{2}, .validation_period = dtl::Epoch{1}, .quiet = true});
  CHECK(seen == std::vector<std::int64_t>{0, 1, 2, 0, 1, 2});
  CHECK(trainer.state().epochs_trained == 2);
  std::ifstream in(ctx.run_dir() / "metrics.jsonl");
  std::vector<double> val;
  for (std::string line; std::getline(in, line);) {
    const auto r = nlohmann::json::parse(line);
    if (r["type"] == "validation") val.push_back(r["metrics"]["validation_loss"].get<double>());
  }
  REQUIRE(val.size() == 2);
  CHECK(std::isfinite(val[1]));
  std::filesystem::remove_all(ctx.run_dir());
}

TEST_CASE("a worker's failure stops fit with the failing index, after the workers are joined") {
  std::vector<std::vector<std::int64_t>> seen;
  auto opts = test::init_options("worker-failure", 4, 0.01);
  auto ctx = dtl::init(opts);
  // The first epoch's order (the trial seed's shuffle); the failing example is the 4th batch's first.
  dtl::DataLoader order(CountingDataset{.n = 22}, {.batch_size = 4, .shuffle = true});
  auto stream = order.adapt_training({.seed = ctx.get_trial_seed()});
  const auto first_epoch = take(stream, 5);
  const std::int64_t bad = first_epoch[3][0];
  ShuffleTrial trial(ctx, seen, /*workers=*/2, /*fail_at=*/bad);
  const std::string expected = "dataset.get(" + std::to_string(bad) + ") failed: record " + std::to_string(bad);
  CHECK_THROWS_WITH_AS(dtl::Trainer(trial, ctx).fit({.max_length = dtl::Batch{30}, .quiet = true}),
                       doctest::Contains(expected.c_str()), dtl::DataError);
  // Training stopped exactly at that batch (the workers had loaded past it): the three batches
  // before it were trained, none after.
  CHECK(seen == std::vector<std::vector<std::int64_t>>(first_epoch.begin(), first_epoch.begin() + 3));
  std::filesystem::remove_all(opts.run_dir.value());
}

#include "../support/external.hpp"

TEST_CASE("each pass of a DataLoader draws torch's base seed from the global generator, as torch's iterator does") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  // Python: a torch DataLoader's iterator draws one int64 as it starts; what dropout draws next
  // follows that. Two passes, a draw after each: the same numbers from dtl's loader.
  const std::string script =
      "import torch\n"
      "from torch.utils.data import DataLoader, TensorDataset\n"
      "torch.manual_seed(5)\n"
      "loader = DataLoader(TensorDataset(torch.arange(6.0)), batch_size=4)\n"
      "for _ in range(2):\n"
      "    for b in loader: pass\n"
      "    print(torch.rand(1).item().hex())\n";
  const auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " -c " +
                                           test_support::shell_quote(script));
  REQUIRE(r.status == 0);
  torch::manual_seed(5);
  dtl::DataLoader loader(dtl::TensorDataset(torch::arange(6.0)), {.batch_size = 4});
  std::string got;
  for (int pass = 0; pass < 2; ++pass) {
    auto s = loader.stream();
    for (auto it = s.begin(); it != s.end(); ++it) (void)*it;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a\n", static_cast<double>(torch::rand({1}).item<float>()));
    got += buf;
  }
  // Python prints float.hex of the float32 value as a double; C's %a spells the same double.
  auto respell = [](const std::string& text) {
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%a\n", std::strtod(line.c_str(), nullptr));
      out += buf;
    }
    return out;
  };
  CHECK(respell(r.output) == respell(got));
}
