// dtl — the non-template definitions of <dtl/builtin_reducers.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_BUILTIN_REDUCERS_INL_HPP
#define DTL_BUILTIN_REDUCERS_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/builtin_reducers.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE MetricsJson empty_metrics() { return MetricsJson::object(); }

DTL_INLINE nlohmann::ordered_json doubles_to_json(const double*& p, c10::IntArrayRef sizes) {
  if (sizes.empty()) return *p++;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (std::int64_t i = 0; i < sizes[0]; ++i) arr.push_back(doubles_to_json(p, sizes.slice(1)));
  return arr;
}

DTL_INLINE nlohmann::ordered_json tensor_to_json(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return doubles_to_json(p, c.sizes());
}

DTL_INLINE double reduce_per_slot(Reducer r, const torch::Tensor& stacked) {
  auto reduce = [r](auto span) -> double {
    if (span.empty()) throw std::invalid_argument("dtl: no value to reduce");
    switch (r) {
      case Reducer::avg:
        return numpy_mean(span, compat::numpy_sum_buffer);
      case Reducer::sum:
        return numpy_sum(span, compat::numpy_sum_buffer);
      case Reducer::max:  // numpy's max and min propagate NaN
      case Reducer::min:
        for (auto x : span)
          if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
        return r == Reducer::max ? *std::max_element(span.begin(), span.end())
                                 : *std::min_element(span.begin(), span.end());
    }
    throw std::invalid_argument("dtl: unknown Reducer value");
  };
  // np.stack's array, flattened (a reduction with no axis over a contiguous array is one pass).
  if (stacked.scalar_type() == torch::kFloat) {
    const auto x = stacked.detach().to(torch::kCPU).contiguous();
    return reduce(std::span<const float>(x.data_ptr<float>(), static_cast<std::size_t>(x.numel())));
  }
  const auto x = stacked.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return reduce(std::span<const double>(x.data_ptr<double>(), static_cast<std::size_t>(x.numel())));
}

DTL_INLINE double reduce_cross_slot(Reducer r, std::span<const SlotValue> slots) {
  std::vector<double> values;  // the ranks with batches
  std::vector<float> floats;
  double total = 0;
  bool all_float32 = true;
  for (const auto& s : slots) {
    if (s.num_batches == 0) continue;
    values.push_back(r == Reducer::avg ? s.value * static_cast<double>(s.num_batches) : s.value);
    floats.push_back(static_cast<float>(s.value));
    total += static_cast<double>(s.num_batches);
    all_float32 = all_float32 && s.float32;
  }
  if (values.empty()) throw std::runtime_error("dtl: no rank has any batch to reduce");
  switch (r) {
    case Reducer::avg:  // np.multiply(a, w, dtype=float64).sum() / w.sum(dtype=float64)
      return numpy_sum(std::span<const double>(values), compat::numpy_sum_buffer) / total;
    case Reducer::sum:
      return all_float32 ? static_cast<double>(numpy_sum(std::span<const float>(floats), compat::numpy_sum_buffer))
                         : numpy_sum(std::span<const double>(values), compat::numpy_sum_buffer);
    case Reducer::max:
      return *std::max_element(values.begin(), values.end());
    case Reducer::min:
      return *std::min_element(values.begin(), values.end());
  }
  throw std::invalid_argument("dtl: unknown Reducer value");
}

DTL_INLINE void check_same_keys(const std::vector<std::string>& keys, const Metrics& m, const char* phase) {
  bool same = keys.size() == m.size();
  std::size_t i = 0;
  for (auto it = m.begin(); same && it != m.end(); ++it, ++i) same = it->first == keys[i];
  if (!same) {
    std::string got;
    for (const auto& [k, v] : m) got += (got.empty() ? "" : ", ") + k;
    std::string want;
    for (const auto& k : keys) want += (want.empty() ? "" : ", ") + k;
    throw std::invalid_argument(std::string("dtl: ") + phase +
                                " metrics must have the same names in every batch: the first batch returned {" + want +
                                "}, a later one {" + got + "}");
  }
}

DTL_INLINE bool cpu_scalar_value(const torch::Tensor& t, double& out) {
  if (t.dim() != 0 || !t.device().is_cpu()) return false;
  switch (t.scalar_type()) {
    case torch::kFloat:
      out = *t.data_ptr<float>();
      return true;
    case torch::kDouble:
      out = *t.data_ptr<double>();
      return true;
    default:
      return false;
  }
}

DTL_INLINE std::optional<double> MetricCollector::latest_on_host(std::string_view key) const {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] != key || columns_[i].empty()) continue;
    const auto& e = columns_[i].back();
    double v = e.number;
    if (!e.tensor.defined() || cpu_scalar_value(e.tensor, v)) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

DTL_INLINE void MetricCollector::clear() {
  for (auto& c : columns_) c.clear();
  batches_ = 0;
}

DTL_INLINE void MetricCollector::add(const Metrics& m, const char* phase) {
  if (batches_ == 0 && keys_.empty()) {
    keys_.reserve(m.size());
    for (const auto& [k, v] : m) keys_.push_back(k);
    columns_.resize(keys_.size());
  } else {
    check_same_keys(keys_, m, phase);
  }
  std::size_t i = 0;
  for (const auto& [k, v] : m) {
    // A number, or a scalar tensor on the CPU (whose value is already computed: CPU ops are
    // synchronous), is kept as a double: no tensor per batch, no detach (~300 ns each). Other
    // tensors stay on their device — no sync — detached when they require grad, so the
    // workload does not keep every batch's graph alive.
    double x = 0.0;
    if (!v.is_tensor())
      columns_[i].push_back({{}, v.number()});
    else if (cpu_scalar_value(v.tensor(), x))
      columns_[i].push_back({{}, x, v.tensor().scalar_type() == torch::kFloat});
    else
      columns_[i].push_back({v.tensor().requires_grad() ? v.tensor().detach() : v.tensor(), 0.0});
    ++i;
  }
  ++batches_;
}

DTL_INLINE void MetricCollector::add_row(const std::vector<std::string>& keys, const std::vector<torch::Tensor>& values,
                                         const char* phase) {
  if (batches_ == 0 && keys_.empty()) {
    keys_ = keys;
    columns_.resize(keys_.size());
  } else if (keys != keys_) {
    Metrics m;
    for (const auto& k : keys) m.set(k, 0.0);
    check_same_keys(keys_, m, phase);  // throws, naming the difference
  }
  for (std::size_t i = 0; i < values.size(); ++i) columns_[i].push_back({values[i], 0.0});
  ++batches_;
}

DTL_INLINE void MetricCollector::reset_keys() {
  keys_.clear();
  columns_.clear();
  batches_ = 0;
}

DTL_INLINE void MetricCollector::to_host() {
  // Gathered per device: pointers to the entries, and their tensors in the same order.
  std::vector<Entry*> entries;
  std::vector<torch::Tensor> tensors;
  for (bool more = true; more;) {
    more = false;
    entries.clear();
    tensors.clear();
    std::optional<torch::Device> device;
    for (auto& col : columns_)
      for (auto& e : col) {
        if (!e.tensor.defined() || e.tensor.dim() != 0 || e.tensor.device().is_cpu()) continue;
        const auto t = e.tensor.scalar_type();
        if (t != torch::kFloat && t != torch::kDouble) continue;  // others keep their own numpy dtype's mean
        if (!device) device = e.tensor.device();
        if (e.tensor.device() != *device) {
          more = true;  // another device: the next pass
          continue;
        }
        entries.push_back(&e);
        tensors.push_back(e.tensor);
      }
    if (entries.empty()) return;
    // torch.stack promotes (float32 and float64 together stack as float64, exactly).
    auto host = torch::stack(tensors).to(torch::kCPU).to(torch::kDouble).contiguous();
    const double* v = host.data_ptr<double>();
    for (std::size_t k = 0; k < entries.size(); ++k) {
      auto& e = *entries[k];
      e.float32 = e.tensor.scalar_type() == torch::kFloat;
      e.number = v[k];
      e.tensor = torch::Tensor();
    }
  }
}

DTL_INLINE torch::Tensor MetricCollector::stacked(std::size_t i) const {
  const auto& col = columns_[i];
  bool numbers = true;
  for (const auto& e : col) numbers = numbers && !e.tensor.defined();
  if (numbers) {
    std::vector<double> v;
    v.reserve(col.size());
    for (const auto& e : col) v.push_back(e.number);
    return torch::tensor(v, torch::kDouble);
  }
  std::vector<torch::Tensor> ts;
  ts.reserve(col.size());
  for (const auto& e : col) ts.push_back(e.as_tensor());
  for (const auto& t : ts)
    if (t.sizes() != ts.front().sizes()) return {};
  return torch::stack(ts).to(torch::kDouble);
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {

DTL_INLINE BatchMetrics::BatchMetrics(const detail::MetricCollector& c) : c_(&c) {}

DTL_INLINE BatchMetrics::BatchMetrics(std::vector<MetricsJson> values) : c_(nullptr), json_(std::move(values)) {}

DTL_INLINE std::size_t BatchMetrics::size() const noexcept {
  return c_ ? static_cast<std::size_t>(c_->batches()) : json_->size();
}

DTL_INLINE const std::vector<MetricsJson>& BatchMetrics::get() const {
  if (json_) return *json_;
  const auto& c = *c_;
  std::vector<MetricsJson> out(static_cast<std::size_t>(c.batches()), MetricsJson::object());
  for (std::size_t i = 0; i < c.keys().size(); ++i) {
    const auto& key = c.keys()[i];
    auto stacked = c.stacked(i);
    if (!stacked.defined()) {
      for (std::size_t b = 0; b < out.size(); ++b) out[b][key] = detail::tensor_to_json(c.column(i)[b].as_tensor());
      continue;
    }
    // One host copy of the whole column, then batch b's value is the b-th slice of it.
    const auto host = stacked.to(torch::kCPU).contiguous();
    const double* p = host.data_ptr<double>();
    for (auto& batch : out) batch[key] = detail::doubles_to_json(p, host.sizes().slice(1));
  }
  json_ = std::move(out);
  return *json_;
}

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE bool read_cpu_scalar(const MetricCollector::Entry& e, double& out) {
  if (!e.tensor.defined()) {
    out = e.number;
    return true;
  }
  return cpu_scalar_value(e.tensor, out);
}

DTL_INLINE TrainingReport reduce_training(const MetricCollector& c) {
  TrainingReport r{.batch_metrics = BatchMetrics(c)};
  const auto n = static_cast<std::size_t>(c.batches());
  for (std::size_t i = 0; i < c.keys().size(); ++i) {
    const auto& key = c.keys()[i];
    // Scalars on the CPU (the common case): read in place, no tensor op at all.
    std::vector<double> values(n);
    bool direct = true;
    for (std::size_t b = 0; b < n && direct; ++b) direct = read_cpu_scalar(c.column(i)[b], values[b]);
    if (direct) {
      // Determined's np.mean, bit for bit: in float32 when every value is a float32 tensor, else
      // in float64 (Python floats, doubles, integers).
      bool f32 = n > 0;
      for (std::size_t b = 0; b < n && f32; ++b) {
        const auto& e = c.column(i)[b];
        f32 = e.tensor.defined() ? e.tensor.scalar_type() == torch::kFloat : e.float32;
      }
      if (n == 0) {
        r.avg_metrics[key] = 0.0;
      } else if (f32) {
        r.float32_keys.push_back(key);
        std::vector<float> floats(values.begin(), values.end());
        r.avg_metrics[key] = static_cast<double>(numpy_mean(std::span<const float>(floats), compat::numpy_sum_buffer));
      } else {
        r.avg_metrics[key] = numpy_mean(std::span<const double>(values), compat::numpy_sum_buffer);
      }
      r.column_names.push_back(key);
      r.columns.push_back(std::move(values));
      continue;
    }
    auto stacked = c.stacked(i);
    if (!stacked.defined()) {
      r.avg_metrics[key] = nullptr;
      continue;
    }
    r.avg_metrics[key] = tensor_to_json(stacked.mean(0));
    if (stacked.dim() == 1) {  // scalars on a device: one transfer for the column
      const auto host = stacked.to(torch::kCPU).contiguous();
      r.column_names.push_back(key);
      r.columns.emplace_back(host.data_ptr<double>(), host.data_ptr<double>() + n);
    }
  }
  return r;
}

DTL_INLINE MetricsJson mean_json(const std::vector<const MetricsJson*>& values) {
  std::vector<const MetricsJson*> present;
  for (const auto* v : values)
    if (v && !v->is_null()) present.push_back(v);
  if (present.empty()) return nullptr;
  if (present.front()->is_number()) {
    double sum = 0.0;
    for (const auto* v : present) {
      if (!v->is_number()) return nullptr;
      sum += v->get<double>();
    }
    return sum / static_cast<double>(present.size());
  }
  if (!present.front()->is_array()) return nullptr;
  const auto n = present.front()->size();
  for (const auto* v : present)
    if (!v->is_array() || v->size() != n) return nullptr;
  MetricsJson out = MetricsJson::array();
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<const MetricsJson*> column;
    column.reserve(present.size());
    for (const auto* v : present) column.push_back(&(*v)[i]);
    auto m = mean_json(column);
    if (m.is_null()) return nullptr;
    out.push_back(std::move(m));
  }
  return out;
}

DTL_INLINE MetricsJson numpy_mean_json(const std::vector<const MetricsJson*>& values, bool float32) {
  std::vector<double> present;
  for (const auto* v : values) {
    if (!v || v->is_null()) continue;
    if (!v->is_number()) return mean_json(values);
    present.push_back(v->get<double>());
  }
  if (present.empty()) return nullptr;
  if (float32) {
    const std::vector<float> f(present.begin(), present.end());  // exact: each was a float32
    return static_cast<double>(numpy_mean(std::span<const float>(f), compat::numpy_sum_buffer));
  }
  return numpy_mean(std::span<const double>(present), compat::numpy_sum_buffer);
}

DTL_INLINE TrainingReport average_training_across_ranks(const std::vector<MetricsJson>& per_rank,
                                                        const std::vector<std::string>& keys,
                                                        const std::vector<std::string>& float32_keys) {
  const auto is_f32 = [&](const std::string& key) {
    return std::find(float32_keys.begin(), float32_keys.end(), key) != float32_keys.end();
  };
  const std::size_t batches = per_rank.empty() ? 0 : per_rank.front().size();
  for (std::size_t r = 0; r < per_rank.size(); ++r)
    if (per_rank[r].size() != batches)
      throw std::runtime_error("dtl: rank " + std::to_string(r) + " trained " + std::to_string(per_rank[r].size()) +
                               " batches in this workload, rank 0 " + std::to_string(batches) +
                               ": the ranks are out of step");
  std::vector<MetricsJson> averaged(batches, MetricsJson::object());
  for (std::size_t b = 0; b < batches; ++b)
    for (const auto& key : keys) {
      std::vector<const MetricsJson*> values;
      for (std::size_t r = 0; r < per_rank.size(); ++r) {
        const auto& batch = per_rank[r][b];
        const auto it = batch.find(key);
        if (it == batch.end())
          throw std::invalid_argument("dtl: training metrics must have the same names on every rank: rank " +
                                      std::to_string(r) + " did not return '" + key + "'");
        values.push_back(&*it);
      }
      averaged[b][key] = numpy_mean_json(values, is_f32(key));
    }
  TrainingReport r{.batch_metrics = BatchMetrics(std::vector<MetricsJson>{})};
  for (const auto& key : keys) {
    std::vector<const MetricsJson*> values;
    std::vector<double> column;
    bool scalar = true;
    for (const auto& batch : averaged) {
      const auto& v = batch.at(key);
      values.push_back(&v);
      scalar = scalar && v.is_number();
      if (scalar) column.push_back(v.get<double>());
    }
    r.avg_metrics[key] = numpy_mean_json(values, is_f32(key));
    if (is_f32(key)) r.float32_keys.push_back(key);
    if (scalar) {
      r.column_names.push_back(key);
      r.columns.push_back(std::move(column));
    }
  }
  r.batch_metrics = BatchMetrics(std::move(averaged));
  return r;
}

DTL_INLINE Reducer reducer_for(const EvaluationReducer& er, const std::string& key) {
  if (const auto* one = std::get_if<Reducer>(&er)) return *one;
  const auto& map = std::get<ReducerMap>(er);
  auto it = map.find(key);
  if (it == map.end())
    throw std::invalid_argument("dtl: evaluation_reducer() names no reducer for metric '" + key +
                                "': a per-metric reducer map must name every metric evaluate_batch returns");
  return it->second;
}

DTL_INLINE std::vector<SlotValue> reduce_validation_slot(const MetricCollector& c, const EvaluationReducer& er) {
  if (const auto* map = std::get_if<ReducerMap>(&er); map && map->size() != c.keys().size()) {
    std::string keys;
    for (const auto& [k, v] : *map) keys += (keys.empty() ? "" : ", ") + k;
    throw std::invalid_argument("dtl: evaluation_reducer() names metrics {" + keys + "} but evaluate_batch returns " +
                                std::to_string(c.keys().size()) + " metrics: the keys must match exactly");
  }
  std::vector<SlotValue> out;
  out.reserve(c.keys().size());
  for (std::size_t i = 0; i < c.keys().size(); ++i) {
    auto stacked = c.stacked(i);
    if (!stacked.defined())
      throw std::invalid_argument("dtl: validation metric '" + c.keys()[i] +
                                  "' has different shapes in different batches; built-in reducers stack them");
    // np.stack of the batch values is float32 when every one is (a float32 tensor's value).
    bool float32 = true;
    for (const auto& e : c.column(i))
      float32 = float32 && (e.tensor.defined() ? e.tensor.scalar_type() == torch::kFloat : e.float32);
    if (float32) stacked = stacked.to(torch::kFloat);  // exact: each value was a float32
    out.push_back({reduce_per_slot(reducer_for(er, c.keys()[i]), stacked), c.batches(), float32});
  }
  return out;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_BUILTIN_REDUCERS_INL_HPP
