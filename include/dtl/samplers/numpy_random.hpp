// dtl — numpy's legacy RandomState (MT19937) as far as Determined's shuffling samplers use it.
//
// Determined's ReproducibleShuffleSampler creates `np.random.RandomState(seed)` once and calls its
// `shuffle` once per epoch. Reproducing that bit for bit is what lets a dtl run and a Determined run
// with the same seed visit the data in the same order, so this header re-implements exactly the
// three pieces involved: integer seeding, `random_interval` and the legacy Fisher-Yates shuffle.
#ifndef DTL_SAMPLERS_NUMPY_RANDOM_HPP
#define DTL_SAMPLERS_NUMPY_RANDOM_HPP

#include <dtl/detail/abi.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include <dtl/errors.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct numpy_random_test_access;  // defined by the tests only

/// numpy rejects seeds outside [0, 2^32) (ValueError), so do we (dtl::DataError), rather than
/// silently truncating a seed that came from a config file.
inline std::uint32_t checked_numpy_seed(std::int64_t seed) {
  if (seed < 0 || seed > std::int64_t{0xffffffff}) {
    throw DataError("dtl: a shuffle seed must be in [0, 2^32 - 1] (numpy's RandomState rule), got " +
                    std::to_string(seed));
  }
  return static_cast<std::uint32_t>(seed);
}

}  // namespace detail

namespace samplers {

/// The whole state of an MT19937 generator as plain data: the same two fields numpy reports as
/// `RandomState.get_state()[1]` (`key`) and `[2]` (`pos`), so a state can be compared with numpy's
/// or written to a checkpoint as 625 integers.
///
///     dtl::samplers::numpy_random_state rng(42);
///     dtl::samplers::mt19937_state saved = rng.state();   // ... later: rng.set_state(saved);
struct mt19937_state {
  std::array<std::uint32_t, 624> key{};  ///< the 624-word twister state
  std::uint32_t pos = 624;               ///< next word of `key` to temper; 624 = regenerate first
  friend bool operator==(const mt19937_state&, const mt19937_state&) = default;
};

/// numpy's legacy `np.random.RandomState(seed)` for an integer seed, reduced to what shuffling
/// needs. Its seeding equals `std::mt19937(seed)`; the state is kept here (not in a std::mt19937)
/// so that it is plain data and so that whole shuffles can be skipped without materialising them.
///
///     dtl::samplers::numpy_random_state rng(0);
///     std::array<int, 10> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
///     rng.shuffle(std::span(x));   // x == {2, 8, 4, 9, 1, 6, 7, 3, 0, 5}, as np.random.seed(0)
class numpy_random_state {
 public:
  static constexpr std::size_t state_words = 624;

  /// Seeds like `np.random.RandomState(seed)`. Throws dtl::DataError for a seed outside
  /// [0, 2^32), which numpy rejects too.
  explicit numpy_random_state(std::int64_t seed) {
    auto word = detail::checked_numpy_seed(seed);
    for (std::size_t i = 0; i < state_words; ++i) {
      key_[i] = word;
      word = 1812433253U * (word ^ (word >> 30)) + static_cast<std::uint32_t>(i + 1);
    }
    pos_ = state_words;
  }

  /// Continues from a state saved with state().
  explicit numpy_random_state(const mt19937_state& saved) { set_state(saved); }

  /// The generator as plain data, e.g. for a checkpoint.
  [[nodiscard]] mt19937_state state() const noexcept { return {key_, pos_}; }

  /// Continues from `saved`. Throws dtl::DataError for `pos > 624`, which no generator can be in (numpy would read past
  /// its key array).
  void set_state(const mt19937_state& saved) {
    if (saved.pos > state_words) {
      throw DataError("dtl: an MT19937 state's pos must be at most 624, got " + std::to_string(saved.pos));
    }
    key_ = saved.key;
    pos_ = saved.pos;
  }

  /// One 32-bit MT19937 output (numpy's `next_uint32`).
  std::uint32_t next_uint32() noexcept {
    if (pos_ >= state_words) regenerate();
    return temper(key_[pos_++]);
  }

  /// numpy's `next_uint64` for MT19937: the first 32-bit draw is the high word. (numpy writes it as
  /// `next() << 32 | next()`; checked against numpy 1.24's `randint(0, 2**40)` in the tests.)
  std::uint64_t next_uint64() noexcept {
    const std::uint64_t high = next_uint32();
    return (high << 32) | next_uint32();
  }

  /// A uniform integer in [0, max], numpy's `random_interval`: draws masked to the smallest all-ones
  /// mask >= max and rejects values above max; 32-bit draws while max fits in 32 bits, 64-bit above.
  std::uint64_t random_interval(std::uint64_t max) noexcept {
    if (max == 0) return 0;
    const std::uint64_t mask = smallest_mask(max);
    std::uint64_t value = 0;
    if (max <= 0xffffffffULL) {
      do value = next_uint32() & mask;
      while (value > max);
    } else {
      do value = next_uint64() & mask;
      while (value > max);
    }
    return value;
  }

  /// numpy's legacy `RandomState.shuffle` of a 1-d sequence:
  /// `for i = n-1 .. 1: j = random_interval(i); swap(x[i], x[j])`.
  template <class T>
  void shuffle(std::span<T> x) {
    draw_shuffle(x.size(), [x](std::uint64_t i, std::uint64_t j) {
      using std::swap;
      swap(x[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(j)]);  // j == i after a rejection
    });
  }

  /// Leaves the generator exactly where shuffle() of n items would, without the items.
  /// Cost: the same MT19937 draws as the shuffle (n-1 `random_interval` calls, on average under
  /// 1.5 draws each because of rejection; about 2 ns per item here), no memory and no swaps. The number of draws
  /// depends on the values drawn, so there is no closed-form jump; this is the cheapest exact way.
  void discard_shuffle(std::uint64_t n) noexcept {
    draw_shuffle(n, [](std::uint64_t, std::uint64_t) noexcept {});
  }

 private:
  static constexpr std::uint32_t temper(std::uint32_t y) noexcept {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
  }

  static constexpr std::uint64_t smallest_mask(std::uint64_t max) noexcept {
    std::uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    return mask;
  }

  // The shuffle loop, shared by shuffle() and discard_shuffle() so both consume the generator
  // identically. Items past 2^32 (64-bit draws) take the plain loop; the rest the branch-free one.
  template <class Step>
  void draw_shuffle(std::uint64_t n, Step&& step) {
    if (n < 2) return;
    std::uint64_t i = n - 1;
    if (i > 0xffffffffULL) {
      draw_descending(i, std::uint64_t{1} << 32, step);
      i = 0xffffffffULL;
    }
    draw_descending_32(static_cast<std::uint32_t>(i), step);
  }

  // Same draws as `for (; i >= 1; --i) step(i, random_interval(i))`, but each 32-bit output is one
  // loop turn with no data-dependent branch: a rejected draw becomes step(i, i) (a self-swap) and
  // i only falls on acceptance. Rejections happen up to half the time, so the branchy form pays a
  // misprediction per few draws; this form does not. It also tempers straight from the key array.
  template <class Step>
  void draw_descending_32(std::uint32_t i, Step& step) {
    auto mask = static_cast<std::uint32_t>(smallest_mask(i));
    while (i > 0) {
      if (pos_ >= state_words) regenerate();
      std::uint32_t p = pos_;
      for (; p < state_words && i > 0; ++p) {
        const std::uint32_t value = temper(key_[p]) & mask;
        const bool accept = value <= i;
        step(i, accept ? value : i);
        i -= accept ? 1U : 0U;
        mask >>= ((mask >> 1) >= i) ? 1U : 0U;  // the smallest all-ones mask >= the new i
      }
      pos_ = p;
    }
  }

  // Calls on_draw(i, random_interval(i)) for i = top, top-1, ..., bottom (bottom >= 1), the plain
  // way. The mask is narrowed as i falls instead of being recomputed per draw (it is the same mask
  // random_interval(i) would compute). Used for the 64-bit head of shuffles over 2^32 items, and by
  // the tests, which cannot run such shuffles, to check that head at the 32/64-bit edge.
  template <class OnDraw>
  void draw_descending(std::uint64_t top, std::uint64_t bottom, OnDraw& on_draw) {
    std::uint64_t i = top;
    if (i > 0xffffffffULL) {
      std::uint64_t mask = smallest_mask(i);
      for (; i > 0xffffffffULL && i >= bottom; --i) {
        if ((mask >> 1) >= i) mask >>= 1;
        std::uint64_t j = 0;
        do j = next_uint64() & mask;
        while (j > i);
        on_draw(i, j);
      }
      if (i < bottom) return;
    }
    auto i32 = static_cast<std::uint32_t>(i);
    const auto stop = static_cast<std::uint32_t>(bottom);
    auto mask32 = static_cast<std::uint32_t>(smallest_mask(i32));
    for (; i32 >= stop; --i32) {
      if ((mask32 >> 1) >= i32) mask32 >>= 1;
      std::uint32_t j = 0;
      do j = next_uint32() & mask32;
      while (j > i32);
      on_draw(i32, j);
    }
  }

  friend struct detail::numpy_random_test_access;

  void regenerate() noexcept {
    constexpr std::size_t n = state_words;
    constexpr std::size_t m = 397;
    constexpr std::uint32_t upper = 0x80000000U;
    constexpr std::uint32_t lower = 0x7fffffffU;
    auto twist = [](std::uint32_t hi_word, std::uint32_t lo_word, std::uint32_t far) noexcept {
      const std::uint32_t y = (hi_word & upper) | (lo_word & lower);
      return far ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908b0dfU);
    };
    std::size_t k = 0;
    for (; k < n - m; ++k) key_[k] = twist(key_[k], key_[k + 1], key_[k + m]);
    for (; k < n - 1; ++k) key_[k] = twist(key_[k], key_[k + 1], key_[k + m - n]);
    key_[n - 1] = twist(key_[n - 1], key_[0], key_[m - 1]);
    pos_ = 0;
  }

  std::array<std::uint32_t, state_words> key_{};
  std::uint32_t pos_ = state_words;
};

/// The name before samplers/ took one naming style (snake_case, as its stages and states).
using NumpyRandomState [[deprecated("dtl::samplers::NumpyRandomState is now numpy_random_state; the old name goes in the next release")]] =
    numpy_random_state;

}  // namespace samplers
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_SAMPLERS_NUMPY_RANDOM_HPP
