"""Exact references for the layers, computed with fractions, not with the code under test."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def layer_norm_exact(x: Array, weight: Array | None, bias: Array | None, eps: float) -> Array:
    """Layer norm with each row's mean and variance exact, in float64.

    Every number is turned into a Fraction, so the mean, the deviations and
    the variance are exact at any magnitude; each normalised number is then
    rounded once (and its square root once), then scaled and shifted in
    float64. A row whose exact variance plus eps is 0 gives nan.
    """
    d = np.shape(x)[-1]
    rows = np.asarray(x, dtype=float).reshape(-1, d)
    out = np.empty(rows.shape)
    for i, row in enumerate(rows.tolist()):
        exact = [Fraction(v) for v in row]
        mean = sum(exact) / d
        deviations = [v - mean for v in exact]
        spread = sum(v * v for v in deviations) / d + Fraction(eps)
        if spread == 0:
            out[i] = math.nan
            continue
        # (v - mean) / sqrt(spread), as sign * sqrt(v**2 / spread): no float overflows.
        sizes = [math.sqrt(v * v / spread) for v in deviations]
        out[i] = [-size if v < 0 else size for v, size in zip(deviations, sizes, strict=True)]
    if weight is not None:
        out *= np.asarray(weight, dtype=float)
    if bias is not None:
        out += np.asarray(bias, dtype=float)
    return out.reshape(np.shape(x))
