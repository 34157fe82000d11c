// dtl — the non-template definitions of <dtl/cluster/info.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CLUSTER_INFO_INL_HPP
#define DTL_CLUSTER_INFO_INL_HPP

#include <dtl/cluster/info.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace cluster_env {

inline const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

inline nlohmann::json parse(std::string_view text, const std::string& what) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw ConfigError("dtl: " + what + " is not valid JSON (the Determined container sets it)");
  return j;
}

inline std::int64_t to_int(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    std::int64_t out = 0;
    const auto* end = s.data() + s.size();
    if (auto [p, ec] = std::from_chars(s.data(), end, out); ec == std::errc{} && p == end) return out;
  }
  throw ConfigError("dtl: " + what + " is not an integer (got " + v.dump() + ")");
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace cluster_env

DTL_INLINE std::filesystem::path shared_fs_container_path() {
  if (const char* p = cluster_env::get("DTL_SHARED_FS_CONTAINER_PATH")) return p;
  return "/determined_shared_fs";
}

DTL_INLINE std::filesystem::path checkpoint_directory(const nlohmann::json& storage) {
  const std::string type = storage.is_object() && storage.contains("type") && storage["type"].is_string()
                               ? storage["type"].get<std::string>()
                               : "";
  if (type == "shared_fs") {
    const auto host = storage.value("host_path", std::string());
    if (host.empty() || host.front() != '/')
      throw ConfigError("dtl: checkpoint_storage.host_path must be an absolute path (got \"" + host + "\")");
    const auto base = shared_fs_container_path();
    if (!storage.contains("storage_path") || storage["storage_path"].is_null()) return base;
    // Determined's rule: storage_path is relative to host_path (or absolute inside it).
    const auto full = (std::filesystem::path(host) / storage["storage_path"].get<std::string>()).lexically_normal();
    const auto rel = full.lexically_relative(host);
    if (rel.empty() || *rel.begin() == "..")
      throw ConfigError("dtl: checkpoint_storage.storage_path " + storage["storage_path"].dump() +
                        " is not inside host_path " + host + "; make it a subdirectory of host_path");
    return rel == "." ? base : base / rel;
  }
  if (type == "directory") {
    const auto p = storage.value("container_path", std::string());
    if (p.empty()) throw ConfigError("dtl: checkpoint_storage of type directory needs container_path");
    return p;
  }
  throw ConfigError("dtl: checkpoint_storage type \"" + type +
                    "\" is not one dtl writes to yet: dtl stores checkpoints on shared_fs or directory "
                    "storage; use one of those in the experiment config (s3, gcs and azure are "
                    "docs/cluster.md's open item)");
}

DTL_INLINE ExperimentConfig cluster_experiment_config(nlohmann::json expconf) {
  if (!expconf.is_object()) throw ConfigError("dtl: DET_EXPERIMENT_CONFIG is not a JSON object");
  for (auto it = expconf.begin(); it != expconf.end();) {
    const bool known = std::find(experiment_config_keys.begin(), experiment_config_keys.end(), it.key()) !=
                       experiment_config_keys.end();
    // The master writes every key, null where unset: a null is "not given" to dtl's checks.
    it = known && !it->is_null() ? std::next(it) : expconf.erase(it);
  }
  // The sampled values come in DET_HPARAMS; the config's search spaces are the master's business.
  expconf.erase("hyperparameters");
  // What Determined's Trainer does not read on a cluster either (fit's arguments decide), and
  // the master fills with defaults that would override them here: the legacy periods, the
  // checkpoint policy, searcher.max_length (deprecated in 0.38), a records_per_epoch of 0, and
  // the retention counts (the master's checkpoint GC applies those).
  for (auto key : {"min_validation_period", "min_checkpoint_period", "checkpoint_policy"}) expconf.erase(key);
  if (expconf.contains("records_per_epoch") && expconf["records_per_epoch"] == 0) expconf.erase("records_per_epoch");
  if (expconf.contains("searcher") && expconf["searcher"].is_object()) expconf["searcher"].erase("max_length");
  if (expconf.contains("checkpoint_storage") && expconf["checkpoint_storage"].is_object())
    for (auto key : {"save_trial_latest", "save_trial_best", "save_experiment_best"})
      expconf["checkpoint_storage"].erase(key);
  ExperimentConfig cfg{std::move(expconf), "DET_EXPERIMENT_CONFIG"};
  validate_experiment_config(cfg);
  return cfg;
}

namespace cluster_env {

/// The variables Determined's task spec sets (master/pkg/tasks), each with its key in the files
/// prep_container writes under /run/determined/info.
inline constexpr std::pair<const char*, const char*> trial_variables[] = {
    {"DET_MASTER", "master_url"},
    {"DET_SESSION_TOKEN", "session_token"},
    {"DET_TASK_ID", "task_id"},
    {"DET_ALLOCATION_ID", "allocation_id"},
    {"DET_TRIAL_ID", "trial_id"},
    {"DET_TRIAL_RUN_ID", "trial_run_id"},
    {"DET_EXPERIMENT_ID", "experiment_id"},
    {"DET_TRIAL_SEED", "trial_seed"},
    {"DET_HPARAMS", "hparams"},
    {"DET_EXPERIMENT_CONFIG", "config"},
    {"DET_STEPS_COMPLETED", "steps_completed"},
};

/// The trial_variables that are set, under their keys; `missing` gets the names of the others.
inline nlohmann::json read_variables(std::vector<std::string>& missing) {
  nlohmann::json v = nlohmann::json::object();
  for (const auto& [env, key] : trial_variables) {
    if (const char* value = get(env))
      v[key] = value;
    else
      missing.emplace_back(env);
  }
  return v;
}

/// The same values from prep_container's files, for a custom launcher that sets no variables;
/// none when there are no files or they describe no trial. `missing` becomes the keys they lack.
inline std::optional<nlohmann::json> read_info_files(std::vector<std::string>& missing) {
  const std::filesystem::path info = "/run/determined/info";
  std::error_code ec;
  if (!std::filesystem::exists(info / "cluster.json", ec)) return std::nullopt;
  const auto cluster =
      cluster_env::parse(cluster_env::read_text(info / "cluster.json"), (info / "cluster.json").string());
  const auto trial = cluster_env::parse(cluster_env::read_text(info / "trial.json"), (info / "trial.json").string());
  if (cluster.value("task_type", "") != "TRIAL") return std::nullopt;  // a notebook, a command
  nlohmann::json v = nlohmann::json::object();
  for (auto k : {"master_url", "session_token", "task_id", "allocation_id"})
    if (cluster.contains(k)) v[k] = cluster[k];
  if (cluster.contains("latest_checkpoint") && cluster["latest_checkpoint"].is_string())
    v["latest_checkpoint"] = cluster["latest_checkpoint"];
  for (auto k : {"trial_id", "trial_run_id", "experiment_id", "trial_seed", "hparams", "config", "steps_completed"})
    if (trial.contains(k)) v[k] = trial[k];
  if (!trial.contains("trial_run_id") && trial.contains("_trial_run_id")) v["trial_run_id"] = trial["_trial_run_id"];
  missing.clear();
  for (const auto& [env, key] : trial_variables)
    if (!v.contains(key)) missing.emplace_back(std::string(key) + " (in " + info.string() + ")");
  return v;
}

/// A trial container must set every value; `missing` names those it lacks.
inline void require_all(const std::vector<std::string>& missing) {
  if (missing.empty()) return;
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  throw ConfigError("dtl: this looks like a Determined trial container (DET_MASTER or DET_TRIAL_ID is set), but " +
                    list +
                    " is missing; run the trial as the experiment's entrypoint, or unset DET_MASTER and "
                    "DET_TRIAL_ID to train outside the cluster");
}

/// The master's address as requests use it: without a trailing '/', http:// unless it names a
/// scheme; checked.
inline std::string master_address(const std::string& given) {
  std::string url = given;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.find("://") == std::string::npos) url = "http://" + url;
  check_master_url(url, given);
  return url;
}

/// DET_SESSION_TOKEN, which must hold no control character.
inline void check_session_token(const std::string& token) {
  // A control character (CR/LF) in the token would become another header line of every request.
  for (std::size_t i = 0; i < token.size(); ++i)
    if (const auto c = static_cast<unsigned char>(token[i]); c < 0x20 || c == 0x7f)
      throw ConfigError("dtl: DET_SESSION_TOKEN holds a control character (byte " + std::to_string(c) + " at position " +
                        std::to_string(i) + "), which no token the master issues does; check how the environment was set");
}

/// The trial's ClusterInfo from its values (every key of trial_variables present), each checked.
inline ClusterInfo cluster_info_from_values(nlohmann::json v) {
  ClusterInfo out;
  auto str = [&](const char* k) { return v[k].is_string() ? v[k].get<std::string>() : v[k].dump(); };
  out.master_url = master_address(str("master_url"));
  out.session_token = str("session_token");
  check_session_token(out.session_token);
  out.task_id = str("task_id");
  out.allocation_id = str("allocation_id");
  out.trial_id = cluster_env::to_int(v["trial_id"], "DET_TRIAL_ID");
  out.trial_run_id = cluster_env::to_int(v["trial_run_id"], "DET_TRIAL_RUN_ID");
  out.experiment_id = cluster_env::to_int(v["experiment_id"], "DET_EXPERIMENT_ID");
  const auto seed = cluster_env::to_int(v["trial_seed"], "DET_TRIAL_SEED");
  if (seed < 0) throw ConfigError("dtl: DET_TRIAL_SEED is negative (" + std::to_string(seed) + ")");
  out.trial_seed = static_cast<std::uint64_t>(seed);
  out.steps_completed = cluster_env::to_int(v["steps_completed"], "DET_STEPS_COMPLETED");
  out.hparams = v["hparams"].is_string() ? cluster_env::parse(v["hparams"].get<std::string>(), "DET_HPARAMS") : v["hparams"];
  if (!out.hparams.is_object()) throw ConfigError("dtl: DET_HPARAMS is not a JSON object");
  auto expconf = v["config"].is_string() ? cluster_env::parse(v["config"].get<std::string>(), "DET_EXPERIMENT_CONFIG")
                                         : v["config"];
  if (expconf.is_object() && expconf.contains("checkpoint_storage") && expconf["checkpoint_storage"].is_object())
    out.checkpoint_storage = expconf["checkpoint_storage"];
  out.config = cluster_experiment_config(std::move(expconf));
  out.checkpoint_dir = checkpoint_directory(out.checkpoint_storage);
  if (const char* c = get("DET_LATEST_CHECKPOINT"))
    out.latest_checkpoint = c;
  else if (v.contains("latest_checkpoint"))
    out.latest_checkpoint = v["latest_checkpoint"].get<std::string>();
  if (const char* c = get("DET_MASTER_CERT_FILE")) out.cert_file = c;
  if (const char* c = get("DET_MASTER_CERT_NAME")) out.cert_name = c;
  return out;
}

}  // namespace cluster_env

DTL_INLINE std::optional<ClusterInfo> cluster_info_from_environment() {
  using cluster_env::get;
  // The variables first; prep_container writes the same into /run/determined/info, read when the
  // variables are absent (a custom launcher).
  std::vector<std::string> missing;
  nlohmann::json v = cluster_env::read_variables(missing);
  if (!get("DET_MASTER") && !get("DET_TRIAL_ID")) {
    auto from_files = cluster_env::read_info_files(missing);
    if (!from_files) return std::nullopt;
    v = std::move(*from_files);
  } else if (const char* t = get("DET_TASK_TYPE"); t && std::string_view(t) != "TRIAL") {
    return std::nullopt;  // a notebook or command on the cluster runs like a local program
  }
  cluster_env::require_all(missing);
  return cluster_env::cluster_info_from_values(std::move(v));
}

DTL_INLINE void check_master_url(const std::string& url, const std::string& given) {
  auto fail = [&](const std::string& why) {
    throw ConfigError("dtl: DET_MASTER '" + given + "' is not a master's address (" + why +
                      "); it must be http[s]://HOST[:PORT], as Determined sets it in a trial container");
  };
  const auto scheme_end = url.find("://");
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") fail("the scheme '" + scheme + "' is neither http nor https");
  const std::string rest = url.substr(scheme_end + 3);
  const std::string authority = rest.substr(0, rest.find('/'));
  for (const char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) fail("it holds a space or a control character");
  std::string host = authority;
  std::string port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const auto close = authority.find(']');
    if (close == std::string::npos) fail("an unclosed '[' in the host");
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') fail("characters after the IPv6 address");
      port = authority.substr(close + 2);
      if (port.empty()) fail("an empty port");
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) fail("an empty port");
  }
  if (host.empty()) fail("no host");
  if (host.find('@') != std::string::npos) fail("credentials in the address");
  if (!port.empty()) {
    const bool digits = port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stol(port) < 1 || std::stol(port) > 65535) fail("the port '" + port + "' is not from 1 to 65535");
  }
}

DTL_INLINE std::string url_segment(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CLUSTER_INFO_INL_HPP
