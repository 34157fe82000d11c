// dtl — the evaluation pass of a validation: the trial's validation loader, evaluate_batch over
// this rank's shard of it (or evaluate_full_dataset on the chief), the validation epoch's
// callbacks, and the metrics reduced across ranks as Determined reduces them.
#ifndef DTL_TRAINER_EVALUATION_HPP
#define DTL_TRAINER_EVALUATION_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/amp/autocast.hpp>
#include <dtl/builtin_reducers.hpp>
#include <dtl/callback.hpp>
#include <dtl/context.hpp>
#include <dtl/data/raw_loader.hpp>
#include <dtl/distributed/metric_reduction.hpp>
#include <dtl/distributed/on_chief.hpp>
#include <dtl/errors.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/metrics.hpp>
#include <dtl/trainer/loop_access.hpp>
#include <dtl/trainer/say_where.hpp>
#include <dtl/trial.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

template <class TrialT>
class EvaluationPass {
 public:
  using Loader = validation_loader_t<TrialT>;

  /// What one pass reports: the reduced metrics, and the batches evaluated on this rank.
  struct Result {
    MetricsJson metrics = MetricsJson::object();
    std::int64_t batches = 0;
  };

  EvaluationPass(TrialT& trial, PyTorchTrialContext& ctx, LoopAccess& loop) : trial_(trial), ctx_(ctx), loop_(loop) {}

  /// A fit starts: the trial builds its validation loader (once per fit, as Determined does).
  void open() { loader_.emplace(trial_.build_validation_data_loader()); }

  /// One pass, in eval mode without gradients (the caller's); `after_batch` names the validation
  /// in an error's message. test_mode evaluates one batch.
  Result run(const Callbacks& callbacks, Console& console, bool test_mode, std::int64_t after_batch) {
    if constexpr (HasEvaluateBatch<TrialT>)
      return evaluate_batches(callbacks, console, test_mode, after_batch);
    else
      return {.metrics = evaluate_full_dataset()};
  }

 private:
  Result evaluate_batches(const Callbacks& callbacks, Console& console, bool test_mode, std::int64_t after_batch) {
    notify(callbacks, &PyTorchCallback::on_validation_epoch_start);
    const auto& dist = ctx_.distributed();
    auto&& stream =
        adapt_evaluation(*loader_, {.skip = 0, .rank = dist.rank, .world = dist.size, .seed = ctx_.get_trial_seed()});
    collector_.reset_keys();
    for (auto& r : loop_.reducers()) r.ops->reset();
    console.start_validation(batches_on_chief(dist.size, test_mode));
    std::vector<Metrics> outputs;
    const bool keep_outputs = !callbacks.empty();
    std::int64_t idx = 0;
    for (auto&& raw : stream) {
      // A dtl stream's batch is its own, so it is moved; a raw loader's belongs to the loader,
      // which the next validation iterates again, so it is copied (tensor handles only).
      auto batch = [&] {
        if constexpr (RawLoader<Loader>)
          return ctx_.to_device(raw);
        else
          return ctx_.to_device(std::move(raw));
      }();
      Metrics m = evaluate_one(batch, idx++, after_batch);
      collector_.add(m, "validation");
      console.batch_validated(idx);
      if (keep_outputs) outputs.push_back(std::move(m));
      if (test_mode) break;
    }
    notify(callbacks, &PyTorchCallback::on_validation_epoch_end, outputs);
    collector_.to_host();
    return {.metrics = reduce_validation(collector_, trial_.evaluation_reducer(), loop_.reducers(), dist),
            .batches = collector_.batches()};
  }

  /// evaluate_batch, under apex's autocast when configure_apex_amp casts (as apex's patched
  /// functions cast evaluation too); an exception says where it was thrown.
  template <class B>
  Metrics evaluate_one(B& batch, std::int64_t idx, std::int64_t after_batch) {
    std::optional<autocast> region;
    if (auto* apex = loop_.apex(); apex && apex->autocast_enabled()) [[unlikely]]
      region.emplace(apex->device(), apex->dtype());
    try {
      return Metrics(call_evaluate_batch(trial_, batch, idx));
    } catch (const InvalidHP&) {
      throw;
    } catch (const std::exception& e) {
      say_where(ctx_.distributed(), e,
                "evaluate_batch threw at validation batch " + std::to_string(idx) +
                    " (the validation after training batch " + std::to_string(after_batch) + ")");
      throw;
    }
  }

  /// The chief's metrics on every rank: callbacks and the checkpoint policy see the same values.
  MetricsJson evaluate_full_dataset() {
    return on_chief(
        ctx_.distributed(),
        [&] {
          MetricsJson out = MetricsJson::object();
          Metrics m(trial_.evaluate_full_dataset(*loader_));
          for (const auto& [k, v] : m)
            out[k] = v.is_tensor() ? tensor_to_json(v.tensor()) : nlohmann::ordered_json(v.number());
          return out;
        },
        "running evaluate_full_dataset");
  }

  /// Validation batches on the chief, when known (for the progress line).
  [[nodiscard]] std::optional<std::int64_t> batches_on_chief(std::int64_t world, bool test_mode) {
    if (test_mode) return 1;
    if constexpr (AdaptableLoader<Loader>)
      return loader_->epoch_length(world);
    else if constexpr (std::ranges::sized_range<Loader>)
      return static_cast<std::int64_t>(std::ranges::size(*loader_));
    else
      return std::nullopt;
  }

  TrialT& trial_;
  PyTorchTrialContext& ctx_;
  LoopAccess& loop_;
  std::optional<Loader> loader_;
  MetricCollector collector_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_EVALUATION_HPP
