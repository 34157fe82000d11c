// torch::nn against torch.nn: every case of nn_parity_cases.hpp against the test venv's torch.nn
// (nn_parity_reference.py), line for line. A case that is not one of the known differences below
// must be identical bit for bit; a known difference must still differ (else docs/porting.md's
// table is out of date); and every dtl::nn replacement (*__dtl) must equal Python's module.
#include "nn_parity_cases.hpp"

#include "../support/external.hpp"

#include <map>
#include <sstream>

#if DTL_TORCH_2
namespace nn_parity {

namespace {

// The differences docs/porting.md's "torch.nn in LibTorch" table lists, by case. (Hardswish and
// Hardsigmoid have no LibTorch module; their cases run the ATen function, identical, and
// dtl::nn's modules are compared beside them.)
const std::map<std::string, const char*>& known_differences() {
  static const std::map<std::string, const char*> known = {
      {"dropout1d_mod_3d", "LibTorch has no Dropout1d (dtl::nn::Dropout1d)"},
      {"dropout2d_mod_2d", "LibTorch's Dropout2d drops whole rows of a 2-D input (dtl::nn::Dropout2d)"},
      {"dropout2d_mod_3d", "LibTorch's Dropout2d takes a 3-D input as unbatched (dtl::nn::Dropout2d)"},
      {"dropout2d_mod_5d", "LibTorch's Dropout2d takes a 5-D input as unbatched (dtl::nn::Dropout2d)"},
      {"dropout2d_fn_2d", "LibTorch's functional dropout2d, as its module (dtl::nn::functional::dropout2d)"},
      {"layernorm_nobias", "LayerNormOptions has no bias"},
      {"rmsnorm", "LibTorch has no RMSNorm module"},
      {"lppool_inf", "LibTorch's LPPool2d with norm_type=inf gives 1.0; Python's max-pools |x|"},
      {"trunc_normal_default", "LibTorch has no init::trunc_normal_"},
      {"calc_gain_selu", "LibTorch's calculate_gain has no SELU"},
      {"lstm_unbatched", "LibTorch's LSTM refuses an unbatched 2-D input"},
      {"softmax_implicit_3d", "LibTorch's Softmax needs a dim (Python's implicit one is 0 for 3-D input)"},
      {"tel_defaults", "TransformerEncoderLayerOptions lacks norm_first, batch_first, layer_norm_eps, bias"},
      {"tel_fwd_eval", "TransformerEncoderLayer: up to 1 ulp apart (C++ asks attention for its weights)"},
      {"tel_fwd_eval_gelu", "TransformerEncoderLayer: up to 1 ulp apart"},
      {"tel_fwd_train_nodrop", "TransformerEncoderLayer: up to 1 ulp apart"},
      {"tel_norm_first", "TransformerEncoderLayerOptions has no norm_first"},
      {"tel_batch_first", "TransformerEncoderLayerOptions has no batch_first"},
      {"mha_defaults", "MultiheadAttentionOptions has no batch_first"},
      {"mha_batch_first", "MultiheadAttentionOptions has no batch_first"},
  };
  return known;
}

std::map<std::string, std::string> python_lines() {
  auto r = test_support::run_command(test_support::shell_quote(test_support::python()) + " " +
                                     test_support::shell_quote(test_support::test_file("nn/nn_parity_reference.py").string()) +
                                     " 2>/dev/null");
  REQUIRE(r.status == 0);
  std::map<std::string, std::string> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.front() == '{') out[nlohmann::json::parse(line).at("case").get<std::string>()] = line;
  return out;
}

}  // namespace

TEST_CASE("torch::nn against torch.nn: identical but for the known differences, which dtl::nn's modules remove") {
  if (auto why = test_support::python_torch_missing()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  const auto py = python_lines();
  const auto mine = lines();
  REQUIRE(mine.size() > 150);
  std::size_t compared = 0;
  for (const auto& [name, line] : mine) {
    CAPTURE(name);
    const auto dtl_at = name.find("__dtl");
    const auto python_name = dtl_at == std::string::npos ? name : name.substr(0, dtl_at);
    const auto it = py.find(python_name);
    REQUIRE_MESSAGE(it != py.end(), "nn_parity_reference.py has no case " << python_name);
    auto compared_line = line;  // a dtl case's line under the Python case's name
    if (dtl_at != std::string::npos) compared_line.replace(compared_line.find(name), name.size(), python_name);
    const auto known = known_differences().find(name);
    if (known != known_differences().end()) {
      INFO("a known difference is gone (" << known->second << "): update docs/porting.md's table and this list");
      CHECK(compared_line != it->second);
    } else {
      CHECK(compared_line == it->second);
    }
    ++compared;
  }
  CHECK(compared == py.size() + 10);  // every Python case, and the 10 dtl::nn cases beside theirs
}

}  // namespace nn_parity
#else
TEST_CASE("torch::nn against torch.nn: identical but for the known differences, which dtl::nn's modules remove") {
  MESSAGE("skipped: the cases are written for LibTorch 2.x and torch.nn 2.x");
}
#endif
