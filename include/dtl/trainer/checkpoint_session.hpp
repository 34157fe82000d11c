// dtl — the checkpoint session of one fit: it owns the checkpointer, the background writer and the
// write in flight; saves (every rank's RNG and data position, written by the chief), collects a
// write at the boundaries, resolves and loads the checkpoint a run resumes from, and names the
// hyperparameters that changed since it.
#ifndef DTL_TRAINER_CHECKPOINT_SESSION_HPP
#define DTL_TRAINER_CHECKPOINT_SESSION_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/callback.hpp>
#include <dtl/checkpoint/background_writer.hpp>
#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/checkpoint/store.hpp>
#include <dtl/context.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/detail/device.hpp>
#include <dtl/log/reporter.hpp>
#include <dtl/trainer/loop_access.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

struct CheckpointSessionOptions {
  bool background = true;  ///< write off the training thread, collect at the next boundary
  RetentionPolicy retention;
};

class CheckpointSession {
 public:
  /// `completed(dir, batch)` runs on every rank when a checkpoint is complete.
  DTL_INLINE CheckpointSession(PyTorchTrialContext& ctx, Console& console, const Callbacks& callbacks,
                    std::shared_ptr<CheckpointStore> store, CheckpointSessionOptions options,
                    std::function<void(const std::string&, std::int64_t)> completed);
  DTL_INLINE ~CheckpointSession();
  CheckpointSession(const CheckpointSession&) = delete;
  CheckpointSession& operator=(const CheckpointSession&) = delete;

  /// The checkpoint this run starts from, the same on every rank (the chief resolves it): `--resume`
  /// (`latest`, or a directory) over `given` (FitOptions.latest_checkpoint); nullopt to start anew.
  /// Also clears what an interrupted write left (chief).
  DTL_INLINE std::optional<std::filesystem::path> starting_point(std::optional<std::filesystem::path> given);

  /// What a resume restores beside the trial: the counters, and this rank's data position (null
  /// when the data must be skipped to instead).
  struct Resumed {
    CheckpointState state;
    nlohmann::json data_position;
  };

  /// Restores the trial, its callbacks, this rank's RNG and the chief's weights on every rank.
  DTL_INLINE Resumed load(const std::filesystem::path& dir);

  /// Checkpoints the trial at `st` (its counters, the searcher metric of a validation at this
  /// batch) with this rank's `data_position`. Every rank calls it at the same boundary; the chief
  /// writes, in the background unless told otherwise.
  DTL_INLINE void save(CheckpointState st, const nlohmann::json& data_position);

  /// Collects the checkpoint written in the background, if one is: waits for its write, raises
  /// its failure on every rank, and runs the hooks of a complete checkpoint (on_checkpoint_write_end
  /// on the chief, on_checkpoint_upload_end on every rank). Every rank calls it at the same points.
  DTL_INLINE void collect();

 private:
  DTL_INLINE Checkpointer& checkpointer();

  DTL_INLINE void complete();

  [[nodiscard]] std::optional<torch::Device> rng_device() const {
    return rng_cuda_device(ctx_.device(), ctx_.distributed().local_rank);
  }

  /// This rank's own RNG and data position from the checkpoint's per-rank states. With another
  /// world size the data is re-sharded (the stream skips to the same global batch) and ranks
  /// the checkpoint did not have start from the chief's RNG.
  DTL_INLINE void restore_rank_state(const nlohmann::json& ranks, nlohmann::json& data_position);

  /// Hyperparameters given now that differ from the checkpoint's: named, with which value is in
  /// effect where, and recorded in the next checkpoints' load_data.json.
  DTL_INLINE void warn_changed_hparams(const std::filesystem::path& dir);

  PyTorchTrialContext& ctx_;
  LoopAccess loop_{ctx_};
  Console& console_;
  const Callbacks& callbacks_;
  std::shared_ptr<CheckpointStore> store_;
  CheckpointSessionOptions opts_;
  std::function<void(const std::string&, std::int64_t)> completed_;
  std::optional<std::pair<std::string, std::int64_t>> pending_;  // uuid and batch, until collected
  std::optional<Checkpointer> checkpointer_;
  /// After checkpointer_: destroyed first, so a write in flight finishes before what it uses goes.
  BackgroundWriter<WrittenCheckpoint> writer_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/trainer/checkpoint_session-inl.hpp>
#endif

#endif  // DTL_TRAINER_CHECKPOINT_SESSION_HPP
