// expect: must derive from dtl::PyTorchTrial<itself>
// A trial must name itself in PyTorchTrial<Self> (CRTP), or its hooks would be another class's.
#include "trial_base.hpp"
struct Other : dtl::PyTorchTrial<Other> {};
struct T : dtl::PyTorchTrial<Other> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
template void use_trial<T>();
