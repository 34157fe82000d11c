// dtl — metric reducers with Determined's math (semantics §5): reduce each metric over a rank's
// batches, then across ranks weighted by batch counts. Accumulation stays on the device; the
// host sees one transfer per metric per workload.
#ifndef DTL_BUILTIN_REDUCERS_HPP
#define DTL_BUILTIN_REDUCERS_HPP

#include <torch/torch.h>

#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/numpy_mean.hpp>
#include <dtl/detail/torch_compat.hpp>
#include <dtl/metrics.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// Built-in reducers for validation metrics (Determined's `Reducer.AVG/SUM/MAX/MIN`).
enum class Reducer { avg = 1, sum = 2, max = 3, min = 4 };

/// `evaluation_reducer()` returns one Reducer for all metrics, or one per metric name.
using ReducerMap = std::map<std::string, Reducer, std::less<>>;
using EvaluationReducer = std::variant<Reducer, ReducerMap>;

/// Metric values on the host, in report order. `null` marks a value Determined reports as None
/// (a metric that could not be averaged).
using MetricsJson = nlohmann::ordered_json;

namespace detail {

/// Nested arrays of `sizes`, read from contiguous doubles (no tensor op per element).
DTL_INLINE nlohmann::ordered_json doubles_to_json(const double*& p, c10::IntArrayRef sizes);

/// A tensor as a number (0-d) or nested arrays, with one conversion to host doubles.
DTL_INLINE nlohmann::ordered_json tensor_to_json(const torch::Tensor& t);

/// `{}`, built where the library is (an ordered_json built inline instantiates its constructors
/// in every translation unit that includes this header).
DTL_INLINE MetricsJson empty_metrics();

/// One rank's reduced value of one metric and how many batches it saw.
struct SlotValue {
  double value = 0.0;
  std::int64_t num_batches = 0;
  bool float32 = false;  ///< `value` is a float32 (numpy's result for float32 batch values)
};

/// Determined's per-slot reduction: np.average / sum / max / min over the stacked batch values,
/// with no axis, so a vector metric collapses to a scalar (as Determined does). numpy's
/// arithmetic bit for bit: a float32 `stacked` reduces in float32 (pairwise sums), anything else
/// in float64.
DTL_INLINE double reduce_per_slot(Reducer r, const torch::Tensor& stacked);

/// Determined's cross-slot reduction: ranks with no batches are dropped; AVG is weighted by each
/// rank's batch count (so it equals the mean over all batches); SUM/MAX/MIN combine rank results.
/// numpy's arithmetic: `np.average(values, weights=batches)` in float64 (the int weights promote
/// it), `np.sum(values)` in float32 when every rank's value is one.
DTL_INLINE double reduce_cross_slot(Reducer r, std::span<const SlotValue> slots);

DTL_INLINE void check_same_keys(const std::vector<std::string>& keys, const Metrics& m, const char* phase);

/// Collects one workload's (or one validation's) per-batch metrics. Keeps detached tensors on
/// their device; capacity is kept across workloads, so steady state allocates nothing here.
/// A 0-d CPU float or double tensor's value, read in place (item() costs a dispatcher call).
DTL_INLINE bool cpu_scalar_value(const torch::Tensor& t, double& out);

class MetricCollector {
 public:
  DTL_INLINE void clear();
  DTL_INLINE void add(const Metrics& m, const char* phase);
  /// One batch's values as tensors in the order of `keys` (a CUDA graph's replayed outputs):
  /// `add` without building a Metrics.
  DTL_INLINE void add_row(const std::vector<std::string>& keys, const std::vector<torch::Tensor>& values,
                          const char* phase);
  /// Forget the metric names too (a new fit, or names that may legitimately change).
  DTL_INLINE void reset_keys();
  /// Brings every scalar kept on a device to the host as a number, in one stack and one copy per
  /// device for all metrics and batches (the only device work reporting does), so that reducing
  /// costs the same whatever the number of metrics. Values are exact (float32 becomes a double
  /// flagged float32: numpy's mean of it is Determined's). Once per workload, before reducing.
  DTL_INLINE void to_host();
  [[nodiscard]] std::int64_t batches() const noexcept { return batches_; }
  [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return keys_; }
  /// The latest batch's value of `key` where it is on the host already: a number, or a 0-d float
  /// CPU tensor (a device tensor would need a sync: nullopt).
  [[nodiscard]] DTL_INLINE std::optional<double> latest_on_host(std::string_view key) const;
  /// One batch's value: a tensor, or (`tensor` undefined) a plain number.
  struct Entry {
    torch::Tensor tensor;
    double number = 0.0;
    bool float32 = false;  ///< `number` came from a float32 tensor (Determined averages those in float32)
    [[nodiscard]] torch::Tensor as_tensor() const {
      return tensor.defined() ? tensor : torch::scalar_tensor(number, torch::kDouble);
    }
  };
  [[nodiscard]] const std::vector<Entry>& column(std::size_t i) const { return columns_[i]; }

  /// Stacks a column; an undefined tensor means the values had different shapes (not averageable).
  [[nodiscard]] DTL_INLINE torch::Tensor stacked(std::size_t i) const;

 private:
  std::vector<std::string> keys_;
  std::vector<std::vector<Entry>> columns_;
  std::int64_t batches_ = 0;
};

}  // namespace detail

/// A workload's per-batch metrics (Determined's `batch_metrics`): one JSON object per batch,
/// built on first access — most reports never need them, and building them costs more than the
/// rest of the report. Valid during the hook that receives it; copy `get()` to keep it.
class BatchMetrics {
 public:
  DTL_INLINE explicit BatchMetrics(const detail::MetricCollector& c);
  /// Values already built (the cross-rank averages of a distributed workload).
  DTL_INLINE explicit BatchMetrics(std::vector<MetricsJson> values);
  [[nodiscard]] DTL_INLINE const std::vector<MetricsJson>& get() const;
  [[nodiscard]] DTL_INLINE std::size_t size() const noexcept;
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  const MetricsJson& operator[](std::size_t i) const { return get()[i]; }
  [[nodiscard]] auto begin() const { return get().begin(); }
  [[nodiscard]] auto end() const { return get().end(); }

 private:
  const detail::MetricCollector* c_;
  mutable std::optional<std::vector<MetricsJson>> json_;
};

/// Training metrics of a workload as Determined reports them: the mean over batches of each
/// metric (element-wise, so a vector metric stays a vector), plus the per-batch values — as
/// columns of doubles for scalar metrics (what TensorBoard writes) and, lazily, as JSON.
struct TrainingReport {
  MetricsJson avg_metrics = detail::empty_metrics();
  std::vector<std::string_view> column_names;  ///< scalar metrics, in key order
  std::vector<std::vector<double>> columns;    ///< one value per batch, for each of column_names
  BatchMetrics batch_metrics;
  std::vector<std::string> float32_keys;  ///< metrics whose every value is a float32 (numpy averages them in float32)
};

namespace detail {

/// A number, or a 0-d CPU float or double tensor's value, without a dispatcher call (item()
/// costs ~1 us).
DTL_INLINE bool read_cpu_scalar(const MetricCollector::Entry& e, double& out);

}  // namespace detail

namespace detail {

DTL_INLINE TrainingReport reduce_training(const MetricCollector& c);

/// The element-wise mean of JSON values (numbers, or nested arrays of one shape), ignoring
/// nulls as Determined's cross-rank average ignores None; null when nothing is averageable.
DTL_INLINE MetricsJson mean_json(const std::vector<const MetricsJson*>& values);

/// np.mean of numbers, ignoring nulls, in numpy's precision for the array they make: float32 when
/// every value was a float32 (`float32`), else float64. Anything but numbers: mean_json.
DTL_INLINE MetricsJson numpy_mean_json(const std::vector<const MetricsJson*>& values, bool float32);

/// A distributed workload's training report (semantics §5.3): each batch's metrics averaged
/// across ranks (`per_rank[r][b]` is rank r's batch b), then averaged over the batches, both
/// with np.mean's arithmetic (float32 for the metrics in `float32_keys` on every rank).
/// `keys` are the metric names in report order (every rank must return the same ones).
DTL_INLINE TrainingReport average_training_across_ranks(const std::vector<MetricsJson>& per_rank,
                                                        const std::vector<std::string>& keys,
                                                        const std::vector<std::string>& float32_keys = {});

DTL_INLINE Reducer reducer_for(const EvaluationReducer& er, const std::string& key);

/// This rank's validation values: one SlotValue per metric, in key order.
DTL_INLINE std::vector<SlotValue> reduce_validation_slot(const MetricCollector& c, const EvaluationReducer& er);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/builtin_reducers-inl.hpp>
#endif

#endif  // DTL_BUILTIN_REDUCERS_HPP
