// expect: wrap_reducer takes a MetricReducer (reset, per_slot_reduce, cross_slot_reduce)
// wrap_reducer given something that is neither a MetricReducer nor a function of the values.
#include <dtl/trainer.hpp>

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer(42, "answer");  // the misuse
  return 0;
}
