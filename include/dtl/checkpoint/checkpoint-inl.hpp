// dtl — the non-template definitions of <dtl/checkpoint/checkpoint.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CHECKPOINT_CHECKPOINT_INL_HPP
#define DTL_CHECKPOINT_CHECKPOINT_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/checkpoint/checkpoint.hpp>
#include <dtl/checkpoint/ivalue_json.hpp>
#include <dtl/checkpoint/optimizer_state.hpp>
#include <dtl/checkpoint/state_dict.hpp>
#include <dtl/checkpoint/pickle.hpp>
#include <dtl/checkpoint/torch_save.hpp>
#include <dtl/checkpoint/python_rng_state.hpp>
#include <dtl/version.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace {

DTL_INLINE std::string to_hex(const torch::Tensor& bytes) {
  const auto state = bytes.contiguous();
  static constexpr char digits[] = "0123456789abcdef";
  const auto* p = state.data_ptr<std::uint8_t>();
  std::string out(static_cast<std::size_t>(state.numel()) * 2, '0');
  for (std::int64_t i = 0; i < state.numel(); ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

DTL_INLINE void set_state_from_hex(at::Generator generator, const std::string& hex, const std::string& name) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw CheckpointError("dtl: checkpoint: a per-rank " + name + " is not hex");
  };
  if (hex.size() % 2 != 0) throw CheckpointError("dtl: checkpoint: a per-rank " + name + " has an odd length");
  auto state = torch::empty({static_cast<std::int64_t>(hex.size() / 2)}, torch::kUInt8);
  auto* p = state.data_ptr<std::uint8_t>();
  for (std::size_t i = 0; i < hex.size() / 2; ++i)
    p[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  try {
    generator.set_state(state);
  } catch (const std::exception& e) {
    throw CheckpointError("dtl: checkpoint: a per-rank " + name + " does not fit this LibTorch: " + e.what());
  }
}

// The device's default generator through ATen's device-generic context: no CUDA header needed.
DTL_INLINE at::Generator cuda_generator(const torch::Device& d) { return at::globalContext().defaultGenerator(d); }

}  // namespace

DTL_INLINE nlohmann::json rank_rng_states(const std::optional<torch::Device>& cuda) {
  nlohmann::json out = {{"cpu_rng_state", to_hex(at::detail::getDefaultCPUGenerator().get_state())}};
  if (cuda) out["cuda_rng_state"] = to_hex(cuda_generator(*cuda).get_state());
  return out;
}

DTL_INLINE void restore_rank_rng_states(const nlohmann::json& saved, const std::optional<torch::Device>& cuda) {
  if (saved.contains("cpu_rng_state"))
    set_state_from_hex(at::detail::getDefaultCPUGenerator(), saved.at("cpu_rng_state").get<std::string>(),
                       "cpu_rng_state");
  if (!saved.contains("cuda_rng_state")) return;
  if (!cuda) {
    static bool warned = false;
    if (!warned)
      std::cerr << "dtl: warning: the checkpoint holds a CUDA generator state and this run has no CUDA device; "
                   "CUDA random numbers are not restored\n";
    warned = true;
    return;
  }
  set_state_from_hex(cuda_generator(*cuda), saved.at("cuda_rng_state").get<std::string>(), "cuda_rng_state");
}

DTL_INLINE std::string new_uuid4() {
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

DTL_INLINE std::vector<std::filesystem::path> Checkpointer::clean_temporaries() {
  namespace fs = std::filesystem;
  std::vector<fs::path> removed;
  std::error_code ec;
  if (!owned_ || !fs::is_directory(storage_, ec)) return removed;  // another run's write may be in flight
  for (const auto& e : fs::directory_iterator(storage_, ec)) {
    const auto name = e.path().filename().string();
    if (name.starts_with(".tmp-") || name == ".latest.tmp") {
      fs::remove_all(e.path(), ec);
      removed.push_back(e.path());
    }
  }
  return removed;
}

DTL_INLINE std::filesystem::path Checkpointer::resolve(const std::string& what) const {
  if (what != "latest") {
    if (!std::filesystem::is_directory(what))
      throw ConfigError("dtl: --resume " + what +
                        ": no such checkpoint directory (pass a checkpoint directory, e.g. "
                        "RUN/checkpoints/<uuid>, or `latest` with --run-dir RUN)");
    return what;
  }
  const auto pointer = storage_ / "latest";
  if (!std::filesystem::exists(pointer))
    throw ConfigError("dtl: --resume latest: " + pointer.string() + " does not exist (no complete checkpoint in " +
                      storage_.string() + ")");
  const std::string fix = "; dtl writes it as the name of one checkpoint directory beside it. Pass "
                          "--resume RUN/checkpoints/<uuid> to pick a checkpoint yourself, or remove " +
                          pointer.string() + " to start over";
  if (!std::filesystem::is_regular_file(pointer))
    throw CheckpointError("dtl: --resume latest: " + pointer.string() + " is not a file" + fix);
  auto uuid = read_file(pointer);
  while (!uuid.empty() && (uuid.back() == '\n' || uuid.back() == ' ' || uuid.back() == '\r')) uuid.pop_back();
  if (uuid.empty()) throw CheckpointError("dtl: --resume latest: " + pointer.string() + " is empty" + fix);
  // `latest` names a checkpoint of this run, never a path: one that leads elsewhere (`..`, `/`)
  // would resume another run's state with exit 0. An explicit --resume DIR may point anywhere.
  if (uuid.find_first_of("/\\\n") != std::string::npos || uuid == "." || uuid == "..")
    throw CheckpointError("dtl: --resume latest: " + pointer.string() + " holds \"" + uuid +
                          "\", which is not a checkpoint directory name inside " + storage_.string() + fix);
  if (!std::filesystem::is_directory(checkpoint_dir(uuid)))
    throw CheckpointError("dtl: --resume latest: " + pointer.string() + " names " + uuid + ", but " +
                          checkpoint_dir(uuid).string() + " does not exist" + fix);
  return checkpoint_dir(uuid);
}

DTL_INLINE WrittenCheckpoint Checkpointer::save(const TrialStateRefs& trial, const CheckpointState& st,
                                                const NamedStates& named, const CheckpointHooks& hooks) {
  return write(snapshot(trial, st, named, hooks));
}

namespace {

/// The models' state dicts, in wrap order.
DTL_INLINE c10::impl::GenericList model_states(const TrialStateRefs& trial) {
  c10::impl::GenericList models(c10::AnyType::get());
  for (const auto& m : trial.models) models.push_back(dtl::state_dict(*m));
  return models;
}

/// The optimizers' states in Python's layout, in wrap order. One whose type has no Python layout
/// is None there, and its LibTorch archive is added to `files` as optimizer_<i>.pt.
DTL_INLINE c10::impl::GenericList optimizer_states(const TrialStateRefs& trial,
                                                   std::vector<std::pair<std::string, std::string>>& files) {
  c10::impl::GenericList optimizers(c10::AnyType::get());
  const auto& opts = trial.optimizers;
  for (std::size_t i = 0; i < opts.size(); ++i) {
    if (auto py = python_optimizer_state(*opts[i])) {
      optimizers.push_back(*py);
    } else {
      // No Python layout for this optimizer type: LibTorch's own archive beside it.
      optimizers.push_back(c10::IValue());
      torch::serialize::OutputArchive archive;
      opts[i]->save(archive);
      std::string bytes;
      archive.save_to([&bytes](const void* data, std::size_t n) {
        bytes.append(static_cast<const char*>(data), n);
        return n;
      });
      files.emplace_back("optimizer_" + std::to_string(i) + ".pt", std::move(bytes));
    }
  }
  return optimizers;
}

/// The LR schedulers' states, in wrap order; None for one without a state dtl can save.
DTL_INLINE c10::impl::GenericList scheduler_states(const TrialStateRefs& trial) {
  c10::impl::GenericList schedulers(c10::AnyType::get());
  for (const auto& sch : trial.lr_schedulers)
    schedulers.push_back(sch.save ? json_to_ivalue(sch.save(sch.object)) : c10::IValue());
  return schedulers;
}

/// The named states as state_dict.pth's `callbacks` dict.
DTL_INLINE c10::impl::GenericDict callback_states(const NamedStates& named) {
  c10::impl::GenericDict callbacks(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [name, state] : named) callbacks.insert(name, json_to_ivalue(state));
  return callbacks;
}

/// state_dict.pth's `rng_state`: the generators' states under Determined's keys.
DTL_INLINE c10::impl::GenericDict rng_state_dict(const TrialStateRefs& trial) {
  c10::impl::GenericDict rng(c10::StringType::get(), c10::AnyType::get());
  rng.insert("cpu_rng_state", at::detail::getDefaultCPUGenerator().get_state());
  // Determined's _load restores numpy's and Python's generators unconditionally (a checkpoint
  // without them is a KeyError there): their states as seeding with the trial seed leaves them.
  auto words = [](const mt19937_key& key) {
    c10::impl::GenericList l(c10::AnyType::get());
    for (auto w : key) l.push_back(static_cast<std::int64_t>(w));
    return l;
  };
  rng.insert("np_rng_state", c10::ivalue::Tuple::create({std::string("MT19937"), words(numpy_seeded_key(trial.trial_seed)),
                                                         std::int64_t{624}, std::int64_t{0}, 0.0}));
  {
    std::vector<c10::IValue> internal;  // random.getstate()[1]: the 624 words, then the index
    for (auto w : python_random_seeded_key(trial.trial_seed)) internal.emplace_back(static_cast<std::int64_t>(w));
    internal.emplace_back(std::int64_t{624});
    rng.insert("random_rng_state",
               c10::ivalue::Tuple::create({std::int64_t{3}, c10::ivalue::Tuple::create(std::move(internal)), c10::IValue()}));
  }
  if (trial.cuda_rng_device)  // Determined's key, present when CUDA devices exist
    rng.insert("gpu_rng_state", cuda_generator(*trial.cuda_rng_device).get_state());
  return rng;
}

/// trial_state.json: where the run stands, in dtl's words.
DTL_INLINE std::string trial_state_json(const TrialStateRefs& trial, const CheckpointState& st) {
  nlohmann::json trial_state = {{"batches_trained", st.batches_trained},
                                {"epochs_trained", st.epochs_trained},
                                {"last_val", st.last_val},
                                {"last_ckpt", st.last_ckpt},
                                {"trial_seed", trial.trial_seed}};
  trial_state["best_validation"] = st.best_validation ? nlohmann::json(*st.best_validation) : nlohmann::json(nullptr);
  trial_state["data_position"] = st.data_position;
  if (!st.ranks.is_null()) trial_state["ranks"] = st.ranks;
  return trial_state.dump(2);
}

/// trial_state.pkl: Determined's own counters (vars(_TrialState), pickled), which its _load reads
/// to continue where the checkpoint was.
DTL_INLINE std::string determined_trial_state_pickle(const CheckpointState& st) {
  // trial_id 0 is a local run's (a run on a cluster is not dtl's yet).
  using pickle::Value;
  return pickle::dump(Value::dict({{"trial_id", 0},
                                   {"last_ckpt", st.last_ckpt},
                                   {"step_id", 0},
                                   {"last_val", st.last_val},
                                   {"batches_trained", st.batches_trained},
                                   {"epochs_trained", st.epochs_trained}}));
}

/// load_data.json: the trial type, the experiment config and the hyperparameters.
DTL_INLINE std::string load_data_json(const TrialStateRefs& trial) {
  nlohmann::json load_data = {{"trial_type", "PyTorchTrial"},
                              {"experiment_config", trial.experiment_config},
                              {"hparams", trial.hparams},
                              {"is_trainer", true}};
  if (trial.load_data_notes.is_object())
    for (const auto& [k, v] : trial.load_data_notes.items()) load_data[k] = v;
  return load_data.dump(2);
}

/// metadata.json: who wrote the checkpoint, and at which step.
DTL_INLINE std::string metadata_json(const CheckpointState& st) {
  nlohmann::json metadata = {{"dtl_version", DTL_VERSION_STRING},
                             {"steps_completed", st.batches_trained},
                             {"framework", std::string("torch-") + TORCH_VERSION},
                             {"format", "pickle"}};
  if (st.validation_metric) metadata["validation_metric"] = *st.validation_metric;
  return metadata.dump(2);
}

}  // namespace

DTL_INLINE CheckpointSnapshot Checkpointer::snapshot(const TrialStateRefs& trial, const CheckpointState& st,
                                                     const NamedStates& named, const CheckpointHooks& hooks) {
  CheckpointSnapshot snap;
  snap.target.uuid = new_uuid4();
  snap.target.dir = checkpoint_dir(snap.target.uuid);

  // state_dict.pth in Determined's layout, as Python's torch.save writes it (weights_only-safe).
  auto models = model_states(trial);
  auto optimizers = optimizer_states(trial, snap.files);
  auto schedulers = scheduler_states(trial);
  auto callbacks = callback_states(named);
  auto rng = rng_state_dict(trial);
  c10::impl::GenericDict root(c10::StringType::get(), c10::AnyType::get());
  root.insert("models_state_dict", models);
  root.insert("optimizers_state_dict", optimizers);
  root.insert("lr_schedulers_state_dict", schedulers);
  root.insert("callbacks", callbacks);
  for (const auto& e : trial.extra) root.insert(e.key, json_to_ivalue(e.save(e.object)));
  root.insert("rng_state", rng);
  // Determined's on_checkpoint_save_start(checkpoint): callbacks may add entries.
  if (hooks.save_started) hooks.save_started(root);
  snap.state_dict = snapshot_tensors(root);

  snap.files.emplace_back("trial_state.json", trial_state_json(trial, st));
  snap.files.emplace_back("trial_state.pkl", determined_trial_state_pickle(st));
  snap.files.emplace_back("load_data.json", load_data_json(trial));
  snap.files.emplace_back("metadata.json", metadata_json(st));
  return snap;
}

DTL_INLINE WrittenCheckpoint Checkpointer::write(const CheckpointSnapshot& snap) {
  namespace fs = std::filesystem;
  // In dtl's words, not libstdc++'s ("filesystem error: cannot create directories: ..."): a
  // directory that became unwritable loses nothing already saved.
  auto create = [&](const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw CheckpointError("dtl: checkpoint: cannot create the directory " + dir.string() + ": " + ec.message() +
                            "; make " + storage_.string() +
                            " writable (the checkpoints already there are untouched) and resume with --resume latest");
  };
  create(storage_);
  const auto tmp = storage_ / (".tmp-" + snap.target.uuid);
  create(tmp);
  save_pickle_archive(snap.state_dict, tmp / "state_dict.pth");
  for (const auto& [name, bytes] : snap.files) write_file(tmp / name, bytes);
  if (owned_) write_file(storage_ / ".latest.tmp", snap.target.uuid + "\n");
  // Crash safety with two syncs instead of eight: the data of every file (and the temporary
  // directory's entries) durable at once; then both renames, which publish the checkpoint and
  // move `latest` to it, made durable by one fsync of their directory. A journaling file
  // system commits the two renames in order, so after a crash `latest` names the old
  // checkpoint or the complete new one, never a partial one.
  sync_file_system(tmp);
  fs::rename(tmp, snap.target.dir);
  if (owned_) fs::rename(storage_ / ".latest.tmp", storage_ / "latest");
  fsync_path(storage_, true);
  return snap.target;
}

DTL_INLINE std::vector<std::filesystem::path> Checkpointer::collect_garbage(const RetentionPolicy& policy) {
  namespace fs = std::filesystem;
  std::vector<fs::path> deleted;
  if (!owned_ || !policy.latest || !fs::exists(storage_)) return deleted;  // shared storage: its owner collects
  struct Entry {
    fs::path dir;
    std::int64_t steps;
    std::optional<double> metric;
  };
  std::vector<Entry> all;
  std::optional<fs::path> pointed;
  try {
    if (fs::exists(storage_ / "latest")) pointed = resolve("latest");
  } catch (const std::exception&) {  // an unreadable pointer: delete nothing it might name
    return deleted;
  }
  for (const auto& e : fs::directory_iterator(storage_)) {
    if (!e.is_directory()) continue;
    const auto name = e.path().filename().string();
    if (name.starts_with(".tmp-")) {
      fs::remove_all(e.path());
      deleted.push_back(e.path());
      continue;
    }
    // A directory that is not a complete dtl checkpoint (someone else's, or damaged) is never
    // deleted and never stops training: it is named once and left alone.
    nlohmann::json meta = nlohmann::json::value_t::discarded;
    if (std::error_code ec; fs::exists(e.path() / "metadata.json", ec)) {
      try {
        meta = nlohmann::json::parse(read_file(e.path() / "metadata.json"), nullptr, false);
      } catch (const std::exception&) {
      }
    }
    if (meta.is_discarded() || !meta.is_object() || !meta.contains("steps_completed") ||
        !meta["steps_completed"].is_number_integer()) {
      if (warned_foreign_.insert(name).second)
        std::cerr << "dtl: warning: " << e.path().string()
                  << " is not a dtl checkpoint (no readable metadata.json); retention leaves it alone\n";
      continue;
    }
    Entry entry{e.path(), meta["steps_completed"].get<std::int64_t>(), std::nullopt};
    if (meta.contains("validation_metric") && meta["validation_metric"].is_number())
      entry.metric = meta["validation_metric"].get<double>();
    all.push_back(std::move(entry));
  }
  std::vector<const Entry*> keep;
  std::vector<const Entry*> by_time;
  for (const auto& e : all) by_time.push_back(&e);
  std::stable_sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->steps > b->steps; });
  for (std::size_t i = 0; i < by_time.size() && static_cast<std::int64_t>(i) < *policy.latest; ++i)
    keep.push_back(by_time[i]);
  std::vector<const Entry*> scored;
  for (const auto& e : all)
    if (e.metric) scored.push_back(&e);
  std::stable_sort(scored.begin(), scored.end(), [&](auto* a, auto* b) {
    return policy.smaller_is_better ? (*a->metric) < (*b->metric) : (*a->metric) > (*b->metric);
  });
  for (std::size_t i = 0; i < scored.size() && static_cast<std::int64_t>(i) < policy.best; ++i)
    keep.push_back(scored[i]);
  for (const auto& e : all) {
    const bool kept = std::find(keep.begin(), keep.end(), &e) != keep.end() || (pointed && e.dir == *pointed);
    if (kept) continue;
    fs::remove_all(e.dir);
    deleted.push_back(e.dir);
  }
  if (!deleted.empty()) fsync_path(storage_, true);
  return deleted;
}

namespace {

/// Checks that `dir` holds the files a checkpoint needs, and returns whether its trial state is
/// Determined's trial_state.pkl (instead of dtl's trial_state.json).
DTL_INLINE bool uses_determined_trial_state(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  // Determined's own checkpoints hold trial_state.pkl instead of trial_state.json; dtl writes both
  // (and names itself in metadata.json), so one of dtl's without its trial_state.json is incomplete,
  // not Determined's: resuming it from the .pkl would lose its seed and data position silently.
  const bool written_by_dtl = [&] {
    std::error_code ec;
    if (!fs::is_regular_file(dir / "metadata.json", ec)) return false;
    const auto m = nlohmann::json::parse(std::ifstream(dir / "metadata.json"), nullptr, false);
    return m.is_object() && m.contains("dtl_version");
  }();
  if (written_by_dtl && !fs::exists(dir / "trial_state.json"))
    throw CheckpointError("dtl: checkpoint " + dir.string() +
                          " is incomplete: trial_state.json is missing (dtl wrote it: the trial's seed, data position "
                          "and best validation); restore the file or resume from another checkpoint");
  const bool determined_state =
      !written_by_dtl && !fs::exists(dir / "trial_state.json") && fs::exists(dir / "trial_state.pkl");
  for (const char* f : {"metadata.json", "state_dict.pth", determined_state ? "trial_state.pkl" : "trial_state.json"})
    if (!fs::exists(dir / f))
      throw CheckpointError("dtl: checkpoint " + dir.string() + " is incomplete or not a dtl checkpoint: " + f +
                            " is missing");
  return determined_state;
}

/// The dict state_dict.pth holds; `where` names the file in errors.
DTL_INLINE c10::impl::GenericDict read_state_dict_root(const std::filesystem::path& file, const std::string& where) {
  const auto root_value = load_pickle_archive(file);
  if (!root_value.isGenericDict()) throw CheckpointError(where + " does not hold a dict");
  return root_value.toGenericDict();
}

/// Loads the saved state dicts into the trial's models, strictly, in wrap order.
DTL_INLINE void restore_models(const TrialStateRefs& trial, c10::ArrayRef<c10::IValue> models,
                               const std::filesystem::path& file, const std::string& where) {
  if (models.size() != trial.models.size())
    throw CheckpointError(where + " holds " + std::to_string(models.size()) + " models but the trial wraps " +
                          std::to_string(trial.models.size()));
  for (std::size_t i = 0; i < models.size(); ++i)
    dtl::load_state_dict(*trial.models[i], models[i], /*strict=*/true,
                         "checkpoint " + file.string() + " (model " + std::to_string(i) + ")");
}

/// Restores each optimizer from its Python-layout state, or (where that is None) from the
/// LibTorch archive optimizer_<i>.pt in `dir`.
DTL_INLINE void restore_optimizers(const TrialStateRefs& trial, c10::ArrayRef<c10::IValue> saved_opts,
                                   const std::filesystem::path& dir, const std::string& where) {
  const auto& opts = trial.optimizers;
  if (saved_opts.size() != opts.size())
    throw CheckpointError(where + " holds " + std::to_string(saved_opts.size()) + " optimizers but the trial wraps " +
                          std::to_string(opts.size()));
  for (std::size_t i = 0; i < opts.size(); ++i) {
    const std::string w = where + " (optimizer " + std::to_string(i) + ")";
    if (!saved_opts[i].isNone()) {
      if (!load_python_optimizer_state(*opts[i], saved_opts[i], w))
        throw CheckpointError(w + ": holds a Python-layout state but the trial's optimizer type has none");
      load_scheduler_group_keys(opts[i], saved_opts[i]);
    } else {
      const auto archive_file = dir / ("optimizer_" + std::to_string(i) + ".pt");
      if (!std::filesystem::exists(archive_file))
        throw CheckpointError(w + ": " + archive_file.string() + " is missing");
      torch::serialize::InputArchive archive;
      archive.load_from(archive_file.string());
      opts[i]->load(archive);
    }
  }
}

/// Restores each LR scheduler that can load a state and has one saved.
DTL_INLINE void restore_schedulers(const TrialStateRefs& trial, c10::ArrayRef<c10::IValue> saved_scheds,
                                   const std::string& where) {
  const auto& scheds = trial.lr_schedulers;
  if (saved_scheds.size() != scheds.size())
    throw CheckpointError(where + " holds " + std::to_string(saved_scheds.size()) +
                          " LR schedulers but the trial wraps " + std::to_string(scheds.size()));
  for (std::size_t i = 0; i < scheds.size(); ++i)
    if (scheds[i].load && !saved_scheds[i].isNone()) scheds[i].load(scheds[i].object, ivalue_to_json(saved_scheds[i]));
}

/// Restores the trial's other state from its keys of `root`; one without its key keeps its
/// initial state, with a warning.
DTL_INLINE void restore_extra_states(const TrialStateRefs& trial, const c10::impl::GenericDict& root,
                                     const std::string& where) {
  for (const auto& e : trial.extra) {
    if (root.contains(e.key))
      e.load(e.object, ivalue_to_json(root.at(e.key)));
    else
      std::cerr << "dtl: warning: " << where << " has no '" << e.key << "'; it keeps its initial state\n";
  }
}

/// Restores the CPU generator, and the CUDA one where both the checkpoint and the trial have it.
DTL_INLINE void restore_generators(const TrialStateRefs& trial, const c10::impl::GenericDict& rng,
                                   const std::string& where) {
  if (!rng.contains("cpu_rng_state")) throw CheckpointError(where + ": rng_state has no cpu_rng_state");
  auto generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(rng.at("cpu_rng_state").toTensor());
  if (rng.contains("gpu_rng_state") && trial.cuda_rng_device)
    cuda_generator(*trial.cuda_rng_device).set_state(rng.at("gpu_rng_state").toTensor());
}

/// The named states under `root`'s `callbacks` entry, as stored.
DTL_INLINE std::map<std::string, c10::IValue> stored_named_states(const c10::impl::GenericDict& root) {
  std::map<std::string, c10::IValue> named_states;
  if (root.contains("callbacks"))
    for (const auto& kv : root.at("callbacks").toGenericDict()) named_states.emplace(kv.key().toStringRef(), kv.value());
  return named_states;
}

/// metadata.json's steps_completed must be the trial state's batches_trained.
DTL_INLINE void verify_steps_completed(const nlohmann::json& metadata, std::int64_t batches_trained,
                                       const std::filesystem::path& dir, const std::string& state_file) {
  if (metadata.at("steps_completed").get<std::int64_t>() != batches_trained)
    throw CheckpointError("dtl: checkpoint " + dir.string() + ": metadata.json's steps_completed (" +
                          metadata.at("steps_completed").dump() + ") differs from " + state_file +
                          "'s batches_trained (" + std::to_string(batches_trained) + "): one of them was altered");
}

/// Where a Determined checkpoint's run stands, from its trial_state.pkl: vars(_TrialState), the
/// counters only. No seed (the run's own is kept), no data position (the stream skips the
/// batches trained), no per-rank states (every rank restores the chief's generator, as
/// Determined does).
DTL_INLINE CheckpointState determined_trial_state(const std::filesystem::path& dir, const nlohmann::json& metadata,
                                                  std::map<std::string, c10::IValue> named_states) {
  const auto pkl = dir / "trial_state.pkl";
  const auto value = pickle::load(read_file(pkl));
  auto count = [&](const char* key) -> std::int64_t {
    const auto* v = value.is(pickle::Kind::dict) ? value.as_dict().find(key) : nullptr;
    if (!v || !v->is(pickle::Kind::integer))
      throw CheckpointError("dtl: checkpoint " + pkl.string() + " has no int '" + key +
                            "' (not Determined's trial state)");
    return v->as_int();
  };
  CheckpointState out;
  out.batches_trained = count("batches_trained");
  out.epochs_trained = count("epochs_trained");
  out.last_val = count("last_val");
  out.last_ckpt = count("last_ckpt");
  out.named_states = std::move(named_states);
  verify_steps_completed(metadata, out.batches_trained, dir, "trial_state.pkl");
  return out;
}

/// Where the run stands, from trial_state.json's contents (its per-rank states not yet checked).
DTL_INLINE CheckpointState trial_state_from_json(const nlohmann::json& st) {
  CheckpointState out;
  out.batches_trained = st.at("batches_trained").get<std::int64_t>();
  out.epochs_trained = st.at("epochs_trained").get<std::int64_t>();
  out.last_val = st.at("last_val").get<std::int64_t>();
  out.last_ckpt = st.at("last_ckpt").get<std::int64_t>();
  if (!st.at("best_validation").is_null()) out.best_validation = st.at("best_validation").get<double>();
  out.data_position = st.value("data_position", nlohmann::json(nullptr));
  if (st.contains("trial_seed")) out.trial_seed = st["trial_seed"].get<std::uint64_t>();
  out.ranks = st.value("ranks", nlohmann::json(nullptr));
  return out;
}

}  // namespace

DTL_INLINE CheckpointState Checkpointer::load(const TrialStateRefs& trial, const std::filesystem::path& dir,
                                              const CheckpointHooks& hooks) {
  if (!std::filesystem::is_directory(dir))
    throw CheckpointError("dtl: checkpoint " + dir.string() + " does not exist (or is not a directory)");
  const bool determined_state = uses_determined_trial_state(dir);
  const auto metadata = verify_metadata(dir);
  verify_load_data(dir);
  const auto file = dir / "state_dict.pth";
  const std::string where = "dtl: checkpoint " + file.string();
  auto root = read_state_dict_root(file, where);
  auto entry = [&](const char* key) {
    if (!root.contains(key)) throw CheckpointError(where + " has no '" + key + "' entry");
    return root.at(key);
  };
  if (hooks.load_started) hooks.load_started(root);

  restore_models(trial, entry("models_state_dict").toListRef(), file, where);
  restore_optimizers(trial, entry("optimizers_state_dict").toListRef(), dir, where);
  restore_schedulers(trial, entry("lr_schedulers_state_dict").toListRef(), where);
  restore_extra_states(trial, root, where);
  restore_generators(trial, entry("rng_state").toGenericDict(), where);
  // The named states are handed back: their owners restore them after the RNG, as Determined does.
  auto named_states = stored_named_states(root);

  if (determined_state) return determined_trial_state(dir, metadata, std::move(named_states));
  try {
    const auto st = nlohmann::json::parse(read_file(dir / "trial_state.json"));
    CheckpointState out = trial_state_from_json(st);
    verify_rank_states(out.ranks, dir / "trial_state.json");
    out.named_states = std::move(named_states);
    verify_steps_completed(metadata, out.batches_trained, dir, "trial_state.json");
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError("dtl: checkpoint " + (dir / "trial_state.json").string() + " is corrupt: " + e.what());
  }
}

DTL_INLINE void Checkpointer::verify_load_data(const std::filesystem::path& dir) {
  const auto path = dir / "load_data.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;  // a checkpoint from before dtl wrote it
  const auto data = nlohmann::json::parse(read_file(path), nullptr, false);
  const std::string where = "dtl: checkpoint " + path.string();
  if (data.is_discarded() || !data.is_object()) throw CheckpointError(where + " is not a JSON object (corrupt file)");
  // null: Determined's local mode writes no hyperparameters.
  if (data.contains("hparams") && !data["hparams"].is_object() && !data["hparams"].is_null())
    throw CheckpointError(where + ": hparams is " + data["hparams"].dump() + ", not a mapping of names to values");
  if (data.contains("trial_type") && !data["trial_type"].is_string())
    throw CheckpointError(where + ": trial_type is " + data["trial_type"].dump() + ", not a string");
}

DTL_INLINE void Checkpointer::verify_rank_states(const nlohmann::json& ranks, const std::filesystem::path& file) {
  if (ranks.is_null()) return;  // a one-process run, or an older checkpoint
  const std::string where = "dtl: checkpoint " + file.string() + ": ";
  const std::string fix = "; the file was altered or damaged: resume from another checkpoint (--resume DIR)";
  if (!ranks.is_array()) throw CheckpointError(where + "ranks is " + ranks.dump() + ", not a list with one entry per rank" + fix);
  const auto cpu_state_bytes = 2 * at::detail::getDefaultCPUGenerator().get_state().numel();
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    const std::string field = "ranks[" + std::to_string(i) + "]";
    if (!r.is_object()) throw CheckpointError(where + field + " is " + r.dump() + ", not an object" + fix);
    for (const char* key : {"cpu_rng_state", "cuda_rng_state"}) {
      if (!r.contains(key)) continue;
      const auto* hex = r.at(key).get_ptr<const std::string*>();
      if (!hex || hex->find_first_not_of("0123456789abcdef") != std::string::npos || hex->size() % 2 != 0)
        throw CheckpointError(where + field + "." + key + " is not a hex string of whole bytes" + fix);
      if (std::string_view(key) == "cpu_rng_state" && static_cast<std::int64_t>(hex->size()) != cpu_state_bytes)
        throw CheckpointError(where + field + ".cpu_rng_state holds " + std::to_string(hex->size() / 2) +
                              " bytes, but this LibTorch's CPU generator state has " +
                              std::to_string(cpu_state_bytes / 2) + fix);
    }
    if (r.contains("data_position") && !r.at("data_position").is_null() && !r.at("data_position").is_object())
      throw CheckpointError(where + field + ".data_position is " + r.at("data_position").dump() + ", not an object" + fix);
  }
}

DTL_INLINE nlohmann::json Checkpointer::verify_metadata(const std::filesystem::path& dir) {
  const auto path = dir / "metadata.json";
  const auto meta = nlohmann::json::parse(read_file(path), nullptr, false);
  const std::string where = "dtl: checkpoint " + path.string();
  if (meta.is_discarded() || !meta.is_object()) throw CheckpointError(where + " is not a JSON object (corrupt file)");
  if (!meta.contains("steps_completed") || !meta["steps_completed"].is_number_integer() ||
      meta["steps_completed"].get<std::int64_t>() < 0)
    throw CheckpointError(where + ": steps_completed is missing or not a count");
  if (meta.contains("format") && meta["format"] != "pickle")
    throw CheckpointError(where + ": format is " + meta["format"].dump() + ", not \"pickle\" (not a dtl checkpoint)");
  if (meta.contains("framework") &&
      (!meta["framework"].is_string() || !meta["framework"].get_ref<const std::string&>().starts_with("torch-")))
    throw CheckpointError(where + ": framework is " + meta["framework"].dump() +
                          ", not \"torch-<version>\" (altered, or not a dtl checkpoint)");
  if (meta.contains("validation_metric") && !meta["validation_metric"].is_number())
    throw CheckpointError(where + ": validation_metric is " + meta["validation_metric"].dump() + ", not a number");
  return meta;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_CHECKPOINT_INL_HPP
