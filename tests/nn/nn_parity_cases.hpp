// The cases of tests/nn/nn_parity_test.cpp: torch::nn (LibTorch) on the inputs, weights and seeds
// tests/nn/nn_parity_reference.py gives torch.nn (Python), one JSON line per case in the same
// format, so the two can be compared line by line. Where LibTorch lacks an API the case says
// {"missing": "<what>"}; cases named *_wa_* compute the Python module's result with the
// workaround docs/porting.md names; cases named *__dtl compute it with dtl::nn's module and are
// compared with the Python case of the name before "__dtl".
//
// Tensors: {"shape":[...],"v":[<Python float.hex>...]} or {"shape":[...],"i":[...]}.
#ifndef DTL_TESTS_NN_NN_PARITY_CASES_HPP
#define DTL_TESTS_NN_NN_PARITY_CASES_HPP

#include "../prelude.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

// The cases use LibTorch 2.x's API (optional BatchNorm momentum, Transformer options, ...).
#if DTL_TORCH_2

namespace nn_parity {

namespace nn = torch::nn;
namespace F = torch::nn::functional;
using torch::Tensor;

// ------------------------------------------------------------------ helpers
// Python's float.hex() format.
static std::string fhex(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const bool neg = bits >> 63;
  const int64_t e = static_cast<int64_t>((bits >> 52) & 0x7ff);
  const uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
  std::string s = neg ? "-" : "";
  if (e == 0 && mant == 0) return s + "0x0.0p+0";
  char buf[64];
  if (e == 0) {  // subnormal
    std::snprintf(buf, sizeof buf, "0x0.%013llxp-1022", static_cast<unsigned long long>(mant));
  } else {
    const int64_t ex = e - 1023;
    std::snprintf(buf, sizeof buf, "0x1.%013llxp%c%lld", static_cast<unsigned long long>(mant),
                  ex >= 0 ? '+' : '-', static_cast<long long>(ex >= 0 ? ex : -ex));
  }
  return s + buf;
}

static std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

static std::string tjson(const Tensor& t0) {
  Tensor t = t0.detach().cpu().contiguous();
  std::string o = "{\"shape\":[";
  for (size_t i = 0; i < t.sizes().size(); ++i) o += (i ? "," : "") + std::to_string(t.sizes()[i]);
  o += "],";
  Tensor f = t.flatten();
  if (t.is_floating_point()) {
    f = f.to(torch::kDouble).contiguous();
    o += "\"v\":[";
    const double* p = f.data_ptr<double>();
    for (int64_t i = 0; i < f.numel(); ++i) o += (i ? ",\"" : "\"") + fhex(p[i]) + "\"";
  } else {
    f = f.to(torch::kLong).contiguous();
    o += "\"i\":[";
    const int64_t* p = f.data_ptr<int64_t>();
    for (int64_t i = 0; i < f.numel(); ++i) o += (i ? "," : "") + std::to_string(p[i]);
  }
  return o + "]}";
}

struct J {
  std::string body;
  J& raw(const std::string& k, const std::string& v) {
    body += "," + jstr(k) + ":" + v;
    return *this;
  }
  J& t(const std::string& k, const Tensor& v) { return raw(k, tjson(v)); }
  J& s(const std::string& k, const std::string& v) { return raw(k, jstr(v)); }
  J& b(const std::string& k, bool v) { return raw(k, v ? "true" : "false"); }
  J& i(const std::string& k, int64_t v) { return raw(k, std::to_string(v)); }
  J& h(const std::string& k, double v) { return raw(k, jstr(fhex(v))); }
  J& sl(const std::string& k, const std::vector<std::string>& v) {
    std::string o = "[";
    for (size_t n = 0; n < v.size(); ++n) o += (n ? "," : "") + jstr(v[n]);
    return raw(k, o + "]");
  }
  J& il(const std::string& k, c10::IntArrayRef v) {
    std::string o = "[";
    for (size_t n = 0; n < v.size(); ++n) o += (n ? "," : "") + std::to_string(v[n]);
    return raw(k, o + "]");
  }
};

static J missing(const std::string& what) { return J{}.s("missing", what); }

static Tensor inp(std::vector<int64_t> shape, double k = 0.37, double off = 0.1, double scale = 2.0) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return torch::arange(n, torch::kFloat).mul(k).add(off).sin().mul(scale).reshape(shape);
}

static int64_t name_key(const std::string& name) {
  int64_t s = 0;
  for (unsigned char c : name) s += c;
  return s % 97;
}

static void fill_params(nn::Module& m) {
  torch::NoGradGuard ng;
  for (auto& kv : m.named_parameters()) {
    Tensor p = kv.value();
    const int64_t s = name_key(kv.key());
    p.copy_(torch::arange(p.numel(), torch::kFloat).mul(0.13).add(s * 0.01).sin().mul(0.3).reshape(p.sizes()));
  }
}

static std::vector<std::string> param_names(nn::Module& m) {
  std::vector<std::string> v;
  for (auto& kv : m.named_parameters()) v.push_back(kv.key());
  return v;
}

// Order that torch::save(module) writes: own params, own buffers, then children
// recursively (same rule as Python's state_dict()).
static void sd_keys_rec(nn::Module& m, const std::string& prefix, std::vector<std::string>& out) {
  for (auto& kv : m.named_parameters(false)) out.push_back(prefix + kv.key());
  for (auto& kv : m.named_buffers(false)) out.push_back(prefix + kv.key());
  for (auto& kv : m.named_children()) sd_keys_rec(*kv.value(), prefix + kv.key() + ".", out);
}
static std::vector<std::string> sd_keys(nn::Module& m) {
  std::vector<std::string> v;
  sd_keys_rec(m, "", v);
  return v;
}

static std::string params_obj(nn::Module& m) {
  std::string o = "{";
  bool first = true;
  for (auto& kv : m.named_parameters()) {
    o += (first ? "" : ",") + jstr(kv.key()) + ":" + tjson(kv.value());
    first = false;
  }
  return o + "}";
}

struct Case {
  const char* name;
  J (*fn)();
};
static std::vector<Case>& registry() {
  static std::vector<Case> r;
  return r;
}
struct Reg {
  Reg(const char* n, J (*f)()) { registry().push_back({n, f}); }
};
#define NN_CASE(name)                        \
  static J name();                        \
  static Reg reg_##name(#name, &name);    \
  static J name()

// ------------------------------------------------------------------ dropout
template <class Fn>
static J drop(Fn fn, const Tensor& x, uint64_t seed = 0) {
  torch::manual_seed(seed);
  return J{}.t("out", fn(x));
}

NN_CASE(dropout_mod_2d) {
  nn::Dropout m(nn::DropoutOptions(0.5));
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp({4, 6}));
}
NN_CASE(dropout_fn_2d) {
  return drop([](const Tensor& x) { return F::dropout(x, F::DropoutFuncOptions().p(0.5)); }, inp({4, 6}));
}
NN_CASE(dropout1d_mod_3d) { return missing("torch::nn::Dropout1d / functional::dropout1d"); }
NN_CASE(dropout1d_wa_3d) {
  return drop([](const Tensor& x) { return torch::feature_dropout(x, 0.5, true); }, inp({4, 6, 3}));
}
NN_CASE(dropout1d_wa_2d) {
  return drop([](const Tensor& x) { return torch::feature_dropout(x.unsqueeze(0), 0.5, true).squeeze(0); },
              inp({4, 6}));
}
static J d2(std::vector<int64_t> shape) {
  nn::Dropout2d m(nn::Dropout2dOptions(0.5));
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(dropout2d_mod_2d) { return d2({4, 6}); }
NN_CASE(dropout2d_mod_3d) { return d2({4, 6, 3}); }
NN_CASE(dropout2d_mod_4d) { return d2({2, 6, 2, 2}); }
NN_CASE(dropout2d_mod_5d) { return d2({2, 6, 2, 2, 2}); }
NN_CASE(dropout2d_fn_2d) {
  return drop([](const Tensor& x) { return F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5)); }, inp({4, 6}));
}
NN_CASE(dropout2d_fn_4d) {
  return drop([](const Tensor& x) { return F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5)); },
              inp({2, 6, 2, 2}));
}
// Python's F.dropout2d is exactly _VF.feature_dropout(x, p, training) with no reshaping.
static J d2wa(std::vector<int64_t> shape) {
  return drop([](const Tensor& x) { return torch::feature_dropout(x, 0.5, true); }, inp(std::move(shape)));
}
NN_CASE(dropout2d_wa_2d) { return d2wa({4, 6}); }
NN_CASE(dropout2d_wa_3d) { return d2wa({4, 6, 3}); }
NN_CASE(dropout2d_wa_5d) { return d2wa({2, 6, 2, 2, 2}); }
static J d3(std::vector<int64_t> shape) {
  nn::Dropout3d m(nn::Dropout3dOptions(0.5));
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(dropout3d_mod_2d) { return d3({4, 6}); }
NN_CASE(dropout3d_mod_3d) { return d3({4, 6, 3}); }
NN_CASE(dropout3d_mod_4d) { return d3({2, 6, 2, 2}); }
NN_CASE(dropout3d_mod_5d) { return d3({2, 6, 2, 2, 2}); }
static J ad(std::vector<int64_t> shape) {
  nn::AlphaDropout m(nn::AlphaDropoutOptions(0.5));
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(alphadropout_mod_2d) { return ad({4, 6}); }
NN_CASE(alphadropout_mod_4d) { return ad({2, 6, 2, 2}); }
NN_CASE(alphadropout_fn_default) {
  return drop([](const Tensor& x) { return F::alpha_dropout(x, F::AlphaDropoutFuncOptions().p(0.5)); },
              inp({4, 6}));
}
static J fad(std::vector<int64_t> shape) {
  nn::FeatureAlphaDropout m(nn::FeatureAlphaDropoutOptions(0.5));
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(featurealphadropout_mod_2d) { return fad({4, 6}); }
NN_CASE(featurealphadropout_mod_4d) { return fad({2, 6, 2, 2}); }
NN_CASE(featurealphadropout_fn_default) {
  return drop(
      [](const Tensor& x) { return F::feature_alpha_dropout(x, F::FeatureAlphaDropoutFuncOptions().p(0.5)); },
      inp({2, 6, 2, 2}));
}
NN_CASE(dropout_eval) {
  nn::Dropout2d m(nn::Dropout2dOptions(0.5));
  m->eval();
  return drop([&](const Tensor& x) { return m(x); }, inp({2, 6, 2, 2}));
}

// ------------------------------------------------------------ normalization
NN_CASE(bn1d_train) {
  nn::BatchNorm1d m(3);
  m->train();
  Tensor x = inp({8, 3});
  Tensor y1 = m(x);
  Tensor y2 = m(x * 0.5 + 1);
  return J{}.t("y1", y1).t("y2", y2).t("rm", m->running_mean).t("rv", m->running_var)
      .t("nbt", m->num_batches_tracked).sl("keys", sd_keys(*m));
}
NN_CASE(bn1d_3d_train) {
  nn::BatchNorm1d m(3);
  m->train();
  Tensor y = m(inp({4, 3, 5}));
  return J{}.t("y", y).t("rm", m->running_mean).t("rv", m->running_var);
}
NN_CASE(bn2d_cma) {
  nn::BatchNorm2d m(nn::BatchNorm2dOptions(3).momentum(std::nullopt));
  m->train();
  Tensor x = inp({2, 3, 4, 4});
  m(x);
  m(x * 0.5 + 1);
  m(x * 2 - 1);
  return J{}.t("rm", m->running_mean).t("rv", m->running_var).t("nbt", m->num_batches_tracked);
}
NN_CASE(bn2d_eval) {
  nn::BatchNorm2d m(3);
  fill_params(*m);
  {
    torch::NoGradGuard ng;
    m->running_mean.copy_(torch::tensor({0.1, -0.2, 0.3}, torch::kDouble).to(torch::kFloat));
    m->running_var.copy_(torch::tensor({1.5, 0.5, 2.0}, torch::kDouble).to(torch::kFloat));
  }
  m->eval();
  return J{}.t("y", m(inp({2, 3, 4, 4})));
}
NN_CASE(bn2d_no_track) {
  nn::BatchNorm2d m(nn::BatchNorm2dOptions(3).track_running_stats(false));
  m->eval();
  return J{}.t("y", m(inp({2, 3, 4, 4}))).sl("keys", sd_keys(*m));
}
NN_CASE(layernorm) {
  nn::LayerNorm m(nn::LayerNormOptions({4, 5}));
  fill_params(*m);
  return J{}.t("y", m(inp({2, 3, 4, 5}))).sl("keys", sd_keys(*m));
}
NN_CASE(layernorm_nobias) { return missing("LayerNormOptions has no bias(false)"); }
NN_CASE(rmsnorm) { return missing("torch::nn::RMSNorm (ATen torch::rms_norm exists)"); }
NN_CASE(groupnorm) {
  nn::GroupNorm m(nn::GroupNormOptions(2, 6));
  fill_params(*m);
  return J{}.t("y", m(inp({2, 6, 3, 3}))).sl("keys", sd_keys(*m));
}
NN_CASE(instnorm2d_default) {
  nn::InstanceNorm2d m(nn::InstanceNorm2dOptions(3));
  m->train();
  return J{}.t("y", m(inp({2, 3, 4, 4}))).sl("keys", sd_keys(*m));
}
NN_CASE(instnorm2d_track) {
  nn::InstanceNorm2d m(nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true));
  m->train();
  fill_params(*m);
  Tensor y1 = m(inp({2, 3, 4, 4}));
  m->eval();
  Tensor y2 = m(inp({2, 3, 4, 4}) * 0.5);
  return J{}.t("y1", y1).t("y2", y2).t("rm", m->running_mean).t("rv", m->running_var).sl("keys", sd_keys(*m));
}
NN_CASE(lrn) {
  nn::LocalResponseNorm m(nn::LocalResponseNormOptions(3));
  return J{}.t("y", m(inp({2, 6, 3, 3})));
}
NN_CASE(normalize_fn) { return J{}.t("y", F::normalize(inp({3, 4}), F::NormalizeFuncOptions())); }

// ------------------------------------------------------------------ pooling
NN_CASE(maxpool_ceil) {
  auto [y, idx] = F::max_pool2d_with_indices(inp({1, 2, 8, 8}), F::MaxPool2dFuncOptions(3).stride(2).ceil_mode(true));
  return J{}.t("y", y).t("idx", idx);
}
NN_CASE(maxpool_pad_dil) {
  nn::MaxPool2d m(nn::MaxPool2dOptions(3).stride(2).padding(1).dilation(2));
  return J{}.t("y", m(inp({1, 2, 9, 9})));
}
NN_CASE(maxpool_default_stride) {
  nn::MaxPool2d m(nn::MaxPool2dOptions(3));
  return J{}.t("y", m(inp({1, 2, 9, 9})));
}
NN_CASE(avgpool_cip_false) {
  nn::AvgPool2d m(nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  return J{}.t("y", m(inp({1, 2, 7, 7})));
}
NN_CASE(avgpool_divisor) {
  nn::AvgPool2d m(nn::AvgPool2dOptions(3).stride(2).divisor_override(2));
  return J{}.t("y", m(inp({1, 2, 7, 7})));
}
NN_CASE(avgpool_ceil_cip) {
  nn::AvgPool2d m(nn::AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true));
  return J{}.t("y", m(inp({1, 2, 8, 8})));
}
NN_CASE(adaptiveavg) {
  nn::AdaptiveAvgPool2d m(nn::AdaptiveAvgPool2dOptions({3, 5}));
  return J{}.t("y", m(inp({1, 2, 7, 9})));
}
NN_CASE(adaptiveavg_none) {
  nn::AdaptiveAvgPool2d m(nn::AdaptiveAvgPool2dOptions(
      torch::ExpandingArrayWithOptionalElem<2>({std::optional<int64_t>(), std::optional<int64_t>(4)})));
  return J{}.t("y", m(inp({1, 2, 7, 9})));
}
NN_CASE(adaptivemax) {
  nn::AdaptiveMaxPool2d m(nn::AdaptiveMaxPool2dOptions({3, 5}));
  auto [y, idx] = m->forward_with_indices(inp({1, 2, 7, 9}));
  return J{}.t("y", y).t("idx", idx);
}
NN_CASE(lppool_p2) {
  nn::LPPool2d m(nn::LPPool2dOptions(2, 3).stride(2));
  return J{}.t("y", m(inp({1, 2, 7, 7})));
}
NN_CASE(lppool_p1_5_signed) {
  nn::LPPool2d m(nn::LPPool2dOptions(1.5, 2));
  return J{}.t("y", m(inp({1, 2, 6, 6})));
}
NN_CASE(lppool_inf) {
  nn::LPPool2d m(nn::LPPool2dOptions(INFINITY, 2));
  return J{}.t("y", m(inp({1, 2, 6, 6})));
}
NN_CASE(lppool_nostride) {
  nn::LPPool2d m(nn::LPPool2dOptions(2, 3));
  return J{}.t("y", m(inp({1, 2, 7, 7})));
}

// ------------------------------------------------------------------- losses
static Tensor LOGITS() { return inp({6, 5}); }
static Tensor TGT() { return torch::tensor({0, 1, 4, 2, 1, 3}, torch::kLong); }
static Tensor CW() { return torch::tensor({1.0, 2.0, 0.5, 1.5, 1.0}, torch::kFloat); }

NN_CASE(ce_plain) { return J{}.t("l", nn::CrossEntropyLoss()(LOGITS(), TGT())); }
NN_CASE(ce_ls) {
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1))(LOGITS(), TGT()));
}
NN_CASE(ce_ignore) {
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().ignore_index(1))(LOGITS(), TGT()));
}
NN_CASE(ce_weight) {
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(CW()))(LOGITS(), TGT()));
}
NN_CASE(ce_weight_ls_ignore) {
  return J{}.t("l", nn::CrossEntropyLoss(
                        nn::CrossEntropyLossOptions().weight(CW()).ignore_index(1).label_smoothing(0.2))(LOGITS(),
                                                                                                        TGT()));
}
NN_CASE(ce_none_ls) {
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(torch::kNone).label_smoothing(0.1))(
                        LOGITS(), TGT()));
}
NN_CASE(ce_prob) { return J{}.t("l", nn::CrossEntropyLoss()(LOGITS(), inp({6, 5}, 0.21, 0.3).softmax(1))); }
NN_CASE(ce_prob_ls_weight) {
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(CW()).label_smoothing(0.1))(
                        LOGITS(), inp({6, 5}, 0.21, 0.3).softmax(1)));
}
NN_CASE(ce_spatial) {
  Tensor t = torch::arange(2 * 3 * 4).remainder(5).reshape({2, 3, 4});
  return J{}.t("l", nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1))(inp({2, 5, 3, 4}), t));
}
NN_CASE(ce_grad) {
  Tensor x = LOGITS().requires_grad_();
  nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(CW()).label_smoothing(0.1))(x, TGT()).backward();
  return J{}.t("g", x.grad());
}
NN_CASE(nll_weight) {
  return J{}.t("l", nn::NLLLoss(nn::NLLLossOptions().weight(CW()))(torch::log_softmax(LOGITS(), 1), TGT()));
}
NN_CASE(bce_pos_weight) {
  Tensor y = (inp({6, 5}, 0.5, 0.2) > 0).to(torch::kFloat);
  return J{}.t("l", nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(
                        torch::tensor({1.0, 2.0, 3.0, 0.5, 1.0}, torch::kFloat)))(LOGITS(), y));
}
NN_CASE(bce_weight) {
  Tensor y = (inp({6, 5}, 0.5, 0.2) > 0).to(torch::kFloat);
  return J{}.t("l", nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().weight(CW()))(LOGITS(), y));
}
NN_CASE(bce_plain) {
  Tensor y = inp({6, 5}, 0.5, 0.2).sigmoid();
  return J{}.t("l", nn::BCELoss()(LOGITS().sigmoid(), y));
}
NN_CASE(mse) { return J{}.t("l", nn::MSELoss()(LOGITS(), inp({6, 5}, 0.5))); }
NN_CASE(l1) { return J{}.t("l", nn::L1Loss()(LOGITS(), inp({6, 5}, 0.5))); }
NN_CASE(smoothl1_default) { return J{}.t("l", nn::SmoothL1Loss()(LOGITS(), inp({6, 5}, 0.5))); }
NN_CASE(smoothl1_beta05) {
  return J{}.t("l", nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5))(LOGITS(), inp({6, 5}, 0.5)));
}
NN_CASE(smoothl1_beta0) {
  return J{}.t("l", nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.0))(LOGITS(), inp({6, 5}, 0.5)));
}
NN_CASE(huber_d2) { return J{}.t("l", nn::HuberLoss(nn::HuberLossOptions().delta(2.0))(LOGITS(), inp({6, 5}, 0.5))); }
NN_CASE(kldiv_batchmean) {
  return J{}.t("l", nn::KLDivLoss(nn::KLDivLossOptions().reduction(torch::kBatchMean))(
                        torch::log_softmax(LOGITS(), 1), inp({6, 5}, 0.5).softmax(1)));
}
NN_CASE(kldiv_mean) {
  return J{}.t("l", nn::KLDivLoss()(torch::log_softmax(LOGITS(), 1), inp({6, 5}, 0.5).softmax(1)));
}
NN_CASE(kldiv_logtarget) {
  return J{}.t("l", nn::KLDivLoss(nn::KLDivLossOptions().reduction(torch::kBatchMean).log_target(true))(
                        torch::log_softmax(LOGITS(), 1), torch::log_softmax(inp({6, 5}, 0.5), 1)));
}
NN_CASE(ctc) {
  Tensor lp = inp({7, 2, 5}).log_softmax(2);
  Tensor tg = torch::tensor({1, 2, 2, 3, 1, 0}, torch::kLong).reshape({2, 3});
  return J{}.t("l", nn::CTCLoss()(lp, tg, torch::tensor({7, 6}, torch::kLong), torch::tensor({3, 2}, torch::kLong)));
}

// -------------------------------------------------------------- default init
template <class Ctor>
static J init_case(Ctor ctor) {
  torch::manual_seed(0);
  auto m = ctor();
  return J{}.sl("names", param_names(*m)).sl("keys", sd_keys(*m)).raw("p", params_obj(*m));
}
NN_CASE(init_linear) { return init_case([] { return nn::Linear(5, 3); }); }
NN_CASE(init_conv1d) { return init_case([] { return nn::Conv1d(nn::Conv1dOptions(3, 4, 3)); }); }
NN_CASE(init_conv2d) { return init_case([] { return nn::Conv2d(nn::Conv2dOptions(3, 4, 3)); }); }
NN_CASE(init_conv2d_groups) { return init_case([] { return nn::Conv2d(nn::Conv2dOptions(4, 6, 3).groups(2)); }); }
NN_CASE(init_convT2d) { return init_case([] { return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3)); }); }
NN_CASE(init_embedding) { return init_case([] { return nn::Embedding(10, 4); }); }
NN_CASE(init_embedding_pad) {
  return init_case([] { return nn::Embedding(nn::EmbeddingOptions(10, 4).padding_idx(0)); });
}
NN_CASE(init_bn2d) { return init_case([] { return nn::BatchNorm2d(3); }); }
NN_CASE(init_layernorm) { return init_case([] { return nn::LayerNorm(nn::LayerNormOptions({4})); }); }
NN_CASE(init_groupnorm) { return init_case([] { return nn::GroupNorm(2, 4); }); }
NN_CASE(init_prelu) { return init_case([] { return nn::PReLU(); }); }
NN_CASE(init_bilinear) { return init_case([] { return nn::Bilinear(3, 2, 4); }); }
NN_CASE(init_lstm) {
  return init_case([] { return nn::LSTM(nn::LSTMOptions(4, 3).num_layers(2).bidirectional(true)); });
}
NN_CASE(init_gru) { return init_case([] { return nn::GRU(4, 3); }); }
NN_CASE(init_rnn) { return init_case([] { return nn::RNN(4, 3); }); }
NN_CASE(init_lstm_proj) { return init_case([] { return nn::LSTM(nn::LSTMOptions(4, 5).proj_size(2)); }); }
NN_CASE(init_lstmcell) { return init_case([] { return nn::LSTMCell(4, 3); }); }
NN_CASE(init_mha) { return init_case([] { return nn::MultiheadAttention(8, 2); }); }
NN_CASE(init_tel) {
  return init_case([] { return nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16)); });
}

// ---------------------------------------------------------- init functions
template <class Fn>
static J initfn(Fn fn, std::vector<int64_t> shape = {4, 6}) {
  torch::manual_seed(0);
  Tensor t = torch::empty(shape);
  fn(t);
  return J{}.t("t", t);
}
namespace I = torch::nn::init;
NN_CASE(kaiming_uniform_default) { return initfn([](Tensor t) { I::kaiming_uniform_(t); }); }
NN_CASE(kaiming_uniform_conv) { return initfn([](Tensor t) { I::kaiming_uniform_(t); }, {4, 3, 3, 3}); }
NN_CASE(kaiming_uniform_a_sqrt5) { return initfn([](Tensor t) { I::kaiming_uniform_(t, std::sqrt(5.0)); }); }
NN_CASE(kaiming_normal_default) { return initfn([](Tensor t) { I::kaiming_normal_(t); }); }
NN_CASE(kaiming_normal_fanout_relu) {
  return initfn([](Tensor t) { I::kaiming_normal_(t, 0, torch::kFanOut, torch::kReLU); });
}
NN_CASE(xavier_uniform_default) { return initfn([](Tensor t) { I::xavier_uniform_(t); }); }
NN_CASE(xavier_normal_default) { return initfn([](Tensor t) { I::xavier_normal_(t); }); }
NN_CASE(xavier_uniform_relu_gain) {
  return initfn([](Tensor t) { I::xavier_uniform_(t, I::calculate_gain(torch::kReLU)); });
}
NN_CASE(orthogonal_tall) { return initfn([](Tensor t) { I::orthogonal_(t); }, {6, 4}); }
NN_CASE(orthogonal_wide) { return initfn([](Tensor t) { I::orthogonal_(t); }, {4, 6}); }
NN_CASE(trunc_normal_default) { return missing("torch::nn::init::trunc_normal_"); }
NN_CASE(uniform_default) { return initfn([](Tensor t) { I::uniform_(t); }); }
NN_CASE(normal_default) { return initfn([](Tensor t) { I::normal_(t); }); }
NN_CASE(calc_gains) {
  return J{}.h("relu", I::calculate_gain(torch::kReLU)).h("tanh", I::calculate_gain(torch::kTanh))
      .h("leaky_default", I::calculate_gain(torch::kLeakyReLU)).h("leaky_0_2", I::calculate_gain(torch::kLeakyReLU, 0.2))
      .h("conv2d", I::calculate_gain(torch::kConv2D)).h("sigmoid", I::calculate_gain(torch::kSigmoid));
}
NN_CASE(calc_gain_selu) { return missing("NonlinearityType has no kSELU"); }

// ------------------------------------------------------------------ RNN fwd
NN_CASE(lstm_fwd_bidir_bf) {
  nn::LSTM m(nn::LSTMOptions(4, 3).num_layers(2).bidirectional(true).batch_first(true));
  fill_params(*m);
  auto [out, hc] = m(inp({2, 5, 4}));
  return J{}.sl("names", param_names(*m)).t("out", out).t("h", std::get<0>(hc)).t("c", std::get<1>(hc));
}
NN_CASE(gru_fwd_h0) {
  nn::GRU m(4, 3);
  fill_params(*m);
  auto [out, h] = m(inp({5, 2, 4}), inp({1, 2, 3}, 0.3));
  return J{}.sl("names", param_names(*m)).t("out", out).t("h", h);
}
NN_CASE(rnn_relu_fwd) {
  nn::RNN m(nn::RNNOptions(4, 3).nonlinearity(torch::kReLU).num_layers(2));
  fill_params(*m);
  auto [out, h] = m(inp({5, 2, 4}));
  return J{}.sl("names", param_names(*m)).t("out", out).t("h", h);
}
NN_CASE(lstm_proj_fwd) {
  nn::LSTM m(nn::LSTMOptions(4, 5).proj_size(2));
  fill_params(*m);
  auto [out, hc] = m(inp({5, 2, 4}));
  return J{}.sl("names", param_names(*m)).t("out", out).t("h", std::get<0>(hc)).t("c", std::get<1>(hc));
}
NN_CASE(lstm_unbatched) {
  nn::LSTM m(4, 3);
  fill_params(*m);
  auto [out, hc] = m(inp({5, 4}));
  return J{}.sl("names", param_names(*m)).t("out", out).t("h", std::get<0>(hc)).t("c", std::get<1>(hc));
}

// -------------------------------------------------------- activations / misc
NN_CASE(emb_maxnorm) {
  nn::Embedding m(nn::EmbeddingOptions(10, 4).max_norm(1.0));
  fill_params(*m);
  {
    torch::NoGradGuard ng;
    m->weight.mul_(10);
  }
  Tensor y = m(torch::tensor({1, 3, 3, 7}, torch::kLong));
  return J{}.t("y", y).t("w", m->weight);
}
NN_CASE(emb_padidx_grad) {
  nn::Embedding m(nn::EmbeddingOptions(10, 4).padding_idx(0));
  fill_params(*m);
  m(torch::tensor({0, 2, 0, 5}, torch::kLong)).sum().backward();
  return J{}.t("g", m->weight.grad());
}
NN_CASE(flatten_default) { return J{}.il("shape", nn::Flatten()(inp({2, 3, 4, 5})).sizes()); }
NN_CASE(unflatten) {
  return J{}.il("shape", nn::Unflatten(nn::UnflattenOptions(1, {3, 4}))(inp({2, 12, 5})).sizes());
}
NN_CASE(upsample_nearest_default) {
  nn::Upsample m(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}));
  return J{}.t("y", m(inp({1, 1, 3, 3})));
}
NN_CASE(upsample_bilinear_default) {
  nn::Upsample m(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(torch::kBilinear));
  return J{}.t("y", m(inp({1, 1, 3, 3})));
}
NN_CASE(interp_bilinear_ac) {
  return J{}.t("y", F::interpolate(inp({1, 1, 3, 3}), F::InterpolateFuncOptions()
                                                          .size(std::vector<int64_t>{5, 4})
                                                          .mode(torch::kBilinear)
                                                          .align_corners(true)));
}
NN_CASE(interp_bicubic) {
  return J{}.t("y", F::interpolate(inp({1, 1, 3, 3}), F::InterpolateFuncOptions()
                                                          .scale_factor(std::vector<double>{2.0, 2.0})
                                                          .mode(torch::kBicubic)));
}
NN_CASE(interp_nearest_exact) {
  return J{}.t("y", F::interpolate(inp({1, 1, 3, 3}),
                                   F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 4}).mode(torch::kNearestExact)));
}
NN_CASE(interp_area) {
  return J{}.t("y", F::interpolate(inp({1, 1, 6, 6}),
                                   F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).mode(torch::kArea)));
}
NN_CASE(interp_frac_scale) {
  return J{}.t("y", F::interpolate(inp({1, 1, 3, 3}), F::InterpolateFuncOptions()
                                                          .scale_factor(std::vector<double>{1.7, 1.7})
                                                          .mode(torch::kBilinear)));
}
NN_CASE(interp_frac_scale_recompute) {
  return J{}.t("y", F::interpolate(inp({1, 1, 3, 3}), F::InterpolateFuncOptions()
                                                          .scale_factor(std::vector<double>{1.7, 1.7})
                                                          .mode(torch::kBilinear)
                                                          .recompute_scale_factor(true)));
}
NN_CASE(interp_antialias) {
  return J{}.t("y", F::interpolate(inp({1, 1, 6, 6}), F::InterpolateFuncOptions()
                                                          .size(std::vector<int64_t>{2, 3})
                                                          .mode(torch::kBilinear)
                                                          .antialias(true)));
}
NN_CASE(pixelshuffle) { return J{}.t("y", nn::PixelShuffle(nn::PixelShuffleOptions(2))(inp({1, 8, 2, 3}))); }
NN_CASE(pixelunshuffle) { return J{}.t("y", nn::PixelUnshuffle(nn::PixelUnshuffleOptions(2))(inp({1, 2, 4, 6}))); }
NN_CASE(softmax_implicit_3d) { return missing("SoftmaxOptions requires dim (no implicit dim)"); }
NN_CASE(softmax_dim1) { return J{}.t("y", nn::Softmax(nn::SoftmaxOptions(1))(inp({2, 3, 4}))); }
NN_CASE(logsoftmax_dim1) { return J{}.t("y", nn::LogSoftmax(nn::LogSoftmaxOptions(1))(inp({2, 3, 4}))); }

template <class M>
static J act(M m) {
  return J{}.t("y", m(inp({3, 7}, 0.37, 0.1, 4.0)));
}
NN_CASE(gelu) { return act(nn::GELU()); }
NN_CASE(gelu_tanh) { return act(nn::GELU(nn::GELUOptions().approximate("tanh"))); }
NN_CASE(hardswish) {
  return J{}.t("y", torch::hardswish(inp({3, 7}, 0.37, 0.1, 4.0)));  // no torch::nn module: the function
}
NN_CASE(hardsigmoid) {
  return J{}.t("y", torch::hardsigmoid(inp({3, 7}, 0.37, 0.1, 4.0)));  // no torch::nn module: the function
}
NN_CASE(mish) { return act(nn::Mish()); }
NN_CASE(silu) { return act(nn::SiLU()); }
NN_CASE(elu) { return act(nn::ELU()); }
NN_CASE(selu) { return act(nn::SELU()); }
NN_CASE(celu) { return act(nn::CELU()); }
NN_CASE(leakyrelu_default) { return act(nn::LeakyReLU()); }
NN_CASE(softplus_beta2) { return act(nn::Softplus(nn::SoftplusOptions().beta(2.0))); }
NN_CASE(relu6) { return act(nn::ReLU6()); }
NN_CASE(hardtanh) { return act(nn::Hardtanh()); }
NN_CASE(logsigmoid) { return act(nn::LogSigmoid()); }
NN_CASE(softsign) { return act(nn::Softsign()); }
NN_CASE(glu) { return J{}.t("y", nn::GLU()(inp({3, 8}))); }
NN_CASE(prelu_fwd) { return act(nn::PReLU()); }
NN_CASE(rrelu_eval) {
  nn::RReLU m;
  m->eval();
  return act(m);
}
NN_CASE(rrelu_train) {
  torch::manual_seed(0);
  nn::RReLU m;
  m->train();
  return act(m);
}

// ------------------------------------------------------- transformer / MHA
NN_CASE(tel_defaults) {
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2));
  return J{}.i("dim_feedforward", m->options.dim_feedforward()).h("dropout", m->options.dropout())
      .b("activation_relu", std::holds_alternative<torch::enumtype::kReLU>(m->options.activation()))
      .h("layer_norm_eps", m->norm1->options.eps()).s("norm_first", "missing").s("batch_first", "missing");
}
NN_CASE(tel_fwd_eval) {
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  fill_params(*m);
  m->eval();
  torch::NoGradGuard ng;
  Tensor y = m(inp({5, 2, 8}));
  return J{}.sl("names", param_names(*m)).t("y", y);
}
NN_CASE(tel_fwd_eval_gelu) {
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).activation(torch::kGELU));
  fill_params(*m);
  m->eval();
  torch::NoGradGuard ng;
  return J{}.t("y", m(inp({5, 2, 8})));
}
NN_CASE(tel_norm_first) { return missing("TransformerEncoderLayerOptions has no norm_first"); }
NN_CASE(tel_batch_first) { return missing("TransformerEncoderLayerOptions has no batch_first"); }
NN_CASE(tel_fwd_train_nodrop) {
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  fill_params(*m);
  m->train();
  return J{}.t("y", m(inp({5, 2, 8})));
}
NN_CASE(mha_defaults) {
  nn::MultiheadAttention m(8, 2);
  return J{}.h("dropout", m->options.dropout()).b("bias", m->in_proj_bias.defined()).s("batch_first", "missing")
      .b("add_bias_kv", m->bias_k.defined());
}
NN_CASE(mha_fwd) {
  nn::MultiheadAttention m(8, 2);
  fill_params(*m);
  auto [out, w] = m(inp({5, 2, 8}), inp({4, 2, 8}, 0.29), inp({4, 2, 8}, 0.41));
  return J{}.t("out", out).t("w", w);
}
NN_CASE(mha_fwd_mask_noavg) {
  nn::MultiheadAttention m(8, 2);
  fill_params(*m);
  Tensor kpm = torch::tensor({0, 0, 0, 1, 0, 1, 0, 0}, torch::kLong).to(torch::kBool).reshape({2, 4});
  auto [out, w] = m->forward(inp({5, 2, 8}), inp({4, 2, 8}, 0.29), inp({4, 2, 8}, 0.41), kpm, true, Tensor(), false);
  return J{}.t("out", out).t("w", w);
}
NN_CASE(mha_batch_first) { return missing("MultiheadAttentionOptions has no batch_first"); }


// ------------------------------------------------------------ dtl::nn's replacements
static J d2dtl(std::vector<int64_t> shape) {
  dtl::nn::Dropout2d m(0.5);
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(dropout2d_mod_2d__dtl) { return d2dtl({4, 6}); }
NN_CASE(dropout2d_mod_3d__dtl) { return d2dtl({4, 6, 3}); }
NN_CASE(dropout2d_mod_4d__dtl) { return d2dtl({2, 6, 2, 2}); }
NN_CASE(dropout2d_mod_5d__dtl) { return d2dtl({2, 6, 2, 2, 2}); }
NN_CASE(dropout2d_fn_2d__dtl) {
  return drop([](const Tensor& x) { return dtl::nn::functional::dropout2d(x, 0.5); }, inp({4, 6}));
}
NN_CASE(dropout2d_fn_4d__dtl) {
  return drop([](const Tensor& x) { return dtl::nn::functional::dropout2d(x, 0.5); }, inp({2, 6, 2, 2}));
}
static J d1dtl(std::vector<int64_t> shape) {
  dtl::nn::Dropout1d m(0.5);
  m->train();
  return drop([&](const Tensor& x) { return m(x); }, inp(std::move(shape)));
}
NN_CASE(dropout1d_mod_3d__dtl) { return d1dtl({4, 6, 3}); }
NN_CASE(dropout1d_wa_2d__dtl) { return d1dtl({4, 6}); }
NN_CASE(hardswish__dtl) { return act(dtl::nn::Hardswish()); }
NN_CASE(hardsigmoid__dtl) { return act(dtl::nn::Hardsigmoid()); }

/// Every case's JSON line, in registration order (one intra-op thread, as the Python side).
inline std::vector<std::pair<std::string, std::string>> lines() {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : registry()) {
    J j;
    try {
      j = c.fn();
    } catch (const std::exception& e) {
      std::string msg = e.what();
      j = J{}.s("error", msg.substr(0, msg.find('\n')));
    }
    out.emplace_back(c.name, "{\"case\":" + jstr(c.name) + j.body + "}");
  }
  torch::set_num_threads(threads);
  return out;
}

}  // namespace nn_parity

#endif  // DTL_TORCH_2

#endif  // DTL_TESTS_NN_NN_PARITY_CASES_HPP
