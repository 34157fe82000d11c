// Determined's T10 reducer, Σ label_sum · batch_idx, as a class (a MetricReducer) and as a
// function of the flat list of (label_sum, batch_idx) pairs. Torch-free; shared by the reducer
// tests and the distributed tests' child program.
#ifndef DTL_TESTS_SUPPORT_T10_REDUCERS_HPP
#define DTL_TESTS_SUPPORT_T10_REDUCERS_HPP

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace test_support {

struct WeightedSum {
  double sum = 0;
  void reset() { sum = 0; }
  void update(double label_sum, std::int64_t idx) { sum += label_sum * static_cast<double>(idx); }
  double per_slot_reduce() const { return sum; }
  double cross_slot_reduce(const std::vector<double>& slots) const {
    return std::accumulate(slots.begin(), slots.end(), 0.0);
  }
};

inline double weighted_sum(const std::vector<std::pair<double, std::int64_t>>& v) {
  double s = 0;
  for (const auto& [a, i] : v) s += a * static_cast<double>(i);
  return s;
}

}  // namespace test_support

#endif  // DTL_TESTS_SUPPORT_T10_REDUCERS_HPP
