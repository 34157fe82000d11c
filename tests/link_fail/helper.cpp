// Link-fail tests (tests/link_fail/run.sh): a function that takes a dtl type, compiled in
// whichever mode run.sh chooses (header-only, or DTL_COMPILED_LIB).
#include <dtl/context.hpp>

double link_test_learning_rate(dtl::PyTorchTrialContext& ctx) { return ctx.get_hparam<double>("learning_rate"); }
