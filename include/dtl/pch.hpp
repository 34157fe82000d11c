// dtl — what a trial includes, as one header to precompile (docs/building.md, "Faster trial
// builds"): LibTorch and <dtl/trainer.hpp>. A trial's translation unit that starts from the
// precompiled header parses neither; it still instantiates the templates it uses (the Trainer for
// its trial, its data loaders) and compiles them.
//
// Build it with the flags of the trial it serves: the same compiler, -std, -O level and macros
// (-DDTL_COMPILED_LIB too, for a trial built against libdtl, which is where it pays most). g++
// skips a precompiled header whose flags differ and parses the headers instead (-Winvalid-pch
// says so).
//   CMake:      target_precompile_headers(my_trial PRIVATE <dtl/pch.hpp>)
//   meson:      executable(..., cpp_pch : 'pch/my_trial_pch.hpp'), that header: #include <dtl/pch.hpp>
//   pkg-config: g++ $(pkg-config --cflags dtl-compiled) -pthread -x c++-header <includedir>/dtl/pch.hpp -o pch/dtl/pch.hpp.gch
//               g++ -Ipch -include dtl/pch.hpp my_trial.cpp $(pkg-config --cflags --libs dtl-compiled)
// (Include guards, not #pragma once: g++ warns about #pragma once in the main file it precompiles.)
#ifndef DTL_PCH_HPP
#define DTL_PCH_HPP

#include <torch/torch.h>

#include <dtl/trainer.hpp>

#endif  // DTL_PCH_HPP
