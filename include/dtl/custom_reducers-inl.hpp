// dtl — the non-template definitions of <dtl/custom_reducers.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CUSTOM_REDUCERS_INL_HPP
#define DTL_CUSTOM_REDUCERS_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/custom_reducers.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE nlohmann::json tensor_slot_to_json(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU).contiguous();
  const bool exact = !c.is_floating_point() && !c.is_complex();
  const auto flat = c.to(exact ? torch::kLong : torch::kDouble).flatten();
  nlohmann::json values = nlohmann::json::array();
  for (std::int64_t i = 0; i < flat.numel(); ++i)
    exact ? values.push_back(flat.data_ptr<std::int64_t>()[i]) : values.push_back(flat.data_ptr<double>()[i]);
  return {{"dtype", static_cast<int>(c.scalar_type())}, {"shape", c.sizes().vec()}, {"values", std::move(values)}};
}

DTL_INLINE torch::Tensor tensor_slot_from_json(const nlohmann::json& j) {
  const auto type = static_cast<c10::ScalarType>(j.at("dtype").get<int>());
  const auto shape = j.at("shape").get<std::vector<std::int64_t>>();
  const auto& v = j.at("values");
  const bool exact = !c10::isFloatingType(type) && !c10::isComplexType(type);
  auto flat = exact ? torch::tensor(v.get<std::vector<std::int64_t>>(), torch::kLong)
                    : torch::tensor(v.get<std::vector<double>>(), torch::kDouble);
  return flat.reshape(shape).to(type);
}

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

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CUSTOM_REDUCERS_INL_HPP
