"""NumPy building blocks of the references.

``R`` rounds to the model's storage dtype after each operator, as the GPU
program stores every intermediate tensor in that dtype; arithmetic inside an
operator is float32 (float64 for the erf in GELU), so float16 references are
close to, not bit-equal with, the TVM kernels.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


class Rounder:
    def __init__(self, dtype: str):
        self.dtype = np.dtype(dtype)

    def __call__(self, x):
        return np.asarray(x, dtype=np.float32).astype(self.dtype).astype(np.float32)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def softmax(x, axis=-1):
    x = f32(x)
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = f32(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(eps)) * f32(gamma) + f32(beta)


def gelu(x):
    x64 = np.asarray(x, dtype=np.float64)
    return (0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)))).astype(np.float32)


def sigmoid(x):
    x = f32(x)
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


def relu(x):
    return np.maximum(f32(x), np.float32(0.0))


def conv2d_nchw(x, w, stride=1, padding=0, groups=1):
    """x [N,C,H,W], w [O,C/groups,KH,KW]; float32 accumulation."""
    x = f32(x)
    w = f32(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), dtype=np.float32)
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        # patches [N, cg, kh, kw, oh, ow]
        cols = np.empty((n, cg, kh, kw, oh, ow), dtype=np.float32)
        for i in range(kh):
            for j in range(kw):
                cols[:, :, i, j] = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
        out[:, g * og:(g + 1) * og] = np.einsum("nckhij,ockh->noij", cols, ws, optimize=True)
    return out
