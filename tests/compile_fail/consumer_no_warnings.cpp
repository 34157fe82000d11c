// expect-compiles
// A consumer translation unit under -Wall -Wextra -Wpedantic -Werror (run.sh adds them to every
// expect-compiles file): dtl's headers must not warn. It instantiates the whole Trainer — fit,
// checkpoints and their retention, reducers, callbacks — and a wrapped model's data parallelism.
#include "trial_base.hpp"

struct W : dtl::PyTorchTrial<W> {
  DTL_CF_CTOR(W) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
template void use_trial<W>();

inline void data_parallel(dtl::PyTorchTrialContext& ctx) {
  auto model = ctx.wrap_model(torch::nn::Linear(2, 1), {.bucket_cap_mb = 1.0, .find_unused_parameters = true});
  const auto sizes = ctx.distributed().allgather(nlohmann::json(ctx.distributed().rank));
  (void)sizes;
  (void)model;
}
