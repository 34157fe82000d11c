// expect: defines neither evaluate_batch nor evaluate_full_dataset
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_MEMBERS
};
template void use_trial<T>();
