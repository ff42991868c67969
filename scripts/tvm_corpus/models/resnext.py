"""ResNeXt bottleneck blocks (ResNeXt-29 8x64d for CIFAR, stage 1).

Input [1, C_in, S, S] (the stem's output). Each block:
  relu(conv1x1 C->W) -> relu(grouped conv3x3 W->W, groups G) -> conv1x1 W->C_out,
  + shortcut (conv1x1 projection in the first block, identity after), relu.
Batch norm is folded into each convolution's bias (inference).
"""

from __future__ import annotations

import math

import numpy as np

from .. import nputil as npu
from ..program import simple_program

CONFIGS = {
    "full": {"in_channels": 64, "size": 32, "cardinality": 8, "group_width": 64, "out_channels": 256,
             "blocks": 2},
    "small": {"in_channels": 8, "size": 8, "cardinality": 4, "group_width": 4, "out_channels": 32,
              "blocks": 2},
}


def _pow2_le(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def _layers(cfg):
    """[(name, out, in_per_group, k, groups)] per block, in order."""
    C, W, CO, G = cfg["in_channels"], cfg["cardinality"] * cfg["group_width"], cfg["out_channels"], \
        cfg["cardinality"]
    blocks = []
    cin = C
    for b in range(cfg["blocks"]):
        layers = [(f"b{b}_conv1", W, cin, 1, 1), (f"b{b}_conv2", W, W // G, 3, G),
                  (f"b{b}_conv3", CO, W, 1, 1)]
        if cin != CO:
            layers.append((f"b{b}_proj", CO, cin, 1, 1))
        blocks.append(layers)
        cin = CO
    return blocks


def build_module(cfg, dtype="float32"):
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    blocks = _layers(cfg)

    class ResNeXt(nn.Module):
        def __init__(self):
            for layers in blocks:
                for name, o, i, k, _g in layers:
                    setattr(self, name + "_w", nn.Parameter((o, i, k, k), dtype))
                    setattr(self, name + "_b", nn.Parameter((o,), dtype))

        def conv(self, x, name, k, groups):
            return op.conv2d(x, getattr(self, name + "_w"), getattr(self, name + "_b"),
                             padding=k // 2, groups=groups)

        def forward(self, x):
            for layers in blocks:
                (n1, _, _, k1, g1), (n2, _, _, k2, g2), (n3, _, _, k3, g3) = layers[:3]
                y = op.relu(self.conv(x, n1, k1, g1))
                y = op.relu(self.conv(y, n2, k2, g2))
                y = self.conv(y, n3, k3, g3)
                sc = self.conv(x, layers[3][0], 1, 1) if len(layers) > 3 else x
                x = op.relu(op.add(y, sc))
            return x

    C, S = cfg["in_channels"], cfg["size"]
    mod, _ = ResNeXt().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, C, S, S), dtype)}})
    return mod


def scales(cfg):
    s = {"x": 1.0}
    for layers in _layers(cfg):
        for name, _o, i, k, _g in layers:
            s[name + "_w"] = _pow2_le(2.0 / math.sqrt(i * k * k))
            s[name + "_b"] = 0.125
    return s


def reference(cfg, a):
    x = npu.f32(a["x"])
    for layers in _layers(cfg):
        def conv(v, layer):
            name, _o, _i, k, g = layer
            return npu.conv2d_nchw(v, a[name + "_w"], padding=k // 2, groups=g) \
                + npu.f32(a[name + "_b"])[None, :, None, None]
        y = npu.relu(conv(x, layers[0]))
        y = npu.relu(conv(y, layers[1]))
        y = conv(y, layers[2])
        sc = conv(x, layers[3]) if len(layers) > 3 else x
        x = npu.relu(y + sc)
    return {"out": x}


def programs():
    result = []
    for config, cfg in CONFIGS.items():
        result.append(simple_program("resnext", config, dict(cfg, dtype="float32"), build_module(cfg),
                                     scales(cfg), lambda a, cfg=cfg: reference(cfg, a), ["out"]))
    return result
