// expect: declares on_validation_end with a signature PyTorchCallback does not have
// Determined duck-types callbacks, so a hook with the wrong parameters silently never runs; dtl
// checks each hook a callback declares when build_callbacks() names it.
#include "trial_base.hpp"

struct Forgetful : dtl::PyTorchCallback {
  void on_validation_end(const dtl::Metrics& metrics) { (void)metrics; }  // the misuse: not MetricsJson
};

struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T) DTL_CF_TRAIN_LOADER DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
  dtl::Callbacks build_callbacks() { return {{"forgetful", std::make_shared<Forgetful>()}}; }
};
template void use_trial<T>();
