// dtl — metric reducers with Determined's math (semantics §5): reduce each metric over a rank's
// batches, then across ranks weighted by batch counts. Accumulation stays on the device; the
// host sees one transfer per metric per workload.
#ifndef DTL_REDUCER_HPP
#define DTL_REDUCER_HPP

#include <torch/torch.h>

#include <dtl/metrics.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace dtl {

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
inline nlohmann::ordered_json doubles_to_json(const double*& p, c10::IntArrayRef sizes) {
  if (sizes.empty()) return *p++;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (std::int64_t i = 0; i < sizes[0]; ++i) arr.push_back(doubles_to_json(p, sizes.slice(1)));
  return arr;
}

/// A tensor as a number (0-d) or nested arrays, with one conversion to host doubles.
inline nlohmann::ordered_json tensor_to_json(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return doubles_to_json(p, c.sizes());
}

/// One rank's reduced value of one metric and how many batches it saw.
struct SlotValue {
  double value = 0.0;
  std::int64_t num_batches = 0;
};

/// Determined's per-slot reduction: np.average / sum / max / min over the stacked batch values,
/// with no axis, so a vector metric collapses to a scalar (as Determined does).
inline double reduce_per_slot(Reducer r, const torch::Tensor& stacked) {
  auto x = stacked.to(torch::kDouble);
  switch (r) {
    case Reducer::avg: return x.mean().item<double>();
    case Reducer::sum: return x.sum().item<double>();
    case Reducer::max: return x.max().item<double>();
    case Reducer::min: return x.min().item<double>();
  }
  throw std::invalid_argument("dtl: unknown Reducer value");
}

/// Determined's cross-slot reduction: ranks with no batches are dropped; AVG is weighted by each
/// rank's batch count (so it equals the mean over all batches); SUM/MAX/MIN combine rank results.
inline double reduce_cross_slot(Reducer r, std::span<const SlotValue> slots) {
  double acc = 0.0;
  std::int64_t total = 0;
  bool first = true;
  for (const auto& s : slots) {
    if (s.num_batches == 0) continue;
    switch (r) {
      case Reducer::avg: acc += s.value * static_cast<double>(s.num_batches); break;
      case Reducer::sum: acc += s.value; break;
      case Reducer::max: acc = first ? s.value : std::max(acc, s.value); break;
      case Reducer::min: acc = first ? s.value : std::min(acc, s.value); break;
    }
    total += s.num_batches;
    first = false;
  }
  if (total == 0) throw std::runtime_error("dtl: no rank has any batch to reduce");
  return r == Reducer::avg ? acc / static_cast<double>(total) : acc;
}

inline void check_same_keys(const std::vector<std::string>& keys, const Metrics& m, const char* phase) {
  bool same = keys.size() == m.size();
  std::size_t i = 0;
  for (auto it = m.begin(); same && it != m.end(); ++it, ++i) same = it->first == keys[i];
  if (!same) {
    std::string got;
    for (const auto& [k, v] : m) got += (got.empty() ? "" : ", ") + k;
    std::string want;
    for (const auto& k : keys) want += (want.empty() ? "" : ", ") + k;
    throw std::invalid_argument(std::string("dtl: ") + phase +
                                " metrics must have the same names in every batch: the first batch returned {" +
                                want + "}, a later one {" + got + "}");
  }
}

/// Collects one workload's (or one validation's) per-batch metrics. Keeps detached tensors on
/// their device; capacity is kept across workloads, so steady state allocates nothing here.
class MetricCollector {
 public:
  void clear() {
    for (auto& c : columns_) c.clear();
    batches_ = 0;
  }
  void add(const Metrics& m, const char* phase) {
    if (batches_ == 0 && keys_.empty()) {
      keys_.reserve(m.size());
      for (const auto& [k, v] : m) keys_.push_back(k);
      columns_.resize(keys_.size());
    } else {
      check_same_keys(keys_, m, phase);
    }
    std::size_t i = 0;
    for (const auto& [k, v] : m) columns_[i++].push_back(v.as_tensor());
    ++batches_;
  }
  /// Forget the metric names too (a new fit, or names that may legitimately change).
  void reset_keys() {
    keys_.clear();
    columns_.clear();
    batches_ = 0;
  }
  [[nodiscard]] std::int64_t batches() const noexcept { return batches_; }
  [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return keys_; }
  [[nodiscard]] const std::vector<torch::Tensor>& column(std::size_t i) const { return columns_[i]; }

  /// Stacks a column; an undefined tensor means the values had different shapes (not averageable).
  [[nodiscard]] torch::Tensor stacked(std::size_t i) const {
    const auto& col = columns_[i];
    for (const auto& t : col)
      if (t.sizes() != col.front().sizes()) return {};
    return torch::stack(col).to(torch::kDouble);
  }

 private:
  std::vector<std::string> keys_;
  std::vector<std::vector<torch::Tensor>> columns_;
  std::int64_t batches_ = 0;
};

/// Training metrics of a workload as Determined reports them: the mean over batches of each
/// metric (element-wise, so a vector metric stays a vector), plus the per-batch values.
struct TrainingReport {
  MetricsJson avg_metrics = MetricsJson::object();
  std::vector<MetricsJson> batch_metrics;
};

inline TrainingReport reduce_training(const MetricCollector& c) {
  TrainingReport r;
  r.batch_metrics.assign(static_cast<std::size_t>(c.batches()), MetricsJson::object());
  for (std::size_t i = 0; i < c.keys().size(); ++i) {
    const auto& key = c.keys()[i];
    auto stacked = c.stacked(i);
    if (!stacked.defined()) {
      r.avg_metrics[key] = nullptr;
      for (std::size_t b = 0; b < r.batch_metrics.size(); ++b)
        r.batch_metrics[b][key] = tensor_to_json(c.column(i)[b]);
      continue;
    }
    r.avg_metrics[key] = tensor_to_json(stacked.mean(0));
    // One host copy of the whole column, then batch b's value is the b-th slice of it.
    const auto host = stacked.to(torch::kCPU).contiguous();
    const double* p = host.data_ptr<double>();
    for (auto& batch : r.batch_metrics) batch[key] = doubles_to_json(p, host.sizes().slice(1));
  }
  return r;
}

inline Reducer reducer_for(const EvaluationReducer& er, const std::string& key) {
  if (const auto* one = std::get_if<Reducer>(&er)) return *one;
  const auto& map = std::get<ReducerMap>(er);
  auto it = map.find(key);
  if (it == map.end())
    throw std::invalid_argument("dtl: evaluation_reducer() names no reducer for metric '" + key +
                                "': a per-metric reducer map must name every metric evaluate_batch returns");
  return it->second;
}

/// This rank's validation values: one SlotValue per metric, in key order.
inline std::vector<SlotValue> reduce_validation_slot(const MetricCollector& c, const EvaluationReducer& er) {
  if (const auto* map = std::get_if<ReducerMap>(&er); map && map->size() != c.keys().size()) {
    std::string keys;
    for (const auto& [k, v] : *map) keys += (keys.empty() ? "" : ", ") + k;
    throw std::invalid_argument("dtl: evaluation_reducer() names metrics {" + keys +
                                "} but evaluate_batch returns " + std::to_string(c.keys().size()) +
                                " metrics: the keys must match exactly");
  }
  std::vector<SlotValue> out;
  out.reserve(c.keys().size());
  for (std::size_t i = 0; i < c.keys().size(); ++i) {
    auto stacked = c.stacked(i);
    if (!stacked.defined())
      throw std::invalid_argument("dtl: validation metric '" + c.keys()[i] +
                                  "' has different shapes in different batches; built-in reducers stack them");
    out.push_back({reduce_per_slot(reducer_for(er, c.keys()[i]), stacked), c.batches()});
  }
  return out;
}

}  // namespace detail
}  // namespace dtl

#endif  // DTL_REDUCER_HPP
