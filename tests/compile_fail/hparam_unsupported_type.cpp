// expect: a hyperparameter can be read as bool, an integer type, a floating-point type
// A hyperparameter read as a type dtl has no conversion for; nlohmann::json is the way out.
#include <dtl/trainer.hpp>

#include <map>

int main() {
  auto ctx = dtl::init();
  auto fine = ctx.get_hparam<nlohmann::json>("model");
  auto bad = ctx.get_hparam<std::map<std::string, int>>("model");  // the misuse
  (void)fine;
  (void)bad;
  return 0;
}
