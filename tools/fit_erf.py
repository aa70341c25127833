"""Fit the polynomial behind opbyop's float32 erf: ``erf(x) = tanh(x * P(x**2))``.

NumPy has no erf. It does have a fast, vectorised ``tanh``, and
``atanh(erf(x)) / x`` is a smooth, even function, so a polynomial of degree 6
in ``x**2`` gives erf to about float32 rounding. This script finds the
coefficients that ``opbyop.layers`` holds, with Lawson's algorithm (iteratively
reweighted least squares converging to the minimax fit) on a fine grid, in
float64, and prints them with the error they give in float32. Run it with any
Python that has NumPy::

    python tools/fit_erf.py

The fit minimises the largest relative error of erf, not of P: an error in P at
``x`` moves erf by ``(1 - erf(x)**2) * x * error``, which vanishes as erf
saturates, so the weight of each point is that factor over ``erf(x)``. Past
x = 3.92, erf in float32 rounds to 1, and so does the fitted form, since P
stays positive and growing there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DEGREE = 6  # in x**2: 7 coefficients
X_MAX = 4.0  # erf(x) rounds to 1.0 in float32 from x = 3.92 on
POINTS = 40_001
ITERATIONS = 3000


def fit(degree: int = DEGREE) -> np.ndarray[Any, Any]:
    """Coefficients of P, lowest power first, for ``erf(x) = tanh(x * P(x**2))``."""
    x = np.linspace(1e-4, X_MAX, POINTS)
    erf = np.array([math.erf(v) for v in x])
    target = np.arctanh(erf) / x
    weight = (1 - erf**2) * x / erf  # relative error of erf per unit error of P
    scale = X_MAX**2  # fit in s / scale, within [0, 1], for a well-conditioned basis
    basis = np.polynomial.polynomial.polyvander(x * x / scale, degree)
    lawson = np.full(x.size, 1 / x.size)
    for _ in range(ITERATIONS):
        w = np.sqrt(lawson) * weight
        coeffs = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)[0]
        error = np.abs(basis @ coeffs - target) * weight
        lawson *= error
        lawson /= lawson.sum()
    return coeffs / scale ** np.arange(degree + 1)


def float32_error(coeffs: np.ndarray[Any, Any]) -> tuple[float, float]:
    """Largest absolute error and relative error of the form evaluated in float32."""
    x = np.concatenate([np.linspace(0, 6, 600_001), np.geomspace(1e-30, 1, 10_000)])
    x32 = x.astype(np.float32)
    exact = np.array([math.erf(v) for v in x32.astype(np.float64)])
    c = coeffs.astype(np.float32)
    s = x32 * x32
    p = np.full_like(s, c[-1])
    for k in c[-2::-1]:
        p = p * s + k
    got = np.tanh(x32 * p).astype(np.float64)
    return float(abs(got - exact).max()), float((abs(got - exact)[1:] / exact[1:]).max())


if __name__ == "__main__":
    coeffs = fit()
    print("_ERF_COEFFICIENTS = (")
    for c in coeffs:
        print(f"    {float(c)!r},")
    print(")")
    worst, relative = float32_error(coeffs)
    print(f"float32: largest error {worst:.2e}, relative {relative:.2e}")
