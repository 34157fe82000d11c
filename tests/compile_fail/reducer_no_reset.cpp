// expect: a MetricReducer needs `void reset()`
// A wrapped reducer is reset at the start of every training workload and validation; this one
// has per_slot_reduce and cross_slot_reduce but no reset().
#include <dtl/trainer.hpp>

struct Count {
  std::int64_t n = 0;
  void update() { ++n; }
  [[nodiscard]] std::int64_t per_slot_reduce() const { return n; }
  [[nodiscard]] double cross_slot_reduce(const std::vector<std::int64_t>& ns) const { return double(ns.size()); }
};

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer(Count{}, "count");  // the misuse: Count has no reset()
  return 0;
}
