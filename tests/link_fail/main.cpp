// Link-fail tests (tests/link_fail/run.sh): always compiled with DTL_COMPILED_LIB, so it names
// libdtl's functions; helper.cpp is compiled in the mode under test.
#include <dtl/init.hpp>

#include <iostream>

double link_test_learning_rate(dtl::PyTorchTrialContext& ctx);

int main(int argc, char** argv) {
  auto ctx = dtl::init(argc, argv, {.hparams = {{"learning_rate", 0.5}}, .lock_run_dir = false});
  std::cout << link_test_learning_rate(ctx) << "\n";
}
