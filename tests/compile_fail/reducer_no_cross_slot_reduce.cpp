// expect: a MetricReducer needs `cross_slot_reduce(const std::vector<PerSlot>&)`
// The metric is what cross_slot_reduce makes of every rank's per_slot_reduce() value; this
// reducer's cross_slot_reduce takes another type than per_slot_reduce() returns.
#include <dtl/trainer.hpp>

struct Count {
  std::int64_t n = 0;
  void reset() { n = 0; }
  void update() { ++n; }
  [[nodiscard]] std::int64_t per_slot_reduce() const { return n; }
  [[nodiscard]] double cross_slot_reduce(const std::vector<std::string>& ns) const { return double(ns.size()); }
};

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer(Count{}, "count");  // the misuse: per_slot_reduce() returns an int64, not a string
  return 0;
}
