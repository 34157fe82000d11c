// dtl — the check fit() makes before the first batch that the trial's weights are the ones dtl
// knows: a trial that wrapped no model, or an optimizer that updates parameters no wrapped model
// holds, would train, validate in training mode and save checkpoints without those weights (a
// resume then starts them afresh), without a word. Determined lets both pass; dtl stops.
#ifndef DTL_TRAINER_WRAPPED_MODELS_HPP
#define DTL_TRAINER_WRAPPED_MODELS_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/context.hpp>
#include <dtl/errors.hpp>

#include <cstddef>
#include <string>
#include <unordered_set>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

inline void check_models_wrapped(const PyTorchTrialContext& ctx) {
  const std::string unknown =
      "a model dtl does not know is not moved to the device, not put in eval mode for validation and not saved "
      "in checkpoints (a resume would start it from fresh weights)";
  if (ctx.models().empty())
    throw InvalidExperimentException(
        "dtl: the trial wrapped no model: pass each model through ctx.wrap_model(...) in the trial's constructor, "
        "as Determined's context.wrap_model; " + unknown);
  std::unordered_set<const void*> held;
  for (const auto& m : ctx.models())
    for (const auto& p : m->parameters()) held.insert(p.unsafeGetTensorImpl());
  std::size_t index = 0;
  for (const auto& opt : ctx.optimizers()) {
    std::size_t stray = 0;
    for (const auto& group : opt->param_groups())
      for (const auto& p : group.params()) stray += held.count(p.unsafeGetTensorImpl()) == 0 ? 1 : 0;
    if (stray > 0)
      throw InvalidExperimentException(
          "dtl: optimizer " + std::to_string(index) + " updates " + std::to_string(stray) + " parameter tensor" +
          (stray == 1 ? " that no wrapped model holds" : "s that no wrapped model holds") +
          ": wrap the module that owns them with ctx.wrap_model(...), or build the optimizer from a wrapped model's "
          "parameters(); " + unknown);
    ++index;
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_WRAPPED_MODELS_HPP
