// dtl — the definitions behind <dtl/metric_reducer.hpp> (its non-template functions): that header
// includes this file when header-only; with DTL_COMPILED_LIB they are compiled once, into
// libdtl (src/dtl.cpp, detail/compiled_lib.hpp).
#ifndef DTL_METRIC_REDUCER_INL_HPP
#define DTL_METRIC_REDUCER_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/metric_reducer.hpp>

namespace dtl::inline DTL_ABI::detail {

DTL_INLINE PreparedReducers prepare_reducers(std::vector<WrappedReducer>& reducers, bool training) {
  PreparedReducers p;
  for (auto& w : reducers)
    if (training ? w.phases.for_training : w.phases.for_validation) {
      p.active.push_back(&w);
      p.mine.push_back(w.ops->per_slot());
    }
  return p;
}

DTL_INLINE void finish_reducers(const PreparedReducers& p, const std::vector<nlohmann::json>& per_rank,
                                MetricsJson& metrics) {
  for (std::size_t i = 0; i < p.active.size(); ++i) {
    std::vector<nlohmann::json> slots;
    slots.reserve(per_rank.size());
    for (const auto& rank : per_rank) slots.push_back(rank.at(i));
    nlohmann::json result = p.active[i]->ops->cross_slot(slots);
    if (p.active[i]->name) {
      if (result.is_object())
        throw InvalidExperimentException("dtl: the reducer wrapped with name '" + *p.active[i]->name +
                                         "' returned a map of metrics; with a name it must return one value");
      metrics[*p.active[i]->name] = std::move(result);
    } else {
      if (!result.is_object())
        throw InvalidExperimentException(
            "dtl: a reducer wrapped without a name must return a map of metric names to values, but returned " +
            result.dump() + "; give it a name to report a single value");
      for (auto& [k, v] : result.items()) metrics[k] = v;
    }
  }
}

}  // namespace dtl::detail

#endif  // DTL_METRIC_REDUCER_INL_HPP
