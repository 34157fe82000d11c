// Tests for include/dtl/samplers/numpy_random.hpp. Expected values come from Determined's semantics
// report (section 4) and from numpy 1.24's legacy RandomState on this machine.
#include <dtl/samplers/numpy_random.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
struct numpy_random_test_access {
  // The draws random_interval(i) would make for i = top .. bottom, through the shuffle's loop.
  static std::vector<std::uint64_t> descending(samplers::numpy_random_state& rng, std::uint64_t top,
                                               std::uint64_t bottom) {
    std::vector<std::uint64_t> draws;
    auto record = [&draws](std::uint64_t /*i*/, std::uint64_t j) { draws.push_back(j); };
    rng.draw_descending(top, bottom, record);
    return draws;
  }
};
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace {

using dtl::samplers::mt19937_state;
using dtl::samplers::numpy_random_state;

std::vector<std::int64_t> shuffled_range(numpy_random_state& rng, std::int64_t n) {
  std::vector<std::int64_t> x(static_cast<std::size_t>(n));
  std::iota(x.begin(), x.end(), 0);
  rng.shuffle(std::span(x));
  return x;
}

using epochs = std::vector<std::vector<std::int64_t>>;
using indices_t = std::vector<std::int64_t>;

epochs shuffle_epochs(std::int64_t seed, std::int64_t n, int count) {
  numpy_random_state rng(seed);
  epochs out;
  // Determined shuffles list(sampler), i.e. a fresh 0..n-1 each epoch, with the same generator.
  for (int e = 0; e < count; ++e) out.push_back(shuffled_range(rng, n));
  return out;
}

// sum(i * x[i]), as computed in Python for the numpy reference shuffles (there reduced mod 2^61 - 1,
// which these sizes never reach: the sum stays below n^3 < 2^61).
std::uint64_t weighted_checksum(const std::vector<std::int64_t>& x) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += i * static_cast<std::uint64_t>(x[i]);
  return sum;
}

}  // namespace

// samplers/ took one naming style: the old name stays, deprecated, for one release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<dtl::samplers::NumpyRandomState, dtl::samplers::numpy_random_state>);
#pragma GCC diagnostic pop

TEST_CASE("numpy_random: integer seeding equals std::mt19937(seed)") {
  for (std::uint32_t seed : {0U, 1U, 42U, 777U, 5489U, 0xffffffffU}) {
    std::mt19937 reference(seed);
    numpy_random_state rng(seed);
    for (int i = 0; i < 3000; ++i) REQUIRE(rng.next_uint32() == reference());  // crosses 4 regenerations
  }
}

TEST_CASE("numpy_random: seeds outside [0, 2^32) are rejected like numpy") {
  CHECK_THROWS_AS(numpy_random_state(-1), dtl::DataError);
  CHECK_THROWS_AS(numpy_random_state(std::int64_t{1} << 32), dtl::DataError);
  CHECK_NOTHROW(numpy_random_state(0xffffffffLL));
}

TEST_CASE("numpy_random: shuffles from the semantics report") {
  CHECK(shuffle_epochs(0, 10, 1) == epochs{{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}});
  CHECK(shuffle_epochs(777, 5, 3) == epochs{{0, 4, 1, 2, 3}, {2, 0, 1, 3, 4}, {3, 1, 4, 0, 2}});
  CHECK(shuffle_epochs(17, 10, 2) == epochs{{7, 2, 5, 3, 4, 0, 9, 8, 6, 1}, {4, 5, 3, 2, 0, 9, 8, 6, 1, 7}});
  CHECK(shuffle_epochs(42, 8, 2) == epochs{{1, 5, 0, 7, 2, 4, 3, 6}, {3, 7, 0, 4, 5, 2, 1, 6}});
}

TEST_CASE("numpy_random: random_interval matches numpy's masked draws, 32- and 64-bit") {
  // numpy: RandomState(seed).randint(0, max + 1, dtype=np.uint64) uses the same masked rejection.
  struct reference {
    std::int64_t seed;
    std::uint64_t max;
    std::vector<std::uint64_t> draws;
  };
  const std::vector<reference> cases = {
      {0, 1, {0, 1, 1, 0, 1}},
      {0, 6, {4, 5, 0, 3, 3}},
      {5, 1000, {867, 206, 701, 998, 118}},
      {7, 4294967294ULL, {327741615, 976413892, 3349725721, 1369975286, 1882953283}},
      {7, 4294967295ULL, {327741615, 976413892, 3349725721, 1369975286, 1882953283}},
      {9, 4294967296ULL, {1565348188, 2143748597, 32397368, 3767636404, 595339505}},
      {9, 1099511640121ULL, {543309627893ULL, 1079394964374ULL, 536928129601ULL, 98256916916ULL, 253993743656ULL}},
      {11,
       9223372036854775807ULL,
       {3325388913236545215ULL, 359254775711865947ULL, 8544873655684927415ULL, 4149298557807026508ULL,
        7751388342971580999ULL}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.seed);
    CAPTURE(c.max);
    numpy_random_state rng(c.seed);
    std::vector<std::uint64_t> got;
    for (std::size_t i = 0; i < c.draws.size(); ++i) got.push_back(rng.random_interval(c.max));
    CHECK(got == c.draws);
  }
  numpy_random_state rng(3);
  CHECK(rng.random_interval(0) == 0);
  CHECK(rng.state() == numpy_random_state(3).state());  // max 0 draws nothing, as in numpy
}

TEST_CASE("numpy_random: the shuffle loop draws exactly random_interval(i), across the 32/64-bit edge") {
  const std::uint64_t top = (std::uint64_t{1} << 32) + 5;
  const std::uint64_t bottom = (std::uint64_t{1} << 32) - 6;
  numpy_random_state loop_rng(99);
  numpy_random_state direct_rng(99);
  const auto from_loop = dtl::detail::numpy_random_test_access::descending(loop_rng, top, bottom);
  std::vector<std::uint64_t> direct;
  for (std::uint64_t i = top; i >= bottom; --i) direct.push_back(direct_rng.random_interval(i));
  CHECK(from_loop == direct);
  CHECK(loop_rng.state() == direct_rng.state());

  numpy_random_state small_loop(5);
  numpy_random_state small_direct(5);
  const auto small = dtl::detail::numpy_random_test_access::descending(small_loop, 300, 1);
  for (std::uint64_t i = 300, k = 0; i >= 1; --i, ++k) REQUIRE(small[k] == small_direct.random_interval(i));
}

TEST_CASE("numpy_random: shuffles above 2^16 items match numpy and are permutations") {
  struct reference {
    std::int64_t seed;
    std::int64_t n;
    std::vector<std::int64_t> head;
    std::vector<std::int64_t> tail;
    std::uint64_t checksum;
    std::vector<std::int64_t> second_head;
    std::uint32_t pos_after_two;
    std::uint32_t key0_after_two;
  };
  const std::vector<reference> cases = {
      {12345, 100003, {71753, 80495, 2655, 22756, 67368, 9539, 8482, 65072}, {85412, 2177, 77285, 86498},
       249557675429197ULL, {41172, 15346, 27595, 4784, 16550, 705, 16791, 45990}, 99, 1555467360U},
      {2024, 70000, {58020, 27615, 41169, 30184, 44958, 39600, 29273, 12516}, {35456, 51808, 52730, 7816},
       85640552547938ULL, {69892, 36137, 44090, 3277, 732, 26840, 31268, 66069}, 218, 1286972154U},
      {1, 65537, {5024, 11184, 20956, 20648, 1131, 52126, 64508, 37331}, {43723, 50057, 32511, 5192},
       70550166979917ULL, {51910, 62875, 1741, 62362, 63357, 1282, 23647, 61158}, 239, 3643483575U},
  };
  for (const auto& c : cases) {
    CAPTURE(c.seed);
    numpy_random_state rng(c.seed);
    auto x = shuffled_range(rng, c.n);
    CHECK(std::vector<std::int64_t>(x.begin(), x.begin() + 8) == c.head);
    CHECK(std::vector<std::int64_t>(x.end() - 4, x.end()) == c.tail);
    CHECK(weighted_checksum(x) == c.checksum);
    auto sorted = x;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> identity(static_cast<std::size_t>(c.n));
    std::iota(identity.begin(), identity.end(), 0);
    CHECK(sorted == identity);
    // numpy shuffles the already-shuffled array in place for its second call.
    rng.shuffle(std::span(x));
    CHECK(std::vector<std::int64_t>(x.begin(), x.begin() + 8) == c.second_head);
    CHECK(rng.state().pos == c.pos_after_two);
    CHECK(rng.state().key[0] == c.key0_after_two);
    // Deterministic: the same seed gives the same first permutation again.
    numpy_random_state again(c.seed);
    auto y = shuffled_range(again, c.n);
    CHECK(weighted_checksum(y) == c.checksum);
  }
}

TEST_CASE("numpy_random: shuffle equals the textbook loop over random_interval for every size up to 2^11") {
  // Sizes at and around powers of two are where the mask narrows.
  for (std::int64_t n = 0; n <= 2050; n += (n < 300 ? 1 : 7)) {
    CAPTURE(n);
    numpy_random_state fast(static_cast<std::uint32_t>(n) * 7919U);
    numpy_random_state plain(static_cast<std::uint32_t>(n) * 7919U);
    const auto got = shuffled_range(fast, n);
    indices_t expected(static_cast<std::size_t>(n));
    std::iota(expected.begin(), expected.end(), 0);
    for (std::int64_t i = n - 1; i >= 1; --i) {
      const auto j = static_cast<std::int64_t>(plain.random_interval(static_cast<std::uint64_t>(i)));
      std::swap(expected[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(j)]);
    }
    REQUIRE(got == expected);
    REQUIRE(fast.state() == plain.state());
  }
}

TEST_CASE("numpy_random: discard_shuffle leaves the generator where shuffle would") {
  for (std::uint64_t n : {0ULL, 1ULL, 2ULL, 3ULL, 10ULL, 1000ULL, 65537ULL, 100003ULL}) {
    CAPTURE(n);
    numpy_random_state shuffled(31);
    numpy_random_state discarded(31);
    (void)shuffled_range(shuffled, static_cast<std::int64_t>(n));
    discarded.discard_shuffle(n);
    CHECK(shuffled.state() == discarded.state());
  }
}

TEST_CASE("numpy_random: state is plain data and round-trips") {
  numpy_random_state rng(8);
  (void)shuffled_range(rng, 1234);
  const mt19937_state saved = rng.state();
  const auto expected = shuffled_range(rng, 50);
  numpy_random_state restored(saved);
  CHECK(shuffled_range(restored, 50) == expected);
  numpy_random_state other(1);
  other.set_state(saved);
  CHECK(shuffled_range(other, 50) == expected);
  mt19937_state broken = saved;
  broken.pos = 625;
  CHECK_THROWS_AS(other.set_state(broken), dtl::DataError);
  // A fresh generator's state is numpy's: pos 624 and key[0] == seed.
  CHECK(numpy_random_state(12345).state().pos == 624);
  CHECK(numpy_random_state(12345).state().key[0] == 12345U);
}
