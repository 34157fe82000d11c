// Tests for include/dtl/samplers/pipeline.hpp: Determined's worked sampler examples (semantics
// report, section 4), the order of shuffles, sharding coverage, and resume (restore == skip == replay).
#include <dtl/samplers/concepts.hpp>
#include <dtl/samplers/pipeline.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <ranges>
#include <span>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace dtl::samplers;  // NOLINT(google-build-using-namespace): tests read like the docs
using indices = std::vector<std::int64_t>;
using batches = std::vector<indices>;

indices as_indices(std::int64_t i) { return {i}; }
indices as_indices(std::span<const std::int64_t> b) { return {b.begin(), b.end()}; }

// Up to `limit` items from a new pass (begin()), each as a vector.
template <class P>
batches take(P& p, std::size_t limit = 1000) {
  batches out;
  if (limit == 0) return out;
  for (auto item : p) {
    out.push_back(as_indices(item));
    if (out.size() == limit) break;
  }
  return out;
}

template <class P>
indices take_indices(P& p, std::size_t limit = 1000) {
  indices out;
  for (const auto& one : take(p, limit)) out.push_back(one.at(0));
  return out;
}

indices iota(std::int64_t from, std::int64_t to) {
  indices out(static_cast<std::size_t>(to - from));
  std::iota(out.begin(), out.end(), from);
  return out;
}

// ---- compile-time properties ---------------------------------------------------------------

using index_pipeline = decltype(sequential(10) | shuffle(1) | shard(0, 2));
using batch_pipeline = decltype(sequential(10) | shuffle(1) | batch(2) | shard(0, 2));
using training_pipeline = decltype(sequential(10) | shuffle(1) | batch(2) | repeat() | shard(0, 2) | skip(3));
using manual_pipeline = decltype(sequential(10) | shuffle(1) | repeat() | shard(0, 2) | batch(2) | skip(3));
using user_pipeline = decltype(from(std::vector<int>{3, 1, 2}) | batch(2));

static_assert(std::ranges::input_range<index_pipeline>);
static_assert(std::ranges::input_range<batch_pipeline>);
static_assert(std::ranges::input_range<training_pipeline>);
static_assert(std::ranges::input_range<manual_pipeline>);
static_assert(std::ranges::input_range<user_pipeline>);
static_assert(std::input_iterator<std::ranges::iterator_t<training_pipeline>>);
static_assert(std::same_as<std::ranges::range_value_t<index_pipeline>, std::int64_t>);
static_assert(std::same_as<std::ranges::range_value_t<batch_pipeline>, std::span<const std::int64_t>>);
static_assert(IndexSampler<index_pipeline> && !BatchSampler<index_pipeline>);
static_assert(BatchSampler<batch_pipeline> && BatchSampler<training_pipeline> && BatchSampler<manual_pipeline>);
// Only a pipeline whose pass yields exactly size() items claims std::ranges::size.
static_assert(std::ranges::sized_range<batch_pipeline>);
static_assert(!std::ranges::sized_range<training_pipeline>);
static_assert(!std::ranges::sized_range<decltype(sequential(10) | skip(2))>);
static_assert(training_pipeline::is_endless && !batch_pipeline::is_endless);
static_assert(training_pipeline::shuffle_count == 1);
static_assert(decltype(sequential(4) | shuffle(1) | batch(2) | shuffle(2))::shuffle_count == 2);
// Each stage adds its own trait to those of the stages below it, and only its own.
static_assert(user_pipeline::node_type::traits == dtl::detail::stage_traits{.batched = true, .has_batch = true});
static_assert(index_pipeline::node_type::traits == dtl::detail::stage_traits{.has_shard = true, .shuffle_count = 1});
constexpr dtl::detail::stage_traits every_stage{
    .batched = true, .has_repeat = true, .has_shard = true, .has_batch = true, .has_skip = true, .shuffle_count = 1};
static_assert(manual_pipeline::node_type::traits == every_stage);
static_assert(manual_pipeline::node_type::has_repeat && manual_pipeline::node_type::has_skip);
// shuffle(seed, false) keeps the type, so a loader decides at run time.
static_assert(std::same_as<decltype(sequential(4) | shuffle(1)), decltype(sequential(4) | shuffle(1, false))>);

}  // namespace

// ---- Determined's worked examples -----------------------------------------------------------

TEST_CASE("pipeline: DistributedSampler(range(19), 4, r)") {
  const std::vector<indices> expected = {{0, 4, 8, 12, 16}, {1, 5, 9, 13, 17}, {2, 6, 10, 14, 18}, {3, 7, 11, 15}};
  for (std::int64_t r = 0; r < 4; ++r) {
    auto p = sequential(19) | shard(r, 4);
    CHECK(take_indices(p) == expected[static_cast<std::size_t>(r)]);
    CHECK(p.size() == static_cast<std::int64_t>(expected[static_cast<std::size_t>(r)].size()));
    CHECK(std::ranges::size(p) == expected[static_cast<std::size_t>(r)].size());
  }
}

TEST_CASE("pipeline: DistributedSampler(range(10), 3, r)") {
  auto r0 = sequential(10) | shard(0, 3);
  auto r1 = sequential(10) | shard(1, 3);
  auto r2 = sequential(10) | shard(2, 3);
  CHECK(take_indices(r0) == indices{0, 3, 6, 9});
  CHECK(r0.size() == 4);
  CHECK(take_indices(r1) == indices{1, 4, 7});
  CHECK(r1.size() == 3);
  CHECK(take_indices(r2) == indices{2, 5, 8});
  CHECK(r2.size() == 3);
  CHECK(r2.epoch_length() == 4);  // the chief's count
}

TEST_CASE("pipeline: DistributedBatchSampler(BatchSampler(range(19), 2), 4, r)") {
  const std::vector<batches> expected = {
      {{0, 1}, {8, 9}, {16, 17}}, {{2, 3}, {10, 11}, {18}}, {{4, 5}, {12, 13}}, {{6, 7}, {14, 15}}};
  for (std::int64_t r = 0; r < 4; ++r) {
    auto p = sequential(19) | batch(2) | shard(r, 4);
    CHECK(take(p) == expected[static_cast<std::size_t>(r)]);
    CHECK(p.size() == static_cast<std::int64_t>(expected[static_cast<std::size_t>(r)].size()));
  }
}

TEST_CASE("pipeline: DistributedBatchSampler(BatchSampler(range(10), 2), 3, r)") {
  auto r0 = sequential(10) | batch(2) | shard(0, 3);
  auto r1 = sequential(10) | batch(2) | shard(1, 3);
  auto r2 = sequential(10) | batch(2) | shard(2, 3);
  CHECK(take(r0) == batches{{0, 1}, {6, 7}});
  CHECK(take(r1) == batches{{2, 3}, {8, 9}});
  CHECK(take(r2) == batches{{4, 5}});
  CHECK(r2.size() == 1);
}

TEST_CASE("pipeline: training chain, range(10), bs 2, 3 ranks, and its epoch length") {
  const std::vector<batches> expected = {
      {{0, 1}, {6, 7}, {2, 3}, {8, 9}, {4, 5}, {0, 1}},
      {{2, 3}, {8, 9}, {4, 5}, {0, 1}, {6, 7}, {2, 3}},
      {{4, 5}, {0, 1}, {6, 7}, {2, 3}, {8, 9}, {4, 5}},
  };
  for (std::int64_t r = 0; r < 3; ++r) {
    auto p = sequential(10) | batch(2) | repeat() | shard(r, 3);
    CHECK(take(p, 6) == expected[static_cast<std::size_t>(r)]);
    CHECK(p.epoch_length() == 2);  // len(bs) // R + (len(bs) % R > 0) = 5 // 3 + 1
  }
  CHECK((sequential(10) | batch(2) | repeat() | shard(2, 3)).size() == 1);  // rank 2's own len
}

TEST_CASE("pipeline: training chain with skip 2") {
  auto p = sequential(10) | batch(2) | repeat() | shard(0, 3) | skip(2);
  CHECK(take(p, 4) == batches{{2, 3}, {8, 9}, {4, 5}, {0, 1}});
  CHECK(p.size() == 2);  // len ignores the skip
  CHECK(p.epoch_length() == 2);
}

TEST_CASE("pipeline: range(7), bs 3, repeat, skip 2") {
  auto p = sequential(7) | batch(3) | repeat() | skip(2);
  CHECK(take(p, 5) == batches{{6}, {0, 1, 2}, {3, 4, 5}, {6}, {0, 1, 2}});
}

TEST_CASE("pipeline: SkipBatchSampler(BatchSampler(range(15), 2), 2)") {
  auto p = sequential(15) | batch(2) | skip(2);
  CHECK(p.size() == 8);
  const auto got = take(p);
  CHECK(got.front() == indices{4, 5});
  CHECK(got.size() == 6);
  CHECK(got.back() == indices{14});
}

TEST_CASE("pipeline: SkipSampler(range(15), 2)") {
  auto p = sequential(15) | skip(2);
  CHECK(p.size() == 15);
  CHECK(take_indices(p) == iota(2, 15));
  auto past_the_end = sequential(15) | skip(20);
  CHECK(take_indices(past_the_end).empty());
}

TEST_CASE("pipeline: RepeatBatchSampler(BatchSampler(range(10), 3))") {
  auto p = sequential(10) | batch(3) | repeat();
  CHECK(p.size() == 4);
  const batches one = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  batches three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), one.begin(), one.end());
  CHECK(take(p, 12) == three);
}

TEST_CASE("pipeline: ReproducibleShuffleSampler(range(5), 777), epoch by epoch and repeated") {
  auto p = sequential(5) | shuffle(777);
  CHECK(take_indices(p) == indices{0, 4, 1, 2, 3});
  CHECK(take_indices(p) == indices{2, 0, 1, 3, 4});
  CHECK(take_indices(p) == indices{3, 1, 4, 0, 2});
  auto endless = sequential(5) | shuffle(777) | repeat();
  CHECK(take_indices(endless, 15) == indices{0, 4, 1, 2, 3, 2, 0, 1, 3, 4, 3, 1, 4, 0, 2});
}

TEST_CASE("pipeline: ReproducibleShuffleBatchSampler(BatchSampler(range(10), 2), 777)") {
  auto p = sequential(10) | batch(2) | shuffle(777);
  CHECK(take(p) == batches{{0, 1}, {8, 9}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(take(p) == batches{{4, 5}, {0, 1}, {2, 3}, {6, 7}, {8, 9}});
}

TEST_CASE("pipeline: shuffles of seed 17 and 42, and shuffle(seed, false)") {
  auto p17 = sequential(10) | shuffle(17);
  CHECK(take_indices(p17) == indices{7, 2, 5, 3, 4, 0, 9, 8, 6, 1});
  CHECK(take_indices(p17) == indices{4, 5, 3, 2, 0, 9, 8, 6, 1, 7});
  auto p42 = sequential(8) | shuffle(42) | repeat();
  CHECK(take_indices(p42, 16) == indices{1, 5, 0, 7, 2, 4, 3, 6, 3, 7, 0, 4, 5, 2, 1, 6});
  auto off = sequential(8) | shuffle(42, false) | repeat();
  CHECK(take_indices(off, 10) == indices{0, 1, 2, 3, 4, 5, 6, 7, 0, 1});
}

TEST_CASE("pipeline: shuffles above 2^16 items match numpy, are permutations and repeat exactly") {
  auto p = sequential(100003) | shuffle(12345);
  auto first = take_indices(p, 200000);
  CHECK(indices(first.begin(), first.begin() + 8) == indices{71753, 80495, 2655, 22756, 67368, 9539, 8482, 65072});
  auto sorted = first;
  std::ranges::sort(sorted);
  CHECK(sorted == iota(0, 100003));
  auto second = take_indices(p, 200000);
  CHECK(second != first);
  auto again = sequential(100003) | shuffle(12345);
  CHECK(take_indices(again, 200000) == first);
  CHECK(take_indices(again, 200000) == second);
}

TEST_CASE("pipeline: batch drop_last and shuffled batches keep their contents") {
  auto dropped = sequential(7) | batch(3, true);
  CHECK(dropped.size() == 2);
  CHECK(take(dropped) == batches{{0, 1, 2}, {3, 4, 5}});
  auto p = sequential(9) | batch(2) | shuffle(5);
  auto got = take(p);
  std::ranges::sort(got);
  CHECK(got == batches{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8}});
}

TEST_CASE("pipeline: a batch far larger than the data is its one short batch, and allocates no more") {
  // 10^14 indices would be 800 TB: it used to end in std::bad_alloc (a global_batch_size typo).
  constexpr std::int64_t huge = 100'000'000'000'000;
  auto p = sequential(5) | shuffle(3) | batch(huge);
  CHECK(p.size() == 1);
  auto got = take(p);
  REQUIRE(got.size() == 1);
  std::ranges::sort(got[0]);
  CHECK(got[0] == indices{0, 1, 2, 3, 4});
  auto dropped = sequential(5) | batch(huge, true);
  CHECK(dropped.size() == 0);
  CHECK(take(dropped).empty());
  // Above a repeat() a batch spans epochs and takes all its indices: a size that cannot be held is
  // a DataError naming it.
  auto spanning = sequential(3) | repeat() | batch(7);
  CHECK(take(spanning, 1) == batches{{0, 1, 2, 0, 1, 2, 0}});
  CHECK_THROWS_AS(static_cast<void>(sequential(3) | repeat() | batch(std::numeric_limits<std::int64_t>::max())),
                  dtl::DataError);
}

TEST_CASE("pipeline: a user's index range as the source") {
  std::vector<int> picked{4, 8, 15, 16, 23, 42};
  auto p = from(picked) | batch(4);
  CHECK(take(p) == batches{{4, 8, 15, 16}, {23, 42}});
  auto piped = picked | shard(1, 2);
  CHECK(take_indices(piped) == indices{8, 16, 42});
  auto owned = from(std::vector<std::int64_t>{9, 7, 5}) | repeat() | skip(2);
  CHECK(take_indices(owned, 4) == indices{5, 9, 7, 5});
  // A restored pipeline continues from its saved iterator, which moves and copies must carry over
  // into their own range.
  auto resumable = from(std::vector<std::int64_t>{9, 7, 5, 3}) | skip(0);
  resumable.restore(sampler_state{0, 2, 2, {}});
  auto moved = std::move(resumable);
  CHECK(take_indices(moved) == indices{5, 3});
  auto viewed = from(picked) | skip(0);
  viewed.restore(sampler_state{0, 4, 4, {}});
  auto copied = viewed;
  CHECK(take_indices(copied) == indices{23, 42});
  CHECK(take_indices(viewed) == indices{23, 42});
}

TEST_CASE("pipeline: sharding over 1, 3 and 9 ranks covers every index once per epoch") {
  for (std::int64_t world : {1, 3, 9}) {
    CAPTURE(world);
    indices validation;
    indices shuffled;
    for (std::int64_t r = 0; r < world; ++r) {
      auto v = sequential(47) | batch(2) | shard(r, world);
      for (const auto& b : take(v)) validation.insert(validation.end(), b.begin(), b.end());
      auto s = sequential(47) | shuffle(3) | shard(r, world) | batch(4);
      for (const auto& b : take(s)) shuffled.insert(shuffled.end(), b.begin(), b.end());
    }
    std::ranges::sort(validation);
    std::ranges::sort(shuffled);
    CHECK(validation == iota(0, 47));
    CHECK(shuffled == iota(0, 47));

    // Training: global batch g goes to rank g % world; the first len(bs) = 24 global batches are
    // one epoch and hold every index once.
    indices training;
    for (std::int64_t r = 0; r < world; ++r) {
      auto t = sequential(47) | shuffle(9) | batch(2) | repeat() | shard(r, world);
      const auto mine = take(t, 30);
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const auto global = static_cast<std::int64_t>(i) * world + r;
        if (global < 24) training.insert(training.end(), mine[i].begin(), mine[i].end());
      }
    }
    std::ranges::sort(training);
    CHECK(training == iota(0, 47));
  }
}

TEST_CASE("pipeline: repeat() is endless and std::views::take is not cut short by size()") {
  auto p = sequential(4) | batch(3) | repeat();
  std::size_t count = 0;
  for (auto b : p | std::views::take(10)) count += b.empty() ? 0U : 1U;
  CHECK(count == 10);
}

TEST_CASE("pipeline: misuse at run time throws dtl::DataError") {
  CHECK_THROWS_AS(shard(3, 3), dtl::DataError);
  CHECK_THROWS_AS(shard(-1, 3), dtl::DataError);
  CHECK_THROWS_AS(shard(0, 0), dtl::DataError);
  CHECK_THROWS_AS(batch(0), dtl::DataError);
  CHECK_THROWS_AS(skip(-1), dtl::DataError);
  CHECK_THROWS_AS(shuffle(-1), dtl::DataError);
  CHECK_THROWS_AS(shuffle(std::int64_t{1} << 32), dtl::DataError);
  CHECK_THROWS_AS(sequential(-1), dtl::DataError);
  // Determined's RepeatSampler spins forever here; dtl refuses when iteration starts.
  auto empty = sequential(0) | repeat();
  CHECK_THROWS_AS((void)empty.begin(), dtl::DataError);
  auto all_dropped = sequential(3) | batch(4, true) | repeat() | shard(0, 2);
  CHECK_THROWS_AS((void)all_dropped.begin(), dtl::DataError);
}

TEST_CASE("pipeline: size() and epoch_length()") {
  CHECK((sequential(10) | batch(3)).size() == 4);
  CHECK((sequential(10) | batch(3, true)).size() == 3);
  CHECK((sequential(10) | shuffle(1) | batch(3) | repeat() | shard(1, 3) | skip(100)).size() == 1);
  CHECK((sequential(10) | shuffle(1) | batch(3) | repeat() | shard(1, 3) | skip(100)).epoch_length() == 2);
  // The manual chain counts records per rank first, then batches: ceil(ceil(10 / 3) / 2) = 2.
  CHECK((sequential(10) | shuffle(1) | repeat() | shard(2, 3) | batch(2) | skip(1)).epoch_length() == 2);
  CHECK((sequential(10) | shuffle(1) | repeat() | shard(2, 3) | batch(2)).size() == 2);
  CHECK((sequential(0) | batch(2)).size() == 0);
}

// ---- resume ---------------------------------------------------------------------------------

namespace {

struct resume_case {
  std::int64_t n;
  std::int64_t batch_size;
  std::int64_t rank;
  std::int64_t world;
  bool shuffled;
  bool drop_last;
};

// Determined's DataLoader chain (batch before repeat) and the documented manual chain.
auto loader_chain(const resume_case& c, std::int64_t k) {
  return sequential(c.n) | shuffle(11, c.shuffled) | batch(c.batch_size, c.drop_last) | repeat() |
         shard(c.rank, c.world) | skip(k);
}
auto manual_chain(const resume_case& c, std::int64_t k) {
  return sequential(c.n) | shuffle(12, c.shuffled) | repeat() | shard(c.rank, c.world) | batch(c.batch_size) | skip(k);
}
auto two_shuffle_chain(const resume_case& c, std::int64_t k) {
  return sequential(c.n) | shuffle(13, c.shuffled) | batch(c.batch_size) | shuffle(14) | repeat() |
         shard(c.rank, c.world) | skip(k);
}
// No repeat: a validation-style pass, resumed inside the pass.
auto single_pass_chain(const resume_case& c, std::int64_t k) {
  return sequential(c.n) | shuffle(15, c.shuffled) | shard(c.rank, c.world) | batch(c.batch_size) | skip(k);
}

// Reads k items of a new pass, saves the state, then reads `more`.
template <class P>
std::pair<sampler_state, batches> replay(P& p, std::int64_t k, std::size_t more) {
  if (k == 0) return {p.state(), take(p, more)};
  auto it = p.begin();
  for (std::int64_t i = 1; i < k; ++i) ++it;
  sampler_state saved = p.state();
  batches rest;
  for (++it; it != std::default_sentinel && rest.size() < more; ++it) rest.push_back(as_indices(*it));
  return {saved, rest};
}

template <class MakeChain>
void check_resume(MakeChain make, const resume_case& c, std::int64_t max_k, int trials, std::uint32_t seed) {
  std::mt19937 pick(seed);
  std::vector<std::int64_t> ks = {0, 1, max_k};
  for (int t = 0; t < trials; ++t) ks.push_back(std::uniform_int_distribution<std::int64_t>(0, max_k)(pick));
  constexpr std::size_t more = 12;
  for (std::int64_t k : ks) {
    CAPTURE(k);
    auto replayed = make(c, 0);
    const auto [saved, expected] = replay(replayed, k, more);
    CHECK(saved.position == k);

    auto skipped = make(c, k);
    const auto from_skip = take(skipped, more);
    CHECK(from_skip == expected);

    auto restored = make(c, 7);  // a different skip(): restore() overrides it
    restored.restore(saved);
    CHECK(restored.state() == saved);
    CHECK(take(restored, more) == expected);

    // After one more item, skipping and replaying leave identical states.
    if (!expected.empty()) {
      auto a = make(c, 0);
      const auto [state_a, rest_a] = replay(a, k + 1, 0);
      auto b = make(c, k);
      (void)b.begin();
      CHECK(b.state() == state_a);
    }
  }
}

}  // namespace

TEST_CASE("pipeline: restore(state) == skip(k) == replay, Determined's loader chain") {
  const std::vector<resume_case> cases = {
      {10, 2, 0, 3, true, false}, {10, 2, 2, 3, true, false}, {10, 3, 1, 2, false, false},
      {23, 4, 3, 4, true, true},  {7, 3, 0, 1, true, false},  {50, 7, 5, 9, true, false},
      {1, 1, 0, 1, true, false},  {5, 8, 1, 3, true, false},
  };
  std::uint32_t seed = 100;
  for (const auto& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.batch_size);
    CAPTURE(c.rank);
    CAPTURE(c.world);
    CAPTURE(c.shuffled);
    check_resume([](const resume_case& rc, std::int64_t k) { return loader_chain(rc, k); }, c, 60, 25, ++seed);
  }
}

TEST_CASE("pipeline: restore(state) == skip(k) == replay, manual and two-shuffle chains") {
  const std::vector<resume_case> cases = {
      {10, 2, 0, 3, true, false}, {10, 2, 2, 3, false, false}, {23, 4, 3, 4, true, false},
      {9, 5, 1, 2, true, false},  {13, 1, 6, 7, true, false},
  };
  std::uint32_t seed = 200;
  for (const auto& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.batch_size);
    CAPTURE(c.rank);
    CAPTURE(c.world);
    check_resume([](const resume_case& rc, std::int64_t k) { return manual_chain(rc, k); }, c, 50, 20, ++seed);
    check_resume([](const resume_case& rc, std::int64_t k) { return two_shuffle_chain(rc, k); }, c, 50, 20, ++seed);
  }
}

TEST_CASE("pipeline: restore(state) == skip(k) == replay within a single pass") {
  const std::vector<resume_case> cases = {{47, 2, 1, 3, true, false}, {20, 3, 0, 1, false, false}};
  std::uint32_t seed = 300;
  for (const auto& c : cases) {
    auto probe = single_pass_chain(c, 0);
    check_resume([](const resume_case& rc, std::int64_t k) { return single_pass_chain(rc, k); }, c, probe.size(), 10,
                 ++seed);
  }
}

TEST_CASE("pipeline: state() counts epochs and offsets in the epoch stage's unit") {
  // 10 records in batches of 2: 5 batches per epoch; rank 0 of 3 reads global batches 0, 3, 6, ...
  auto p = sequential(10) | shuffle(4) | batch(2) | repeat() | shard(0, 3);
  auto it = p.begin();
  for (int i = 1; i < 4; ++i) ++it;  // 4th item = global batch 9: epoch 1, its 5th batch
  const auto st = p.state();
  CHECK(st.position == 4);
  CHECK(st.epoch == 1);
  CHECK(st.offset == 5);
  CHECK(st.rngs.size() == 1);
  // The generator saved is the one at the start of epoch 1: the seed's, advanced by one shuffle.
  numpy_random_state rng(4);
  rng.discard_shuffle(10);
  CHECK(st.rngs[0] == rng.state());
}

TEST_CASE("pipeline: restore() refuses a state from a different pipeline") {
  auto p = sequential(10) | shuffle(4) | batch(2) | repeat() | shard(0, 3);
  auto it = p.begin();
  ++it;
  const auto st = p.state();
  auto no_shuffle = sequential(10) | batch(2) | repeat() | shard(0, 3);
  CHECK_THROWS_AS(no_shuffle.restore(st), dtl::DataError);
  auto other_world = sequential(10) | shuffle(4) | batch(2) | repeat() | shard(0, 2);
  CHECK_THROWS_AS(other_world.restore(st), dtl::DataError);
  auto st_bad = st;
  st_bad.offset = 6;
  CHECK_THROWS_AS(p.restore(st_bad), dtl::DataError);
  auto single = sequential(10) | shuffle(4);
  sampler_state past_end{0, 11, 11, st.rngs};
  CHECK_THROWS_AS(single.restore(past_end), dtl::DataError);
}

TEST_CASE("pipeline: a restored single-pass pipeline continues with the next epoch afterwards") {
  auto p = sequential(6) | shuffle(21);
  const auto e0 = take_indices(p);
  auto it = p.begin();  // epoch 1
  ++it;
  const auto st = p.state();
  const auto e1 = [&] {
    indices rest;
    for (++it; it != std::default_sentinel; ++it) rest.push_back(*it);
    return rest;
  }();
  const auto e2 = take_indices(p);
  auto q = sequential(6) | shuffle(21);
  q.restore(st);
  CHECK(st.epoch == 1);
  CHECK(take_indices(q) == e1);
  CHECK(take_indices(q) == e2);
  CHECK(e0 != e2);
}
