// dtl — PyTorchTrial: the CRTP base a trial derives from, the concepts that say what a trial is,
// and the diagnose ladder that turns a broken trial into one compile error naming the rule.
#ifndef DTL_TRIAL_HPP
#define DTL_TRIAL_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/callback.hpp>
#include <dtl/data/batch.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/detail/diagnostics.hpp>
#include <dtl/metrics.hpp>
#include <dtl/builtin_reducers.hpp>
#include <dtl/units.hpp>

#include <concepts>
#include <cstdint>
#include <ranges>
#include <type_traits>

namespace dtl {
inline namespace DTL_ABI {

/// Base of every trial (Determined's `det.pytorch.PyTorchTrial`), giving its defaults. Derive
/// with your own type: `class MyTrial : public dtl::PyTorchTrial<MyTrial>`. Define in MyTrial:
///   - a constructor taking `dtl::PyTorchTrialContext&`
///   - `build_training_data_loader()` and `build_validation_data_loader()` returning dtl::DataLoader
///   - `dtl::Metrics train_batch(Batch& batch, std::int64_t epoch_idx, std::int64_t batch_idx)`
///     (returning a loss tensor also works: it becomes {"loss": t})
///   - exactly one of `dtl::Metrics evaluate_batch(Batch& batch[, std::int64_t batch_idx])` and
///     `dtl::Metrics evaluate_full_dataset(Loader& loader)`
/// and optionally `build_callbacks()`, `evaluation_reducer()`, `get_batch_length(batch)`.
template <class Derived>
class PyTorchTrial {
 public:
  /// Named callbacks whose hooks the Trainer runs, in this order.
  [[nodiscard]] Callbacks build_callbacks() { return {}; }
  /// How evaluate_batch metrics are reduced: one Reducer for all, or a ReducerMap by name.
  [[nodiscard]] EvaluationReducer evaluation_reducer() { return Reducer::avg; }
  /// Records in a batch (for throughput); the default searches for the first tensor.
  template <class B>
  [[nodiscard]] std::int64_t get_batch_length(const B& batch) {
    return data_length(batch);
  }

 protected:
  PyTorchTrial() = default;
};

namespace detail {

template <class T>
using training_loader_t = decltype(std::declval<T&>().build_training_data_loader());
template <class T>
using validation_loader_t = decltype(std::declval<T&>().build_validation_data_loader());
template <class L>
using loader_batch_t = typename loader_batch_of<std::remove_cvref_t<L>>::type;

}  // namespace detail

// Small named requirements, so a failure names the exact rule that did not hold.

template <class T>
concept DerivesPyTorchTrial = std::derived_from<T, PyTorchTrial<T>>;

/// A dtl::DataLoader, or any range of batches (which the Trainer accepts only when the trial opts
/// out of the dataset reproducibility checks).
template <class L>
concept DataLoaderLike = AdaptableLoader<std::remove_cvref_t<L>> || std::ranges::input_range<std::remove_cvref_t<L>>;

/// Determined's `context.experimental.disable_dataset_reproducibility_checks()`, decided at
/// compile time because it changes which loader types a trial may return:
///   static constexpr bool disable_dataset_reproducibility_checks = true;
template <class T>
concept DisablesDatasetReproducibilityChecks = requires {
  requires static_cast<bool>(T::disable_dataset_reproducibility_checks);
};

/// The trial's loaders are ones dtl can repeat, shard and skip reproducibly, or it opted out.
template <class T>
concept ReproducibleLoaders = DisablesDatasetReproducibilityChecks<T> ||
    (AdaptableLoader<std::remove_cvref_t<detail::training_loader_t<T>>>&&
         AdaptableLoader<std::remove_cvref_t<detail::validation_loader_t<T>>>);

template <class T>
concept HasTrainingDataLoader = requires(T& t) {
  t.build_training_data_loader();
}
&&DataLoaderLike<detail::training_loader_t<T>>;

template <class T>
concept HasValidationDataLoader = requires(T& t) {
  t.build_validation_data_loader();
}
&&DataLoaderLike<detail::validation_loader_t<T>>;

template <class T>
concept HasTrainBatch = HasTrainingDataLoader<T> &&
    requires(T& t, detail::loader_batch_t<detail::training_loader_t<T>>& b, std::int64_t i) {
  t.train_batch(b, i, i);
};

template <class T>
concept TrainBatchReturnsMetrics = HasTrainBatch<T> &&
    requires(T& t, detail::loader_batch_t<detail::training_loader_t<T>>& b, std::int64_t i) {
  { t.train_batch(b, i, i) } -> std::convertible_to<Metrics>;
};

template <class T>
concept HasEvaluateBatchWithIndex = HasValidationDataLoader<T> &&
    requires(T& t, detail::loader_batch_t<detail::validation_loader_t<T>>& b, std::int64_t i) {
  t.evaluate_batch(b, i);
};

template <class T>
concept HasEvaluateBatchWithoutIndex = HasValidationDataLoader<T> &&
    requires(T& t, detail::loader_batch_t<detail::validation_loader_t<T>>& b) {
  t.evaluate_batch(b);
};

/// Determined lets evaluate_batch omit batch_idx.
template <class T>
concept HasEvaluateBatch = HasEvaluateBatchWithIndex<T> || HasEvaluateBatchWithoutIndex<T>;

template <class T>
concept HasEvaluateFullDataset = HasValidationDataLoader<T> && requires(T& t, detail::validation_loader_t<T>& loader) {
  t.evaluate_full_dataset(loader);
};

namespace detail {
template <class T>
decltype(auto) call_evaluate_batch(T& t, loader_batch_t<validation_loader_t<T>>& b, std::int64_t i) {
  if constexpr (HasEvaluateBatchWithIndex<T>)
    return t.evaluate_batch(b, i);
  else
    return t.evaluate_batch(b);
}
}  // namespace detail

template <class T>
concept EvaluateReturnsMetrics = (HasEvaluateBatch<T> &&
                                  requires(T & t, detail::loader_batch_t<detail::validation_loader_t<T>>& b,
                                           std::int64_t i) {
                                    { detail::call_evaluate_batch(t, b, i) } -> std::convertible_to<Metrics>;
                                  }) ||
                                 (HasEvaluateFullDataset<T> && requires(T & t, detail::validation_loader_t<T>& loader) {
                                   { t.evaluate_full_dataset(loader) } -> std::convertible_to<Metrics>;
                                 });

/// A complete trial: what `dtl::Trainer` accepts.
template <class T>
concept Trial = DerivesPyTorchTrial<T> && HasTrainingDataLoader<T> && HasValidationDataLoader<T> &&
    ReproducibleLoaders<T> && TrainBatchReturnsMetrics<T> &&
    (HasEvaluateBatch<T> != HasEvaluateFullDataset<T>)&&EvaluateReturnsMetrics<T>;

namespace detail {

/// The diagnose ladder: checks each rule of `Trial` in order and stops at the first broken one
/// with a message that names the rule and shows the fix.
template <class T>
consteval bool diagnose_trial() {
  if constexpr (!DerivesPyTorchTrial<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_NOT_CRTP);
  } else if constexpr (!HasTrainingDataLoader<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_NO_TRAINING_LOADER);
  } else if constexpr (!HasValidationDataLoader<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_NO_VALIDATION_LOADER);
  } else if constexpr (!ReproducibleLoaders<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_LOADER_NOT_REPRODUCIBLE);
  } else if constexpr (!HasTrainBatch<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_TRAIN_BATCH_PARAMS);
  } else if constexpr (!TrainBatchReturnsMetrics<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_TRAIN_BATCH_RETURN);
  } else if constexpr (HasEvaluateBatch<T> && HasEvaluateFullDataset<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_BOTH_EVALUATE);
  } else if constexpr (!HasEvaluateBatch<T> && !HasEvaluateFullDataset<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_NEITHER_EVALUATE);
  } else if constexpr (!EvaluateReturnsMetrics<T>) {
    static_assert(always_false<T>, DTL_DIAG_TRIAL_EVALUATE_RETURN);
  }
  return true;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRIAL_HPP
