#!/usr/bin/env python3
"""torch.nn's side of tests/nn/nn_parity_test.cpp: one compact JSON line per case on stdout,
    {"case":"<name>", "<field>": <value>, ...}
Tensors are {"shape":[...],"v":[float.hex,...]} (floating) or {"shape":[...],"i":[int,...]}
(integer/bool); plain numbers are float.hex strings, booleans JSON booleans, names strings.

tests/nn/nn_parity_cases.hpp computes the same cases with LibTorch's torch::nn and prints the same
lines (or {"case":..,"missing":"<what>"} where LibTorch lacks the API), so the two compare line by
line. Inputs are made with the same ATen op sequence on both sides (arange -> mul -> add -> sin ->
mul), so no files are exchanged. Python's warnings go to stderr (prefixed "WARN <case>:").
"""
import json
import math
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


# ----------------------------------------------------------------- helpers
def fhex(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x.hex()


def T(t):
    t = t.detach().cpu().contiguous()
    shape = list(t.shape)
    if t.is_floating_point():
        return {"shape": shape, "v": [fhex(v) for v in t.double().flatten().tolist()]}
    return {"shape": shape, "i": [int(v) for v in t.long().flatten().tolist()]}


def inp(*shape, k=0.37, off=0.1, scale=2.0):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.float32).mul(k).add(off).sin().mul(scale).reshape(shape)


def name_key(name):
    return sum(ord(c) for c in name) % 97


@torch.no_grad()
def fill_params(m):
    """Deterministic weights keyed on the parameter *name* (order-independent)."""
    for name, p in m.named_parameters():
        s = name_key(name)
        p.copy_(torch.arange(p.numel(), dtype=torch.float32).mul(0.13).add(s * 0.01).sin().mul(0.3).reshape(p.shape))


def params_json(m):
    names = [n for n, _ in m.named_parameters()]
    return names, {n: T(p) for n, p in m.named_parameters()}


def sd_keys(m):
    return list(m.state_dict().keys())


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def emit(name, **fields):
    d = {"case": name}
    d.update(fields)
    print(json.dumps(d, separators=(",", ":")))


def run():
    for fn in CASES:
        name = fn.__name__
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                fields = fn()
            except Exception as e:  # noqa: BLE001
                fields = {"error": type(e).__name__}
        for wi in w:
            msg = str(wi.message).replace("\n", " ")
            print(f"WARN {name}: {msg[:160]}", file=sys.stderr)
        emit(name, **fields)


# ----------------------------------------------------------------- dropout
def _drop(mod_or_fn, x, seed=0):
    torch.manual_seed(seed)
    return {"out": T(mod_or_fn(x))}


@case
def dropout_mod_2d():
    return _drop(nn.Dropout(0.5).train(), inp(4, 6))


@case
def dropout_fn_2d():
    return _drop(lambda x: F.dropout(x, 0.5), inp(4, 6))


@case
def dropout1d_mod_3d():  # C++: missing module
    return _drop(nn.Dropout1d(0.5).train(), inp(4, 6, 3))


@case
def dropout1d_wa_3d():  # C++ workaround: torch::feature_dropout(x, p, true)
    return _drop(nn.Dropout1d(0.5).train(), inp(4, 6, 3))


@case
def dropout1d_wa_2d():  # C++ workaround: feature_dropout(x.unsqueeze(0)).squeeze(0)
    return _drop(nn.Dropout1d(0.5).train(), inp(4, 6))


@case
def dropout2d_mod_2d():
    return _drop(nn.Dropout2d(0.5).train(), inp(4, 6))


@case
def dropout2d_mod_3d():
    return _drop(nn.Dropout2d(0.5).train(), inp(4, 6, 3))


@case
def dropout2d_mod_4d():
    return _drop(nn.Dropout2d(0.5).train(), inp(2, 6, 2, 2))


@case
def dropout2d_mod_5d():
    return _drop(nn.Dropout2d(0.5).train(), inp(2, 6, 2, 2, 2))


@case
def dropout2d_fn_2d():
    return _drop(lambda x: F.dropout2d(x, 0.5), inp(4, 6))


@case
def dropout2d_fn_4d():
    return _drop(lambda x: F.dropout2d(x, 0.5), inp(2, 6, 2, 2))


@case
def dropout2d_wa_2d():  # C++ workaround: torch::feature_dropout(x, p, training)
    return _drop(nn.Dropout2d(0.5).train(), inp(4, 6))


@case
def dropout2d_wa_3d():
    return _drop(nn.Dropout2d(0.5).train(), inp(4, 6, 3))


@case
def dropout2d_wa_5d():
    return _drop(nn.Dropout2d(0.5).train(), inp(2, 6, 2, 2, 2))


@case
def dropout3d_mod_2d():
    return _drop(nn.Dropout3d(0.5).train(), inp(4, 6))


@case
def dropout3d_mod_3d():
    return _drop(nn.Dropout3d(0.5).train(), inp(4, 6, 3))


@case
def dropout3d_mod_4d():
    return _drop(nn.Dropout3d(0.5).train(), inp(2, 6, 2, 2))


@case
def dropout3d_mod_5d():
    return _drop(nn.Dropout3d(0.5).train(), inp(2, 6, 2, 2, 2))


@case
def alphadropout_mod_2d():
    return _drop(nn.AlphaDropout(0.5).train(), inp(4, 6))


@case
def alphadropout_mod_4d():
    return _drop(nn.AlphaDropout(0.5).train(), inp(2, 6, 2, 2))


@case
def alphadropout_fn_default():  # F.alpha_dropout training default False
    return _drop(lambda x: F.alpha_dropout(x, 0.5), inp(4, 6))


@case
def featurealphadropout_mod_2d():
    return _drop(nn.FeatureAlphaDropout(0.5).train(), inp(4, 6))


@case
def featurealphadropout_mod_4d():
    return _drop(nn.FeatureAlphaDropout(0.5).train(), inp(2, 6, 2, 2))


@case
def featurealphadropout_fn_default():
    return _drop(lambda x: F.feature_alpha_dropout(x, 0.5), inp(2, 6, 2, 2))


@case
def dropout_eval():
    return _drop(nn.Dropout2d(0.5).eval(), inp(2, 6, 2, 2))


# ----------------------------------------------------------- normalization
@case
def bn1d_train():
    m = nn.BatchNorm1d(3).train()
    x = inp(8, 3)
    y1 = m(x)
    y2 = m(x * 0.5 + 1)
    return {"y1": T(y1), "y2": T(y2), "rm": T(m.running_mean), "rv": T(m.running_var),
            "nbt": T(m.num_batches_tracked), "keys": sd_keys(m)}


@case
def bn1d_3d_train():
    m = nn.BatchNorm1d(3).train()
    y = m(inp(4, 3, 5))
    return {"y": T(y), "rm": T(m.running_mean), "rv": T(m.running_var)}


@case
def bn2d_cma():  # momentum=None -> cumulative moving average
    m = nn.BatchNorm2d(3, momentum=None).train()
    x = inp(2, 3, 4, 4)
    m(x)
    m(x * 0.5 + 1)
    m(x * 2 - 1)
    return {"rm": T(m.running_mean), "rv": T(m.running_var), "nbt": T(m.num_batches_tracked)}


@case
def bn2d_eval():
    m = nn.BatchNorm2d(3)
    fill_params(m)
    with torch.no_grad():
        m.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3]))
        m.running_var.copy_(torch.tensor([1.5, 0.5, 2.0]))
    m.eval()
    return {"y": T(m(inp(2, 3, 4, 4)))}


@case
def bn2d_no_track():
    m = nn.BatchNorm2d(3, track_running_stats=False).eval()
    return {"y": T(m(inp(2, 3, 4, 4))), "keys": sd_keys(m)}


@case
def layernorm():
    m = nn.LayerNorm([4, 5])
    fill_params(m)
    return {"y": T(m(inp(2, 3, 4, 5))), "keys": sd_keys(m)}


@case
def layernorm_nobias():  # C++: LayerNormOptions has no bias()
    m = nn.LayerNorm([4, 5], bias=False)
    return {"y": T(m(inp(2, 3, 4, 5))), "keys": sd_keys(m)}


@case
def rmsnorm():  # C++: no RMSNorm module
    m = nn.RMSNorm([5])
    return {"y": T(m(inp(2, 3, 5))), "keys": sd_keys(m)}


@case
def groupnorm():
    m = nn.GroupNorm(2, 6)
    fill_params(m)
    return {"y": T(m(inp(2, 6, 3, 3))), "keys": sd_keys(m)}


@case
def instnorm2d_default():
    m = nn.InstanceNorm2d(3).train()
    return {"y": T(m(inp(2, 3, 4, 4))), "keys": sd_keys(m)}


@case
def instnorm2d_track():
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True).train()
    fill_params(m)
    y1 = m(inp(2, 3, 4, 4))
    m.eval()
    y2 = m(inp(2, 3, 4, 4) * 0.5)
    return {"y1": T(y1), "y2": T(y2), "rm": T(m.running_mean), "rv": T(m.running_var), "keys": sd_keys(m)}


@case
def lrn():
    return {"y": T(nn.LocalResponseNorm(3)(inp(2, 6, 3, 3)))}


@case
def normalize_fn():
    return {"y": T(F.normalize(inp(3, 4)))}


# ------------------------------------------------------------------ pooling
@case
def maxpool_ceil():
    y, idx = F.max_pool2d(inp(1, 2, 8, 8), 3, 2, 0, 1, ceil_mode=True, return_indices=True)
    return {"y": T(y), "idx": T(idx)}


@case
def maxpool_pad_dil():
    return {"y": T(nn.MaxPool2d(3, stride=2, padding=1, dilation=2)(inp(1, 2, 9, 9)))}


@case
def maxpool_default_stride():
    return {"y": T(nn.MaxPool2d(3)(inp(1, 2, 9, 9)))}


@case
def avgpool_cip_false():
    return {"y": T(nn.AvgPool2d(3, 2, 1, count_include_pad=False)(inp(1, 2, 7, 7)))}


@case
def avgpool_divisor():
    return {"y": T(nn.AvgPool2d(3, 2, divisor_override=2)(inp(1, 2, 7, 7)))}


@case
def avgpool_ceil_cip():
    return {"y": T(nn.AvgPool2d(3, 2, 1, ceil_mode=True)(inp(1, 2, 8, 8)))}


@case
def adaptiveavg():
    return {"y": T(nn.AdaptiveAvgPool2d((3, 5))(inp(1, 2, 7, 9)))}


@case
def adaptiveavg_none():
    return {"y": T(nn.AdaptiveAvgPool2d((None, 4))(inp(1, 2, 7, 9)))}


@case
def adaptivemax():
    y, idx = nn.AdaptiveMaxPool2d((3, 5), return_indices=True)(inp(1, 2, 7, 9))
    return {"y": T(y), "idx": T(idx)}


@case
def lppool_p2():
    return {"y": T(nn.LPPool2d(2, 3, stride=2)(inp(1, 2, 7, 7)))}


@case
def lppool_p1_5_signed():
    return {"y": T(nn.LPPool2d(1.5, 2)(inp(1, 2, 6, 6)))}


@case
def lppool_inf():
    return {"y": T(nn.LPPool2d(float("inf"), 2)(inp(1, 2, 6, 6)))}


@case
def lppool_nostride():
    return {"y": T(nn.LPPool2d(2, 3)(inp(1, 2, 7, 7)))}


# ------------------------------------------------------------------- losses
LOGITS = lambda: inp(6, 5)  # noqa: E731
TGT = lambda: torch.tensor([0, 1, 4, 2, 1, 3])  # noqa: E731
CW = lambda: torch.tensor([1.0, 2.0, 0.5, 1.5, 1.0])  # noqa: E731


@case
def ce_plain():
    return {"l": T(nn.CrossEntropyLoss()(LOGITS(), TGT()))}


@case
def ce_ls():
    return {"l": T(nn.CrossEntropyLoss(label_smoothing=0.1)(LOGITS(), TGT()))}


@case
def ce_ignore():
    return {"l": T(nn.CrossEntropyLoss(ignore_index=1)(LOGITS(), TGT()))}


@case
def ce_weight():
    return {"l": T(nn.CrossEntropyLoss(weight=CW())(LOGITS(), TGT()))}


@case
def ce_weight_ls_ignore():
    return {"l": T(nn.CrossEntropyLoss(weight=CW(), ignore_index=1, label_smoothing=0.2)(LOGITS(), TGT()))}


@case
def ce_none_ls():
    return {"l": T(nn.CrossEntropyLoss(reduction="none", label_smoothing=0.1)(LOGITS(), TGT()))}


@case
def ce_prob():
    return {"l": T(nn.CrossEntropyLoss()(LOGITS(), inp(6, 5, k=0.21, off=0.3).softmax(1)))}


@case
def ce_prob_ls_weight():
    return {"l": T(nn.CrossEntropyLoss(weight=CW(), label_smoothing=0.1)(LOGITS(), inp(6, 5, k=0.21, off=0.3).softmax(1)))}


@case
def ce_spatial():
    t = torch.arange(2 * 3 * 4).remainder(5).reshape(2, 3, 4)
    return {"l": T(nn.CrossEntropyLoss(label_smoothing=0.1)(inp(2, 5, 3, 4), t))}


@case
def ce_grad():
    x = LOGITS().requires_grad_()
    nn.CrossEntropyLoss(weight=CW(), label_smoothing=0.1)(x, TGT()).backward()
    return {"g": T(x.grad)}


@case
def nll_weight():
    return {"l": T(nn.NLLLoss(weight=CW())(F.log_softmax(LOGITS(), 1), TGT()))}


@case
def bce_pos_weight():
    y = (inp(6, 5, k=0.5, off=0.2) > 0).float()
    return {"l": T(nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 3.0, 0.5, 1.0]))(LOGITS(), y))}


@case
def bce_weight():
    y = (inp(6, 5, k=0.5, off=0.2) > 0).float()
    return {"l": T(nn.BCEWithLogitsLoss(weight=CW())(LOGITS(), y))}


@case
def bce_plain():
    y = inp(6, 5, k=0.5, off=0.2).sigmoid()
    return {"l": T(nn.BCELoss()(LOGITS().sigmoid(), y))}


@case
def mse():
    return {"l": T(nn.MSELoss()(LOGITS(), inp(6, 5, k=0.5)))}


@case
def l1():
    return {"l": T(nn.L1Loss()(LOGITS(), inp(6, 5, k=0.5)))}


@case
def smoothl1_default():
    return {"l": T(nn.SmoothL1Loss()(LOGITS(), inp(6, 5, k=0.5)))}


@case
def smoothl1_beta05():
    return {"l": T(nn.SmoothL1Loss(beta=0.5)(LOGITS(), inp(6, 5, k=0.5)))}


@case
def smoothl1_beta0():
    return {"l": T(nn.SmoothL1Loss(beta=0.0)(LOGITS(), inp(6, 5, k=0.5)))}


@case
def huber_d2():
    return {"l": T(nn.HuberLoss(delta=2.0)(LOGITS(), inp(6, 5, k=0.5)))}


@case
def kldiv_batchmean():
    return {"l": T(nn.KLDivLoss(reduction="batchmean")(F.log_softmax(LOGITS(), 1), inp(6, 5, k=0.5).softmax(1)))}


@case
def kldiv_mean():
    return {"l": T(nn.KLDivLoss()(F.log_softmax(LOGITS(), 1), inp(6, 5, k=0.5).softmax(1)))}


@case
def kldiv_logtarget():
    return {"l": T(nn.KLDivLoss(reduction="batchmean", log_target=True)(F.log_softmax(LOGITS(), 1), F.log_softmax(inp(6, 5, k=0.5), 1)))}


@case
def ctc():
    lp = inp(7, 2, 5).log_softmax(2)
    tg = torch.tensor([[1, 2, 2], [3, 1, 0]])
    return {"l": T(nn.CTCLoss()(lp, tg, torch.tensor([7, 6]), torch.tensor([3, 2])))}


# ---------------------------------------------------------- default init
def _init(ctor):
    torch.manual_seed(0)
    m = ctor()
    names, vals = params_json(m)
    return {"names": names, "keys": sd_keys(m), "p": vals}


@case
def init_linear():
    return _init(lambda: nn.Linear(5, 3))


@case
def init_conv1d():
    return _init(lambda: nn.Conv1d(3, 4, 3))


@case
def init_conv2d():
    return _init(lambda: nn.Conv2d(3, 4, 3))


@case
def init_conv2d_groups():
    return _init(lambda: nn.Conv2d(4, 6, 3, groups=2))


@case
def init_convT2d():
    return _init(lambda: nn.ConvTranspose2d(3, 4, 3))


@case
def init_embedding():
    return _init(lambda: nn.Embedding(10, 4))


@case
def init_embedding_pad():
    return _init(lambda: nn.Embedding(10, 4, padding_idx=0))


@case
def init_bn2d():
    return _init(lambda: nn.BatchNorm2d(3))


@case
def init_layernorm():
    return _init(lambda: nn.LayerNorm(4))


@case
def init_groupnorm():
    return _init(lambda: nn.GroupNorm(2, 4))


@case
def init_prelu():
    return _init(lambda: nn.PReLU())


@case
def init_bilinear():
    return _init(lambda: nn.Bilinear(3, 2, 4))


@case
def init_lstm():
    return _init(lambda: nn.LSTM(4, 3, num_layers=2, bidirectional=True))


@case
def init_gru():
    return _init(lambda: nn.GRU(4, 3))


@case
def init_rnn():
    return _init(lambda: nn.RNN(4, 3))


@case
def init_lstm_proj():
    return _init(lambda: nn.LSTM(4, 5, proj_size=2))


@case
def init_lstmcell():
    return _init(lambda: nn.LSTMCell(4, 3))


@case
def init_mha():
    return _init(lambda: nn.MultiheadAttention(8, 2))


@case
def init_tel():
    return _init(lambda: nn.TransformerEncoderLayer(8, 2, 16))


# ---------------------------------------------------------- init functions
def _initfn(fn, shape=(4, 6)):
    torch.manual_seed(0)
    t = torch.empty(*shape)
    fn(t)
    return {"t": T(t)}


@case
def kaiming_uniform_default():
    return _initfn(nn.init.kaiming_uniform_)


@case
def kaiming_uniform_conv():
    return _initfn(nn.init.kaiming_uniform_, (4, 3, 3, 3))


@case
def kaiming_uniform_a_sqrt5():
    return _initfn(lambda t: nn.init.kaiming_uniform_(t, a=math.sqrt(5)))


@case
def kaiming_normal_default():
    return _initfn(nn.init.kaiming_normal_)


@case
def kaiming_normal_fanout_relu():
    return _initfn(lambda t: nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"))


@case
def xavier_uniform_default():
    return _initfn(nn.init.xavier_uniform_)


@case
def xavier_normal_default():
    return _initfn(nn.init.xavier_normal_)


@case
def xavier_uniform_relu_gain():
    return _initfn(lambda t: nn.init.xavier_uniform_(t, gain=nn.init.calculate_gain("relu")))


@case
def orthogonal_tall():
    return _initfn(nn.init.orthogonal_, (6, 4))


@case
def orthogonal_wide():
    return _initfn(nn.init.orthogonal_, (4, 6))


@case
def trunc_normal_default():  # C++: no torch::nn::init::trunc_normal_
    return _initfn(nn.init.trunc_normal_)


@case
def uniform_default():
    return _initfn(nn.init.uniform_)


@case
def normal_default():
    return _initfn(nn.init.normal_)


@case
def calc_gains():
    g = nn.init.calculate_gain
    return {"relu": fhex(g("relu")), "tanh": fhex(g("tanh")), "leaky_default": fhex(g("leaky_relu")),
            "leaky_0_2": fhex(g("leaky_relu", 0.2)), "conv2d": fhex(g("conv2d")), "sigmoid": fhex(g("sigmoid"))}


@case
def calc_gain_selu():  # C++: NonlinearityType has no kSELU
    return {"selu": fhex(nn.init.calculate_gain("selu"))}


# --------------------------------------------------------------- RNN fwd
def _rnn(m, x, h0=None):
    fill_params(m)
    out, h = m(x) if h0 is None else m(x, h0)
    res = {"names": [n for n, _ in m.named_parameters()], "out": T(out)}
    if isinstance(h, tuple):
        res["h"] = T(h[0])
        res["c"] = T(h[1])
    else:
        res["h"] = T(h)
    return res


@case
def lstm_fwd_bidir_bf():
    return _rnn(nn.LSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True), inp(2, 5, 4))


@case
def gru_fwd_h0():
    return _rnn(nn.GRU(4, 3), inp(5, 2, 4), inp(1, 2, 3, k=0.3))


@case
def rnn_relu_fwd():
    return _rnn(nn.RNN(4, 3, nonlinearity="relu", num_layers=2), inp(5, 2, 4))


@case
def lstm_proj_fwd():
    return _rnn(nn.LSTM(4, 5, proj_size=2), inp(5, 2, 4))


@case
def lstm_unbatched():
    return _rnn(nn.LSTM(4, 3), inp(5, 4))


# ---------------------------------------------------- activations / misc
@case
def emb_maxnorm():
    m = nn.Embedding(10, 4, max_norm=1.0)
    fill_params(m)
    with torch.no_grad():
        m.weight.mul_(10)
    y = m(torch.tensor([1, 3, 3, 7]))
    return {"y": T(y), "w": T(m.weight)}


@case
def emb_padidx_grad():
    m = nn.Embedding(10, 4, padding_idx=0)
    fill_params(m)
    m(torch.tensor([0, 2, 0, 5])).sum().backward()
    return {"g": T(m.weight.grad)}


@case
def flatten_default():
    return {"shape": list(nn.Flatten()(inp(2, 3, 4, 5)).shape)}


@case
def unflatten():
    return {"shape": list(nn.Unflatten(1, (3, 4))(inp(2, 12, 5)).shape)}


@case
def upsample_nearest_default():
    return {"y": T(nn.Upsample(scale_factor=2)(inp(1, 1, 3, 3)))}


@case
def upsample_bilinear_default():
    return {"y": T(nn.Upsample(scale_factor=2, mode="bilinear")(inp(1, 1, 3, 3)))}


@case
def interp_bilinear_ac():
    return {"y": T(F.interpolate(inp(1, 1, 3, 3), size=(5, 4), mode="bilinear", align_corners=True))}


@case
def interp_bicubic():
    return {"y": T(F.interpolate(inp(1, 1, 3, 3), scale_factor=2, mode="bicubic"))}


@case
def interp_nearest_exact():
    return {"y": T(F.interpolate(inp(1, 1, 3, 3), size=(5, 4), mode="nearest-exact"))}


@case
def interp_area():
    return {"y": T(F.interpolate(inp(1, 1, 6, 6), size=(4, 4), mode="area"))}


@case
def interp_frac_scale():
    return {"y": T(F.interpolate(inp(1, 1, 3, 3), scale_factor=1.7, mode="bilinear"))}


@case
def interp_frac_scale_recompute():
    return {"y": T(F.interpolate(inp(1, 1, 3, 3), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True))}


@case
def interp_antialias():
    return {"y": T(F.interpolate(inp(1, 1, 6, 6), size=(2, 3), mode="bilinear", antialias=True))}


@case
def pixelshuffle():
    return {"y": T(nn.PixelShuffle(2)(inp(1, 8, 2, 3)))}


@case
def pixelunshuffle():
    return {"y": T(nn.PixelUnshuffle(2)(inp(1, 2, 4, 6)))}


@case
def softmax_implicit_3d():  # C++: SoftmaxOptions requires dim
    return {"y": T(nn.Softmax()(inp(2, 3, 4)))}


@case
def softmax_dim1():
    return {"y": T(nn.Softmax(dim=1)(inp(2, 3, 4)))}


@case
def logsoftmax_dim1():
    return {"y": T(nn.LogSoftmax(dim=1)(inp(2, 3, 4)))}


def _act(m):
    return {"y": T(m(inp(3, 7, scale=4.0)))}


@case
def gelu():
    return _act(nn.GELU())


@case
def gelu_tanh():
    return _act(nn.GELU(approximate="tanh"))


@case
def hardswish():  # C++: no module; workaround torch::hardswish
    return _act(nn.Hardswish())


@case
def hardsigmoid():  # C++: no module; workaround torch::hardsigmoid
    return _act(nn.Hardsigmoid())


@case
def mish():
    return _act(nn.Mish())


@case
def silu():
    return _act(nn.SiLU())


@case
def elu():
    return _act(nn.ELU())


@case
def selu():
    return _act(nn.SELU())


@case
def celu():
    return _act(nn.CELU())


@case
def leakyrelu_default():
    return _act(nn.LeakyReLU())


@case
def softplus_beta2():
    return _act(nn.Softplus(beta=2.0))


@case
def relu6():
    return _act(nn.ReLU6())


@case
def hardtanh():
    return _act(nn.Hardtanh())


@case
def logsigmoid():
    return _act(nn.LogSigmoid())


@case
def softsign():
    return _act(nn.Softsign())


@case
def glu():
    return {"y": T(nn.GLU()(inp(3, 8)))}


@case
def prelu_fwd():
    return _act(nn.PReLU())


@case
def rrelu_eval():
    return _act(nn.RReLU().eval())


@case
def rrelu_train():
    torch.manual_seed(0)
    return _act(nn.RReLU().train())


# ------------------------------------------------------- transformer / MHA
@case
def tel_defaults():
    m = nn.TransformerEncoderLayer(8, 2)
    return {"dim_feedforward": m.linear1.out_features, "dropout": fhex(m.dropout.p),
            "activation_relu": m.activation_relu_or_gelu == 1, "layer_norm_eps": fhex(m.norm1.eps),
            "norm_first": m.norm_first, "batch_first": m.self_attn.batch_first}


@case
def tel_fwd_eval():
    m = nn.TransformerEncoderLayer(8, 2, 16)
    fill_params(m)
    m.eval()
    with torch.no_grad():
        y = m(inp(5, 2, 8))
    return {"names": [n for n, _ in m.named_parameters()], "y": T(y)}


@case
def tel_fwd_eval_gelu():
    m = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu")
    fill_params(m)
    m.eval()
    with torch.no_grad():
        y = m(inp(5, 2, 8))
    return {"y": T(y)}


@case
def tel_norm_first():  # C++: no norm_first option
    m = nn.TransformerEncoderLayer(8, 2, 16, norm_first=True)
    fill_params(m)
    m.eval()
    with torch.no_grad():
        y = m(inp(5, 2, 8))
    return {"y": T(y)}


@case
def tel_batch_first():  # C++: no batch_first option
    m = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    fill_params(m)
    m.eval()
    with torch.no_grad():
        y = m(inp(2, 5, 8))
    return {"y": T(y)}


@case
def tel_fwd_train_nodrop():
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    fill_params(m)
    m.train()
    y = m(inp(5, 2, 8))
    return {"y": T(y)}


@case
def mha_defaults():
    m = nn.MultiheadAttention(8, 2)
    return {"dropout": fhex(m.dropout), "bias": m.in_proj_bias is not None, "batch_first": m.batch_first,
            "add_bias_kv": m.bias_k is not None}


@case
def mha_fwd():
    m = nn.MultiheadAttention(8, 2)
    fill_params(m)
    q = inp(5, 2, 8)
    k = inp(4, 2, 8, k=0.29)
    v = inp(4, 2, 8, k=0.41)
    out, w = m(q, k, v)
    return {"out": T(out), "w": T(w)}


@case
def mha_fwd_mask_noavg():
    m = nn.MultiheadAttention(8, 2)
    fill_params(m)
    q = inp(5, 2, 8)
    kpm = torch.tensor([[False, False, False, True], [False, True, False, False]])
    out, w = m(q, inp(4, 2, 8, k=0.29), inp(4, 2, 8, k=0.41), key_padding_mask=kpm, average_attn_weights=False)
    return {"out": T(out), "w": T(w)}


@case
def mha_batch_first():  # C++: no batch_first option
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    fill_params(m)
    out, w = m(inp(2, 5, 8), inp(2, 4, 8, k=0.29), inp(2, 4, 8, k=0.41))
    return {"out": T(out), "w": T(w)}


if __name__ == "__main__":
    run()
