// dtl — Python's nn.Hardswish and nn.Hardsigmoid modules, which LibTorch lacks (it has the ATen
// functions torch::hardswish and torch::hardsigmoid, which these call: Python's numbers).
//   act_ = register_module("act", dtl::nn::Hardswish());  // nn.Hardswish()
#ifndef DTL_NN_ACTIVATION_HPP
#define DTL_NN_ACTIVATION_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <ostream>

namespace dtl {
inline namespace DTL_ABI {
namespace nn {

/// Python's `nn.Hardswish(inplace=False)`.
class HardswishImpl : public torch::nn::Cloneable<HardswishImpl> {
 public:
  explicit HardswishImpl(bool inplace = false) : inplace(inplace) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "dtl::nn::Hardswish()"; }
  torch::Tensor forward(torch::Tensor input) { return inplace ? torch::hardswish_(input) : torch::hardswish(input); }
  bool inplace;
};
TORCH_MODULE(Hardswish);

/// Python's `nn.Hardsigmoid(inplace=False)`.
class HardsigmoidImpl : public torch::nn::Cloneable<HardsigmoidImpl> {
 public:
  explicit HardsigmoidImpl(bool inplace = false) : inplace(inplace) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "dtl::nn::Hardsigmoid()"; }
  torch::Tensor forward(torch::Tensor input) {
    return inplace ? torch::hardsigmoid_(input) : torch::hardsigmoid(input);
  }
  bool inplace;
};
TORCH_MODULE(Hardsigmoid);

}  // namespace nn
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_NN_ACTIVATION_HPP
