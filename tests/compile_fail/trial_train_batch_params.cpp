// expect: train_batch has the wrong parameters
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
  dtl::Metrics train_batch(Batch& b, std::int64_t epoch_idx) { return {{"loss", std::get<0>(b).sum()}}; }
};
template void use_trial<T>();
