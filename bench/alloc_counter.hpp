// Benchmarks' heap-allocation counter: replaces the global operator new/delete so a bench can
// show that a steady-state loop allocates nothing. Include it in exactly one file per benchmark
// executable (the replacement functions are defined here).
#ifndef DTL_BENCH_ALLOC_COUNTER_HPP
#define DTL_BENCH_ALLOC_COUNTER_HPP

#include <cstddef>
#include <cstdlib>
#include <new>

// GCC cannot see that this operator new and operator delete pair malloc with free, and warns
// wherever they inline into each other.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace bench {
inline std::size_t allocations = 0;  // operator new calls so far
}  // namespace bench

void* operator new(std::size_t size) {
  ++bench::allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { std::free(p); }

#endif  // DTL_BENCH_ALLOC_COUNTER_HPP
