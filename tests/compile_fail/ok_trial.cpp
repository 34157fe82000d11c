// expect-compiles
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
struct U : dtl::PyTorchTrial<U> {
  DTL_CF_CTOR(U) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_FULL DTL_CF_MEMBERS
};
template void use_trial<T>();
template void use_trial<U>();
