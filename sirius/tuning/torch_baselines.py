"""PyTorch equivalents of the TVM models, timed three ways: eager, CUDA Graph replay, torch.compile.

``measure_torch_baselines`` builds each model at the sizes the bench manifest recorded for
its program (``cuda_inputs/models/manifest.json``'s configuration), runs it on the GPU and
returns one ``TorchRow`` per model: the median microseconds of a forward pass eager, replayed
from a ``torch.cuda.CUDAGraph``, and compiled with ``torch.compile`` (each None with the reason
when it fails). The computations are those of ``scripts/tvm_corpus/models``, written as a
PyTorch user would (``addmm`` for matmul plus bias, ``nn.LSTM`` on cuDNN); the kernels differ
from TVM's, which is the point of a baseline. float32 runs with TF32 off, as TVM's SIMT kernels
compute in full float32.

torch is imported inside the functions, so this module (and ``TorchRow``) loads without it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class TorchRow:
    """One PyTorch equivalent, beside the program named ``program``."""

    program: str
    config: str  # model, sizes, dtype, PyTorch version: what was timed
    eager_us: float | None
    graph_us: float | None
    compile_us: float | None
    notes: tuple[str, ...] = ()  # why a way has no time


def measure_torch_baselines(requests: Sequence[tuple[str, dict]], reps: int = 20,
                            warmup: int = 3) -> list[TorchRow]:
    """One row per ``(program name, {"model": "bert"|"lstm", "sizes": {...}})``, timed on the
    current CUDA device; an unknown model gets a row with a note and no times."""
    import torch

    rows = []
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            for program, equivalent in requests:
                builder = _MODELS.get(equivalent.get("model", ""))
                if builder is None:
                    rows.append(TorchRow(program, str(equivalent), None, None, None,
                                         (f"no PyTorch equivalent of model {equivalent.get('model')!r}",)))
                    continue
                forward, inputs, config = builder(torch, equivalent["sizes"])
                rows.append(_time_three_ways(torch, program, f"PyTorch {torch.__version__} {config}",
                                             forward, inputs, reps, warmup))
                torch.cuda.empty_cache()
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    return rows


def _dtype(torch, sizes: dict):
    return {"float32": torch.float32, "float16": torch.float16}[sizes.get("dtype", "float32")]


def _bert(torch, sizes: dict) -> tuple[Callable, tuple, str]:
    """One BERT-base encoder layer, post-LayerNorm, erf GELU (scripts/tvm_corpus/models/bert.py)."""
    S, H, NH, F = sizes["seq"], sizes["hidden"], sizes["heads"], sizes["ffn"]
    HD, dtype = H // NH, _dtype(torch, sizes)

    def param(*shape, scale=0.05):
        return (torch.rand(*shape, device="cuda", dtype=torch.float32) - 0.5).mul_(scale).to(dtype)

    p = {"wq": param(H, H), "wk": param(H, H), "wv": param(H, H), "wo": param(H, H),
         "w1": param(H, F), "w2": param(F, H), "bq": param(H), "bk": param(H), "bv": param(H),
         "bo": param(H), "b1": param(F), "b2": param(H), "ln1_g": param(H, scale=1.0) + 1,
         "ln1_b": param(H), "ln2_g": param(H, scale=1.0) + 1, "ln2_b": param(H)}
    x = param(S, H, scale=1.0)
    scale = 1.0 / math.sqrt(HD)
    nnf = torch.nn.functional

    def forward(x):
        q = torch.addmm(p["bq"], x, p["wq"]).view(S, NH, HD).transpose(0, 1)  # [NH, S, HD]
        k = torch.addmm(p["bk"], x, p["wk"]).view(S, NH, HD).permute(1, 2, 0)  # [NH, HD, S]
        v = torch.addmm(p["bv"], x, p["wv"]).view(S, NH, HD).transpose(0, 1)
        probs = torch.softmax(torch.matmul(q, k) * scale, dim=-1)
        ctx = torch.matmul(probs, v).transpose(0, 1).reshape(S, H)
        h1 = nnf.layer_norm(x + torch.addmm(p["bo"], ctx, p["wo"]), (H,), p["ln1_g"], p["ln1_b"], 1e-5)
        f = torch.addmm(p["b2"], nnf.gelu(torch.addmm(p["b1"], h1, p["w1"])), p["w2"])
        return nnf.layer_norm(h1 + f, (H,), p["ln2_g"], p["ln2_b"], 1e-5)

    config = (f"BERT encoder layer (addmm, matmul-softmax-matmul attention, post-LN, erf GELU), seq {S}, "
              f"hidden {H}, {NH} heads, ffn {F}, batch 1, {sizes.get('dtype', 'float32')}")
    return forward, (x,), config + (", TF32 off" if dtype == torch.float32 else "")


def _lstm(torch, sizes: dict) -> tuple[Callable, tuple, str]:
    """Stacked LSTM, input size = hidden, batch 1 (scripts/tvm_corpus/models/lstm.py)."""
    H, L, T, dtype = sizes["hidden"], sizes["layers"], sizes["steps"], _dtype(torch, sizes)
    lstm = torch.nn.LSTM(H, H, num_layers=L).to(device="cuda", dtype=dtype).eval()
    x = torch.rand(T, 1, H, device="cuda", dtype=dtype) - 0.5
    h0 = torch.zeros(L, 1, H, device="cuda", dtype=dtype)
    c0 = torch.zeros_like(h0)

    def forward(x, h0, c0):
        return lstm(x, (h0, c0))

    config = (f"nn.LSTM (cuDNN), hidden {H}, {L} layers, {T} steps, batch 1, {sizes.get('dtype', 'float32')}"
              + (", TF32 off" if dtype == torch.float32 else ""))
    return forward, (x, h0, c0), config


_MODELS: dict[str, Callable[[Any, dict], tuple[Callable, tuple, str]]] = {"bert": _bert, "lstm": _lstm}


def _median_us(torch, call: Callable[[], Any], reps: int, warmup: int) -> float:
    """Median GPU time of ``call`` between two events on the current stream: launch gaps count,
    as they do in the harness's direct mode."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def _graph_replay(torch, forward: Callable, inputs: tuple) -> Callable[[], Any]:
    """A captured forward pass (warmed up on a side stream first, as PyTorch requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            forward(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        forward(*inputs)
    return graph.replay


def _time_three_ways(torch, program: str, config: str, forward: Callable, inputs: tuple, reps: int,
                     warmup: int) -> TorchRow:
    notes: list[str] = []
    times: dict[str, float | None] = {}
    def eager():
        return lambda: forward(*inputs)

    def compiled():
        compiled_forward = torch.compile(forward)  # compiles at its first call, in the warm-up
        return lambda: compiled_forward(*inputs)

    ways = {"eager": eager, "graph": lambda: _graph_replay(torch, forward, inputs), "compile": compiled}
    for way, make in ways.items():
        try:
            times[way] = round(_median_us(torch, make(), reps, warmup), 2)
        except Exception as err:  # each way stands alone: a failed capture or compile is a note
            times[way] = None
            first = (str(err).strip().splitlines() or [""])[0][:300]
            notes.append(f"{way} failed: {type(err).__name__}: {first}")
            torch.cuda.synchronize()
    return TorchRow(program, config, times["eager"], times["graph"], times["compile"], tuple(notes))
