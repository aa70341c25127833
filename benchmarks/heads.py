"""How fast is opbyop.multi_head_attention? A sanity check beside the plain formula.

Times one multi-head self-attention layer the size of all-MiniLM-L6-v2's
(d_model 384, 12 heads of 32) on 32 sentences of 20 tokens, float32:

- ``multi_head_attention``: opbyop's;
- ``plain``: the same math as tutorials write it, in one expression per step:
  ``x @ w.T + b`` on the 3-D batch, reshape and transpose into heads, a stable
  softmax of the scaled scores, back, and the output projection;
- ``plain_2d``: the same, with each projection done as one 2-D product over
  all tokens (reshaping the batch away), as opbyop does.

Each variant is called once untimed, then they take turns (interleaved), and
the table shows the fastest and the median of each. The ratio column is the
median of per-round ratios to ``plain`` (DESIGN pitfall 14).

Usage::

    python benchmarks/heads.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import threadpoolctl

from opbyop import multi_head_attention

Array = np.ndarray[Any, Any]
BATCH, N, D_MODEL, N_HEADS = 32, 20, 384, 12


def plain(x: Array, p: list[Array], n_heads: int) -> Array:
    """Multi-head attention as the formulas read, one step a line."""
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = p
    batch, n, d_model = x.shape
    d_head = d_model // n_heads

    def heads(y: Array) -> Array:
        return y.reshape(batch, n, n_heads, d_head).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ w_q.T + b_q), heads(x @ w_k.T + b_k), heads(x @ w_v.T + b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d_head)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    merged = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, n, d_model)
    out: Array = merged @ w_o.T + b_o
    return out


def plain_2d(x: Array, p: list[Array], n_heads: int) -> Array:
    """`plain` with each projection one 2-D product over all tokens."""
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = p
    batch, n, d_model = x.shape
    d_head = d_model // n_heads
    rows = x.reshape(batch * n, d_model)

    def heads(y: Array) -> Array:
        return y.reshape(batch, n, n_heads, d_head).transpose(0, 2, 1, 3)

    q, k, v = heads(rows @ w_q.T + b_q), heads(rows @ w_k.T + b_k), heads(rows @ w_v.T + b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d_head)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    merged = (weights @ v).transpose(0, 2, 1, 3).reshape(batch * n, d_model)
    out: Array = (merged @ w_o.T + b_o).reshape(batch, n, d_model)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, N, D_MODEL)).astype(np.float32)
    shapes = [(D_MODEL, D_MODEL) if i % 2 == 0 else (D_MODEL,) for i in range(8)]
    p = [(rng.standard_normal(s) / math.sqrt(D_MODEL)).astype(np.float32) for s in shapes]
    variants: dict[str, Callable[[], Array]] = {
        "multi_head_attention": lambda: multi_head_attention(x, *p, n_heads=N_HEADS),
        "plain": lambda: plain(x, p, N_HEADS),
        "plain_2d": lambda: plain_2d(x, p, N_HEADS),
    }
    want = plain(x.astype(np.float64), [w.astype(np.float64) for w in p], N_HEADS)
    for name, run in variants.items():  # same answer, and one untimed call each
        np.testing.assert_allclose(run(), want, rtol=1e-4, atol=1e-5, err_msg=name)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    env = {key: os.environ.get(key, "unset") for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    blas = threadpoolctl.threadpool_info()
    kernels = sorted({f"{lib.get('internal_api')} {lib.get('architecture')}" for lib in blas})
    print(f"x [{BATCH}, {N}, {D_MODEL}], {N_HEADS} heads, float32, {args.rounds} rounds")
    print(
        f"numpy {np.__version__}, BLAS {', '.join(kernels)}, {env}, load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'variant':<22}{'fastest ms':>12}{'median ms':>12}{'vs plain':>10}")
    for name, samples in times.items():
        ratio = statistics.median(t / b for t, b in zip(samples, times["plain"], strict=True))
        print(
            f"{name:<22}{min(samples) * 1e3:>12.2f}{statistics.median(samples) * 1e3:>12.2f}"
            f"{ratio:>10.2f}"
        )


if __name__ == "__main__":
    main()
