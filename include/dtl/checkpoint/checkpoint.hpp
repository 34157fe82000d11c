// dtl — checkpoints: a directory <storage>/<uuid>/ in Determined's layout, written atomically
// (temporary directory, one syncfs, rename; the `latest` pointer moves last), and loaded back for
// resume. state_dict.pth is torch's zip-pickle container.
#ifndef DTL_CHECKPOINT_CHECKPOINT_HPP
#define DTL_CHECKPOINT_CHECKPOINT_HPP

#include <torch/torch.h>

#include <dtl/checkpoint/snapshot.hpp>
// Public (state_dict, save_state_dict, load_state_dict): included here, not only by checkpoint-inl.hpp,
// so a trial built against libdtl sees it as a header-only one does.
#include <dtl/checkpoint/state_dict.hpp>
#include <dtl/checkpoint/trial_state_refs.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/file_io.hpp>
#include <dtl/errors.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

/// Where a run stands; saved in checkpoints (Determined's `_TrialState`, plus the best validation
/// so far, which `checkpoint_policy = best` compares against after a resume).
struct TrialState {
  std::int64_t batches_trained = 0;
  std::int64_t epochs_trained = 0;
  std::int64_t last_val = 0;
  std::int64_t last_ckpt = 0;
  std::optional<double> best_validation;
};

}  // namespace DTL_ABI
}  // namespace dtl

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// State saved beside the trial's under state_dict.pth's `callbacks` entry, by name (Determined
/// keeps its callbacks' state_dict() there): what a checkpoint stores of parts it does not know.
using NamedStates = std::vector<std::pair<std::string, nlohmann::json>>;

/// What runs around saving and loading, given the whole state_dict.pth dict: on save after the
/// named states are in it and before its tensors are copied (Determined's on_checkpoint_save_start
/// may add entries), on load before anything is restored (on_checkpoint_load_start).
struct CheckpointHooks {
  std::function<void(c10::impl::GenericDict&)> save_started;
  std::function<void(const c10::impl::GenericDict&)> load_started;
};

/// What a checkpoint carries besides the trial's state dicts: where the run stands, and the rest.
struct CheckpointState : TrialState {
  /// Where the training data stands (the loader's description and its sampler state), or null
  /// when unknown; the Trainer then resumes the data by skipping.
  nlohmann::json data_position;
  /// The searcher metric of the validation at this checkpoint's batch, if one ran there; what
  /// keep-best garbage collection ranks checkpoints by.
  std::optional<double> validation_metric;
  /// The trial seed the checkpoint was trained with (read back on load).
  std::optional<std::uint64_t> trial_seed;
  /// The named states read back on load, as stored (ivalue_to_json makes one JSON), for their owners.
  std::map<std::string, c10::IValue> named_states;
  /// One object per rank, in rank order: `cpu_rng_state` and, on a CUDA device,
  /// `cuda_rng_state` (hex), and `data_position`, so that each rank of a distributed run
  /// resumes with its own. Null in checkpoints that predate it.
  nlohmann::json ranks;
};

/// This rank's generators as hex strings (what a checkpoint keeps per rank): `cpu_rng_state`,
/// and `cuda_rng_state` for `cuda` when given.
DTL_INLINE nlohmann::json rank_rng_states(const std::optional<torch::Device>& cuda);
/// Restores what rank_rng_states saved. A saved CUDA state is skipped (with a warning) when this
/// run has no CUDA device.
DTL_INLINE void restore_rank_rng_states(const nlohmann::json& saved, const std::optional<torch::Device>& cuda);

/// Which checkpoints to keep (Determined's `checkpoint_storage.save_trial_latest` /
/// `save_trial_best`). Without `latest` nothing is deleted.
struct RetentionPolicy {
  std::optional<std::int64_t> latest;  ///< keep this many of the newest
  std::int64_t best = 1;               ///< and this many of the best validated (by the searcher metric)
  bool smaller_is_better = true;
};

struct WrittenCheckpoint {
  std::string uuid;
  std::filesystem::path dir;
};

/// Everything a checkpoint writes, taken on the training thread and owning its memory: what
/// Checkpointer::write turns into files, in the background or not.
struct CheckpointSnapshot {
  WrittenCheckpoint target;
  c10::IValue state_dict;  ///< state_dict.pth, its tensors copied (snapshot_tensors)
  /// The other files, in the order written; metadata.json last, as its presence marks the files complete.
  std::vector<std::pair<std::string, std::string>> files;
};

DTL_INLINE std::string new_uuid4();

class Checkpointer {
 public:
  /// `owned`: the run owns `storage` (it keeps `latest` there, collects garbage and removes
  /// interrupted writes); false for storage that other runs share (CheckpointStore::owns_directory),
  /// where it only adds checkpoints.
  explicit Checkpointer(std::filesystem::path storage, bool owned = true) : storage_(std::move(storage)), owned_(owned) {}

  /// Removes what a crash mid-write leaves (`.tmp-*` directories, `.latest.tmp`); run at the start
  /// of training, before anything is written. Returns what it removed.
  DTL_INLINE std::vector<std::filesystem::path> clean_temporaries();

  /// Where the checkpoint `uuid` of this storage lives (complete once its write has finished).
  [[nodiscard]] std::filesystem::path checkpoint_dir(const std::string& uuid) const { return storage_ / uuid; }

  /// Whether this storage has a complete checkpoint that `latest` points to.
  [[nodiscard]] bool has_latest() const { return owned_ && std::filesystem::exists(storage_ / "latest"); }

  /// `latest` (this run's newest complete checkpoint) or a checkpoint directory.
  [[nodiscard]] DTL_INLINE std::filesystem::path resolve(const std::string& what) const;

  /// Writes a checkpoint now: snapshot() then write().
  DTL_INLINE WrittenCheckpoint save(const TrialStateRefs& trial, const CheckpointState& st,
                                    const NamedStates& named = {}, const CheckpointHooks& hooks = {});

  /// Takes everything a checkpoint holds, on the calling (training) thread: the state dict in
  /// Determined's layout with the named states, after hooks.save_started, its tensors copied,
  /// and the JSON files. Training may change the trial as soon as it returns.
  DTL_INLINE CheckpointSnapshot snapshot(const TrialStateRefs& trial, const CheckpointState& st,
                                         const NamedStates& named = {}, const CheckpointHooks& hooks = {});

  /// Writes a snapshot crash-safely: into a temporary directory, made durable, renamed, and
  /// `latest` moved to it last. Safe to run on another thread than snapshot() (it touches only
  /// the snapshot and the storage directory), one write at a time.
  DTL_INLINE WrittenCheckpoint write(const CheckpointSnapshot& snap);

  /// Deletes the checkpoints the policy does not keep: all but the `latest` newest and the `best`
  /// best, never the one `latest` points to. Leftovers of interrupted writes (`.tmp-*`) go too.
  /// Returns the deleted directories.
  DTL_INLINE std::vector<std::filesystem::path> collect_garbage(const RetentionPolicy& policy);

  /// Restores models, optimizers, schedulers and the RNG from `dir` (hooks.load_started first), and
  /// returns the counters and the named states. Anything missing or not matching the trial is a CheckpointError naming the
  /// file and what did not fit; nothing in the files is executed.
  DTL_INLINE CheckpointState load(const TrialStateRefs& trial, const std::filesystem::path& dir,
                                  const CheckpointHooks& hooks = {});

 private:
  /// metadata.json must be what dtl writes: an object whose steps_completed is a count, format
  /// "pickle", validation_metric (if any) a number; anything else is named.
  DTL_INLINE static nlohmann::json verify_metadata(const std::filesystem::path& dir);
  /// load_data.json, where present: an object, hparams a mapping, trial_type a string.
  DTL_INLINE static void verify_load_data(const std::filesystem::path& dir);
  /// trial_state.json's per-rank states (RNG, data position), checked before any is applied.
  DTL_INLINE static void verify_rank_states(const nlohmann::json& ranks, const std::filesystem::path& file);

  std::set<std::string> warned_foreign_;  // foreign directories named once
  std::filesystem::path storage_;
  bool owned_ = true;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/checkpoint/checkpoint-inl.hpp>
#endif

#endif  // DTL_CHECKPOINT_CHECKPOINT_HPP
