// libdtl: dtl's non-template functions compiled once, for programs built with DTL_COMPILED_LIB
// (include/dtl/detail/compiled_lib.hpp): every -inl.hpp file, where a header keeps its heavy
// definitions; header-only programs include those through the headers instead. Headers with no
// -inl.hpp define their functions in place, in both modes.
#ifndef DTL_COMPILED_LIB
#error "src/dtl.cpp is libdtl: compile it with -DDTL_COMPILED_LIB, as every program that links it"
#endif

#include <dtl/amp/apex-inl.hpp>
#include <dtl/amp/grad_scaler-inl.hpp>
#include <dtl/builtin_reducers-inl.hpp>
#include <dtl/callbacks/early_stopping-inl.hpp>
#include <dtl/callbacks/reduce_lr_on_plateau-inl.hpp>
#include <dtl/checkpoint/checkpoint-inl.hpp>
#include <dtl/checkpoint/torch_save-inl.hpp>
#include <dtl/cluster/http-inl.hpp>
#include <dtl/cluster/info-inl.hpp>
#include <dtl/cluster/master-inl.hpp>
#include <dtl/config/command_line-inl.hpp>
#include <dtl/config/experiment_config-inl.hpp>
#include <dtl/config/hparams-inl.hpp>
#include <dtl/detail/file_io-inl.hpp>
#include <dtl/context-inl.hpp>
#include <dtl/custom_reducers-inl.hpp>
#include <dtl/distributed/data_parallel-inl.hpp>
#include <dtl/distributed/distributed_context-inl.hpp>
#include <dtl/distributed/metric_reduction-inl.hpp>
#include <dtl/distributed/options-inl.hpp>
#include <dtl/init-inl.hpp>
#include <dtl/log/reporter-inl.hpp>
#include <dtl/log/run_summary-inl.hpp>
#include <dtl/log/tensorboard-inl.hpp>
#include <dtl/lr/base-inl.hpp>
#include <dtl/lr/composite-inl.hpp>
#include <dtl/lr/cosine-inl.hpp>
#include <dtl/lr/cyclic-inl.hpp>
#include <dtl/lr/decay-inl.hpp>
#include <dtl/lr/param_group_keys-inl.hpp>
#include <dtl/lr/swa-inl.hpp>
#include <dtl/optim/python_optimizers-inl.hpp>
#include <dtl/optim/torch_optim-inl.hpp>
#include <dtl/profiler-inl.hpp>
#include <dtl/samplers/sampler_state_json-inl.hpp>
#include <dtl/trainer/checkpoint_session-inl.hpp>
#include <dtl/trainer/schedule-inl.hpp>
#include <dtl/trainer/validation_bookkeeping-inl.hpp>
