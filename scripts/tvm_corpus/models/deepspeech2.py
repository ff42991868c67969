"""DeepSpeech2 (reduced): two 2-D convolutions over the spectrogram, then
unidirectional GRU layers and a per-frame character projection.

Two Relax functions:

  frontend (once): conv1 (C1 filters, 41x11, stride 2x2) -> clipped ReLU(0, 20)
                   -> conv2 (C2 filters, 21x11, stride 2x1) -> clipped ReLU ->
                   features [T', C2*F'] -> layer-0 input projection for all
                   frames: XP = features @ Wx0 + bx0            [T', 3H]
  step (host loop over the T' frames): GRU layer 0 from XP[t], GRU layers
                   1.. from the layer below, logits_t = h_top @ Wfc + bfc

GRU (gates r, z, n): xr,xz,xn = x Wx + bx; hr,hz,hn = h Wh + bh;
r = sig(xr+hr), z = sig(xz+hz), n = tanh(xn + r*hn), h' = (1-z)*n + z*h.
Host arrays: Spec [1,1,FREQ,FRAMES], XP [T', 3H], Hs [T'+1, L, H], Logits [T', V].
"""

from __future__ import annotations

import numpy as np

from .. import nputil as npu
from ..program import Binding, HostArray, Phase, ProgramSpec

CONFIGS = {
    "full": {"freq": 161, "frames": 100, "conv_channels": 32, "k1": (41, 11), "k2": (21, 11),
             "hidden": 256, "layers": 3, "vocab": 29},
    "small": {"freq": 21, "frames": 10, "conv_channels": 4, "k1": (5, 3), "k2": (5, 3),
              "hidden": 16, "layers": 2, "vocab": 29},
}
CLIP = 20.0


def _dims(cfg):
    (k1f, k1t), (k2f, k2t) = cfg["k1"], cfg["k2"]
    f1 = (cfg["freq"] + 2 * (k1f // 2) - k1f) // 2 + 1
    t1 = (cfg["frames"] + 2 * (k1t // 2) - k1t) // 2 + 1
    f2 = (f1 + 2 * (k2f // 2) - k2f) // 2 + 1
    t2 = (t1 + 2 * (k2t // 2) - k2t) // 1 + 1
    return f1, t1, f2, t2


def build_module(cfg, dtype="float32"):
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    C, H, L, V = cfg["conv_channels"], cfg["hidden"], cfg["layers"], cfg["vocab"]
    (k1f, k1t), (k2f, k2t) = cfg["k1"], cfg["k2"]
    f1, t1, f2, t2 = _dims(cfg)
    feat = C * f2

    def clipped_relu(x):
        return op.minimum(op.relu(x), nn.Tensor.from_scalar(CLIP, dtype))

    class DeepSpeech2(nn.Module):
        def __init__(self):
            self.conv1_w = nn.Parameter((C, 1, k1f, k1t), dtype)
            self.conv1_b = nn.Parameter((C,), dtype)
            self.conv2_w = nn.Parameter((C, C, k2f, k2t), dtype)
            self.conv2_b = nn.Parameter((C,), dtype)
            self.wx0 = nn.Parameter((feat, 3 * H), dtype)
            self.bx0 = nn.Parameter((3 * H,), dtype)
            for l in range(1, L):
                setattr(self, f"wx{l}", nn.Parameter((H, 3 * H), dtype))
                setattr(self, f"bx{l}", nn.Parameter((3 * H,), dtype))
            for l in range(L):
                setattr(self, f"wh{l}", nn.Parameter((H, 3 * H), dtype))
                setattr(self, f"bh{l}", nn.Parameter((3 * H,), dtype))
            self.wfc = nn.Parameter((H, V), dtype)
            self.bfc = nn.Parameter((V,), dtype)

        def frontend(self, spec):
            x = clipped_relu(op.conv2d(spec, self.conv1_w, self.conv1_b, stride=(2, 2),
                                       padding=(k1f // 2, k1t // 2)))
            x = clipped_relu(op.conv2d(x, self.conv2_w, self.conv2_b, stride=(2, 1),
                                       padding=(k2f // 2, k2t // 2)))
            x = op.reshape(op.permute_dims(x, (0, 3, 1, 2)), (t2, feat))  # [T', C*F']
            return op.add(op.matmul(x, self.wx0), self.bx0)

        def gru(self, xp, h, l):
            hp = op.add(op.matmul(h, getattr(self, f"wh{l}")), getattr(self, f"bh{l}"))
            xr, xz, xn = op.split(xp, 3, axis=1)
            hr, hz, hn = op.split(hp, 3, axis=1)
            r = op.sigmoid(op.add(xr, hr))
            z = op.sigmoid(op.add(xz, hz))
            n = op.tanh(op.add(xn, op.multiply(r, hn)))
            one = nn.Tensor.from_scalar(1.0, dtype)
            return op.add(op.multiply(op.subtract(one, z), n), op.multiply(z, h))

        def step_impl(self, xp0, *hs):
            outs = []
            h = self.gru(xp0, hs[0], 0)
            outs.append(h)
            for l in range(1, L):
                xp = op.add(op.matmul(h, getattr(self, f"wx{l}")), getattr(self, f"bx{l}"))
                h = self.gru(xp, hs[l], l)
                outs.append(h)
            logits = op.add(op.matmul(h, self.wfc), self.bfc)
            return tuple(outs + [logits])

    step_inputs = {"xp0": nn.spec.Tensor((1, 3 * H), dtype)}
    for l in range(L):
        step_inputs[f"h{l}"] = nn.spec.Tensor((1, H), dtype)
    names = ", ".join(step_inputs)
    namespace = {}
    exec(f"def step(self, {names}):\n    return self.step_impl({names})\n", namespace)
    DeepSpeech2.step = namespace["step"]
    spec = {"frontend": {"spec": nn.spec.Tensor((1, 1, cfg["freq"], cfg["frames"]), dtype)},
            "step": step_inputs}
    mod, _ = DeepSpeech2().export_tvm(spec=spec)
    return mod


def _scale(fan_in):
    import math
    return 2.0 ** math.floor(math.log2(2.0 / math.sqrt(fan_in)))


def weight_arrays(cfg):
    """(name, shape, scale) of every weight host array, in order."""
    C, H, L, V = cfg["conv_channels"], cfg["hidden"], cfg["layers"], cfg["vocab"]
    (k1f, k1t), (k2f, k2t) = cfg["k1"], cfg["k2"]
    feat = C * _dims(cfg)[2]
    w = [("conv1_w", (C, 1, k1f, k1t), _scale(k1f * k1t)), ("conv1_b", (C,), 0.125),
         ("conv2_w", (C, C, k2f, k2t), _scale(C * k2f * k2t)), ("conv2_b", (C,), 0.125),
         ("wx0", (feat, 3 * H), _scale(feat)), ("bx0", (3 * H,), 0.125)]
    if L > 1:
        w += [("Wx", (L - 1, H, 3 * H), _scale(H)), ("Bx", (L - 1, 3 * H), 0.125)]
    w += [("Wh", (L, H, 3 * H), _scale(H)), ("Bh", (L, 3 * H), 0.125),
          ("wfc", (H, V), _scale(H)), ("bfc", (V,), 0.125)]
    return w


def reference(cfg, a):
    H, L = cfg["hidden"], cfg["layers"]
    (k1f, k1t), (k2f, k2t) = cfg["k1"], cfg["k2"]
    f1, t1, f2, t2 = _dims(cfg)
    f = {k: npu.f32(v) for k, v in a.items()}

    def conv(x, w, b, stride, pad):
        # stride (sf, st) via a dense conv then subsampling of the stride-1 result
        y = npu.conv2d_nchw(np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1]))), w)
        return y[:, :, ::stride[0], ::stride[1]] + b[None, :, None, None]

    def clip(x):
        return np.minimum(np.maximum(x, np.float32(0)), np.float32(CLIP))

    x = clip(conv(f["Spec"], f["conv1_w"], f["conv1_b"], (2, 2), (k1f // 2, k1t // 2)))
    x = clip(conv(x, f["conv2_w"], f["conv2_b"], (2, 1), (k2f // 2, k2t // 2)))
    feats = x.transpose(0, 3, 1, 2).reshape(t2, -1)
    XP = feats @ f["wx0"] + f["bx0"]
    Hs = f["Hs"].copy()
    logits = np.zeros_like(f["Logits"])

    def gru(xp, h, wh, bh):
        hp = h @ wh + bh
        xr, xz, xn = np.split(xp, 3, axis=1)
        hr, hz, hn = np.split(hp, 3, axis=1)
        r = npu.sigmoid(xr + hr)
        z = npu.sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        return (np.float32(1) - z) * n + z * h

    for t in range(t2):
        h = gru(XP[t][None, :], Hs[t, 0][None, :], f["Wh"][0], f["Bh"][0])
        Hs[t + 1, 0] = h[0]
        for l in range(1, L):
            xp = h @ f["Wx"][l - 1] + f["Bx"][l - 1]
            h = gru(xp, Hs[t, l][None, :], f["Wh"][l], f["Bh"][l])
            Hs[t + 1, l] = h[0]
        logits[t] = (h @ f["wfc"] + f["bfc"])[0]
    return {"XP": XP, "Hs": Hs, "Logits": logits}


def programs():
    result = []
    for config, cfg in CONFIGS.items():
        H, L, V = cfg["hidden"], cfg["layers"], cfg["vocab"]
        t2 = _dims(cfg)[3]
        arrays = [HostArray("Spec", (1, 1, cfg["freq"], cfg["frames"]), "float32", 1.0, seed=0)]
        for k, (name, shape, scale) in enumerate(weight_arrays(cfg)):
            arrays.append(HostArray(name, shape, "float32", scale, seed=k + 1))
        arrays += [
            HostArray("XP", (t2, 3 * H), "float32", None, checksum=True),
            HostArray("Hs", (t2 + 1, L, H), "float32", 1.0, seed=99, checksum=True),
            HostArray("Logits", (t2, V), "float32", None, checksum=True),
        ]
        # the exporter passes every module parameter to every function
        weights = {n: Binding(n) for n in
                   ("conv1_w", "conv1_b", "conv2_w", "conv2_b", "wx0", "bx0", "wfc", "bfc")}
        for l in range(L):
            weights[f"wh{l}"] = Binding("Wh", l * H * 3 * H)
            weights[f"bh{l}"] = Binding("Bh", l * 3 * H)
            if l:
                weights[f"wx{l}"] = Binding("Wx", (l - 1) * H * 3 * H)
                weights[f"bx{l}"] = Binding("Bx", (l - 1) * 3 * H)
        frontend = Phase("frontend", {"spec": Binding("Spec"), **weights}, [Binding("XP")])
        params = {"xp0": Binding("XP", 0, 3 * H), **weights}
        outputs = []
        for l in range(L):
            params[f"h{l}"] = Binding("Hs", l * H, L * H)
            outputs.append(Binding("Hs", (L + l) * H, L * H))
        outputs.append(Binding("Logits", 0, V))
        sizes = dict(cfg, k1="x".join(map(str, cfg["k1"])), k2="x".join(map(str, cfg["k2"])),
                     steps=t2, dtype="float32")
        result.append(ProgramSpec(
            "deepspeech2", config, sizes, build_module(cfg), arrays,
            [frontend, Phase("step", params, outputs, steps=t2)],
            lambda a, cfg=cfg: reference(cfg, a),
            notes=["recurrent part kept as a host loop over the frames; the convolutions and "
                   "the first GRU layer's input projection run once before it"]))
    return result
