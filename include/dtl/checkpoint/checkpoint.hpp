// dtl — checkpoints: a directory <storage>/<uuid>/ in Determined's layout, written atomically
// (temporary directory, fsync, rename; the `latest` pointer moves last), and loaded back for
// resume. state_dict.pth is torch's zip-pickle container.
#ifndef DTL_CHECKPOINT_CHECKPOINT_HPP
#define DTL_CHECKPOINT_CHECKPOINT_HPP

#include <torch/torch.h>

#include <dtl/context.hpp>
#include <dtl/errors.hpp>
#include <dtl/version.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace dtl::detail {

/// The counters a checkpoint carries (Determined's trial state, plus the best validation so
/// far, which `checkpoint_policy = best` compares against after a resume).
struct CheckpointState {
  std::int64_t batches_trained = 0;
  std::int64_t epochs_trained = 0;
  std::int64_t last_val = 0;
  std::int64_t last_ckpt = 0;
  std::optional<double> best_validation;
  /// Where the training data stands (the loader's description and its sampler state), or null
  /// when unknown; the Trainer then resumes the data by skipping.
  nlohmann::json data_position;
  /// The searcher metric of the validation at this checkpoint's batch, if one ran there; what
  /// keep-best garbage collection ranks checkpoints by.
  std::optional<double> validation_metric;
};

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

inline std::string new_uuid4() {
  std::random_device rd;
  std::uint8_t b[16];
  for (auto& x : b) x = static_cast<std::uint8_t>(rd());
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);
  std::ostringstream s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s << '-';
    s << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(b[i]);
  }
  return s.str();
}

inline void fsync_path(const std::filesystem::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw std::runtime_error("dtl: checkpoint: cannot open " + p.string() + " to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("dtl: checkpoint: fsync failed for " + p.string());
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("dtl: checkpoint: cannot write " + p.string());
  }
  fsync_path(p, false);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("dtl: checkpoint: cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Grants the checkpointer the context's registries without making them public API.
struct CheckpointAccess {
  static auto& optimizers(PyTorchTrialContext& c) { return c.optimizers_; }
  static auto& lr_schedulers(PyTorchTrialContext& c) { return c.lr_schedulers_; }
};

class Checkpointer {
 public:
  explicit Checkpointer(std::filesystem::path storage) : storage_(std::move(storage)) {}

  /// `latest` (this run's newest complete checkpoint) or a checkpoint directory.
  [[nodiscard]] std::filesystem::path resolve(const std::string& what) const {
    if (what != "latest") return what;
    const auto pointer = storage_ / "latest";
    if (!std::filesystem::exists(pointer))
      throw ConfigError("dtl: --resume latest: " + pointer.string() + " does not exist (no complete checkpoint in " +
                        storage_.string() + ")");
    auto uuid = read_file(pointer);
    while (!uuid.empty() && (uuid.back() == '\n' || uuid.back() == ' ')) uuid.pop_back();
    return storage_ / uuid;
  }

  WrittenCheckpoint save(PyTorchTrialContext& ctx, const CheckpointState& st) {
    namespace fs = std::filesystem;
    fs::create_directories(storage_);
    WrittenCheckpoint w{new_uuid4(), {}};
    w.dir = storage_ / w.uuid;
    const auto tmp = storage_ / (".tmp-" + w.uuid);
    fs::create_directories(tmp);

    // state_dict.pth: models (parameter and buffer names as the modules name them) and RNG.
    c10::impl::GenericList models(c10::AnyType::get());
    for (const auto& m : ctx.models()) {
      c10::impl::GenericDict sd(c10::StringType::get(), c10::AnyType::get());
      for (const auto& p : m->named_parameters()) sd.insert(p.key(), p.value().detach().cpu());
      for (const auto& b : m->named_buffers()) sd.insert(b.key(), b.value().detach().cpu());
      models.push_back(sd);
    }
    c10::impl::GenericDict rng(c10::StringType::get(), c10::AnyType::get());
    rng.insert("cpu_rng_state", at::detail::getDefaultCPUGenerator().get_state());
    c10::impl::GenericDict root(c10::StringType::get(), c10::AnyType::get());
    root.insert("models_state_dict", models);
    root.insert("rng_state", rng);
    const auto bytes = torch::pickle_save(root);
    write_file(tmp / "state_dict.pth", std::string(bytes.begin(), bytes.end()));

    // Optimizer state through LibTorch's archive; group hyperparameters (lr) in JSON, since
    // Optimizer::load keeps the constructor's.
    nlohmann::json optim = nlohmann::json::array();
    auto& opts = CheckpointAccess::optimizers(ctx);
    for (std::size_t i = 0; i < opts.size(); ++i) {
      torch::serialize::OutputArchive archive;
      opts[i].optimizer->save(archive);
      const auto file = tmp / ("optimizer_" + std::to_string(i) + ".pt");
      archive.save_to(file.string());
      fsync_path(file, false);
      nlohmann::json lrs = nlohmann::json::array();
      for (const auto& g : opts[i].optimizer->param_groups()) lrs.push_back(g.options().get_lr());
      optim.push_back({{"lrs", lrs}});
    }
    nlohmann::json scheds = nlohmann::json::array();
    for (const auto& s : CheckpointAccess::lr_schedulers(ctx))
      scheds.push_back(s.save ? s.save(s.scheduler.get()) : nlohmann::json(nullptr));

    nlohmann::json trial_state = {{"batches_trained", st.batches_trained}, {"epochs_trained", st.epochs_trained},
                                  {"last_val", st.last_val},               {"last_ckpt", st.last_ckpt},
                                  {"trial_seed", ctx.get_trial_seed()},    {"optimizers", optim},
                                  {"lr_schedulers", scheds}};
    trial_state["best_validation"] = st.best_validation ? nlohmann::json(*st.best_validation) : nlohmann::json(nullptr);
    trial_state["data_position"] = st.data_position;
    write_file(tmp / "trial_state.json", trial_state.dump(2));
    nlohmann::json load_data = {{"trial_type", "PyTorchTrial"},
                                {"experiment_config", ctx.get_experiment_config()},
                                {"hparams", ctx.get_hparams()},
                                {"is_trainer", true}};
    write_file(tmp / "load_data.json", load_data.dump(2));
    // metadata.json last, as Determined: its presence marks the files complete.
    nlohmann::json metadata = {{"dtl_version", DTL_VERSION_STRING},
                               {"steps_completed", st.batches_trained},
                               {"framework", std::string("torch-") + TORCH_VERSION},
                               {"format", "pickle"}};
    if (st.validation_metric) metadata["validation_metric"] = *st.validation_metric;
    write_file(tmp / "metadata.json", metadata.dump(2));
    fsync_path(tmp, true);

    fs::rename(tmp, w.dir);
    fsync_path(storage_, true);
    // Move `latest` only once the checkpoint is complete and durable.
    write_file(storage_ / ".latest.tmp", w.uuid + "\n");
    fs::rename(storage_ / ".latest.tmp", storage_ / "latest");
    fsync_path(storage_, true);
    return w;
  }

  /// Deletes the checkpoints the policy does not keep: all but the `latest` newest and the `best`
  /// best, never the one `latest` points to. Leftovers of interrupted writes (`.tmp-*`) go too.
  /// Returns the deleted directories.
  std::vector<std::filesystem::path> collect_garbage(const RetentionPolicy& policy) {
    namespace fs = std::filesystem;
    std::vector<fs::path> deleted;
    if (!policy.latest || !fs::exists(storage_)) return deleted;
    struct Entry {
      fs::path dir;
      std::int64_t steps;
      std::optional<double> metric;
    };
    std::vector<Entry> all;
    std::optional<fs::path> pointed;
    if (fs::exists(storage_ / "latest")) pointed = resolve("latest");
    for (const auto& e : fs::directory_iterator(storage_)) {
      if (!e.is_directory()) continue;
      const auto name = e.path().filename().string();
      if (name.starts_with(".tmp-")) {
        fs::remove_all(e.path());
        deleted.push_back(e.path());
        continue;
      }
      if (!fs::exists(e.path() / "metadata.json")) continue;  // not ours, or incomplete: leave it
      const auto meta = nlohmann::json::parse(read_file(e.path() / "metadata.json"), nullptr, false);
      if (meta.is_discarded() || !meta.contains("steps_completed")) continue;
      Entry entry{e.path(), meta["steps_completed"].get<std::int64_t>(), std::nullopt};
      if (meta.contains("validation_metric") && meta["validation_metric"].is_number())
        entry.metric = meta["validation_metric"].get<double>();
      all.push_back(std::move(entry));
    }
    std::vector<const Entry*> keep;
    std::vector<const Entry*> by_time;
    for (const auto& e : all) by_time.push_back(&e);
    std::stable_sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->steps > b->steps; });
    for (std::size_t i = 0; i < by_time.size() && static_cast<std::int64_t>(i) < *policy.latest; ++i) keep.push_back(by_time[i]);
    std::vector<const Entry*> scored;
    for (const auto& e : all)
      if (e.metric) scored.push_back(&e);
    std::stable_sort(scored.begin(), scored.end(), [&](auto* a, auto* b) {
      return policy.smaller_is_better ? *a->metric < *b->metric : *a->metric > *b->metric;
    });
    for (std::size_t i = 0; i < scored.size() && static_cast<std::int64_t>(i) < policy.best; ++i) keep.push_back(scored[i]);
    for (const auto& e : all) {
      const bool kept = std::find(keep.begin(), keep.end(), &e) != keep.end() || (pointed && e.dir == *pointed);
      if (kept) continue;
      fs::remove_all(e.dir);
      deleted.push_back(e.dir);
    }
    if (!deleted.empty()) fsync_path(storage_, true);
    return deleted;
  }

  CheckpointState load(PyTorchTrialContext& ctx, const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    for (const char* f : {"metadata.json", "state_dict.pth", "trial_state.json"})
      if (!fs::exists(dir / f))
        throw ConfigError("dtl: checkpoint " + dir.string() + " is incomplete or not a dtl checkpoint: " + f +
                          " is missing");
    const auto bytes = read_file(dir / "state_dict.pth");
    c10::IValue root;
    try {
      root = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const std::exception& e) {
      throw ConfigError("dtl: checkpoint " + (dir / "state_dict.pth").string() + " is corrupt: " + e.what());
    }
    const auto dict = root.toGenericDict();
    const auto models = dict.at("models_state_dict").toList();
    if (models.size() != ctx.models().size())
      throw ConfigError("dtl: checkpoint " + dir.string() + " holds " + std::to_string(models.size()) +
                        " models but the trial wraps " + std::to_string(ctx.models().size()));
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < models.size(); ++i) load_module(*ctx.models()[i], models.get(i).toGenericDict(), dir, i);
    const auto rng = dict.at("rng_state").toGenericDict();
    auto generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(rng.at("cpu_rng_state").toTensor());

    const auto st = nlohmann::json::parse(read_file(dir / "trial_state.json"));
    auto& opts = CheckpointAccess::optimizers(ctx);
    const auto& saved_opts = st.at("optimizers");
    if (saved_opts.size() != opts.size())
      throw ConfigError("dtl: checkpoint " + dir.string() + " holds " + std::to_string(saved_opts.size()) +
                        " optimizers but the trial wraps " + std::to_string(opts.size()));
    for (std::size_t i = 0; i < opts.size(); ++i) {
      torch::serialize::InputArchive archive;
      archive.load_from((dir / ("optimizer_" + std::to_string(i) + ".pt")).string());
      opts[i].optimizer->load(archive);
      auto& groups = opts[i].optimizer->param_groups();
      const auto& lrs = saved_opts[i].at("lrs");
      for (std::size_t g = 0; g < groups.size() && g < lrs.size(); ++g) groups[g].options().set_lr(lrs[g].get<double>());
    }
    auto& scheds = CheckpointAccess::lr_schedulers(ctx);
    const auto& saved_scheds = st.at("lr_schedulers");
    for (std::size_t i = 0; i < scheds.size() && i < saved_scheds.size(); ++i)
      if (scheds[i].load && !saved_scheds[i].is_null()) scheds[i].load(scheds[i].scheduler.get(), saved_scheds[i]);

    CheckpointState out;
    out.batches_trained = st.at("batches_trained").get<std::int64_t>();
    out.epochs_trained = st.at("epochs_trained").get<std::int64_t>();
    out.last_val = st.at("last_val").get<std::int64_t>();
    out.last_ckpt = st.at("last_ckpt").get<std::int64_t>();
    if (!st.at("best_validation").is_null()) out.best_validation = st.at("best_validation").get<double>();
    out.data_position = st.value("data_position", nlohmann::json(nullptr));
    return out;
  }

 private:
  static void load_module(torch::nn::Module& m, const c10::impl::GenericDict& sd, const std::filesystem::path& dir,
                          std::size_t index) {
    auto assign = [&](const std::string& name, torch::Tensor& target) {
      if (!sd.contains(name))
        throw ConfigError("dtl: checkpoint " + dir.string() + ": model " + std::to_string(index) + " has no entry '" +
                          name + "' (was it saved from a different architecture?)");
      const auto src = sd.at(name).toTensor();
      if (src.sizes() != target.sizes())
        throw ConfigError("dtl: checkpoint " + dir.string() + ": model " + std::to_string(index) + " entry '" + name +
                          "' has shape " + c10::str(src.sizes()) + " but the model's is " + c10::str(target.sizes()));
      target.copy_(src);
    };
    for (auto& p : m.named_parameters()) assign(p.key(), p.value());
    for (auto& b : m.named_buffers()) assign(b.key(), b.value());
  }

  std::filesystem::path storage_;
};

}  // namespace dtl::detail

#endif  // DTL_CHECKPOINT_CHECKPOINT_HPP
