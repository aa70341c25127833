"""Blocked, threaded attention gives the numbers of the plain formula.

`attention` goes through the queries a block of rows at a time and, on large
inputs, on several threads. Small blocks and threads are forced here through
the private `_blocked_attention`, so small inputs exercise what large ones do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opbyop import _threads, attention, attention_weights, ops

Array = np.ndarray[Any, Any]

# Agreement asked of the blocked path with the simple one in the same dtype, on
# inputs of the size real ones have (standard normal): (rtol, atol).
TOLERANCE = {np.float32: (1e-6, 1e-6), np.float64: (1e-12, 1e-12)}


def rand(*shape: int, seed: int = 0, dtype: Any = np.float64) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def simple(q: Array, k: Array, v: Array) -> Array:
    """The simple path, all the weights at once: what blocks must agree with."""
    return attention_weights(q, k) @ v


def blocked(q: Array, k: Array, v: Array, rows: int, workers: int) -> Array:
    return ops._blocked_attention(
        q, k, v, 1 / math.sqrt(q.shape[-1]), block_rows=rows, workers=workers
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize(
    ("n_q", "rows"),
    [
        (1, 1),  # one query
        (1, 4),  # fewer queries than a block holds
        (5, 8),
        (7, 3),  # blocks that do not divide n: 3 + 3 + 1
        (10, 4),
        (33, 32),
        (64, 16),  # blocks that do
    ],
)
def test_blocks_agree_with_the_simple_path(dtype: Any, workers: int, n_q: int, rows: int) -> None:
    q, k, v = (
        rand(n_q, 8, seed=1, dtype=dtype),
        rand(9, 8, seed=2, dtype=dtype),
        rand(9, 5, seed=3, dtype=dtype),
    )
    got = blocked(q, k, v, rows, workers)
    rtol, atol = TOLERANCE[dtype]
    assert got.dtype == dtype
    assert got.shape == (n_q, 5)
    np.testing.assert_allclose(got, simple(q, k, v), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("q", "k", "v"),
    [
        ((3, 7, 4), (3, 6, 4), (3, 6, 2)),
        ((2, 3, 7, 4), (2, 3, 6, 4), (2, 3, 6, 5)),
        ((2, 1, 7, 4), (5, 6, 4), (1, 6, 3)),  # batch dimensions broadcast
        ((4, 7, 4), (6, 4), (6, 3)),  # one k and v for the whole batch
    ],
)
@pytest.mark.parametrize("rows", [2, 3, 7, 100])  # 100: several batch entries per block
def test_blocks_over_batch_dimensions(
    dtype: Any, q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], rows: int
) -> None:
    qa, ka, va = (
        rand(*q, seed=1, dtype=dtype),
        rand(*k, seed=2, dtype=dtype),
        rand(*v, seed=3, dtype=dtype),
    )
    want = simple(qa, ka, va)
    rtol, atol = TOLERANCE[dtype]
    for workers in [1, 2]:
        got = blocked(qa, ka, va, rows, workers)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_default_blocks_and_threads_on_a_larger_input(dtype: Any) -> None:
    # 600 x 700 scores: past the size from which attention uses blocks on threads
    # (at least two blocks per thread, so four blocks of 150 rows here).
    q, k, v = (
        rand(600, 16, seed=1, dtype=dtype),
        rand(700, 16, seed=2, dtype=dtype),
        rand(700, 8, seed=3, dtype=dtype),
    )
    assert ops._THREADS_FROM <= 600 * 700
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(attention(q, k, v), simple(q, k, v), rtol=rtol, atol=atol)


def test_non_finite_rows_stay_nan_in_every_block() -> None:
    q, k, v = rand(9, 4, seed=1), rand(6, 4, seed=2), rand(6, 3, seed=3)
    k[2, 0] = np.inf  # every score with key 2 is +inf or -inf (or nan where q is 0)
    q[4] = np.nan
    want = simple(q, k, v)
    for workers in [1, 2]:
        got = blocked(q, k, v, 2, workers)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_no_keys_and_no_queries_in_blocks() -> None:
    np.testing.assert_array_equal(
        blocked(rand(5, 4), rand(0, 4), rand(0, 2), 2, 2), np.zeros((5, 2))
    )
    assert blocked(rand(2, 0, 4), rand(3, 4), rand(3, 2), 2, 2).shape == (2, 0, 2)


def test_blocks_leave_their_inputs_alone() -> None:
    q, k, v = rand(7, 4, seed=1), rand(6, 4, seed=2), rand(6, 3, seed=3)
    copies = [x.copy() for x in (q, k, v)]
    blocked(q, k, v, 3, 2)
    for x, copy in zip((q, k, v), copies, strict=True):
        np.testing.assert_array_equal(x, copy)


def test_blas_threads_come_back_after_a_threaded_call() -> None:
    # From two threads, so the check holds under a one-thread test runner too.
    with _threads.blas_threads(2):
        before = [lib["num_threads"] for lib in _threads.blas_controller().info()]
        blocked(rand(64, 4), rand(64, 4), rand(64, 4), 8, 2)
        assert [lib["num_threads"] for lib in _threads.blas_controller().info()] == before


def test_a_failing_block_raises_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("block failed")

    monkeypatch.setattr(ops, "_attend", broken)
    with pytest.raises(RuntimeError, match="block failed"):
        blocked(rand(8, 4), rand(8, 4), rand(8, 4), 2, 2)


@settings(deadline=None, max_examples=100)
@given(
    st.integers(1, 3),  # batch
    st.integers(1, 20),  # n_q
    st.integers(1, 20),  # n_k
    st.integers(0, 6),  # d_k
    st.integers(1, 6),  # d_v
    st.integers(1, 25),  # rows per block
    st.integers(1, 3),  # threads
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**32 - 1),  # seed
)
def test_any_blocks_agree_with_the_simple_path(
    batch: int,
    n_q: int,
    n_k: int,
    d_k: int,
    d_v: int,
    rows: int,
    workers: int,
    dtype: Any,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    q, k = (rng.standard_normal((batch, n, d_k)).astype(dtype) for n in (n_q, n_k))
    v = rng.standard_normal((batch, n_k, d_v)).astype(dtype)
    scale = 1 / math.sqrt(d_k) if d_k else 1.0
    got = ops._blocked_attention(q, k, v, scale, block_rows=rows, workers=workers)
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, simple(q, k, v), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("n_k", "d"), [(3, 40), (40, 3), (40, 40)])
def test_scaling_and_dividing_the_smaller_side(dtype: Any, n_k: int, d: int) -> None:
    # With d_k >= n_k the scores are scaled rather than q; with d_v >= n_k the
    # weights are divided by their sums rather than the outputs.
    q, k, v = (rand(n, d, seed=i, dtype=dtype) for i, n in enumerate((9, n_k, n_k)))
    rtol, atol = TOLERANCE[dtype]
    for rows, workers in [(4, 1), (4, 2), (None, None)]:
        got = ops._blocked_attention(q, k, v, 0.3, block_rows=rows, workers=workers)
        want = attention_weights(q, k, scale=0.3) @ v
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
