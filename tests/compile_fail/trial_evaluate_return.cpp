// expect: evaluate_batch / evaluate_full_dataset must return dtl::Metrics
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_MEMBERS
  std::string evaluate_batch(Batch&, std::int64_t) { return "oops"; }
};
template void use_trial<T>();
