"""One BERT-base encoder layer (post-LayerNorm, as in the original BERT).

x [S, H] -> Q, K, V projections -> 12-head attention -> output projection ->
residual + LayerNorm -> FFN (GELU, erf form) -> residual + LayerNorm.
"""

from __future__ import annotations

import math

import numpy as np

from .. import nputil as npu
from ..program import simple_program

CONFIGS = {
    "full": {"seq": 384, "hidden": 768, "heads": 12, "ffn": 3072},
    "small": {"seq": 32, "hidden": 64, "heads": 2, "ffn": 256},
}
EPS = 1e-5


def _pow2_le(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def build_module(cfg, dtype):
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    S, H, NH, F = cfg["seq"], cfg["hidden"], cfg["heads"], cfg["ffn"]
    HD = H // NH

    class BertLayer(nn.Module):
        def __init__(self):
            self.wq = nn.Parameter((H, H), dtype)
            self.bq = nn.Parameter((H,), dtype)
            self.wk = nn.Parameter((H, H), dtype)
            self.bk = nn.Parameter((H,), dtype)
            self.wv = nn.Parameter((H, H), dtype)
            self.bv = nn.Parameter((H,), dtype)
            self.wo = nn.Parameter((H, H), dtype)
            self.bo = nn.Parameter((H,), dtype)
            self.ln1_g = nn.Parameter((H,), dtype)
            self.ln1_b = nn.Parameter((H,), dtype)
            self.w1 = nn.Parameter((H, F), dtype)
            self.b1 = nn.Parameter((F,), dtype)
            self.w2 = nn.Parameter((F, H), dtype)
            self.b2 = nn.Parameter((H,), dtype)
            self.ln2_g = nn.Parameter((H,), dtype)
            self.ln2_b = nn.Parameter((H,), dtype)

        def forward(self, x):
            q = op.add(op.matmul(x, self.wq), self.bq)
            k = op.add(op.matmul(x, self.wk), self.bk)
            v = op.add(op.matmul(x, self.wv), self.bv)
            q = op.permute_dims(op.reshape(q, (S, NH, HD)), (1, 0, 2))  # [NH, S, HD]
            k = op.permute_dims(op.reshape(k, (S, NH, HD)), (1, 2, 0))  # [NH, HD, S]
            v = op.permute_dims(op.reshape(v, (S, NH, HD)), (1, 0, 2))  # [NH, S, HD]
            scores = op.multiply(op.matmul(q, k), nn.Tensor.from_scalar(1.0 / math.sqrt(HD), dtype))
            probs = op.softmax(scores, axis=-1)
            ctx = op.matmul(probs, v)  # [NH, S, HD]
            ctx = op.reshape(op.permute_dims(ctx, (1, 0, 2)), (S, H))
            attn = op.add(op.matmul(ctx, self.wo), self.bo)
            h1 = op.layer_norm(op.add(x, attn), [H], self.ln1_g, self.ln1_b, eps=EPS)
            f = op.gelu(op.add(op.matmul(h1, self.w1), self.b1))
            f = op.add(op.matmul(f, self.w2), self.b2)
            return op.layer_norm(op.add(h1, f), [H], self.ln2_g, self.ln2_b, eps=EPS)

    spec = {"forward": {"x": nn.spec.Tensor((S, H), dtype)}}
    mod, _ = BertLayer().export_tvm(spec=spec)
    return mod


def scales(cfg):
    H, F = cfg["hidden"], cfg["ffn"]
    s = {"x": 1.0}
    for w in ("wq", "wk", "wv", "wo", "w1"):
        s[w] = _pow2_le(2.0 / math.sqrt(H))
    s["w2"] = _pow2_le(2.0 / math.sqrt(F))
    for b in ("bq", "bk", "bv", "bo", "b1", "b2", "ln1_b", "ln2_b"):
        s[b] = 0.125
    s["ln1_g"] = s["ln2_g"] = 1.0
    return s


def reference(cfg, dtype, a):
    S, H, NH = cfg["seq"], cfg["hidden"], cfg["heads"]
    HD = H // NH
    r = npu.Rounder(dtype)
    f = {k: npu.f32(v) for k, v in a.items()}
    x = f["x"]
    q = r(r(x @ f["wq"]) + f["bq"])
    k = r(r(x @ f["wk"]) + f["bk"])
    v = r(r(x @ f["wv"]) + f["bv"])
    q = q.reshape(S, NH, HD).transpose(1, 0, 2)
    k = k.reshape(S, NH, HD).transpose(1, 2, 0)
    v = v.reshape(S, NH, HD).transpose(1, 0, 2)
    scores = r(r(q @ k) * r(np.float32(1.0 / math.sqrt(HD))))
    probs = r(npu.softmax(scores))
    ctx = r(probs @ v).transpose(1, 0, 2).reshape(S, H)
    attn = r(r(ctx @ f["wo"]) + f["bo"])
    h1 = r(npu.layer_norm(r(x + attn), f["ln1_g"], f["ln1_b"], EPS))
    ff = r(npu.gelu(r(r(h1 @ f["w1"]) + f["b1"])))
    ff = r(r(ff @ f["w2"]) + f["b2"])
    out = r(npu.layer_norm(r(h1 + ff), f["ln2_g"], f["ln2_b"], EPS))
    return {"out": out.astype(np.float32)}


def programs(dtype: str):
    name = "bert_fp32" if dtype == "float32" else "bert_fp16"
    result = []
    for config, cfg in CONFIGS.items():
        mod = build_module(cfg, dtype)
        notes = []
        if dtype == "float16":
            notes.append("dlight's tensor-core (wmma) matmul schedule crashes TVM 0.27 (segfault in "
                         "Tensorize), so float16 matmuls use dlight's SIMT Matmul schedule")
        result.append(simple_program(
            name, config, dict(cfg, dtype=dtype), mod, scales(cfg),
            lambda a, cfg=cfg: reference(cfg, dtype, a), ["out"],
            notes=notes, tensor_cores=dtype != "float16"))
    return result
