"""Stacked LSTM, the Rammer/NNFusion benchmark configuration: batch 1, hidden
256, 10 layers, 100 time steps (input size = hidden).

TVM compiles one time step (all layers, one Relax function); the program runs
its launches in a host loop ``for (step = 0; step < STEPS; ++step)``, with the
input and state pointers offset by the step:

  X  [STEPS, H]         input sequence, x_t at X + t*H
  Hs [STEPS+1, L, H]    hidden states; step t reads Hs[t], writes Hs[t+1]
  Cs [STEPS+1, L, H]    cell states, likewise
  W  [L, H, 4H], U [L, H, 4H], B [L, 4H]   weights, layer l at offset l*...

Gates in the order i, f, g, o: c' = f*c + i*g, h' = o*tanh(c').
"""

from __future__ import annotations

import numpy as np

from .. import nputil as npu
from ..program import Binding, HostArray, Phase, ProgramSpec

CONFIGS = {
    "full": {"hidden": 256, "layers": 10, "steps": 100},
    "small": {"hidden": 64, "layers": 3, "steps": 4},
}
SCALES = {"X": 1.0, "Hs": 1.0, "Cs": 1.0, "W": 0.125, "U": 0.125, "B": 0.125}


def lstm_layers(module, x, state, layers):
    """``layers`` stacked LSTM cells on input ``x``: the new (h, c) of every layer,
    flattened, and the last layer's h. Layer l uses ``module``'s parameters
    ``w{l}``, ``u{l}``, ``b{l}`` and reads h, c from ``state[2l]``, ``state[2l+1]``."""
    from tvm.relax.frontend.nn import op

    outs, inp = [], x
    for l in range(layers):
        h, c = state[2 * l], state[2 * l + 1]
        gates = op.add(op.add(op.matmul(inp, getattr(module, f"w{l}")),
                              op.matmul(h, getattr(module, f"u{l}"))), getattr(module, f"b{l}"))
        i, f, g, o = op.split(gates, 4, axis=1)
        c2 = op.add(op.multiply(op.sigmoid(f), c), op.multiply(op.sigmoid(i), op.tanh(g)))
        h2 = op.multiply(op.sigmoid(o), op.tanh(c2))
        outs += [h2, c2]
        inp = h2
    return outs, inp


def build_module(cfg, dtype="float32"):
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    H, L = cfg["hidden"], cfg["layers"]

    class LSTMStep(nn.Module):
        def __init__(self):
            for l in range(L):
                setattr(self, f"w{l}", nn.Parameter((H, 4 * H), dtype))
                setattr(self, f"u{l}", nn.Parameter((H, 4 * H), dtype))
                setattr(self, f"b{l}", nn.Parameter((4 * H,), dtype))

        def step(self, x, *state):
            outs, _ = lstm_layers(self, x, state, L)
            return tuple(outs)

    inputs = {"x": nn.spec.Tensor((1, H), dtype)}
    for l in range(L):
        inputs[f"h{l}"] = nn.spec.Tensor((1, H), dtype)
        inputs[f"c{l}"] = nn.spec.Tensor((1, H), dtype)
    # the exporter names Relax parameters after the method's signature
    names = ", ".join(inputs)
    namespace = {}
    exec(f"def forward(self, {names}):\n    return self.step({names})\n", namespace)
    LSTMStep.forward = namespace["forward"]
    mod, _ = LSTMStep().export_tvm(spec={"forward": inputs})
    return mod


def reference(cfg, a):
    H, L, T = cfg["hidden"], cfg["layers"], cfg["steps"]
    X, W, U, B = (npu.f32(a[k]) for k in ("X", "W", "U", "B"))
    Hs, Cs = npu.f32(a["Hs"]).copy(), npu.f32(a["Cs"]).copy()
    for t in range(T):
        inp = X[t][None, :]
        for l in range(L):
            g = inp @ W[l] + Hs[t, l][None, :] @ U[l] + B[l]
            i, f, gg, o = np.split(g, 4, axis=1)
            c = npu.sigmoid(f) * Cs[t, l] + npu.sigmoid(i) * np.tanh(gg)
            h = npu.sigmoid(o) * np.tanh(c)
            Hs[t + 1, l], Cs[t + 1, l] = h[0], c[0]
            inp = h
    return {"Hs": Hs, "Cs": Cs}


def programs():
    result = []
    for config, cfg in CONFIGS.items():
        H, L, T = cfg["hidden"], cfg["layers"], cfg["steps"]
        mod = build_module(cfg)
        arrays = [
            HostArray("X", (T, H), "float32", SCALES["X"], seed=0),
            HostArray("W", (L, H, 4 * H), "float32", SCALES["W"], seed=1),
            HostArray("U", (L, H, 4 * H), "float32", SCALES["U"], seed=2),
            HostArray("B", (L, 4 * H), "float32", SCALES["B"], seed=3),
            HostArray("Hs", (T + 1, L, H), "float32", SCALES["Hs"], seed=4, checksum=True),
            HostArray("Cs", (T + 1, L, H), "float32", SCALES["Cs"], seed=5, checksum=True),
        ]
        params = {"x": Binding("X", 0, H)}
        outputs = []
        for l in range(L):
            params[f"h{l}"] = Binding("Hs", l * H, L * H)
            params[f"c{l}"] = Binding("Cs", l * H, L * H)
            params[f"w{l}"] = Binding("W", l * H * 4 * H)
            params[f"u{l}"] = Binding("U", l * H * 4 * H)
            params[f"b{l}"] = Binding("B", l * 4 * H)
            outputs += [Binding("Hs", (L + l) * H, L * H), Binding("Cs", (L + l) * H, L * H)]
        result.append(ProgramSpec(
            "lstm", config, dict(cfg, dtype="float32"), mod, arrays,
            [Phase("forward", params, outputs, steps=T)],
            lambda a, cfg=cfg: reference(cfg, a),
            notes=["time loop kept as a host loop: TVM compiles one step (all layers); "
                   "state pointers advance by one step per iteration"]))
    return result
