// expect-first: this scheduler steps on a metric (ReduceLROnPlateau)
#include <dtl/callbacks.hpp>
#include <dtl/trainer.hpp>

int main() {
  auto ctx = dtl::init();
  torch::nn::Linear model(2, 1);
  auto opt = ctx.wrap_optimizer(torch::optim::SGD(model->parameters(), 0.1));
  ctx.wrap_lr_scheduler(dtl::lr::ReduceLROnPlateau(opt), dtl::StepMode::STEP_EVERY_EPOCH);  // the misuse
  return 0;
}
