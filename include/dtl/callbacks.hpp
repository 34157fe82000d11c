// dtl — the callbacks dtl ships, in one include (docs/callbacks.md):
//   dtl::callbacks::EarlyStopping                     stop when a validation metric plateaus
//   dtl::callbacks::ReduceLROnPlateauEveryValidation  lower the learning rate when it plateaus
//   dtl::callbacks::LearningRateMonitor               learning rates to TensorBoard
// and the scheduler behind the second, dtl::lr::ReduceLROnPlateau.
//
//   #include <dtl/callbacks.hpp>
//   dtl::Callbacks build_callbacks() {
//     return {{"early_stopping", std::make_shared<dtl::callbacks::EarlyStopping>(ctx_)},
//             {"lr_monitor", std::make_shared<dtl::callbacks::LearningRateMonitor>(ctx_)}};
//   }
#ifndef DTL_CALLBACKS_HPP
#define DTL_CALLBACKS_HPP

#include <dtl/callbacks/early_stopping.hpp>
#include <dtl/callbacks/lr_monitor.hpp>
#include <dtl/callbacks/monitor.hpp>
#include <dtl/callbacks/reduce_lr_on_plateau.hpp>

#endif  // DTL_CALLBACKS_HPP
