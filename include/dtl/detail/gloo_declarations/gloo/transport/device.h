// dtl: what c10d's ProcessGroupGloo.hpp names of Gloo's gloo/transport/device.h (see
// ../../README.md): types it holds only through smart pointers.
#pragma once

namespace gloo::transport {

class Device;
class UnboundBuffer;

}  // namespace gloo::transport
