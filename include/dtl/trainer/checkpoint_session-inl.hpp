// dtl — the non-template definitions of <dtl/trainer/checkpoint_session.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_TRAINER_CHECKPOINT_SESSION_INL_HPP
#define DTL_TRAINER_CHECKPOINT_SESSION_INL_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/trainer/checkpoint_session.hpp>

#include <dtl/checkpoint/ivalue_json.hpp>
#include <dtl/distributed/on_chief.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

DTL_INLINE CheckpointSession::CheckpointSession(PyTorchTrialContext& ctx, Console& console, const Callbacks& callbacks,
                                                std::shared_ptr<CheckpointStore> store,
                                                CheckpointSessionOptions options,
                                                std::function<void(const std::string&, std::int64_t)> completed)
    : ctx_(ctx),
      console_(console),
      callbacks_(callbacks),
      store_(std::move(store)),
      opts_(options),
      completed_(std::move(completed)) {}

DTL_INLINE CheckpointSession::~CheckpointSession() = default;

DTL_INLINE std::optional<std::filesystem::path> CheckpointSession::starting_point(std::optional<std::filesystem::path> given) {
  if (ctx_.distributed().is_chief())
    for (const auto& p : checkpointer().clean_temporaries())
      console_.warn("removed " + p.string() + ", left by an interrupted checkpoint write");
  const auto& r = ctx_.run_overrides().resume;
  if (!r) return given;
  // With no checkpoint yet, `latest` starts from the beginning (a restart-on-failure loop can
  // always pass it).
  auto resolved = on_chief(
      ctx_.distributed(),
      [&]() -> nlohmann::json {
        if (*r == "latest" && !checkpointer().has_latest()) return nullptr;
        return checkpointer().resolve(*r).string();
      },
      "resolving --resume " + *r);
  if (!resolved.is_null()) return std::filesystem::path(resolved.template get<std::string>());
  console_.warn("--resume latest: no checkpoint in " + store_->directory().string() +
                " yet; starting from the beginning");
  return std::nullopt;
}

DTL_INLINE CheckpointSession::Resumed CheckpointSession::load(const std::filesystem::path& dir) {
  CheckpointHooks hooks{.load_started = [this](const c10::impl::GenericDict& d) {
    notify(callbacks_, &PyTorchCallback::on_checkpoint_load_start, d);
  }};
  Resumed out{checkpointer().load(ctx_.checkpoint_state(), dir, hooks), nullptr};
  // The callbacks after the RNG, as Determined; one the checkpoint does not know keeps its state.
  for (const auto& [name, cb] : callbacks_)
    if (const auto it = out.state.named_states.find(name); it != out.state.named_states.end())
      cb->load_state_dict(ivalue_to_json(it->second));
  out.data_position = out.state.data_position;
  restore_rank_state(out.state.ranks, out.data_position);
  loop_.broadcast_model_state();
  // A resumed trial keeps its seed, so that its data order (seeded from it) continues.
  // A seed that was asked for and differs is named; a drawn one is replaced without a word.
  if (const auto seed = out.state.trial_seed; seed && *seed != ctx_.get_trial_seed()) {
    if (loop_.trial_seed_given())
      console_.warn("resuming with the checkpoint's trial seed " + std::to_string(*seed) + ", not " +
                    std::to_string(ctx_.get_trial_seed()) + ": a resumed trial keeps its seed");
    loop_.adopt_trial_seed(*seed);
  }
  warn_changed_hparams(dir);
  console_.note("resumed from " + dir.string() + " at batch " + std::to_string(out.state.batches_trained));
  return out;
}

DTL_INLINE void CheckpointSession::save(CheckpointState st, const nlohmann::json& data_position) {
  collect();
  // What differs per rank — its RNG and its data position — goes to the chief, which writes
  // them all, so each rank resumes with its own (Determined saves only the chief's RNG).
  const auto& dist = ctx_.distributed();
  nlohmann::json mine = rank_rng_states(rng_device());
  mine["data_position"] = data_position;
  auto ranks = dist.gather(mine);
  st.data_position = data_position;
  const auto batch = st.batches_trained;
  const bool background = opts_.background;
  const auto taken = on_chief(
      dist,
      [&] {
        st.ranks = nlohmann::json(std::move(*ranks));
        NamedStates named;
        for (const auto& [name, cb] : callbacks_) named.emplace_back(name, cb->state_dict());
        CheckpointHooks hooks{.save_started = [this](c10::impl::GenericDict& d) {
          notify(callbacks_, &PyTorchCallback::on_checkpoint_save_start, d);
        }};
        auto snap = std::make_shared<CheckpointSnapshot>(
            checkpointer().snapshot(ctx_.checkpoint_state(), st, named, hooks));
        const nlohmann::json target = {{"uuid", snap->target.uuid}};
        auto job = [this, snap, batch] {
          store_->writing(snap->target.uuid);
          auto w = checkpointer().write(*snap);
          checkpointer().collect_garbage(opts_.retention);
          store_->register_checkpoint({.uuid = w.uuid, .dir = w.dir, .steps_completed = batch});
          return w;
        };
        if (background) {
          writer_.start(std::move(job));
        } else {
          job();
          notify(callbacks_, &PyTorchCallback::on_checkpoint_write_end, snap->target.dir);
        }
        return target;
      },
      "writing a checkpoint");
  pending_ = {taken.at("uuid").template get<std::string>(), batch};
  if (!background) complete();
}

DTL_INLINE void CheckpointSession::collect() {
  if (!pending_) return;
  on_chief(
      ctx_.distributed(),
      [&] {
        if (auto w = writer_.wait()) notify(callbacks_, &PyTorchCallback::on_checkpoint_write_end, w->dir);
        return nlohmann::json(nullptr);
      },
      "writing a checkpoint");
  complete();
}

DTL_INLINE Checkpointer& CheckpointSession::checkpointer() {
  if (!checkpointer_) checkpointer_.emplace(store_->directory(), store_->owns_directory());
  return *checkpointer_;
}

DTL_INLINE void CheckpointSession::complete() {
  const auto [uuid, batch] = *pending_;
  pending_.reset();
  completed_(checkpointer().checkpoint_dir(uuid).string(), batch);
  console_.note("checkpoint " + uuid + " at batch " + std::to_string(batch));
  notify(callbacks_, &PyTorchCallback::on_checkpoint_upload_end, uuid);
}

DTL_INLINE void CheckpointSession::restore_rank_state(const nlohmann::json& ranks, nlohmann::json& data_position) {
  const auto& dist = ctx_.distributed();
  if (!ranks.is_array() || ranks.empty()) return;  // an older checkpoint: the chief's RNG for all
  const auto saved_world = static_cast<std::int64_t>(ranks.size());
  if (saved_world != dist.size) {
    console_.warn("the checkpoint was written by " + std::to_string(saved_world) + " ranks, this run has " +
                  std::to_string(dist.size) +
                  ": the global batch and the data position carry over, the data is "
                  "re-sharded, and ranks without a saved RNG state start from the chief's");
    data_position = nullptr;
  }
  if (dist.rank >= saved_world) return;
  const auto& me = ranks.at(static_cast<std::size_t>(dist.rank));
  restore_rank_rng_states(me, rng_device());
  if (saved_world == dist.size) data_position = me.value("data_position", nlohmann::json(nullptr));
}

DTL_INLINE void CheckpointSession::warn_changed_hparams(const std::filesystem::path& dir) {
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(read_file(dir / "load_data.json")).value("hparams", nlohmann::json());
  } catch (const std::exception&) {
    return;  // an older or foreign checkpoint: nothing to compare with
  }
  if (!saved.is_object()) return;
  const auto& now = ctx_.get_hparams();
  nlohmann::json changed = nlohmann::json::object();
  std::string list;
  auto add = [&](const std::string& k, const nlohmann::json& given, const nlohmann::json& ckpt) {
    changed[k] = {{"given", given}, {"checkpoint", ckpt}};
    list += (list.empty() ? "" : ", ") + k + " = " + (given.is_null() ? std::string("(none)") : given.dump()) +
            " (checkpoint: " + (ckpt.is_null() ? std::string("(none)") : ckpt.dump()) + ")";
  };
  for (const auto& [k, v] : now.items())
    if (!saved.contains(k) || saved[k] != v) add(k, v, saved.value(k, nlohmann::json()));
  for (const auto& [k, v] : saved.items())
    if (!now.contains(k)) add(k, nullptr, v);
  if (changed.empty()) return;
  console_.warn("resuming with hyperparameters that differ from the checkpoint's: " + list +
                ". The trial was built with the values given now; what the checkpoint restores keeps the "
                "checkpoint's values (each optimizer group's learning rate and momentum, LR schedulers, "
                "callbacks). Set those in code after the load to change them, or start a new run");
  loop_.set_resume_notes({{"hparams_changed_at_resume", std::move(changed)}, {"resumed_from", dir.string()}});
}
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_CHECKPOINT_SESSION_INL_HPP
