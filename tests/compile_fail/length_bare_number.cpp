// expect-first: a length or period needs a unit
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
void f(dtl::Trainer<T>& t) { t.fit({.max_length = 100}); }
