// dtl — a module's state dict as Python has it: parameter and buffer names as the modules name
// them, in Python's order (each module's parameters, then its buffers, then its children), so
// `torch.save(model.state_dict())` files move between Python and dtl in both directions.
#ifndef DTL_CHECKPOINT_STATE_DICT_HPP
#define DTL_CHECKPOINT_STATE_DICT_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/checkpoint/torch_save.hpp>
#include <dtl/errors.hpp>

#include <ATen/core/Dict.h>

#include <filesystem>
#include <string>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {

namespace detail {
inline void collect_state(const torch::nn::Module& m, const std::string& prefix, c10::impl::GenericDict& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) out.insert(prefix + p.key(), p.value().detach().cpu());
  for (const auto& b : m.named_buffers(/*recurse=*/false)) out.insert(prefix + b.key(), b.value().detach().cpu());
  for (const auto& c : m.named_children()) collect_state(*c.value(), prefix + c.key() + ".", out);
}
}  // namespace detail

/// `model.state_dict()`: every parameter and buffer, detached, on the CPU, by Python's names.
[[nodiscard]] inline c10::impl::GenericDict state_dict(const torch::nn::Module& module) {
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  detail::collect_state(module, "", out);
  return out;
}

/// `model.load_state_dict(sd, strict)`: copies each entry into the parameter or buffer of that
/// name. A missing entry, a shape mismatch, or (with `strict`) an entry the model does not have
/// is a CheckpointError listing the names — never a partial silent load. `where` names the source
/// in messages.
inline void load_state_dict(torch::nn::Module& module, const c10::IValue& sd, bool strict = true,
                            const std::string& where = "state dict") {
  if (!sd.isGenericDict()) throw CheckpointError("dtl: " + where + " is not a dict of tensors");
  const auto dict = sd.toGenericDict();
  // A state dict saved from a DDP-wrapped model (a Python multi-GPU Determined checkpoint) has
  // every key prefixed `module.`; it loads as Determined loads it, with the prefix stripped.
  bool ddp = dict.size() > 0;
  for (const auto& e : dict) ddp = ddp && e.key().isString() && e.key().toStringRef().starts_with("module.");
  const std::string prefix = ddp ? "module." : "";
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  for (const auto& p : module.named_parameters()) targets.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : module.named_buffers()) targets.emplace_back(prefix + b.key(), b.value());
  std::string missing, unexpected, shapes;
  for (const auto& [name, t] : targets) {
    if (!dict.contains(name)) {
      missing += (missing.empty() ? "" : ", ") + name;
      continue;
    }
    const auto v = dict.at(name);
    if (!v.isTensor()) {
      shapes += (shapes.empty() ? "" : "; ") + name + " is not a tensor";
      continue;
    }
    if (v.toTensor().sizes() != t.sizes())
      shapes += (shapes.empty() ? "" : "; ") + name + ": saved " + c10::str(v.toTensor().sizes()) + ", model " +
                c10::str(t.sizes());
  }
  if (strict)
    for (const auto& e : dict) {
      const auto& k = e.key().toStringRef();
      bool known = false;
      for (const auto& [name, t] : targets) known = known || name == k;
      if (!known) unexpected += (unexpected.empty() ? "" : ", ") + k;
    }
  if (!missing.empty() || !unexpected.empty() || !shapes.empty()) {
    std::string msg = "dtl: " + where + " does not fit the model (was it saved from a different architecture?)";
    if (!missing.empty()) msg += "; missing: " + missing;
    if (!unexpected.empty()) msg += "; unexpected: " + unexpected;
    if (!shapes.empty()) msg += "; shape mismatch: " + shapes;
    throw CheckpointError(msg);
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : targets) t.copy_(dict.at(name).toTensor());
}

/// `torch.save(model.state_dict(), path)`: a file Python loads with
/// `model.load_state_dict(torch.load(path, weights_only=True))`.
inline void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path) {
  detail::save_pickle_archive(state_dict(module), path, /*sync=*/true);
}

/// Loads weights into `module` from a file Python's `torch.save(model.state_dict())` wrote, or
/// from a Determined / dtl checkpoint (a directory, or its state_dict.pth: the first entry of
/// `models_state_dict`, or `model_index`). Warm-starts a C++ model from Python training.
inline void load_state_dict(torch::nn::Module& module, const std::filesystem::path& path, bool strict = true,
                            std::size_t model_index = 0) {
  const auto file = std::filesystem::is_directory(path) ? path / "state_dict.pth" : path;
  const auto root = detail::load_pickle_archive(file);
  if (root.isGenericDict() && root.toGenericDict().contains("models_state_dict")) {
    const auto models = root.toGenericDict().at("models_state_dict").toListRef();
    if (model_index >= models.size())
      throw CheckpointError("dtl: checkpoint " + file.string() + " holds " + std::to_string(models.size()) +
                            " models; there is no model " + std::to_string(model_index));
    load_state_dict(module, models[model_index], strict,
                    "checkpoint " + file.string() + " (model " + std::to_string(model_index) + ")");
  } else {
    load_state_dict(module, root, strict, "state dict " + file.string());
  }
}
/// A path as a string literal or std::string (without these, "weights.pt" converts both to a path
/// and to an IValue state dict, and the call is ambiguous).
inline void load_state_dict(torch::nn::Module& module, const char* path, bool strict = true,
                            std::size_t model_index = 0) {
  load_state_dict(module, std::filesystem::path(path), strict, model_index);
}
inline void load_state_dict(torch::nn::Module& module, const std::string& path, bool strict = true,
                            std::size_t model_index = 0) {
  load_state_dict(module, std::filesystem::path(path), strict, model_index);
}

}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_STATE_DICT_HPP
