"""Deterministic values for inputs and weights, and the output checksum.

The generated CUDA programs compute exactly the same values on the host (see
``emit.FILL_C``); the NumPy references call :func:`fill` so both sides start from
bit-identical data.

Element ``i`` of the array with seed ``k`` is

    h = (uint32)(i * 2654435761) ^ (uint32)((k + 1) * 0x85EBCA6B)
    x = (((h >> 16) & 1023) / 1024 - 0.5) * scale           (in float32)

``scale`` is always a power of two, so every value is exact in float32 and in
float16 (10 significant bits at most) and the cast to float16 is lossless.
"""

from __future__ import annotations

import math

import numpy as np

HASH_MUL = 2654435761
SEED_MUL = 0x85EBCA6B


def check_scale(scale: float) -> float:
    m, _ = math.frexp(scale)
    if scale <= 0 or m != 0.5:
        raise ValueError(f"fill scale must be a positive power of two, got {scale}")
    return scale


def seed_of(k: int) -> int:
    return ((k + 1) * SEED_MUL) & 0xFFFFFFFF


def fill(shape, dtype: str, seed: int, scale: float) -> np.ndarray:
    """The values the generated program writes into an array."""
    check_scale(scale)
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    h = ((i * np.uint64(HASH_MUL)) & np.uint64(0xFFFFFFFF)) ^ np.uint64(seed_of(seed))
    q = ((h >> np.uint64(16)) & np.uint64(1023)).astype(np.float32)
    x = (q / np.float32(1024.0) - np.float32(0.5)) * np.float32(scale)
    return x.astype(np.dtype(dtype)).reshape(shape)


def checksum_weights(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) % 17 + 1).astype(np.float64)


def checksum(x: np.ndarray) -> tuple[float, float]:
    """(checksum, magnitude): sum of x[i] * (i % 17 + 1) in double, and the same
    sum over |x[i]|, against which the tolerance is taken."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    w = checksum_weights(flat.size)
    return float(np.dot(flat, w)), float(np.dot(np.abs(flat), w))
