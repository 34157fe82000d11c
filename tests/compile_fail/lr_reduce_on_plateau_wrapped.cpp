// expect-first: this scheduler steps on a metric (ReduceLROnPlateau)
// ReduceLROnPlateau steps on a metric, which the Trainer does not have after a batch; in Python
// this fails at the first step(). The message points to the every-validation callback.
#include <dtl/callbacks.hpp>
#include <dtl/trainer.hpp>

int main() {
  auto ctx = dtl::init();
  torch::nn::Linear model(2, 1);
  auto opt = ctx.wrap_optimizer(torch::optim::SGD(model->parameters(), 0.1));
  ctx.wrap_lr_scheduler(dtl::lr::ReduceLROnPlateau(opt), dtl::StepMode::STEP_EVERY_EPOCH);  // the misuse
  return 0;
}
