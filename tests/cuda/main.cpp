// The CUDA test set's main: on a machine without a usable CUDA device it says so in one line and
// exits 2 (scripts/gpu-check.sh runs it where there is a GPU); otherwise doctest runs the cases.
#include <torch/torch.h>

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::cerr << "dtl_cuda_tests: no CUDA device on this machine; the CUDA test set runs where there is a GPU "
                 "(scripts/gpu-check.sh)\n";
    return 2;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
