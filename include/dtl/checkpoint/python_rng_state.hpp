// dtl — the numpy and Python `random` generator states a Determined checkpoint holds
// (state_dict.pth's rng_state.np_rng_state and random_rng_state), as seeding with the trial seed
// leaves them: what a Determined trial starts with on a cluster (np.random.seed(seed),
// random.seed(seed)). dtl has neither generator (its shuffles are seeded samplers); Determined's
// _load restores both keys unconditionally, so a checkpoint without them fails there (KeyError).
// Both are MT19937 (the reference mt19937ar.c seeding: init_genrand, init_by_array).
#ifndef DTL_CHECKPOINT_PYTHON_RNG_STATE_HPP
#define DTL_CHECKPOINT_PYTHON_RNG_STATE_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/samplers/numpy_random.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

using mt19937_key = std::array<std::uint32_t, 624>;

/// init_genrand(s): the samplers' numpy RandomState seeds this way (samplers/numpy_random.hpp).
inline mt19937_key mt_init_genrand(std::uint32_t s) { return samplers::numpy_random_state(s).state().key; }

inline mt19937_key mt_init_by_array(const std::vector<std::uint32_t>& key) {
  auto mt = mt_init_genrand(19650218u);
  std::size_t i = 1, j = 0;
  for (std::size_t k = std::max<std::size_t>(624, key.size()); k; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<std::uint32_t>(j);
    if (++i >= 624) {
      mt[0] = mt[623];
      i = 1;
    }
    if (++j >= key.size()) j = 0;
  }
  for (std::size_t k = 623; k; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - static_cast<std::uint32_t>(i);
    if (++i >= 624) {
      mt[0] = mt[623];
      i = 1;
    }
  }
  mt[0] = 0x80000000u;
  return mt;
}

/// A seed's 32-bit words, low first (0 is one word), as Python's random.seed(int) splits it.
inline std::vector<std::uint32_t> seed_words(std::uint64_t seed) {
  std::vector<std::uint32_t> w{static_cast<std::uint32_t>(seed)};
  if (seed >> 32) w.push_back(static_cast<std::uint32_t>(seed >> 32));
  return w;
}

/// The key of `np.random.seed(seed)` (seeds past 2**32, which numpy refuses as an int: the state
/// of seeding with the array of their 32-bit words).
inline mt19937_key numpy_seeded_key(std::uint64_t seed) {
  return seed >> 32 ? mt_init_by_array(seed_words(seed)) : mt_init_genrand(static_cast<std::uint32_t>(seed));
}

/// The key of Python's `random.seed(seed)`.
inline mt19937_key python_random_seeded_key(std::uint64_t seed) { return mt_init_by_array(seed_words(seed)); }

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_PYTHON_RNG_STATE_HPP
