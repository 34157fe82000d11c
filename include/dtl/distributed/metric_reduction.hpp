// dtl — metrics across ranks: a training workload's and a validation's metrics reduced over every
// rank as Determined does (semantics §4), in one collective each, custom reducers included. It
// knows collectives and collected metrics, nothing of trials or the loop.
#ifndef DTL_DISTRIBUTED_METRIC_REDUCTION_HPP
#define DTL_DISTRIBUTED_METRIC_REDUCTION_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/builtin_reducers.hpp>
#include <dtl/custom_reducers.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/distributed/distributed_context.hpp>

#include <cstdint>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// A training workload: every rank's per-batch metrics averaged (float32 metrics in float32, as
/// numpy does, when they are float32 on every rank) and the reducers flagged for training.
/// `records` (this rank's) becomes the workload's records across ranks.
DTL_INLINE TrainingReport reduce_training_workload(const MetricCollector& collector,
                                                   std::vector<WrappedReducer>& reducers, std::int64_t& records,
                                                   const DistributedContext& dist);

/// A validation: each metric reduced per rank by its evaluation reducer, then across ranks
/// weighted by batches, and the reducers flagged for validation. One collective (none in one
/// process). A rank whose shard was empty fails every rank, not just its own, which would leave
/// the others waiting; so do metric names that differ between ranks.
DTL_INLINE MetricsJson reduce_validation(const MetricCollector& collector, const EvaluationReducer& er,
                                         std::vector<WrappedReducer>& reducers, const DistributedContext& dist);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/distributed/metric_reduction-inl.hpp>
#endif

#endif  // DTL_DISTRIBUTED_METRIC_REDUCTION_HPP
