// What a Determined trial container tells dtl (torch-free): the DET_* environment read into
// ClusterInfo, the experiment config as a cluster trial uses it, where checkpoints go on its
// storage, and the JSON the master is sent (non-finite values as Determined's client writes them).
#include <dtl/cluster/info.hpp>
#include <dtl/cluster/master.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <regex>
#include <string>

// After dtl's headers, as in every test: were glog ever pulled in, its CHECK must not win.
#include <doctest/doctest.h>

#include "../support/errors.hpp"

namespace {

using test_support::contains;
using test_support::error_of;

using Env = std::map<std::string, std::string>;

/// Sets the variables for its lifetime, and clears every DET_* variable it knows before and after.
class TrialEnvironment {
 public:
  explicit TrialEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    clear();
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~TrialEnvironment() { clear(); }

 private:
  static void clear() {
    for (auto k : {"DET_MASTER", "DET_SESSION_TOKEN", "DET_TASK_ID", "DET_ALLOCATION_ID", "DET_TRIAL_ID",
                   "DET_TRIAL_RUN_ID", "DET_EXPERIMENT_ID", "DET_TRIAL_SEED", "DET_HPARAMS", "DET_EXPERIMENT_CONFIG",
                   "DET_STEPS_COMPLETED", "DET_LATEST_CHECKPOINT", "DET_TASK_TYPE", "DET_MASTER_CERT_FILE",
                   "DET_MASTER_CERT_NAME", "DTL_SHARED_FS_CONTAINER_PATH", "DTL_MASTER_RETRY_SECONDS"})
      ::unsetenv(k);
  }
  std::map<std::string, std::string> vars_;
};

std::map<std::string, std::string> full_environment() {
  // What a master's expconf looks like: every key filled in, defaults included.
  const std::string config = R"({
    "name": "mnist", "description": "", "entrypoint": "python3 -m determined.launch.torch_distributed ./train",
    "hyperparameters": {"lr": {"type": "double", "minval": 0.001, "maxval": 0.1}},
    "searcher": {"name": "adaptive_asha", "metric": "accuracy", "smaller_is_better": false, "max_trials": 16,
                 "max_time": 1000, "time_metric": "batches", "max_length": {"batches": 1000}},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/srv/det", "storage_path": "ckpts",
                           "propagation": "rprivate", "save_experiment_best": 0, "save_trial_best": 1,
                           "save_trial_latest": 1},
    "checkpoint_policy": "best", "min_validation_period": {"batches": 0}, "min_checkpoint_period": {"batches": 0},
    "records_per_epoch": 0, "max_restarts": 5, "scheduling_unit": 100, "resources": {"slots_per_trial": 2},
    "reproducibility": {"experiment_seed": 1700000000}, "preemption_timeout": 3600,
    "log_policies": [], "optimizations": {"aggregation_frequency": 1}, "workspace": "Uncategorized",
    "project": "Uncategorized", "some_future_key": {"x": 1}, "tensorboard_storage": null})";
  return {{"DET_MASTER", "https://master.example:8443/"},
          {"DET_SESSION_TOKEN", "tok"},
          {"DET_TASK_ID", "7.abcd"},
          {"DET_ALLOCATION_ID", "7.abcd.2"},
          {"DET_TRIAL_ID", "42"},
          {"DET_TRIAL_RUN_ID", "2"},
          {"DET_EXPERIMENT_ID", "7"},
          {"DET_TRIAL_SEED", "1234567"},
          {"DET_HPARAMS", R"({"lr": 0.0316, "global_batch_size": 64})"},
          {"DET_EXPERIMENT_CONFIG", config},
          {"DET_STEPS_COMPLETED", "300"},
          {"DET_LATEST_CHECKPOINT", "0b5f1a3c-uuid"},
          {"DET_TASK_TYPE", "TRIAL"},
          {"DTL_SHARED_FS_CONTAINER_PATH", "/mnt/shared"}};
}

}  // namespace

TEST_CASE("outside a cluster there is no ClusterInfo") {
  TrialEnvironment env(Env{});
  CHECK_FALSE(dtl::detail::cluster_info_from_environment().has_value());
}

TEST_CASE("a trial container's environment becomes ClusterInfo") {
  TrialEnvironment env(full_environment());
  const auto info = dtl::detail::cluster_info_from_environment();
  REQUIRE(info.has_value());
  CHECK(info->master_url == "https://master.example:8443");  // the trailing slash dropped
  CHECK(info->session_token == "tok");
  CHECK(info->allocation_id == "7.abcd.2");
  CHECK(info->trial_id == 42);
  CHECK(info->trial_run_id == 2);
  CHECK(info->experiment_id == 7);
  CHECK(info->trial_seed == 1234567u);
  CHECK(info->steps_completed == 300);
  CHECK(info->hparams["lr"] == 0.0316);
  REQUIRE(info->latest_checkpoint.has_value());
  CHECK(*info->latest_checkpoint == "0b5f1a3c-uuid");
  // shared_fs: the bind mount (here replaced) plus storage_path.
  CHECK(info->checkpoint_dir == std::filesystem::path("/mnt/shared/ckpts"));
  // The config: the searcher's metric is the trial's; what Determined's Trainer ignores on a
  // cluster (and the master fills with defaults) is gone, so fit's arguments decide.
  const auto& cfg = info->config;
  CHECK(cfg.searcher_metric() == "accuracy");
  CHECK_FALSE(cfg.smaller_is_better());
  CHECK_FALSE(cfg.checkpoint_policy().has_value());
  CHECK_FALSE(cfg.min_validation_period().has_value());
  CHECK_FALSE(cfg.max_length().has_value());
  CHECK_FALSE(cfg.records_per_epoch().has_value());
  CHECK_FALSE(cfg.save_trial_latest().has_value());
  CHECK(cfg.slots_per_trial() == 2);
  CHECK_FALSE(cfg.raw.contains("some_future_key"));
  CHECK_FALSE(cfg.raw.contains("hyperparameters"));
  CHECK(info->checkpoint_storage["storage_path"] == "ckpts");
}

TEST_CASE("a partial trial environment is an error naming what is missing") {
  auto vars = full_environment();
  vars.erase("DET_SESSION_TOKEN");
  vars.erase("DET_HPARAMS");
  TrialEnvironment env(vars);
  const auto e = error_of<dtl::ConfigError>([] { (void)dtl::detail::cluster_info_from_environment(); });
  CHECK(contains(e, "DET_SESSION_TOKEN"));
  CHECK(contains(e, "DET_HPARAMS"));
  CHECK(contains(e, "unset DET_MASTER and DET_TRIAL_ID"));
}

TEST_CASE("a notebook or command on the cluster is not a trial") {
  auto vars = full_environment();
  vars["DET_TASK_TYPE"] = "NOTEBOOK";
  TrialEnvironment env(vars);
  CHECK_FALSE(dtl::detail::cluster_info_from_environment().has_value());
}

TEST_CASE("a DET_MASTER that can never work, or a token with a control character, fails at once") {
  auto with = [](const char* key, const std::string& value) {
    auto vars = full_environment();
    vars[key] = value;
    TrialEnvironment env(vars);
    return error_of<dtl::ConfigError>([] { (void)dtl::detail::cluster_info_from_environment(); });
  };
  // Round three: each of these was retried for the whole DTL_MASTER_RETRY_SECONDS budget.
  CHECK(contains(with("DET_MASTER", "http://master:99999"), "the port '99999' is not from 1 to 65535"));
  CHECK(contains(with("DET_MASTER", "http://master:80a"), "the port '80a'"));
  CHECK(contains(with("DET_MASTER", "http://master:"), "an empty port"));
  CHECK(contains(with("DET_MASTER", "ftp://master:21"), "the scheme 'ftp' is neither http nor https"));
  CHECK(contains(with("DET_MASTER", "http://:8080"), "no host"));
  CHECK(contains(with("DET_MASTER", "http://mas ter:8080"), "a space or a control character"));
  CHECK(contains(with("DET_MASTER", "http://[::1:8080"), "an unclosed '['"));
  CHECK(contains(with("DET_MASTER", "http://master:99999"), "DET_MASTER 'http://master:99999' is not a master's address"));
  for (const char* ok : {"master:8080", "http://10.0.0.1:8080/", "https://[::1]:8443", "https://master.example"}) {
    auto vars = full_environment();
    vars["DET_MASTER"] = ok;
    TrialEnvironment env(vars);
    CHECK_NOTHROW((void)dtl::detail::cluster_info_from_environment());
  }
  // A token with CR/LF would have become another header of every request.
  CHECK(contains(with("DET_SESSION_TOKEN", "tok\r\nX-Evil: 1"), "DET_SESSION_TOKEN holds a control character (byte 13 at position 3)"));
  // Ids go into request paths escaped.
  CHECK(dtl::detail::url_segment("7.abcd.2") == "7.abcd.2");
  CHECK(dtl::detail::url_segment("a/b c?d") == "a%2Fb%20c%3Fd");
}

TEST_CASE("malformed values are named") {
  auto vars = full_environment();
  vars["DET_TRIAL_RUN_ID"] = "two";
  {
    TrialEnvironment env(vars);
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)dtl::detail::cluster_info_from_environment(); }),
                   "DET_TRIAL_RUN_ID is not an integer"));
  }
  vars = full_environment();
  vars["DET_HPARAMS"] = "{lr: 1";
  {
    TrialEnvironment env(vars);
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)dtl::detail::cluster_info_from_environment(); }),
                   "DET_HPARAMS is not valid JSON"));
  }
}

TEST_CASE("checkpoint storage: where a cluster trial writes") {
  TrialEnvironment env(Env{{"DTL_SHARED_FS_CONTAINER_PATH", "/c"}});
  using dtl::detail::checkpoint_directory;
  CHECK(checkpoint_directory({{"type", "shared_fs"}, {"host_path", "/h"}}) == std::filesystem::path("/c"));
  CHECK(checkpoint_directory({{"type", "shared_fs"}, {"host_path", "/h"}, {"storage_path", nullptr}}) ==
        std::filesystem::path("/c"));
  CHECK(checkpoint_directory({{"type", "shared_fs"}, {"host_path", "/h"}, {"storage_path", "a/b"}}) ==
        std::filesystem::path("/c/a/b"));
  // An absolute storage_path inside host_path is relative to it, as in Determined.
  CHECK(checkpoint_directory({{"type", "shared_fs"}, {"host_path", "/h"}, {"storage_path", "/h/x"}}) ==
        std::filesystem::path("/c/x"));
  CHECK(contains(error_of<dtl::ConfigError>([] {
                   (void)checkpoint_directory({{"type", "shared_fs"}, {"host_path", "/h"}, {"storage_path", "../x"}});
                 }),
                 "not inside host_path"));
  CHECK(checkpoint_directory({{"type", "directory"}, {"container_path", "/ckpt"}}) ==
        std::filesystem::path("/ckpt"));
  const auto s3 = error_of<dtl::ConfigError>([] { (void)checkpoint_directory({{"type", "s3"}, {"bucket", "b"}}); });
  CHECK(contains(s3, "\"s3\""));
  CHECK(contains(s3, "shared_fs or directory"));
}

TEST_CASE("the master's JSON: non-finite values as Determined's client writes them") {
  nlohmann::ordered_json m = {{"loss", std::numeric_limits<double>::quiet_NaN()},
                              {"up", std::numeric_limits<double>::infinity()},
                              {"down", -std::numeric_limits<double>::infinity()},
                              {"v", nlohmann::ordered_json::array({1.5, std::numeric_limits<double>::quiet_NaN()})},
                              {"n", 3},
                              {"s", "x"}};
  const auto j = dtl::detail::master_json(m);
  CHECK(j["loss"] == "NaN");
  CHECK(j["up"] == "Infinity");
  CHECK(j["down"] == "-Infinity");
  CHECK(j["v"][0] == 1.5);
  CHECK(j["v"][1] == "NaN");
  CHECK(j["n"] == 3);
  CHECK(j["s"] == "x");
}

TEST_CASE("report times look like Python's isoformat in UTC") {
  const auto t = dtl::detail::iso_now();
  CHECK(std::regex_match(t, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)")));
}

TEST_CASE("DTL_MASTER_RETRY_SECONDS") {
  {
    TrialEnvironment env(Env{{"DTL_MASTER_RETRY_SECONDS", "2.5"}});
    CHECK(dtl::detail::master_options_from_environment().retry_budget == std::chrono::milliseconds(2500));
  }
  TrialEnvironment env(Env{{"DTL_MASTER_RETRY_SECONDS", "soon"}});
  CHECK(contains(error_of<dtl::ConfigError>([] { (void)dtl::detail::master_options_from_environment(); }),
                 "not a positive number of seconds"));
}
