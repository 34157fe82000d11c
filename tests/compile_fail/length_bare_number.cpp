// expect-first: a length or period needs a unit
// A bare number as a length: is 100 batches or epochs? Determined fails at run time; dtl refuses
// it at compile time, and this must be the first error the compiler prints.
#include "trial_base.hpp"
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
void f(dtl::Trainer<T>& t) { t.fit({.max_length = 100}); }  // the misuse
