// dtl — where checkpoints are stored and registered: CheckpointStore names the directory a run's
// checkpoints are written into and hears of each complete one (a cluster registers it with its
// master). The run directory's `checkpoints/` is the default.
#ifndef DTL_CHECKPOINT_STORE_HPP
#define DTL_CHECKPOINT_STORE_HPP

#include <dtl/detail/abi.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace dtl {
inline namespace DTL_ABI {

/// A checkpoint complete on storage: every file written and durable, `latest` pointing to it.
struct StoredCheckpoint {
  std::string uuid;
  std::filesystem::path dir;        ///< directory() / uuid, holding metadata.json and state_dict.pth
  std::int64_t steps_completed = 0;
};

/// Where a run's checkpoints go. Set one with `Trainer::set_checkpoint_store`; only the chief uses
/// it. directory() must be the same for the whole run (resume reads `latest` there).
///   struct Registry : dtl::CheckpointStore {
///     std::filesystem::path dir;
///     std::filesystem::path directory() const override { return dir; }
///     void register_checkpoint(const dtl::StoredCheckpoint& c) override { log(c.uuid, c.steps_completed); }
///   };
class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  /// Checkpoints are written to directory()/<uuid>/, and directory()/latest names the newest.
  [[nodiscard]] virtual std::filesystem::path directory() const = 0;
  /// A checkpoint is complete (off the training thread when checkpoints are written in the
  /// background, before on_checkpoint_write_end). An error here fails the run; the checkpoint
  /// stays on storage.
  virtual void register_checkpoint(const StoredCheckpoint& /*checkpoint*/) {}
  /// Checkpoint `uuid` is about to be written (into directory()/.tmp-<uuid>, renamed to
  /// directory()/<uuid> when complete), on the thread that writes it. A store whose directory
  /// other runs share can leave a note claiming the temporary here, so that the next run of the
  /// same owner removes what a kill mid-write leaves (a run that owns its directory removes every
  /// `.tmp-*` there itself).
  virtual void writing(const std::string& /*uuid*/) {}
  /// Whether the run owns directory(): dtl keeps `latest` there, applies the retention policy
  /// (save_trial_latest/best) and removes interrupted writes. A directory that other runs share
  /// (a Determined experiment's checkpoint storage, whose master collects garbage) returns
  /// false: dtl then only adds its checkpoints to it.
  [[nodiscard]] virtual bool owns_directory() const { return true; }
  /// The best searcher metric validated anywhere in the experiment before this validation
  /// (checkpoint_policy `best` compares with it), asked on the chief before each validation is
  /// reported: nullopt to compare with this run's own best (the default), a value holding
  /// nullopt when the experiment has none yet.
  [[nodiscard]] virtual std::optional<std::optional<double>> experiment_best_validation() { return std::nullopt; }
};

namespace detail {

/// The default: `<run_dir>/checkpoints`, nothing registered.
class RunDirectoryStore final : public CheckpointStore {
 public:
  explicit RunDirectoryStore(std::filesystem::path run_dir) : dir_(std::move(run_dir) / "checkpoints") {}
  [[nodiscard]] std::filesystem::path directory() const override { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_STORE_HPP
