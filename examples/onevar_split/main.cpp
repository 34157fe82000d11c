// OneVar's program (onevar_trial.hpp says why it is a file of its own): the same command line,
// training and output as examples/onevar.cpp, which the suite checks.
#include "onevar_trial.hpp"

#include <cmath>
#include <iostream>

int main(int argc, char** argv) {
  auto ctx = dtl::init(argc, argv, {.hparams = {{"learning_rate", 0.001}, {"global_batch_size", 4}}, .seed = 0});
  OneVarTrial trial(ctx);
  dtl::Trainer trainer(trial, ctx);
  trainer.fit({.max_length = dtl::Batch{100}, .validation_period = dtl::Batch{50},
               .checkpoint_policy = dtl::CheckpointPolicy::none});
  std::cout << "w = " << trial.weight() << "  (1 - 0.998^n predicts " << 1.0 - std::pow(0.998, trainer.state().batches_trained)
            << ")\n";
}
