"""One NASNet-A normal cell (Zoph et al. 2018, CIFAR model NASNet-A 6@768, stage 1).

Inputs: the current and the previous cell's outputs, each [1, C_in, S, S]. Both
go through relu -> conv1x1 -> (folded BN) to F channels (h and hp). Five blocks:

  b0 = sep3x3(h)  + h          b1 = sep3x3(hp) + sep5x5(h)
  b2 = avg3x3(h)  + hp         b3 = avg3x3(hp) + avg3x3(hp)
  b4 = sep5x5(hp) + sep3x3(hp)
  out = concat(b0..b4) along channels  ->  [1, 5F, S, S]

sepKxK(x) is (relu -> depthwise KxK -> pointwise 1x1 (+ folded BN bias)) twice;
avg3x3 is stride 1, padding 1, not counting the padding.
"""

from __future__ import annotations

import math

import numpy as np

from .. import nputil as npu
from ..program import simple_program

CONFIGS = {
    "full": {"in_channels": 160, "filters": 32, "size": 32},
    "small": {"in_channels": 20, "filters": 4, "size": 8},
}
SEPS = [("b0_sep3", 3), ("b1_sep3", 3), ("b1_sep5", 5), ("b4_sep5", 5), ("b4_sep3", 3)]


def _pow2_le(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def _param_shapes(cfg):
    C, F = cfg["in_channels"], cfg["filters"]
    shapes = {"adj_h_w": (F, C, 1, 1), "adj_h_b": (F,), "adj_p_w": (F, C, 1, 1), "adj_p_b": (F,)}
    for name, k in SEPS:
        for r in (0, 1):
            shapes[f"{name}_{r}_dw"] = (F, 1, k, k)
            shapes[f"{name}_{r}_pw"] = (F, F, 1, 1)
            shapes[f"{name}_{r}_b"] = (F,)
    return shapes


def build_module(cfg, dtype="float32"):
    from tvm import relax
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    C, F, S = cfg["in_channels"], cfg["filters"], cfg["size"]
    shapes = _param_shapes(cfg)
    ks = dict(SEPS)

    class NASNetCell(nn.Module):
        def __init__(self):
            for name, shape in shapes.items():
                setattr(self, name, nn.Parameter(shape, dtype))

        def p(self, name):
            return getattr(self, name)

        def sep(self, x, name):
            k = ks[name]
            for r in (0, 1):
                x = op.conv2d(op.relu(x), self.p(f"{name}_{r}_dw"), padding=k // 2, groups=F)
                x = op.conv2d(x, self.p(f"{name}_{r}_pw"), self.p(f"{name}_{r}_b"))
            return x

        def avg(self, x):
            return op.wrap_nested(relax.op.nn.avg_pool2d(x._expr, pool_size=3, strides=1, padding=1,
                                                         count_include_pad=False), "avg_pool")

        def forward(self, x, x_prev):
            h = op.conv2d(op.relu(x), self.adj_h_w, self.adj_h_b)
            hp = op.conv2d(op.relu(x_prev), self.adj_p_w, self.adj_p_b)
            b0 = op.add(self.sep(h, "b0_sep3"), h)
            b1 = op.add(self.sep(hp, "b1_sep3"), self.sep(h, "b1_sep5"))
            b2 = op.add(self.avg(h), hp)
            b3 = op.add(self.avg(hp), self.avg(hp))
            b4 = op.add(self.sep(hp, "b4_sep5"), self.sep(hp, "b4_sep3"))
            return op.concat([b0, b1, b2, b3, b4], dim=1)

    spec = {"forward": {"x": nn.spec.Tensor((1, C, S, S), dtype),
                        "x_prev": nn.spec.Tensor((1, C, S, S), dtype)}}
    mod, _ = NASNetCell().export_tvm(spec=spec)
    return mod


def scales(cfg):
    s = {"x": 1.0, "x_prev": 1.0}
    for name, shape in _param_shapes(cfg).items():
        if len(shape) == 1:
            s[name] = 0.125
        else:
            fan_in = shape[1] * shape[2] * shape[3]
            s[name] = _pow2_le(2.0 / math.sqrt(fan_in)) * (2.0 if name.endswith("_dw") else 1.0)
    return s


def _avg3x3(x):
    x = npu.f32(x)
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones((h, w), dtype=np.float32), 1)
    acc = np.zeros_like(x)
    cnt = np.zeros((h, w), dtype=np.float32)
    for i in range(3):
        for j in range(3):
            acc += xp[:, :, i:i + h, j:j + w]
            cnt += ones[i:i + h, j:j + w]
    return acc / cnt


def reference(cfg, a):
    F = cfg["filters"]
    ks = dict(SEPS)

    def conv(x, w, b=None, pad=0, groups=1):
        y = npu.conv2d_nchw(x, a[w], padding=pad, groups=groups)
        return y if b is None else y + npu.f32(a[b])[None, :, None, None]

    def sep(x, name):
        k = ks[name]
        for r in (0, 1):
            x = conv(npu.relu(x), f"{name}_{r}_dw", pad=k // 2, groups=F)
            x = conv(x, f"{name}_{r}_pw", f"{name}_{r}_b")
        return x

    h = conv(npu.relu(a["x"]), "adj_h_w", "adj_h_b")
    hp = conv(npu.relu(a["x_prev"]), "adj_p_w", "adj_p_b")
    b0 = sep(h, "b0_sep3") + h
    b1 = sep(hp, "b1_sep3") + sep(h, "b1_sep5")
    b2 = _avg3x3(h) + hp
    b3 = _avg3x3(hp) + _avg3x3(hp)
    b4 = sep(hp, "b4_sep5") + sep(hp, "b4_sep3")
    return {"out": np.concatenate([b0, b1, b2, b3, b4], axis=1)}


def programs():
    result = []
    for config, cfg in CONFIGS.items():
        result.append(simple_program("nasnet", config, dict(cfg, dtype="float32"), build_module(cfg),
                                     scales(cfg), lambda a, cfg=cfg: reference(cfg, a), ["out"]))
    return result
