#include "../prelude.hpp"

TEST_CASE("lr::StepLR gives Python's values bit for bit") {
  // torch 1.13: StepLR(SGD(lr=0.1), step_size=2, gamma=0.7), get_last_lr() after each step().
  const double python[] = {0.1, 0.06999999999999999, 0.06999999999999999, 0.048999999999999995,
                           0.048999999999999995, 0.0343, 0.0343};
  auto p = torch::zeros({1}, torch::requires_grad());
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<torch::Tensor>{p}, 0.1);
  dtl::lr::StepLR sched(opt, 2, 0.7);
  CHECK(sched.last_epoch() == 0);
  for (double want : python) {
    sched.step();
    CHECK(sched.get_last_lr()[0] == want);
    CHECK(opt->param_groups()[0].options().get_lr() == want);
  }
  auto state = sched.state_dict();
  CHECK(state["last_epoch"] == 7);
  dtl::lr::StepLR other(opt, 2, 0.7);
  other.load_state_dict(state);
  CHECK(other.last_epoch() == 7);
  CHECK_THROWS_AS(dtl::lr::StepLR(opt, 0, 0.5), std::invalid_argument);
}
