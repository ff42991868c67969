"""Seq2Seq decoder steps: 2-layer LSTM decoder with Luong (general) attention.

Teacher forcing: the embedded target tokens are an input, so the decoder runs
a fixed number of steps. Two Relax functions:

  prologue (once):  keysT = (enc @ Wa)^T                      [H, S]
  step (host loop): LSTM layers on y_t, attention over enc with keysT,
                    a = tanh(concat(ctx, h) @ Wc), logits_t = a @ Wo + bo

Host arrays: Enc [S, H], Y [T, H] (embedded targets), Hs/Cs [T+1, L, H]
(states, step t reads slot t and writes slot t+1), Logits [T, V].
"""

from __future__ import annotations

import numpy as np

from .. import nputil as npu
from ..program import Binding, HostArray, Phase, ProgramSpec
from .lstm import lstm_layers

CONFIGS = {
    "full": {"hidden": 256, "layers": 2, "source_len": 50, "vocab": 4096, "steps": 30},
    "small": {"hidden": 32, "layers": 2, "source_len": 8, "vocab": 64, "steps": 3},
}


def build_module(cfg, dtype="float32"):
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    H, L, S, V = cfg["hidden"], cfg["layers"], cfg["source_len"], cfg["vocab"]

    class Decoder(nn.Module):
        def __init__(self):
            self.wa = nn.Parameter((H, H), dtype)
            for l in range(L):
                setattr(self, f"w{l}", nn.Parameter((H, 4 * H), dtype))
                setattr(self, f"u{l}", nn.Parameter((H, 4 * H), dtype))
                setattr(self, f"b{l}", nn.Parameter((4 * H,), dtype))
            self.wc = nn.Parameter((2 * H, H), dtype)
            self.wo = nn.Parameter((H, V), dtype)
            self.bo = nn.Parameter((V,), dtype)

        def prologue(self, enc):
            return op.permute_dims(op.matmul(enc, self.wa), (1, 0))

        def step_impl(self, y, enc, keys_t, *state):
            outs, inp = lstm_layers(self, y, state, L)
            scores = op.matmul(inp, keys_t)  # [1, S]
            attn = op.softmax(scores, axis=-1)
            ctx = op.matmul(attn, enc)  # [1, H]
            a = op.tanh(op.matmul(op.concat([ctx, inp], dim=1), self.wc))
            logits = op.add(op.matmul(a, self.wo), self.bo)
            return tuple(outs + [logits])

    inputs = {"y": nn.spec.Tensor((1, H), dtype), "enc": nn.spec.Tensor((S, H), dtype),
              "keys_t": nn.spec.Tensor((H, S), dtype)}
    for l in range(L):
        inputs[f"h{l}"] = nn.spec.Tensor((1, H), dtype)
        inputs[f"c{l}"] = nn.spec.Tensor((1, H), dtype)
    names = ", ".join(inputs)
    namespace = {}
    exec(f"def step(self, {names}):\n    return self.step_impl({names})\n", namespace)
    Decoder.step = namespace["step"]
    spec = {"prologue": {"enc": nn.spec.Tensor((S, H), dtype)}, "step": inputs}
    mod, _ = Decoder().export_tvm(spec=spec)
    return mod


SCALES = {"Enc": 1.0, "Y": 1.0, "Hs": 1.0, "Cs": 1.0, "Wa": 0.0625, "W": 0.125, "U": 0.125, "B": 0.125,
          "Wc": 0.125, "Wo": 0.125, "Bo": 0.125}


def reference(cfg, a):
    H, L, T = cfg["hidden"], cfg["layers"], cfg["steps"]
    f = {k: npu.f32(v) for k, v in a.items()}
    enc = f["Enc"]
    keys_t = (enc @ f["Wa"]).T
    Hs, Cs = f["Hs"].copy(), f["Cs"].copy()
    logits = np.zeros_like(f["Logits"])
    for t in range(T):
        inp = f["Y"][t][None, :]
        for l in range(L):
            g = inp @ f["W"][l] + Hs[t, l][None, :] @ f["U"][l] + f["B"][l]
            i, ff, gg, o = np.split(g, 4, axis=1)
            c = npu.sigmoid(ff) * Cs[t, l] + npu.sigmoid(i) * np.tanh(gg)
            h = npu.sigmoid(o) * np.tanh(c)
            Hs[t + 1, l], Cs[t + 1, l] = h[0], c[0]
            inp = h
        attn = npu.softmax(inp @ keys_t)
        ctx = attn @ enc
        av = np.tanh(np.concatenate([ctx, inp], axis=1) @ f["Wc"])
        logits[t] = (av @ f["Wo"] + f["Bo"])[0]
    return {"Hs": Hs, "Cs": Cs, "Logits": logits}


def programs():
    result = []
    for config, cfg in CONFIGS.items():
        H, L, S, V, T = cfg["hidden"], cfg["layers"], cfg["source_len"], cfg["vocab"], cfg["steps"]
        arrays = [
            HostArray("Enc", (S, H), "float32", SCALES["Enc"], seed=0),
            HostArray("Y", (T, H), "float32", SCALES["Y"], seed=1),
            HostArray("Wa", (H, H), "float32", SCALES["Wa"], seed=2),
            HostArray("W", (L, H, 4 * H), "float32", SCALES["W"], seed=3),
            HostArray("U", (L, H, 4 * H), "float32", SCALES["U"], seed=4),
            HostArray("B", (L, 4 * H), "float32", SCALES["B"], seed=5),
            HostArray("Wc", (2 * H, H), "float32", SCALES["Wc"], seed=6),
            HostArray("Wo", (H, V), "float32", SCALES["Wo"], seed=7),
            HostArray("Bo", (V,), "float32", SCALES["Bo"], seed=8),
            HostArray("KeysT", (H, S), "float32", None),
            HostArray("Hs", (T + 1, L, H), "float32", SCALES["Hs"], seed=9, checksum=True),
            HostArray("Cs", (T + 1, L, H), "float32", SCALES["Cs"], seed=10, checksum=True),
            HostArray("Logits", (T, V), "float32", None, checksum=True),
        ]
        # the exporter passes every module parameter to every function
        weights = {"wa": Binding("Wa"), "wc": Binding("Wc"), "wo": Binding("Wo"), "bo": Binding("Bo")}
        for l in range(L):
            weights[f"w{l}"] = Binding("W", l * H * 4 * H)
            weights[f"u{l}"] = Binding("U", l * H * 4 * H)
            weights[f"b{l}"] = Binding("B", l * 4 * H)
        prologue = Phase("prologue", {"enc": Binding("Enc"), **weights}, [Binding("KeysT")])
        params = {"y": Binding("Y", 0, H), "enc": Binding("Enc"), "keys_t": Binding("KeysT"), **weights}
        outputs = []
        for l in range(L):
            params[f"h{l}"] = Binding("Hs", l * H, L * H)
            params[f"c{l}"] = Binding("Cs", l * H, L * H)
            outputs += [Binding("Hs", (L + l) * H, L * H), Binding("Cs", (L + l) * H, L * H)]
        outputs.append(Binding("Logits", 0, V))
        result.append(ProgramSpec(
            "seq2seq", config, dict(cfg, dtype="float32"), build_module(cfg), arrays,
            [prologue, Phase("step", params, outputs, steps=T)],
            lambda a, cfg=cfg: reference(cfg, a),
            notes=["decoder time loop kept as a host loop (teacher forcing, embedded targets "
                   "as input); the attention keys are computed once by a prologue function"]))
    return result
