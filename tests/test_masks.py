"""Masks in attention and attention_weights: which keys each query may look at.

Compared with an independent float64 computation written here, which hides
a key by leaving it out of the sum.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opbyop import attention, attention_weights, ops

Array = np.ndarray[Any, Any]


def rand(*shape: int, seed: int = 0, dtype: Any = np.float64) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def random_mask(*shape: int, seed: int = 0, p: float = 0.7) -> Array:
    return np.random.default_rng(seed).random(shape) < p


def reference_weights(q: Array, k: Array, keep: Any = None) -> Array:
    """Masked attention weights in float64: each row's exp over the keys it keeps, summed.

    A row that keeps no key gets zeros.
    """
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    scores = np.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1])
    keep = (
        np.ones(scores.shape, dtype=bool) if keep is None else np.broadcast_to(keep, scores.shape)
    )
    biggest = np.where(keep, scores, -np.inf).max(axis=-1, keepdims=True)
    biggest = np.where(np.isfinite(biggest), biggest, 0.0)
    exps = np.exp(np.where(keep, scores - biggest, -np.inf))
    totals = exps.sum(axis=-1, keepdims=True)
    weights: Array = exps / np.where(totals > 0, totals, 1.0)
    return weights


def reference(q: Array, k: Array, v: Array, keep: Any = None) -> Array:
    out: Array = np.einsum("...ij,...jd->...id", reference_weights(q, k, keep), v)
    return out


def causal(n_q: int, n_k: int) -> Array:
    """Query i keeps keys 0..i: written with loops, not with np.tri."""
    return np.array([[j <= i for j in range(n_k)] for i in range(n_q)])


# ---------------------------------------------------------------- what masks do


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_mask_hides_keys(dtype: Any) -> None:
    q, k, v = rand(5, 4, seed=1), rand(7, 4, seed=2), rand(7, 3, seed=3)
    keep = random_mask(5, 7)
    keep[:, 0] = True  # every query keeps a key
    want_w, want = reference_weights(q, k, keep), reference(q, k, v, keep)
    q, k, v = (x.astype(dtype) for x in (q, k, v))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    got_w = attention_weights(q, k, mask=keep)
    np.testing.assert_allclose(got_w, want_w, rtol=tol, atol=tol)
    assert (got_w[~keep] == 0).all()
    np.testing.assert_allclose(attention(q, k, v, mask=keep), want, rtol=tol, atol=tol)


@pytest.mark.parametrize(("n_q", "n_k"), [(4, 4), (3, 6), (6, 3), (1, 5), (5, 1)])
def test_is_causal_is_aligned_at_the_top_left_as_in_pytorch(n_q: int, n_k: int) -> None:
    q, k, v = rand(n_q, 4, seed=1), rand(n_k, 4, seed=2), rand(n_k, 2, seed=3)
    keep = causal(n_q, n_k)
    np.testing.assert_allclose(
        attention_weights(q, k, is_causal=True), reference_weights(q, k, keep), rtol=1e-12
    )
    np.testing.assert_allclose(
        attention(q, k, v, is_causal=True), reference(q, k, v, keep), rtol=1e-12, atol=1e-14
    )


def test_the_first_query_sees_only_the_first_key() -> None:
    q, k, v = rand(3, 4, seed=1), rand(3, 4, seed=2), rand(3, 2, seed=3)
    np.testing.assert_allclose(attention(q, k, v, is_causal=True)[0], v[0], rtol=1e-15)
    np.testing.assert_array_equal(attention_weights(q, k, is_causal=True)[0], [1, 0, 0])


def test_mask_and_is_causal_together_hide_what_either_hides() -> None:
    q, k, v = rand(2, 6, 4, seed=1), rand(2, 5, 4, seed=2), rand(2, 5, 3, seed=3)
    keep = random_mask(2, 6, 5, seed=4)
    both = keep & causal(6, 5)
    np.testing.assert_allclose(
        attention(q, k, v, mask=keep, is_causal=True), reference(q, k, v, both), atol=1e-14
    )
    np.testing.assert_allclose(
        attention_weights(q, k, mask=keep, is_causal=True),
        reference_weights(q, k, both),
        atol=1e-15,
    )


@pytest.mark.parametrize(
    "mask_shape",
    [
        (2, 1, 1, 6),  # padding: the same keys hidden from every head and query
        (1, 3, 5, 6),  # one mask per head
        (5, 6),  # one mask for everything
        (2, 3, 1, 6),
        (6,),  # one row of keys for every query
        (),  # True or False for all
    ],
)
def test_masks_broadcast_over_batch_and_heads(mask_shape: tuple[int, ...]) -> None:
    q, k, v = rand(2, 3, 5, 4, seed=1), rand(2, 3, 6, 4, seed=2), rand(2, 3, 6, 2, seed=3)
    keep = random_mask(*mask_shape, seed=5)
    want = reference(q, k, v, keep)
    np.testing.assert_allclose(attention(q, k, v, mask=keep), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        attention_weights(q, k, mask=keep), reference_weights(q, k, keep), rtol=1e-12, atol=1e-15
    )


def test_a_padding_mask_hides_the_padding_from_every_query() -> None:
    # Two sentences, the second one word shorter: its last position is padding.
    x = rand(2, 4, 8, seed=1)
    padding = np.array([[True, True, True, True], [True, True, True, False]])
    heads = x.reshape(2, 4, 2, 4).swapaxes(1, 2)  # [batch, heads, n, d_head]
    out = attention(heads, heads, heads, mask=padding[:, None, None, :])
    short = heads[1, :, :3]
    np.testing.assert_allclose(out[1, :, :3], attention(short, short, short), rtol=1e-13)


def test_a_query_that_sees_no_key_gets_zeros_as_in_pytorch() -> None:
    q, k, v = rand(3, 4, seed=1), rand(5, 4, seed=2), rand(5, 2, seed=3) + 10
    keep = np.ones((3, 5), dtype=bool)
    keep[1] = False
    weights = attention_weights(q, k, mask=keep)  # -W error: no RuntimeWarning either
    np.testing.assert_array_equal(weights[1], np.zeros(5))
    np.testing.assert_array_equal(attention(q, k, v, mask=keep)[1], [0.0, 0.0])
    np.testing.assert_allclose(weights.sum(axis=-1), [1, 0, 1], rtol=1e-15)
    np.testing.assert_array_equal(attention(q, k, v, mask=np.zeros(5, dtype=bool)), 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("rows", "workers"), [(None, None), (1, 1), (2, 2)])
def test_a_hidden_key_far_above_the_kept_ones_does_not_drown_them(
    dtype: Any, rows: int | None, workers: int | None
) -> None:
    # Key 0 scores 1e4 above the others, so exp of the kept ones against it
    # underflows to 0: those rows must be computed against the kept keys alone.
    q = np.array([[1.0], [1.0], [-1.0]], dtype=dtype)
    k = np.array([[1e4], [1.0], [2.0]], dtype=dtype)
    v = np.array([[100.0, 0.0], [1.0, 2.0], [3.0, 4.0]], dtype=dtype)
    keep = np.array([[False, True, True], [True, True, True], [False, True, True]])
    want_w = reference_weights(q, k, keep)
    got = ops._blocked_attention(q, k, v, 1.0, keep=keep, block_rows=rows, workers=workers)
    np.testing.assert_allclose(got, want_w @ v.astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(attention_weights(q, k, mask=keep), want_w, rtol=1e-6)
    causal_w = reference_weights(q[::-1], k[::-1], causal(3, 3))  # key 2 scores 1e4 for row 0
    np.testing.assert_allclose(
        attention_weights(q[::-1], k[::-1], is_causal=True), causal_w, rtol=1e-6, atol=1e-30
    )


def test_hidden_scores_that_overflow_give_nan_rows_as_in_pytorch() -> None:
    # PyTorch adds -inf to a hidden score: inf + -inf is nan, and the row is nan.
    q = np.array([[1e20], [1.0]], dtype=np.float32)
    k = np.array([[1e20], [1.0]], dtype=np.float32)
    v = np.array([[1.0], [2.0]], dtype=np.float32)
    keep = np.array([[False, True], [True, True]])
    out, weights = attention(q, k, v, mask=keep), attention_weights(q, k, mask=keep)
    assert np.isnan(out[0]).all()
    assert np.isnan(weights[0]).all()
    np.testing.assert_allclose(weights[1] @ v, out[1], rtol=1e-6)


def test_a_mask_of_all_true_changes_nothing() -> None:
    q, k, v = rand(3, 4, seed=1), rand(5, 4, seed=2), rand(5, 2, seed=3)
    np.testing.assert_array_equal(
        attention(q, k, v, mask=np.ones((3, 5), bool)), attention(q, k, v)
    )
    np.testing.assert_array_equal(attention(q, k, v, mask=True), attention(q, k, v))


def test_masks_leave_the_inputs_alone() -> None:
    q, k, v, keep = rand(3, 4, seed=1), rand(5, 4, seed=2), rand(5, 2, seed=3), random_mask(3, 5)
    copies = [x.copy() for x in (q, k, v, keep)]
    attention(q, k, v, mask=keep, is_causal=True)
    attention_weights(q, k, mask=keep, is_causal=True)
    for x, copy in zip((q, k, v, keep), copies, strict=True):
        np.testing.assert_array_equal(x, copy)


def test_masks_in_lists_work() -> None:
    q = k = v = [[1.0, 0.0], [0.0, 1.0]]
    out = attention(q, k, v, mask=[[True, False], [True, True]])
    np.testing.assert_allclose(out, attention(q, k, v, is_causal=True), rtol=1e-15)


# ---------------------------------------------------------------- blocks and threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("rows", "workers"), [(1, 1), (3, 2), (4, 3), (100, 2)])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 9), (7, 9), (2, 3, 7, 9)])
def test_masks_in_blocks_agree_with_the_reference(
    dtype: Any, rows: int, workers: int, is_causal: bool, mask_shape: tuple[int, ...] | None
) -> None:
    q, k, v = (
        rand(2, 3, 7, 4, seed=1, dtype=dtype),
        rand(2, 3, 9, 4, seed=2, dtype=dtype),
        rand(2, 3, 9, 5, seed=3, dtype=dtype),
    )
    keep = None if mask_shape is None else random_mask(*mask_shape, seed=6, p=0.6)
    if keep is not None:
        keep[..., 0, :] = False  # a query with no key to look at, in every block size
    view = ops._checked_mask(keep, is_causal, q, k, v)  # keep broadcast to the scores
    got = ops._blocked_attention(
        q, k, v, 0.5, keep=view, is_causal=is_causal, block_rows=rows, workers=workers
    )
    hidden_by_both = (True if keep is None else keep) & (causal(7, 9) if is_causal else True)
    want = reference(q * (0.5 * math.sqrt(4)), k, v, hidden_by_both)  # scale 0.5
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_masks_on_a_larger_input_use_threads() -> None:
    q, k, v = rand(600, 16, seed=1), rand(700, 16, seed=2), rand(700, 8, seed=3)
    keep = random_mask(600, 700, p=0.1)
    assert ops._THREADS_FROM <= 600 * 700
    np.testing.assert_allclose(
        attention(q, k, v, mask=keep), reference(q, k, v, keep), rtol=1e-12, atol=1e-13
    )
    np.testing.assert_allclose(
        attention(q, k, v, is_causal=True), reference(q, k, v, causal(600, 700)), atol=1e-13
    )


@settings(deadline=None, max_examples=150)
@given(
    st.integers(1, 3),  # batch
    st.integers(1, 12),  # n_q
    st.integers(1, 12),  # n_k
    st.integers(1, 5),  # d
    st.sampled_from([None, 1, 2, 5, 40]),  # rows per block (None: the default path)
    st.integers(1, 3),  # threads
    st.booleans(),  # is_causal
    st.sampled_from([None, "full", "padding", "row"]),  # mask shape
    st.sampled_from([1.0, 30.0]),  # spread of q and k: 30 makes kept exps underflow
    st.integers(0, 2**32 - 1),  # seed
)
def test_any_masked_blocks_agree_with_the_reference(
    batch: int,
    n_q: int,
    n_k: int,
    d: int,
    rows: int | None,
    workers: int,
    is_causal: bool,
    kind: str | None,
    spread: float,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((batch, n, d)) for n in (n_q, n_k, n_k))
    q, k = q * spread, k * spread
    shapes = {"full": (batch, n_q, n_k), "padding": (batch, 1, n_k), "row": (n_k,)}
    keep = None if kind is None else rng.random(shapes[kind]) < 0.6
    view = ops._checked_mask(keep, is_causal, q, k, v)
    got: Array = ops._blocked_attention(
        q, k, v, 1 / math.sqrt(d), keep=view, is_causal=is_causal, block_rows=rows, workers=workers
    )
    both = (True if keep is None else keep) & (causal(n_q, n_k) if is_causal else True)
    np.testing.assert_allclose(got, reference(q, k, v, both), rtol=1e-10, atol=1e-12)
    want_w = reference_weights(q, k, both)
    got_w = attention_weights(q, k, mask=keep, is_causal=is_causal)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------- bad masks


@pytest.mark.parametrize("bad", [np.ones((3, 5)), np.ones((3, 5), dtype=int), [[1, 0, 1, 0, 1]]])
def test_a_mask_must_be_boolean(bad: Any) -> None:
    shape = np.shape(bad)
    match = (
        rf"mask must be boolean.* got dtype {np.asarray(bad).dtype} with shape \({shape[0]}, 5\)"
    )
    with pytest.raises(TypeError, match=match):
        attention(rand(3, 4), rand(5, 4), rand(5, 2), mask=bad)
    with pytest.raises(TypeError, match=r"mask must be boolean"):
        attention_weights(rand(3, 4), rand(5, 4), mask=bad)


@pytest.mark.parametrize(
    ("shape", "scores"),
    [
        ((5, 3), r"\(3, 5\)"),  # transposed
        ((3, 4), r"\(3, 5\)"),
        ((2, 3, 5), r"\(3, 5\)"),  # a batch the scores do not have
        ((4, 1, 5), r"\(2, 3, 5\)"),
    ],
)
def test_a_mask_must_broadcast_to_the_scores(shape: tuple[int, ...], scores: str) -> None:
    batch = (2,) if "2, 3, 5" in scores else ()
    q, k, v = rand(*batch, 3, 4), rand(5, 4), rand(5, 2)
    shape_text = str(shape).replace("(", r"\(").replace(")", r"\)")
    match = rf"mask with shape {shape_text} does not broadcast to the scores.* = {scores}"
    with pytest.raises(ValueError, match=match):
        attention(q, k, v, mask=np.ones(shape, dtype=bool))
    with pytest.raises(ValueError, match=match):
        attention_weights(q, k, mask=np.ones(shape, dtype=bool))


def test_a_ragged_mask() -> None:
    with pytest.raises(ValueError, match=r"mask has ragged rows"):
        attention(rand(2, 4), rand(2, 4), rand(2, 2), mask=[[True, False], [True]])


@pytest.mark.parametrize("bad", [1, "yes", None, np.array([True])])
def test_is_causal_must_be_true_or_false(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"is_causal must be True or False"):
        attention(rand(2, 4), rand(2, 4), rand(2, 2), is_causal=bad)
    with pytest.raises(TypeError, match=r"is_causal must be True or False"):
        attention_weights(rand(2, 4), rand(2, 4), is_causal=bad)


def test_masks_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        attention(rand(2, 4), rand(2, 4), rand(2, 2), np.ones((2, 2), bool))  # type: ignore[call-arg]
