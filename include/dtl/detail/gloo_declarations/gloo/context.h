// dtl: what c10d's ProcessGroupGloo.hpp names of Gloo's gloo/context.h (see ../README.md).
// ProcessGroupGloo::setTimeout, an inline virtual function, calls Context::setTimeout; dtl never
// calls it (it is reached only through the vtable LibTorch defines).
#pragma once

#include <chrono>

namespace gloo {

class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};

}  // namespace gloo
