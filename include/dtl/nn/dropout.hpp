// dtl — Python's Dropout1d and Dropout2d. LibTorch has no Dropout1d, and its Dropout2d takes
// every input that is not 4-D as unbatched (it adds a batch dimension, drops, removes it), so on
// a 2-D (N, C) input it drops whole rows, on a 3-D (N, C, L) input whole samples, on a 5-D input
// whole samples — silently. Python's Dropout2d hands any input to ATen's feature_dropout as it
// is (per-element on 2-D input, per (n, c) row on 3-D, per channel on 4-D and 5-D), with a
// deprecation warning for the inputs that are not 3-D or 4-D. These are Python's, op for op: the
// same draws, the same numbers (tests/nn/ compares them with the test venv's torch.nn).
//   dropout_ = register_module("dropout", dtl::nn::Dropout2d(0.25));  // nn.Dropout2d(0.25)
#ifndef DTL_NN_DROPOUT_HPP
#define DTL_NN_DROPOUT_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <ostream>
#include <sstream>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace nn {

namespace functional {

namespace detail {
inline void check_p(double p, const char* name) {
  if (p < 0.0 || p > 1.0) {
    std::ostringstream m;
    m << name << ": dropout probability has to be between 0 and 1, but got " << p;
    throw std::invalid_argument(m.str());
  }
}
inline torch::Tensor feature_dropout(const torch::Tensor& input, double p, bool training, bool inplace) {
  if (inplace) {
    auto in = input;
    return torch::feature_dropout_(in, p, training);
  }
  return torch::feature_dropout(input, p, training);
}
}  // namespace detail

/// Python's `F.dropout2d(input, p, training, inplace)`: whole channels of a (N, C, H, W) input
/// zeroed; a 3-D input taken as (N, C, L) (whole (n, c) rows); 2-D and 5-D inputs, which Python
/// deprecates, dropped as Python drops them (2-D: element by element).
inline torch::Tensor dropout2d(const torch::Tensor& input, double p = 0.5, bool training = true,
                               bool inplace = false) {
  detail::check_p(p, "dtl::nn::functional::dropout2d");
  const auto dim = input.dim();
  if (dim != 3 && dim != 4) {
    TORCH_WARN_ONCE("dtl::nn::Dropout2d: received a ", dim,
                    "-D input; as Python's Dropout2d (which deprecates it), it is dropped with feature_dropout as "
                    "it is (2-D: element by element). Use Dropout for element-wise dropout.");
  } else if (dim == 3) {
    TORCH_WARN_ONCE("dtl::nn::Dropout2d: a 3-D input is taken as (N, C, L) and whole (n, c) rows are dropped, as "
                    "Python's Dropout2d does; Dropout1d says so without this warning.");
  }
  return detail::feature_dropout(input, p, training, inplace);
}

/// Python's `F.dropout1d(input, p, training, inplace)`: whole (n, c) rows of a (N, C, L) input
/// zeroed, or whole channels of an unbatched (C, L) input.
inline torch::Tensor dropout1d(const torch::Tensor& input, double p = 0.5, bool training = true,
                               bool inplace = false) {
  detail::check_p(p, "dtl::nn::functional::dropout1d");
  const auto dim = input.dim();
  if (dim != 2 && dim != 3)
    throw std::invalid_argument("dtl::nn::functional::dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input, got " +
                                std::to_string(dim) + "-D");
  if (dim == 3) return detail::feature_dropout(input, p, training, inplace);
  auto batched = inplace ? input.unsqueeze_(0) : input.unsqueeze(0);
  auto out = detail::feature_dropout(batched, p, training, inplace);
  return inplace ? out.squeeze_(0) : out.squeeze(0);
}

}  // namespace functional

namespace detail {
/// The module around a functional (`Derived::kFunctional`, named `Derived::kName`): `p`,
/// `inplace`, and the module's training flag. `forward` lives here, as in LibTorch's
/// BatchNormImplBase.
template <class Derived>
class DropoutNdImpl : public torch::nn::Cloneable<Derived> {
 public:
  explicit DropoutNdImpl(const torch::nn::DropoutOptions& options_ = {}) : options(options_) {
    DropoutNdImpl::reset();
  }
  explicit DropoutNdImpl(double p) : DropoutNdImpl(torch::nn::DropoutOptions(p)) {}
  void reset() override { functional::detail::check_p(options.p(), Derived::kName); }
  void pretty_print(std::ostream& stream) const override {
    stream << Derived::kName << "(p=" << options.p() << ", inplace=" << std::boolalpha << options.inplace() << ")";
  }
  torch::Tensor forward(const torch::Tensor& input) {
    return Derived::kFunctional(input, options.p(), this->is_training(), options.inplace());
  }
  torch::nn::DropoutOptions options;
};
}  // namespace detail

/// Python's `nn.Dropout2d(p=0.5, inplace=False)` (see functional::dropout2d).
class Dropout2dImpl : public detail::DropoutNdImpl<Dropout2dImpl> {
 public:
  using DropoutNdImpl::DropoutNdImpl;
  static constexpr const char* kName = "dtl::nn::Dropout2d";
  static constexpr auto kFunctional = &functional::dropout2d;
};
TORCH_MODULE(Dropout2d);

/// Python's `nn.Dropout1d(p=0.5, inplace=False)`, which LibTorch lacks (see functional::dropout1d).
class Dropout1dImpl : public detail::DropoutNdImpl<Dropout1dImpl> {
 public:
  using DropoutNdImpl::DropoutNdImpl;
  static constexpr const char* kName = "dtl::nn::Dropout1d";
  static constexpr auto kFunctional = &functional::dropout1d;
};
TORCH_MODULE(Dropout1d);

}  // namespace nn
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_NN_DROPOUT_HPP
