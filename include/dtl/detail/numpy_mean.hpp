// dtl — numpy's mean of a 1-D array, bit for bit: what Determined's training-workload average is
// (`np.mean` over the per-batch values). numpy adds with its pairwise summation (8 accumulators
// per block of up to 128, halves above that) in the array's own precision and divides in that
// precision: float32 metrics average in float32, Python floats (float64) in float64. numpy 1.24
// sums a long array in buffers of 8192 elements, numpy 2.4 sums it whole (checked against both,
// for sizes 1..300 and across 8192; which one dtl follows: detail::compat::numpy_sum_buffer).
#ifndef DTL_DETAIL_NUMPY_MEAN_HPP
#define DTL_DETAIL_NUMPY_MEAN_HPP

#include <dtl/detail/abi.hpp>

#include <algorithm>
#include <cstddef>
#include <span>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// numpy's `pairwise_sum` for one buffer, accumulating in T.
template <class T>
T numpy_pairwise_sum(std::span<const T> a) {
  const std::size_t n = a.size();
  if (n < 8) {
    T res = 0;
    for (T x : a) res += x;
    return res;
  }
  if (n <= 128) {
    T r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a.first(n2)) + numpy_pairwise_sum(a.subspan(n2));
}

/// `np.sum(a)` for a float or double array: the sum over buffers of `buffer` elements (numpy
/// 1.x's ufunc buffer, 8192; 0: the whole array at once, as numpy 2.x).
template <class T>
T numpy_sum(std::span<const T> a, std::size_t buffer) {
  if (buffer == 0) buffer = a.size() == 0 ? 1 : a.size();
  T sum = 0;
  for (std::size_t k = 0; k < a.size(); k += buffer) sum += numpy_pairwise_sum(a.subspan(k, std::min(buffer, a.size() - k)));
  return sum;
}

/// `np.mean(a)`: numpy_sum, then / n, in T.
template <class T>
T numpy_mean(std::span<const T> a, std::size_t buffer) {
  return numpy_sum(a, buffer) / static_cast<T>(a.size());
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_NUMPY_MEAN_HPP
