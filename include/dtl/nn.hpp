// dtl — torch.nn pieces that LibTorch lacks or computes differently from Python, in Python's
// behaviour (docs/porting.md, "torch.nn in LibTorch", lists every difference found and how to
// port it): Dropout1d and Dropout2d (nn/dropout.hpp), Hardswish and Hardsigmoid
// (nn/activation.hpp).
#ifndef DTL_NN_HPP
#define DTL_NN_HPP

#include <dtl/nn/activation.hpp>
#include <dtl/nn/dropout.hpp>

#endif  // DTL_NN_HPP
