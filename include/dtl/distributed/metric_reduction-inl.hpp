// dtl — the non-template definitions of <dtl/distributed/metric_reduction.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_DISTRIBUTED_METRIC_REDUCTION_INL_HPP
#define DTL_DISTRIBUTED_METRIC_REDUCTION_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/distributed/metric_reduction.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE TrainingReport reduce_training_workload(const MetricCollector& collector,
                                                   std::vector<WrappedReducer>& reducers, std::int64_t& records,
                                                   const DistributedContext& dist) {
  auto report = reduce_training(collector);
  if (!dist.connected()) {
    report_reducers(reducers, /*training=*/true, report.avg_metrics,
                    [&](const nlohmann::json& mine) { return dist.allgather(mine); });
    return report;
  }
  // One collective: every rank's per-batch metrics and its custom reducers' values.
  auto prepared = prepare_reducers(reducers, /*training=*/true);
  nlohmann::ordered_json batches = nlohmann::ordered_json::array();
  for (const auto& b : report.batch_metrics) batches.push_back(b);
  const auto all = dist.allgather(nlohmann::ordered_json{{"batches", std::move(batches)},
                                                         {"records", records},
                                                         {"reducers", prepared.mine},
                                                         {"float32", report.float32_keys}});
  std::vector<MetricsJson> per_rank;
  std::vector<nlohmann::json> reducer_values;
  auto float32_keys = report.float32_keys;
  records = 0;
  for (const auto& r : all) {
    records += r.at("records").template get<std::int64_t>();
    per_rank.push_back(r.at("batches"));
    reducer_values.push_back(nlohmann::json(r.at("reducers")));
    const auto theirs = r.at("float32").template get<std::vector<std::string>>();
    std::erase_if(float32_keys, [&](const std::string& k) {
      return std::find(theirs.begin(), theirs.end(), k) == theirs.end();
    });
  }
  report = average_training_across_ranks(per_rank, collector.keys(), float32_keys);
  if (!prepared.active.empty()) finish_reducers(prepared, reducer_values, report.avg_metrics);
  return report;
}

DTL_INLINE MetricsJson reduce_validation(const MetricCollector& collector, const EvaluationReducer& er,
                                         std::vector<WrappedReducer>& reducers, const DistributedContext& dist) {
  nlohmann::json slots_json = nlohmann::json::array();
  nlohmann::json float32_json = nlohmann::json::array();
  if (collector.batches() > 0)
    for (const auto& v : reduce_validation_slot(collector, er)) {
      slots_json.push_back(v.value);
      float32_json.push_back(v.float32);
    }
  auto prepared = prepare_reducers(reducers, /*training=*/false);
  const auto all = dist.allgather(nlohmann::json{{"batches", collector.batches()},
                                                 {"keys", collector.keys()},
                                                 {"values", std::move(slots_json)},
                                                 {"float32", std::move(float32_json)},
                                                 {"reducers", prepared.mine}});
  std::string empty;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].at("batches").template get<std::int64_t>() == 0) empty += (empty.empty() ? "" : ", ") + std::to_string(r);
  if (!empty.empty())
    throw DataError("dtl: validation_loader is empty on rank(s) " + empty +
                    ": their shard of build_validation_data_loader() has no batch; give the validation set at "
                    "least one batch per rank (" +
                    std::to_string(dist.size) + " ranks)");
  const auto& keys = collector.keys();
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].at("keys").template get<std::vector<std::string>>() != keys)
      throw std::invalid_argument("dtl: validation metrics must have the same names on every rank: rank " +
                                  std::to_string(r) + " returned " + all[r].at("keys").dump());
  MetricsJson metrics = MetricsJson::object();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<SlotValue> slots;
    for (const auto& rank : all)
      slots.push_back({rank.at("values").at(i).template get<double>(), rank.at("batches").template get<std::int64_t>(),
                       rank.at("float32").at(i).template get<bool>()});
    // One process: Determined reports the rank's own reduction (no cross-slot step).
    metrics[keys[i]] = slots.size() == 1 ? slots[0].value : reduce_cross_slot(reducer_for(er, keys[i]), slots);
  }
  std::vector<nlohmann::json> reducer_values;
  for (const auto& rank : all) reducer_values.push_back(rank.at("reducers"));
  if (!prepared.active.empty()) finish_reducers(prepared, reducer_values, metrics);
  return metrics;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DISTRIBUTED_METRIC_REDUCTION_INL_HPP
