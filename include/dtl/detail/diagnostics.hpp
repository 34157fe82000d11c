// dtl — the catalogue of dtl's compile-time diagnostics: the message of every static_assert in
// include/dtl, each a named macro, grouped by topic.
//
// Macros, because C++20's static_assert takes its message only as a string literal (a constexpr
// std::string_view or char array is refused until C++26's P2741); a macro that expands to
// adjacent literals is one literal after translation phase 6:
//
//     static_assert(always_false<T>, DTL_DIAG_TRIAL_NOT_CRTP);
//
// docs/diagnostics.md is generated from this file by scripts/gen_diagnostics.py, and
// `scripts/gen_diagnostics.py --check` (run by scripts/test.sh) fails when the page is out of
// date, when an entry is used by no header, when a header spells a message inline, or when no
// compile-fail test (tests/compile_fail/*.cpp, first line `// expect: TEXT`) expects an entry's
// text. So each entry carries a structured comment, `///` lines right above its #define:
//
//   /// One line: what went wrong (the entry's heading on the page).
//   /// Means: what the compiler is telling you and why dtl refuses it (Markdown, may go on over
//   ///   the next `///` lines).
//   /// Fix: what to write instead.
//   /// Untested: why no compile-fail test can cover the entry (only for such an entry).
//   /// Inline: why a header still spells the message itself (it must spell exactly this text).
//   /// Example <param>: a value of a function-like entry's parameter, to show its message with.
//
// A group starts with a `// ## Title` line; the `//` lines after it introduce the group on the
// page. DTL_DIAG_PART_* macros are pieces that several messages share, not entries.
// Keep each message's text stable: the compile-fail tests and users' searches match it.
#ifndef DTL_DETAIL_DIAGNOSTICS_HPP
#define DTL_DETAIL_DIAGNOSTICS_HPP

// ## Trials
// A trial is checked when `dtl::Trainer<T>` is instantiated, by `detail::diagnose_trial`
// (include/dtl/trial.hpp): its rules in order, stopping at the first broken one, so a broken
// trial is one error that names the rule.

/// The trial does not derive from PyTorchTrial of itself.
/// Means: A trial must name itself in `dtl::PyTorchTrial<Self>` (CRTP), or its hooks would be
/// another class's.
/// Fix: Derive as `class MyTrial : public dtl::PyTorchTrial<MyTrial>`.
#define DTL_DIAG_TRIAL_NOT_CRTP                                      \
  "dtl: a trial must derive from dtl::PyTorchTrial<itself> (CRTP): " \
  "class MyTrial : public dtl::PyTorchTrial<MyTrial> { ... };"

/// The trial has no training data loader.
/// Means: The Trainer trains on what `build_training_data_loader()` returns; the trial does not
/// declare it, or it returns nothing the Trainer can iterate.
/// Fix: Add `build_training_data_loader()` returning a `dtl::DataLoader`, as the message shows.
#define DTL_DIAG_TRIAL_NO_TRAINING_LOADER                                                 \
  "dtl: the trial has no build_training_data_loader() returning a dtl::DataLoader. Add: " \
  "auto build_training_data_loader() { return dtl::DataLoader(train_set, {.batch_size = " \
  "ctx.get_per_slot_batch_size(), .shuffle = true}); }"

/// The trial has no validation data loader.
/// Means: Validation runs on what `build_validation_data_loader()` returns; the trial does not
/// declare it, or it returns nothing the Trainer can iterate.
/// Fix: Add `build_validation_data_loader()` returning a `dtl::DataLoader`, as the message shows.
#define DTL_DIAG_TRIAL_NO_VALIDATION_LOADER                                                 \
  "dtl: the trial has no build_validation_data_loader() returning a dtl::DataLoader. Add: " \
  "auto build_validation_data_loader() { return dtl::DataLoader(val_set, {.batch_size = "   \
  "ctx.get_per_slot_batch_size()}); }"

/// A data loader is not a dtl::DataLoader.
/// Means: A loader that is not a `dtl::DataLoader` (a vector of batches, say) cannot be sharded
/// or skipped, so the Trainer refuses it unless the trial opts out of the reproducibility checks.
/// Fix: Return a `dtl::DataLoader`; or, to iterate another range of batches as it is (no
/// sharding; the data restarts on resume), declare
/// `static constexpr bool disable_dataset_reproducibility_checks = true;` in the trial.
#define DTL_DIAG_TRIAL_LOADER_NOT_REPRODUCIBLE                                                         \
  "dtl: build_training_data_loader() / build_validation_data_loader() must return a dtl::DataLoader, " \
  "which dtl can shuffle, shard and skip reproducibly (so resume and multi-rank training are exact). " \
  "To iterate another range of batches as it is (no sharding; the data restarts on resume), opt out "  \
  "in the trial: static constexpr bool disable_dataset_reproducibility_checks = true;"

/// train_batch has the wrong parameters.
/// Means: The Trainer calls `train_batch(batch, epoch_idx, batch_idx)` with a batch of the
/// training loader's `batch_type`; the trial's `train_batch` cannot be called that way (a
/// parameter is missing, or the batch's type differs).
/// Fix: Declare `train_batch(Batch& batch, std::int64_t epoch_idx, std::int64_t batch_idx)`.
#define DTL_DIAG_TRIAL_TRAIN_BATCH_PARAMS                                                      \
  "dtl: train_batch has the wrong parameters. It must be callable as "                         \
  "train_batch(Batch& batch, std::int64_t epoch_idx, std::int64_t batch_idx), where Batch is " \
  "the batch_type of build_training_data_loader()'s loader."

/// train_batch returns neither metrics nor a loss.
/// Means: The Trainer reports what `train_batch` returns; another type (a number, a string) has
/// no metric names.
/// Fix: Return `dtl::Metrics` (`return {{"loss", loss}};`) or the loss `torch::Tensor`, which
/// becomes `{"loss": loss}`.
#define DTL_DIAG_TRIAL_TRAIN_BATCH_RETURN                                                    \
  "dtl: train_batch must return dtl::Metrics (e.g. return {{\"loss\", loss}};) or the loss " \
  "torch::Tensor, which becomes {\"loss\": loss}."

/// The trial defines both evaluate_batch and evaluate_full_dataset.
/// Means: Validation runs one of them; with both, which one runs would be a guess.
/// Fix: Keep one. `evaluate_batch` lets dtl shard and reduce validation for you.
#define DTL_DIAG_TRIAL_BOTH_EVALUATE                                                          \
  "dtl: the trial defines both evaluate_batch and evaluate_full_dataset; define exactly one " \
  "(evaluate_batch lets dtl shard and reduce validation for you)."

/// The trial defines neither evaluate_batch nor evaluate_full_dataset.
/// Means: Validation runs one of them, and the trial has neither.
/// Fix: Define `dtl::Metrics evaluate_batch(Batch& batch, std::int64_t batch_idx)` or
/// `dtl::Metrics evaluate_full_dataset(Loader& loader)`.
#define DTL_DIAG_TRIAL_NEITHER_EVALUATE                                                           \
  "dtl: the trial defines neither evaluate_batch nor evaluate_full_dataset; define exactly one: " \
  "dtl::Metrics evaluate_batch(Batch& batch, std::int64_t batch_idx) or "                         \
  "dtl::Metrics evaluate_full_dataset(Loader& loader)."

/// evaluate_batch or evaluate_full_dataset does not return metrics.
/// Means: The Trainer reports what validation returns, by metric name; another type has none.
/// Fix: Return `dtl::Metrics`, e.g. `return {{"validation_loss", loss}, {"accuracy", acc}};`.
#define DTL_DIAG_TRIAL_EVALUATE_RETURN                                          \
  "dtl: evaluate_batch / evaluate_full_dataset must return dtl::Metrics, e.g. " \
  "return {{\"validation_loss\", loss}, {\"accuracy\", acc}};"

// ## Callbacks
// A callback is checked where `build_callbacks()` names it (`dtl::NamedCallback`,
// include/dtl/callback.hpp): Determined duck-types callbacks, so there a mistake is a hook that
// silently never runs.

/// The callback does not derive from dtl::PyTorchCallback.
/// Means: A type with Determined's hook names that does not derive from `dtl::PyTorchCallback`
/// would have its hooks never called; the error names the rule instead of a generic "no matching
/// constructor".
/// Fix: Derive the callback from `dtl::PyTorchCallback` and mark its hooks `override`.
#define DTL_DIAG_CALLBACK_NOT_DERIVED                                                            \
  "dtl: build_callbacks(): a callback must derive from dtl::PyTorchCallback "                    \
  "(struct MyCallback : dtl::PyTorchCallback { void on_validation_end(const dtl::MetricsJson&) " \
  "override; }), as Determined's derive from det.pytorch.PyTorchCallback"

/// The hook checker was given a type that is not a callback.
/// Means: `detail::check_callback_hooks<T>()` compares T's hooks with `dtl::PyTorchCallback`'s,
/// which only means something for a type derived from it.
/// Fix: Derive the callback from `dtl::PyTorchCallback`.
/// Untested: Unreachable from user code: `dtl::NamedCallback` checks the hooks only of a type
/// derived from `dtl::PyTorchCallback`, and answers any other type with
/// `DTL_DIAG_CALLBACK_NOT_DERIVED`; this entry guards dtl's own code.
#define DTL_DIAG_CALLBACK_HOOKS_NOT_DERIVED "dtl: a callback must derive from dtl::PyTorchCallback"

/// A callback declares a hook with a signature PyTorchCallback does not have.
/// Means: A hook declared with other parameters (or another return type, or without `const`)
/// is a new function, not an override, so the Trainer would never call it; Determined ignores
/// it silently too. dtl checks each hook a callback declares against `dtl::PyTorchCallback`'s.
/// `hook` is the hook's name and `expected` its declaration in `dtl::PyTorchCallback`.
/// Fix: Declare the hook as the message says, with `override`, so that the compiler keeps
/// checking it.
/// Example hook: on_validation_end
/// Example expected: void on_validation_end(const dtl::MetricsJson& metrics)
#define DTL_DIAG_CALLBACK_HOOK_SIGNATURE(hook, expected) \
  "dtl: this callback declares " #hook                   \
  " with a signature PyTorchCallback does not have, "    \
  "so the Trainer would never call it. Declare it as: " expected " override"

// ## DataLoader
// A `dtl::DataLoader` built from your own batch sampler (torch's `DataLoader(dataset,
// batch_sampler=...)`) checks it in `detail::check_batch_sampler` (include/dtl/data/data_loader.hpp).

/// The batch sampler is not a dtl::samplers pipeline.
/// Means: Any other range of index batches cannot be repeated, sharded and skipped reproducibly.
/// Fix: Build the batch sampler from `dtl::samplers`, ending in `batch()`.
#define DTL_DIAG_LOADER_SAMPLER_NOT_PIPELINE                                                         \
  "dtl::DataLoader: a batch_sampler must be a dtl::samplers pipeline ending in batch(), e.g. "       \
  "dtl::samplers::sequential(n) | dtl::samplers::shuffle(seed) | dtl::samplers::batch(32), so that " \
  "the Trainer can repeat, shard and skip it reproducibly"

/// The batch sampler does not make batches.
/// Means: A batch sampler yields batches of indices; a pipeline without `batch()` yields single
/// indices.
/// Fix: End the pipeline with `dtl::samplers::batch(size)`.
#define DTL_DIAG_LOADER_SAMPLER_NOT_BATCHED                                            \
  "dtl::DataLoader: a batch_sampler yields batches of indices: end the pipeline with " \
  "dtl::samplers::batch(size)"

/// The batch sampler has repeat() after batch(), shard() or skip().
/// Means: A user batch sampler must be one epoch: the Trainer adds `repeat()`, `shard()` and
/// `skip()` itself (Determined's `adapt_batch_sampler`).
/// Fix: Leave those stages out; for batches that run across epoch ends, repeat the indices
/// before batching them.
#define DTL_DIAG_LOADER_SAMPLER_NOT_ONE_EPOCH                                                      \
  "dtl::DataLoader: a batch_sampler describes one epoch: leave out repeat(), shard() and skip(); " \
  "the Trainer adds them itself (Determined's adapt_batch_sampler). For batches that run across "  \
  "epoch ends (Python's BatchSampler(RepeatSampler(s), b)), repeat the indices before batching: "  \
  "sequential(n) | shuffle(seed) | repeat() | batch(b)"

/// A batch sampler that never ends is used for validation.
/// Means: A batch sampler that repeats before batching can train (its batches run across epoch
/// ends), but a validation pass, or `stream()`, must end.
/// Fix: Build the validation loader without `repeat()`.
#define DTL_DIAG_LOADER_REPEATING_VALIDATION                                                     \
  "dtl::DataLoader: this batch_sampler repeats its indices (repeat() before batch()) and never " \
  "ends: it can train, but validation and stream() need one pass. Build the validation loader "  \
  "without repeat(): sequential(n) | batch(b)"

// ## Sampler pipelines
// Determined documents the order its samplers must be chained in ("Customize a Reproducible
// Dataset"): shuffle first, repeat when training, shard after repeat, batch, skip last. Python
// finds out at run time (a shuffle that hangs, ranks that drift apart); dtl checks the order at
// each `|` (`detail::check_order`, include/dtl/samplers/order.hpp) and reports the first broken
// rule with the right chain.

/// The right order of a sampler pipeline, which each order message ends with.
#define DTL_DIAG_PART_SAMPLER_ORDER \
  "sequential(n) | shuffle(seed) | repeat() | shard(rank, world) | batch(size) | skip(k)"

/// shuffle() after repeat().
/// Means: After `repeat()` the indices never end, so the shuffle would never finish its epoch.
/// Fix: Put `shuffle()` before `repeat()`.
#define DTL_DIAG_SAMPLER_SHUFFLE_AFTER_REPEAT                                                  \
  "dtl: shuffle() after repeat() never ends an epoch, so the shuffle would never finish. Put " \
  "shuffle() before repeat(): " DTL_DIAG_PART_SAMPLER_ORDER

/// batch() after skip().
/// Means: `skip(k)` counts what comes before it; before `batch()` that is records, but
/// Determined's skip is the number of batches already trained.
/// Fix: Put `batch()` before `skip()`.
#define DTL_DIAG_SAMPLER_BATCH_AFTER_SKIP                                                          \
  "dtl: batch() after skip() would count the skip in records, but Determined counts batches (the " \
  "skip is the number of batches already trained). Put batch() before skip(): " DTL_DIAG_PART_SAMPLER_ORDER

/// skip() before repeat().
/// Means: A skip inside the repeated part would skip again at the start of every epoch.
/// Fix: Put `skip()` last.
#define DTL_DIAG_SAMPLER_SKIP_BEFORE_REPEAT                                                          \
  "dtl: skip() must be the last stage: skip() before repeat() would skip again in every epoch. Put " \
  "skip() last: " DTL_DIAG_PART_SAMPLER_ORDER

/// A stage after skip().
/// Means: `skip()` must be the last stage, so that it counts what the trainer consumed
/// (batches) and happens once.
/// Fix: Put `skip()` last.
#define DTL_DIAG_SAMPLER_SKIP_NOT_LAST                                                             \
  "dtl: skip() must be the last stage, so that it counts what the trainer consumed (batches) and " \
  "happens once. Put skip() last: " DTL_DIAG_PART_SAMPLER_ORDER

/// shard() before repeat().
/// Means: Sharding each epoch separately lets the ranks drift apart: a rank with a shorter shard
/// starts its next epoch early, and the ranks' lengths stop matching.
/// Fix: Put `shard()` after `repeat()`.
#define DTL_DIAG_SAMPLER_SHARD_BEFORE_REPEAT                                                         \
  "dtl: shard() before repeat() lets the ranks drift apart: a rank with a shorter shard starts its " \
  "next epoch early, and the ranks' lengths stop matching. Put shard() after repeat(): " DTL_DIAG_PART_SAMPLER_ORDER

/// repeat() twice.
/// Means: The first `repeat()` never ends, so the second would do nothing.
/// Fix: Keep one `repeat()`.
#define DTL_DIAG_SAMPLER_REPEAT_TWICE                                                         \
  "dtl: repeat() twice: the first repeat() never ends, so the second does nothing. Keep one " \
  "repeat(): " DTL_DIAG_PART_SAMPLER_ORDER

/// batch() twice.
/// Means: A second `batch()` would make batches of batches, which dtl's samplers do not
/// support.
/// Fix: Use one `batch(size)`.
#define DTL_DIAG_SAMPLER_BATCH_TWICE                                                                \
  "dtl: batch() twice would make batches of batches, which dtl's samplers do not support. Use one " \
  "batch(size): " DTL_DIAG_PART_SAMPLER_ORDER

/// from() given something that is not a range of indices.
/// Means: `from(range)` (include/dtl/samplers/pipeline.hpp) takes a sized range of integer
/// indices that can be iterated more than once (one pass per epoch).
/// Fix: Pass e.g. a `std::vector<std::int64_t>`, or start from `sequential(n)`.
#define DTL_DIAG_SAMPLER_FROM_NOT_INDICES                                                 \
  "dtl: from(range) needs a sized, re-iterable (forward) range of integer indices, e.g. " \
  "std::vector<std::int64_t>; or start from sequential(n)."

/// A sampler pipeline without a source.
/// Means: A pipeline starts with its source of indices, `sequential(n)` or `from(range)`; a
/// stage such as `shuffle()` has nothing to work on before it.
/// Fix: Start the pipeline with `sequential(n)` or `from(range)`.
#define DTL_DIAG_SAMPLER_NO_SOURCE                                                            \
  "dtl: a sampler pipeline starts with its source, sequential(n) or from(range of indices), " \
  "then its stages: sequential(n) | shuffle(seed) | repeat() | shard(rank, world) | "         \
  "batch(size) | skip(k)"

// ## Reducers
// `ctx.wrap_reducer(reducer[, name])` (Determined's `wrap_reducer`) checks the reducer in
// `detail::diagnose_reducer` (include/dtl/custom_reducers.hpp) and what it was given in
// `PyTorchTrialContext::add_reducer` (include/dtl/context.hpp). Determined raises these at the end
// of the first workload; dtl rejects them at compile time.

/// The MetricReducer has no reset().
/// Means: A wrapped reducer is reset at the start of every training workload and validation.
/// Fix: Give the reducer `void reset()`.
#define DTL_DIAG_REDUCER_NO_RESET                                                    \
  "dtl: wrap_reducer: a MetricReducer needs `void reset()` (called at the start of " \
  "every training workload and validation)"

/// The MetricReducer has no per_slot_reduce().
/// Means: Each rank's part of the metric is `per_slot_reduce()`'s value, which is gathered
/// across the ranks as JSON.
/// Fix: Give the reducer `per_slot_reduce()`, returning a type `nlohmann::json` can hold or a
/// `torch::Tensor` (it arrives on the CPU, with its dtype and shape).
#define DTL_DIAG_REDUCER_NO_PER_SLOT_REDUCE                                      \
  "dtl: wrap_reducer: a MetricReducer needs `per_slot_reduce()` returning this " \
  "rank's value as a type nlohmann::json can hold (a number, vector, map, ...) or a torch::Tensor"

/// The MetricReducer has no cross_slot_reduce() for its per-slot values.
/// Means: The metric is what `cross_slot_reduce` makes of every rank's `per_slot_reduce()`
/// value; it is missing or takes another type.
/// Fix: Give the reducer `cross_slot_reduce(const std::vector<PerSlot>&)`, `PerSlot` being
/// `per_slot_reduce()`'s type.
#define DTL_DIAG_REDUCER_NO_CROSS_SLOT_REDUCE                          \
  "dtl: wrap_reducer: a MetricReducer needs `cross_slot_reduce(const " \
  "std::vector<PerSlot>&)`, PerSlot being per_slot_reduce()'s type, returning the metric"

/// A named reducer returns a map of metrics.
/// Means: With a name the reducer reports one metric of that name, but its `cross_slot_reduce`
/// returns several.
/// Fix: Drop the name to merge the map into the metrics, or return a single value.
#define DTL_DIAG_REDUCER_NAMED_RETURNS_MAP                                           \
  "dtl: wrap_reducer: this reducer has a name, so it reports one metric, but its "   \
  "cross_slot_reduce returns a map of metrics. Drop the name to merge the map into " \
  "the metrics, or return a single value."

/// An unnamed reducer returns a single value.
/// Means: Without a name there is nothing to call a single value; an unnamed reducer's result is
/// merged into the metrics, so it must be a map of metric names to values.
/// Fix: Return a `std::map<std::string, V>`, or give the reducer a name.
#define DTL_DIAG_REDUCER_UNNAMED_RETURNS_SCALAR                                       \
  "dtl: wrap_reducer: without a name, cross_slot_reduce must return a map of metric " \
  "names to values (std::map<std::string, V>). Give the reducer a name to report "    \
  "one value: ctx.wrap_reducer(reducer, \"my_metric\")."

/// wrap_reducer was given something that is not a reducer.
/// Means: `wrap_reducer` takes a MetricReducer or a function of the values; it was given
/// neither.
/// Fix: Pass a MetricReducer (by value or `std::shared_ptr`) or a function of one
/// `const std::vector<T>&`.
#define DTL_DIAG_REDUCER_NOT_A_REDUCER                                                                \
  "dtl: wrap_reducer takes a MetricReducer (reset, per_slot_reduce, cross_slot_reduce), by value or " \
  "std::shared_ptr, or a function of one `const std::vector<T>&` (every value passed to update)"

// ## LR schedulers
// `ctx.wrap_lr_scheduler(scheduler, step_mode)` (include/dtl/context.hpp) takes what the Trainer
// can step after a batch or an epoch.

/// A scheduler that steps on a metric, such as ReduceLROnPlateau, is wrapped.
/// Means: ReduceLROnPlateau steps on a metric, which the Trainer does not have after a batch; in
/// Python this fails at the first `step()`.
/// Fix: Return `dtl::callbacks::ReduceLROnPlateauEveryValidation` from `build_callbacks()`,
/// which steps it after every validation, or call `step(metric)` yourself.
#define DTL_DIAG_LR_STEPS_ON_METRIC                                                                     \
  "dtl: wrap_lr_scheduler: this scheduler steps on a metric (ReduceLROnPlateau), which the Trainer "    \
  "does not have after a batch; to step it after every validation, return "                             \
  "std::make_shared<dtl::callbacks::ReduceLROnPlateauEveryValidation>(optimizer, \"validation_loss\") " \
  "from build_callbacks() (dtl/callbacks.hpp); or call step(metric) yourself"

/// wrap_lr_scheduler was given something without step().
/// Means: The Trainer could never step it.
/// Fix: Pass a `dtl::lr` scheduler, a `torch::optim` one such as `StepLR`, or your own type with
/// `step()`, by value or `std::shared_ptr`.
#define DTL_DIAG_LR_NOT_A_SCHEDULER                                                                   \
  "dtl: wrap_lr_scheduler takes a scheduler with step(): a dtl::lr scheduler, torch::optim::StepLR, " \
  "or your own type, by value or std::shared_ptr"

// ## Lengths and periods
// `fit()`'s `max_length` and its periods are a `dtl::Length` (include/dtl/units.hpp).

/// A length or period is a bare number.
/// Means: Is 100 batches or epochs? Determined fails at run time; dtl refuses it at compile
/// time, as the compiler's first error.
/// Fix: Write `dtl::Batch{N}` or `dtl::Epoch{N}`.
#define DTL_DIAG_LENGTH_BARE_NUMBER                                              \
  "dtl: a length or period needs a unit: write dtl::Batch{N} or dtl::Epoch{N}, " \
  "not a bare number (Determined's max_length=Batch(N) / Epoch(N))"

// ## Hyperparameters
// `ctx.get_hparam<T>(name)` converts a hyperparameter to T (`detail::hparam_as`,
// include/dtl/config/hparams.hpp).

/// A hyperparameter is read as a type dtl cannot convert it to.
/// Means: dtl converts a hyperparameter's JSON value, with an error naming the hyperparameter
/// when it has another type, only to the types the message lists.
/// Fix: Read it as `nlohmann::json` and convert it yourself.
#define DTL_DIAG_HPARAM_TYPE                                                                         \
  "dtl: a hyperparameter can be read as bool, an integer type, a floating-point type, std::string, " \
  "nlohmann::json, or std::vector of one of these; read it as nlohmann::json and convert it yourself"

// ## Batches
// The Trainer counts the records it trained on with the trial's `get_batch_length(batch)`,
// `dtl::data_length(batch)` unless the trial overrides it (include/dtl/data/batch.hpp).

/// The batch holds no tensor, so its length is unknown.
/// Means: `dtl::data_length` takes a batch's length from its first tensor (searching tuples,
/// vectors and string maps); this batch type has none.
/// Fix: Override `get_batch_length(batch)` in the trial.
#define DTL_DIAG_BATCH_NO_TENSOR                                                  \
  "dtl: data_length: this batch type holds no tensor, so its length is unknown; " \
  "override get_batch_length(batch) in your trial"

// ## Platform
// Checked once, whatever the program does.

/// The host is big-endian.
/// Means: dtl writes checkpoints' tensors as torch.save does, raw little-endian bytes
/// (include/dtl/checkpoint/torch_save-inl.hpp), straight from memory.
/// Fix: Build on a little-endian host.
/// Untested: It fails only on a big-endian host, and every host dtl is built and tested on is
/// little-endian.
#define DTL_DIAG_BIG_ENDIAN_HOST \
  "torch.save records hold native little-endian bytes; big-endian hosts are not supported"

/// LibTorch's distributed defines are missing from the compiler's command line.
/// Means: A header-only translation unit compiles dtl's process groups, and LibTorch declares
/// `c10d::ProcessGroupGloo` only under `USE_DISTRIBUTED` and `USE_C10D_GLOO`, which its own build
/// defines and a plain `g++` line does not.
/// Fix: Add `-DUSE_DISTRIBUTED -DUSE_C10D_GLOO`, or build with what sets them for you:
/// `pkg-config --cflags dtl`, dtl's CMake package or its meson dependency; or link libdtl
/// (`DTL_COMPILED_LIB`), which was built with them.
#define DTL_DIAG_MISSING_DISTRIBUTED_DEFINES                                                       \
  "dtl: compile with -DUSE_DISTRIBUTED -DUSE_C10D_GLOO (LibTorch declares its Gloo process group " \
  "only under them); `pkg-config --cflags dtl`, dtl's CMake package and its meson dependency add them"

#endif  // DTL_DETAIL_DIAGNOSTICS_HPP
