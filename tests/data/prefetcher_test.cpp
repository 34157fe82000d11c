// Torch-free tests of the worker threads behind DataLoader(num_workers > 0). Built twice: into
// dtl_core_tests, and under ThreadSanitizer and AddressSanitizer (tests/meson.build), where a data
// race, a leak or a use-after-free fails the run.
#include <dtl/data/prefetcher.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// A loader whose batch is the sum of its indices, after a little work; it can be told to fail.
struct SumLoader {
  using batch_type = std::int64_t;
  std::int64_t fail_at = -1;
  std::chrono::microseconds work{0};
  mutable std::atomic<int> calls{0};
  mutable std::mutex ids_mutex;
  mutable std::set<std::thread::id> thread_ids;

  batch_type fetch(std::span<const std::int64_t> idx) const {
    ++calls;
    {
      std::lock_guard lock(ids_mutex);
      thread_ids.insert(std::this_thread::get_id());
    }
    const auto until = std::chrono::steady_clock::now() + work;
    while (std::chrono::steady_clock::now() < until) {
    }
    std::int64_t sum = 0;
    for (auto i : idx) {
      if (i == fail_at) throw std::runtime_error("index " + std::to_string(i) + " is broken");
      sum += i;
    }
    return sum;
  }
};

// Submits batches {2k, 2k+1} for k < n, keeping the ring full, and takes them all back.
std::vector<std::int64_t> run(const SumLoader& loader, int workers, int prefetch, std::int64_t n) {
  dtl::detail::Prefetcher<SumLoader> p(loader, workers, prefetch);
  std::vector<std::int64_t> out;
  std::int64_t next = 0;
  auto fill = [&] {
    while (p.has_room() && next < n) {
      const std::int64_t idx[2] = {2 * next, 2 * next + 1};
      p.submit(std::span<const std::int64_t>(idx), nullptr);
      ++next;
    }
  };
  fill();
  while (p.pending()) {
    out.push_back(p.take(nullptr));
    fill();
  }
  return out;
}

}  // namespace

TEST_CASE("prefetcher: batches come back in submission order, whatever the thread timing") {
  SumLoader loader;
  for (int workers : {1, 2, 4})
    for (int prefetch : {1, 2, 5}) {
      auto out = run(loader, workers, prefetch, 200);
      REQUIRE(out.size() == 200);
      for (std::int64_t k = 0; k < 200; ++k) CHECK(out[static_cast<std::size_t>(k)] == 4 * k + 1);
    }
}

TEST_CASE("prefetcher: the work runs on the worker threads, not the caller's") {
  SumLoader loader;
  loader.work = std::chrono::microseconds(50);
  run(loader, 2, 2, 50);
  CHECK(loader.thread_ids.count(std::this_thread::get_id()) == 0);
  CHECK(loader.thread_ids.size() >= 1);
  CHECK(loader.thread_ids.size() <= 2);
}

TEST_CASE("prefetcher: a worker's exception is rethrown by take(), in order, on the caller's thread") {
  SumLoader loader;
  loader.fail_at = 7;  // batch 3 holds {6, 7}
  dtl::detail::Prefetcher<SumLoader> p(loader, 2, 2);
  for (std::int64_t k = 0; k < 4; ++k) {
    const std::int64_t idx[2] = {2 * k, 2 * k + 1};
    p.submit(std::span<const std::int64_t>(idx), nullptr);
  }
  CHECK(p.take(nullptr) == 1);
  CHECK(p.take(nullptr) == 5);
  CHECK(p.take(nullptr) == 9);
  CHECK_THROWS_WITH_AS(p.take(nullptr), "index 7 is broken", std::runtime_error);
  // The prefetcher stays usable after a failed batch.
  const std::int64_t idx[1] = {100};
  p.submit(std::span<const std::int64_t>(idx), nullptr);
  CHECK(p.take(nullptr) == 100);
}

TEST_CASE("prefetcher: destroyed with batches in flight, it stops without hanging or leaking") {
  SumLoader loader;
  loader.work = std::chrono::microseconds(200);
  for (int round = 0; round < 20; ++round) {
    dtl::detail::Prefetcher<SumLoader> p(loader, 2, 3);
    for (std::int64_t k = 0; k < 6; ++k) {
      const std::int64_t idx[1] = {k};
      p.submit(std::span<const std::int64_t>(idx), nullptr);
    }
    if (round % 2) static_cast<void>(p.take(nullptr));
  }  // destructor joins while workers are mid-fetch
  // Created and destroyed without any batch.
  { dtl::detail::Prefetcher<SumLoader> idle(loader, 3, 2); }
}

TEST_CASE("prefetcher: each slot keeps the sampler state written at submit, swapped out at take") {
  SumLoader loader;
  dtl::detail::Prefetcher<SumLoader> p(loader, 2, 2);
  for (std::int64_t k = 0; k < 4; ++k) {
    const std::int64_t idx[1] = {k};
    p.submit(std::span<const std::int64_t>(idx), [k](dtl::samplers::sampler_state& s) {
      s.position = k + 1;
      s.rngs.resize(1);
      s.rngs[0].pos = static_cast<std::uint32_t>(k);
    });
  }
  dtl::samplers::sampler_state got;
  for (std::int64_t k = 0; k < 4; ++k) {
    CHECK(p.take(&got) == k);
    CHECK(got.position == k + 1);
    REQUIRE(got.rngs.size() == 1);
    CHECK(got.rngs[0].pos == static_cast<std::uint32_t>(k));
  }
}
