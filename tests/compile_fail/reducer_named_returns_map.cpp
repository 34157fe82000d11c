// expect: this reducer has a name, so it reports one metric, but its cross_slot_reduce returns a map
// Determined raises AssertionError at the end of the first workload; dtl rejects it at compile time.
#include <dtl/trainer.hpp>
#include <map>

int main() {
  auto ctx = dtl::init();
  ctx.wrap_reducer([](const std::vector<double>& v) { return std::map<std::string, double>{{"n", double(v.size())}}; },
                   "count");  // the misuse: a name and a map result
  return 0;
}
