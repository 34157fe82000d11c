// expect: without a name, cross_slot_reduce must return a map of metric names to values
// Determined raises AssertionError at the end of the first workload; dtl rejects it at compile time.
#include <dtl/trainer.hpp>

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer([](const std::vector<double>& v) { return double(v.size()); });  // the misuse: no name
  return 0;
}
