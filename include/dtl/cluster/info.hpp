// dtl — what a Determined trial container tells its process: ClusterInfo, read from the DET_*
// environment (or /run/determined/info/*.json), the trial's hyperparameters, seed, experiment
// config, checkpoint storage and the checkpoint to resume from. Torch-free.
#ifndef DTL_CLUSTER_INFO_HPP
#define DTL_CLUSTER_INFO_HPP

#include <dtl/config/experiment_config.hpp>
#include <dtl/detail/compiled_lib.hpp>
#include <dtl/errors.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dtl {
inline namespace DTL_ABI {

/// A Determined trial's identity and settings, as its master hands them to the container
/// (Determined's `det.get_cluster_info()`). dtl::init reads it; `ctx.cluster_info()` returns it
/// (null outside a cluster).
struct ClusterInfo {
  std::string master_url;     ///< DET_MASTER, e.g. https://master:8443
  std::string session_token;  ///< DET_SESSION_TOKEN, the allocation's token
  std::string task_id;        ///< DET_TASK_ID
  std::string allocation_id;  ///< DET_ALLOCATION_ID
  std::int64_t trial_id = 0;
  std::int64_t trial_run_id = 0;  ///< the master rejects metrics of any other run
  std::int64_t experiment_id = 0;
  std::uint64_t trial_seed = 0;     ///< DET_TRIAL_SEED
  std::int64_t steps_completed = 0;  ///< DET_STEPS_COMPLETED
  nlohmann::json hparams = nlohmann::json::object();  ///< DET_HPARAMS, the searcher's sample
  ExperimentConfig config;                            ///< DET_EXPERIMENT_CONFIG (Determined-only keys dropped)
  std::optional<std::string> latest_checkpoint;       ///< DET_LATEST_CHECKPOINT: a uuid to resume from
  std::string cert_file;  ///< DET_MASTER_CERT_FILE: the master's certificate, or "noverify"
  std::string cert_name;  ///< DET_MASTER_CERT_NAME: the name the certificate is checked against
  /// Where the experiment's checkpoint storage is, inside this container: shared_fs's
  /// /determined_shared_fs[/storage_path], or directory's container_path.
  std::filesystem::path checkpoint_dir;
  nlohmann::json checkpoint_storage = nlohmann::json::object();  ///< the config's, sent to /runs/start
};

namespace detail {

/// The container path of a shared_fs storage (Determined's SHARED_FS_CONTAINER_PATH); the
/// environment's DTL_SHARED_FS_CONTAINER_PATH replaces it (tests, unusual mounts).
DTL_INLINE std::filesystem::path shared_fs_container_path();

/// Where `checkpoint_storage` puts checkpoints inside the container (Determined's
/// _full_storage_path); a type dtl cannot write (s3, gcs, azure) is a ConfigError naming it.
DTL_INLINE std::filesystem::path checkpoint_directory(const nlohmann::json& storage);

/// The trial's ClusterInfo when this process runs in a Determined trial container (DET_MASTER
/// and DET_TRIAL_ID set, or /run/determined/info/cluster.json present); nullopt elsewhere. A
/// container that gives some of the variables but not all is a ConfigError naming the missing.
DTL_INLINE std::optional<ClusterInfo> cluster_info_from_environment();

/// DET_MASTER checked where it is read: http or https, a host, a port from 1 to 65535 if any
/// (a malformed one was retried for the whole budget though it could never work). ConfigError.
DTL_INLINE void check_master_url(const std::string& url, const std::string& given);

/// One URL path segment, percent-encoded (an id from the environment goes into a request's path).
DTL_INLINE std::string url_segment(std::string_view s);

/// DET_EXPERIMENT_CONFIG as dtl's ExperimentConfig: the master's expconf has every key filled
/// in, some of which a local config never has; those are dropped before the usual checks.
DTL_INLINE ExperimentConfig cluster_experiment_config(nlohmann::json expconf);

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/cluster/info-inl.hpp>
#endif

#endif  // DTL_CLUSTER_INFO_HPP
