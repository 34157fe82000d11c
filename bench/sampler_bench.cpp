// Sampler pipeline benchmark (not a test): prints timings and ratios measured in the same run.
//   g++-12 -std=c++20 -O2 -Iinclude bench/sampler_bench.cpp -o sampler_bench && ./sampler_bench
// 1. Index throughput of Determined's training chain
//      sequential(n) | shuffle(s) | batch(b) | repeat() | shard(r, w) | skip(k)
//    against a hand-written loop that computes the same indices (checked by a hash), and the number
//    of heap allocations the pipeline makes per batch once running.
// 2. Resuming at batch 10^7 of a 10^5-item shuffled dataset: restore(state) versus skip(10^7).
#include <dtl/samplers/pipeline.hpp>

#include "alloc_counter.hpp"
#include "table_row.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <numeric>
#include <span>
#include <vector>


namespace {

using namespace dtl::samplers;  // NOLINT(google-build-using-namespace)
using clock_type = std::chrono::steady_clock;

struct chain {
  std::int64_t n;
  std::int64_t batch_size;
  std::int64_t rank;
  std::int64_t world;
  std::int64_t skip_batches;
  bool shuffled;
  std::int64_t batches;  // batches to consume
};

struct result {
  double seconds;
  std::uint64_t hash;
  std::int64_t indices;
};

// A hash that depends on every index and its order, so both loops must produce the same sequence.
inline void mix(std::uint64_t& h, std::int64_t i) { h = h * 1000003ULL + static_cast<std::uint64_t>(i); }

result run_pipeline(const chain& c) {
  const auto t0 = clock_type::now();
  auto p = sequential(c.n) | shuffle(7, c.shuffled) | batch(c.batch_size) | repeat() | shard(c.rank, c.world) |
           skip(c.skip_batches);
  std::uint64_t h = 0;
  std::int64_t count = 0;
  std::int64_t done = 0;
  for (std::span<const std::int64_t> b : p) {
    for (std::int64_t i : b) mix(h, i);
    count += static_cast<std::int64_t>(b.size());
    if (++done == c.batches) break;
  }
  return {std::chrono::duration<double>(clock_type::now() - t0).count(), h, count};
}

// What one would write by hand for the same indices: shuffle each epoch, deal global batches out
// round-robin, drop the first k of this rank's batches.
result run_by_hand(const chain& c) {
  const auto t0 = clock_type::now();
  numpy_random_state rng(7);
  std::vector<std::int64_t> order(static_cast<std::size_t>(c.n));
  const std::int64_t per_epoch = (c.n + c.batch_size - 1) / c.batch_size;
  std::uint64_t h = 0;
  std::int64_t count = 0;
  std::int64_t done = 0;
  std::int64_t global = 0;
  std::int64_t skipped = 0;
  while (done < c.batches) {
    if (c.shuffled) {
      std::iota(order.begin(), order.end(), 0);
      rng.shuffle(std::span(order));
    }
    for (std::int64_t g = 0; g < per_epoch && done < c.batches; ++g, ++global) {
      if (global % c.world != c.rank) continue;
      if (skipped < c.skip_batches) {
        ++skipped;
        continue;
      }
      const std::int64_t first = g * c.batch_size;
      const std::int64_t last = std::min(first + c.batch_size, c.n);
      if (c.shuffled) {
        for (std::int64_t j = first; j < last; ++j) mix(h, order[static_cast<std::size_t>(j)]);
      } else {
        for (std::int64_t j = first; j < last; ++j) mix(h, j);
      }
      count += last - first;
      ++done;
    }
  }
  return {std::chrono::duration<double>(clock_type::now() - t0).count(), h, count};
}

void throughput(const char* name, const chain& c, bool row = false) {
  result best_pipe{1e9, 0, 0};
  result best_hand{1e9, 0, 0};
  for (int rep = 0; rep < 5; ++rep) {  // interleaved, best of 5, so both see the same machine state
    const result a = run_pipeline(c);
    const result b = run_by_hand(c);
    if (a.seconds < best_pipe.seconds) best_pipe = a;
    if (b.seconds < best_hand.seconds) best_hand = b;
  }
  const double per_pipe = best_pipe.seconds * 1e9 / static_cast<double>(best_pipe.indices);
  const double per_hand = best_hand.seconds * 1e9 / static_cast<double>(best_hand.indices);
  std::printf("%-44s pipeline %6.2f ns/index (%7.1f M/s)  by hand %6.2f ns/index  ratio %.3f  %s\n", name, per_pipe,
              1e-6 / (per_pipe * 1e-9), per_hand, per_pipe / per_hand,
              best_pipe.hash == best_hand.hash && best_pipe.indices == best_hand.indices ? "same indices"
                                                                                         : "INDICES DIFFER");
  if (row)
    bench::table_row(std::string("Sampler pipeline vs hand-written index loop, ") + name,
                     bench::fmt(per_pipe, "ns/index"), bench::fmt(per_hand, "ns/index"), per_pipe / per_hand);
}

void allocations_per_batch() {
  auto p = sequential(100000) | shuffle(7) | batch(32) | repeat() | shard(1, 4) | skip(5);
  std::int64_t done = 0;
  std::size_t at_start = 0;
  constexpr std::int64_t warmup = 1000;       // the first epoch allocates the shuffle buffer
  constexpr std::int64_t measured = 1000000;  // ~1280 epochs of this rank's batches
  for (std::span<const std::int64_t> b : p) {
    (void)b;
    if (++done == warmup) at_start = bench::allocations;
    if (done == warmup + measured) break;
  }
  std::printf("heap allocations in %lld batches after warm-up (%lld epochs): %zu\n", static_cast<long long>(measured),
              static_cast<long long>(measured * 4 * 32 / 100000), bench::allocations - at_start);
}

void resume() {
  constexpr std::int64_t n = 100000;
  constexpr std::int64_t batch_size = 32;
  constexpr std::int64_t target = 10000000;  // resume at batch 10^7 (3200 epochs)
  auto make = [](std::int64_t k) { return sequential(n) | shuffle(7) | batch(batch_size) | repeat() | shard(0, 1) | skip(k); };

  // Stateless: skip(10^7) jumps whole epochs (random draws only), then into the last one.
  auto t0 = clock_type::now();
  auto skipped = make(target);
  auto it = skipped.begin();
  const std::vector<std::int64_t> first_after_skip((*it).begin(), (*it).end());
  const double skip_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();

  // The state a checkpoint holds after batch 10^7 (taken from the skip run, which equals a replay).
  auto one_before = make(target - 1);
  (void)one_before.begin();
  const sampler_state saved = one_before.state();

  double best_restore = 1e9;
  std::vector<std::int64_t> first_after_restore;
  for (int rep = 0; rep < 5; ++rep) {
    t0 = clock_type::now();
    auto restored = make(0);
    restored.restore(saved);
    auto rit = restored.begin();
    first_after_restore.assign((*rit).begin(), (*rit).end());
    best_restore = std::min(best_restore, std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  std::printf("resume at batch 1e7 of a 1e5-item shuffled dataset (bs 32, epoch %lld of state):\n",
              static_cast<long long>(saved.epoch));
  std::printf("  restore(state) + first batch: %8.3f ms (best of 5)\n", best_restore * 1e3);
  std::printf("  skip(1e7) + first batch:      %8.3f ms  (%s batch)\n", skip_seconds * 1e3,
              first_after_skip == first_after_restore ? "same" : "DIFFERENT");
  bench::table_row("Sampler resume at batch 1e7: restore(state) vs skip(1e7), 1e5 items shuffled",
                   bench::fmt(best_restore * 1e3, "ms", 3), bench::fmt(skip_seconds * 1e3, "ms", 3),
                   best_restore / skip_seconds);
}

}  // namespace

int main() {
  std::printf("sampler_bench: training chain sequential(n) | shuffle(s) | batch(b) | repeat() | shard(r, w) | skip(k)\n");
  throughput("n=1e5 b=32 w=1 shuffled, 2e5 batches", {100000, 32, 0, 1, 10, true, 200000}, true);
  throughput("n=1e5 b=32 rank 3 of w=8 shuffled, 2e4 batches", {100000, 32, 3, 8, 10, true, 20000}, true);
  throughput("n=1e5 b=32 w=1 shuffle(s, false), 2e5 batches", {100000, 32, 0, 1, 10, false, 200000});
  throughput("n=1e5 b=8 rank 3 of w=8 shuffle off, 2e5 batches", {100000, 8, 3, 8, 10, false, 200000});
  allocations_per_batch();
  resume();
  return 0;
}
