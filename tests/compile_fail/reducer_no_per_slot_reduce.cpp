// expect: a MetricReducer needs `per_slot_reduce()`
// A MetricReducer's value is gathered from every rank as per_slot_reduce()'s; this one has none.
#include <dtl/trainer.hpp>

struct Count {
  std::int64_t n = 0;
  void reset() { n = 0; }
  void update() { ++n; }
  [[nodiscard]] double cross_slot_reduce(const std::vector<std::int64_t>& ns) const { return double(ns.size()); }
};

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer(Count{}, "count");  // the misuse: Count has no per_slot_reduce()
  return 0;
}
