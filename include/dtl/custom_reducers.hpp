// dtl — custom metric reducers (Determined's `MetricReducer` and `context.wrap_reducer`,
// semantics §5.2). A reducer accumulates whatever the trial feeds it (`update` is the trial's own
// call, on its own type: no virtual call per batch), reduces that on each rank
// (`per_slot_reduce`), and combines the ranks' values (`cross_slot_reduce`) at the end of every
// training workload and validation. Per-slot values cross ranks as JSON.
#ifndef DTL_CUSTOM_REDUCERS_HPP
#define DTL_CUSTOM_REDUCERS_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/always_false.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/diagnostics.hpp>
#include <dtl/detail/specialization_of.hpp>
#include <dtl/errors.hpp>
#include <dtl/builtin_reducers.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

// Small named requirements, so a failure names the missing piece.

/// What a per-slot value or a reducer's result may be: anything nlohmann::json holds, or a tensor
/// (per-rank tensors cross ranks with their dtype and shape and arrive on the CPU; a result tensor
/// becomes a number, or nested lists, as a metric tensor does).
template <class T>
concept ReducerValue = std::convertible_to<T, nlohmann::json> || std::same_as<std::remove_cvref_t<T>, torch::Tensor>;

template <class R>
concept HasReset = requires(R& r) {
  r.reset();
};

template <class R>
concept HasPerSlotReduce = requires(R& r) {
  { r.per_slot_reduce() } -> ReducerValue;
};

template <class R>
using per_slot_t = std::remove_cvref_t<decltype(std::declval<R&>().per_slot_reduce())>;

template <class R>
concept HasCrossSlotReduce = HasPerSlotReduce<R> && requires(R& r, const std::vector<per_slot_t<R>>& slots) {
  { r.cross_slot_reduce(slots) } -> ReducerValue;
};

/// Determined's MetricReducer: `reset()`, `per_slot_reduce()` (this rank's value, any type that
/// converts to and from JSON), `cross_slot_reduce(std::vector<PerSlot>)` (the metric: a number,
/// an array, or — for an unnamed reducer — a map of metric names to values). `update(...)` is
/// yours to define; call it from train_batch / evaluate_batch.
///   struct Sum { double s = 0; void reset() { s = 0; } void update(double x) { s += x; }
///                double per_slot_reduce() { return s; }
///                double cross_slot_reduce(const std::vector<double>& v) { return std::accumulate(...); } };
template <class R>
concept MetricReducer = HasReset<R> && HasPerSlotReduce<R> && HasCrossSlotReduce<R>;

template <class R>
using reducer_result_t = std::remove_cvref_t<decltype(std::declval<R&>().cross_slot_reduce(
    std::declval<const std::vector<per_slot_t<R>>&>()))>;

/// Which phases a wrapped reducer reports in (Determined's `for_training` / `for_validation`).
struct ReducerPhases {
  bool for_training = true;
  bool for_validation = true;
};

/// What `wrap_reducer(fn, ...)` makes of a function (Determined's `_SimpleReducer`): `update(v)`
/// appends v; the function receives every rank's values interleaved batch by batch (rank 0's
/// first, rank 1's first, …, rank 0's second, …), which restores the data order when `update` is
/// called once per batch.
template <class T, class Fn>
class SimpleReducer {
 public:
  explicit SimpleReducer(Fn fn) : fn_(std::move(fn)) {}
  void update(T value) { values_.push_back(std::move(value)); }
  void reset() { values_.clear(); }
  [[nodiscard]] const std::vector<T>& per_slot_reduce() const noexcept { return values_; }
  auto cross_slot_reduce(const std::vector<std::vector<T>>& slots) const {
    std::vector<T> flat;
    std::size_t longest = 0;
    for (const auto& s : slots) longest = std::max(longest, s.size());
    for (std::size_t i = 0; i < longest; ++i)
      for (const auto& s : slots)
        if (i < s.size()) flat.push_back(s[i]);
    return fn_(static_cast<const std::vector<T>&>(flat));
  }

 private:
  Fn fn_;
  std::vector<T> values_;
};

namespace detail {

/// What a wrap_* argument holds: T for T and for std::shared_ptr<T>.
template <class T>
struct pointee {
  using type = T;
};
template <class T>
struct pointee<std::shared_ptr<T>> {
  using type = T;
};
template <class T>
using pointee_t = typename pointee<T>::type;

/// A function of one `const std::vector<T>&` (not generic, so T can be read off it).
template <class F>
struct unary_vector_function {};
template <class C, class Ret, class T>
struct unary_vector_function<Ret (C::*)(const std::vector<T>&) const> {
  using value_type = T;
};
template <class C, class Ret, class T>
struct unary_vector_function<Ret (C::*)(const std::vector<T>&)> {
  using value_type = T;
};
template <class Ret, class T>
struct unary_vector_function<Ret (*)(const std::vector<T>&)> {
  using value_type = T;
};
template <class F>
requires requires { &F::operator(); }
struct unary_vector_function<F> : unary_vector_function<decltype(&F::operator())> {};
template <class F>
concept is_unary_vector_function = requires {
  typename unary_vector_function<std::decay_t<F>>::value_type;
};

template <class T>
inline constexpr bool is_metric_dict = false;
template <class V, class C, class A>
inline constexpr bool is_metric_dict<std::map<std::string, V, C, A>> = true;
template <class V, class H, class E, class A>
inline constexpr bool is_metric_dict<std::unordered_map<std::string, V, H, E, A>> = true;
template <class T>
inline constexpr bool is_dynamic_json = std::is_same_v<T, nlohmann::json> || std::is_same_v<T, nlohmann::ordered_json>;

/// The diagnose ladder for wrap_reducer: each broken rule gets one message with the fix.
template <class R, bool Named>
consteval bool diagnose_reducer() {
  if constexpr (!HasReset<R>) {
    static_assert(always_false<R>, DTL_DIAG_REDUCER_NO_RESET);
  } else if constexpr (!HasPerSlotReduce<R>) {
    static_assert(always_false<R>, DTL_DIAG_REDUCER_NO_PER_SLOT_REDUCE);
  } else if constexpr (!HasCrossSlotReduce<R>) {
    static_assert(always_false<R>, DTL_DIAG_REDUCER_NO_CROSS_SLOT_REDUCE);
  } else if constexpr (Named && is_metric_dict<reducer_result_t<R>>) {
    static_assert(always_false<R>, DTL_DIAG_REDUCER_NAMED_RETURNS_MAP);
  } else if constexpr (!Named && !is_metric_dict<reducer_result_t<R>> && !is_dynamic_json<reducer_result_t<R>>) {
    static_assert(always_false<R>, DTL_DIAG_REDUCER_UNNAMED_RETURNS_SCALAR);
  }
  return true;
}

/// A per-rank tensor as JSON (dtype, shape, values: integers exactly, floating values as doubles),
/// and back, on the CPU.
DTL_INLINE nlohmann::json tensor_slot_to_json(const torch::Tensor& t);
DTL_INLINE torch::Tensor tensor_slot_from_json(const nlohmann::json& j);

/// A wrapped reducer with its type erased: boundaries only, so a virtual call here costs nothing
/// that matters.
struct WrappedReducer {
  struct Ops {
    virtual ~Ops() = default;
    virtual void reset() = 0;
    virtual nlohmann::json per_slot() = 0;
    virtual nlohmann::json cross_slot(const std::vector<nlohmann::json>& slots) = 0;
  };
  template <class R>
  struct OpsFor final : Ops {
    std::shared_ptr<R> r;
    explicit OpsFor(std::shared_ptr<R> p) : r(std::move(p)) {}
    void reset() override { r->reset(); }
    nlohmann::json per_slot() override {
      if constexpr (std::is_same_v<per_slot_t<R>, torch::Tensor>)
        return tensor_slot_to_json(r->per_slot_reduce());
      else
        return r->per_slot_reduce();
    }
    nlohmann::json cross_slot(const std::vector<nlohmann::json>& slots) override {
      std::vector<per_slot_t<R>> typed;
      typed.reserve(slots.size());
      for (const auto& s : slots) {
        if constexpr (std::is_same_v<per_slot_t<R>, torch::Tensor>)
          typed.push_back(tensor_slot_from_json(s));
        else
          typed.push_back(s.template get<per_slot_t<R>>());
      }
      if constexpr (std::is_same_v<reducer_result_t<R>, torch::Tensor>)
        return nlohmann::json(tensor_to_json(r->cross_slot_reduce(typed)));
      else
        return r->cross_slot_reduce(typed);
    }
  };

  std::unique_ptr<Ops> ops;
  const void* identity = nullptr;  // the user's object, to refuse wrapping it twice
  std::optional<std::string> name;
  ReducerPhases phases;
};

/// The reducers flagged for a phase, and this rank's per-slot values of each (one JSON array).
struct PreparedReducers {
  std::vector<WrappedReducer*> active;
  nlohmann::json mine = nlohmann::json::array();
};
DTL_INLINE PreparedReducers prepare_reducers(std::vector<WrappedReducer>& reducers, bool training);

/// cross_slot_reduce of every prepared reducer over `per_rank` (each rank's `mine`, in rank
/// order), written into `metrics`.
DTL_INLINE void finish_reducers(const PreparedReducers& p, const std::vector<nlohmann::json>& per_rank,
                                MetricsJson& metrics);

/// End of a phase: every reducer flagged for it reduces on this rank, the per-slot values are
/// gathered (`gather`: one JSON array per reducer → that reducer's values from every rank), and
/// the results are written into `metrics` — a named reducer's under its name, an unnamed one's
/// map merged key by key (overwriting the batch-averaged values of the same names).
template <class Gather>
void report_reducers(std::vector<WrappedReducer>& reducers, bool training, MetricsJson& metrics, Gather&& gather) {
  auto p = prepare_reducers(reducers, training);
  if (p.active.empty()) return;
  // One collective for all reducers: a list per rank, each holding every reducer's value.
  finish_reducers(p, gather(p.mine), metrics);
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/custom_reducers-inl.hpp>
#endif

#endif  // DTL_CUSTOM_REDUCERS_HPP
