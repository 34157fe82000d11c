// expect-first: build_callbacks(): a callback must derive from dtl::PyTorchCallback
// A type with Determined's hook names that does not derive from PyTorchCallback would have its
// hooks never called; the error names the rule instead of a generic "no matching constructor".
#include "trial_base.hpp"

struct Loose {
  void on_validation_end(const dtl::MetricsJson&) {}
};

struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
  dtl::Callbacks build_callbacks() { return {{"loose", std::make_shared<Loose>()}}; }  // the misuse
};
template void use_trial<T>();
