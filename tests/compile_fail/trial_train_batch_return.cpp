// expect: train_batch must return dtl::Metrics
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
  double train_batch(Batch&, std::int64_t, std::int64_t) { return 0.0; }
};
template void use_trial<T>();
