// expect: opt out in the trial: static constexpr bool disable_dataset_reproducibility_checks = true;
// A loader that is not a dtl::DataLoader (here a vector of batches) cannot be sharded or skipped,
// so the Trainer refuses it unless the trial opts out of the reproducibility checks.
#include "trial_base.hpp"
#include <vector>
struct T : dtl::PyTorchTrial<T> {
  DTL_CF_CTOR(T)
  std::vector<Batch> build_training_data_loader() { return {}; }
  DTL_CF_VAL_LOADER DTL_CF_TRAIN_BATCH DTL_CF_EVALUATE_BATCH DTL_CF_MEMBERS
};
template void use_trial<T>();
