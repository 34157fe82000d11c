// expect-first: wrap_lr_scheduler takes a scheduler with step()
// Something without step() handed to wrap_lr_scheduler: the Trainer could never step it.
#include <dtl/trainer.hpp>

int main() {
  auto ctx = dtl::init();
  ctx.wrap_lr_scheduler(std::make_shared<int>(3), dtl::StepMode::STEP_EVERY_BATCH);  // the misuse
  return 0;
}
