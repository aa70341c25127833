"""The backward functions against central differences of their forwards, in float64.

Each forward ``f`` is turned into a number, ``loss = sum(f(inputs) * r)`` with
a random ``r``, whose gradient is the backward function at ``dy = r``. The
central difference ``(loss(x + h) - loss(x - h)) / 2h`` with h = 1e-6 errs
by about h**2 (1e-12) plus rounding (1e-16 / h, 1e-10): the tolerance is 1e-8.
The whole model's gradients are checked against PyTorch in tests/test_gpt.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose

from opbyop import (
    attention,
    attention_backward,
    attention_weights,
    cross_entropy,
    cross_entropy_backward,
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    linear,
    linear_backward,
    softmax,
    softmax_backward,
)
from opbyop.gpt import embed, embed_backward

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(9)


def numeric_gradient(loss: Callable[[], float], x: Array, h: float = 1e-6) -> Array:
    """d loss / d x by central differences, changing `x` in place and back."""
    out = np.empty_like(x)
    for i in np.ndindex(x.shape):
        keep = x[i]
        x[i] = keep + h
        up = loss()
        x[i] = keep - h
        down = loss()
        x[i] = keep
        out[i] = (up - down) / (2 * h)
    return out


def check(grad: Array, loss: Callable[[], float], x: Array) -> None:
    assert grad.shape == x.shape
    assert_allclose(grad, numeric_gradient(loss, x), rtol=0, atol=1e-8)


def test_linear_backward() -> None:
    x, weight, bias = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(5, 4)), RNG.normal(size=5)
    r = RNG.normal(size=(2, 3, 5))

    def loss() -> float:
        return float((linear(x, weight, bias) * r).sum())

    dx, d_weight, d_bias = linear_backward(r, x, weight)
    check(dx, loss, x)
    check(d_weight, loss, weight)
    check(d_bias, loss, bias)


def test_layer_norm_backward() -> None:
    x = RNG.normal(size=(3, 2, 6)) * 3 + 1
    weight, bias = RNG.normal(size=6), RNG.normal(size=6)
    r = RNG.normal(size=x.shape)

    def loss() -> float:
        return float((layer_norm(x, weight, bias) * r).sum())

    dx, d_weight, d_bias = layer_norm_backward(r, x, weight)
    check(dx, loss, x)
    check(d_weight, loss, weight)
    check(d_bias, loss, bias)


def test_layer_norm_backward_without_a_weight_is_with_ones() -> None:
    x, r = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    for a, b in zip(layer_norm_backward(r, x), layer_norm_backward(r, x, np.ones(5)), strict=True):
        assert_allclose(a, b, rtol=0, atol=1e-15)


def test_gelu_backward() -> None:
    x = np.concatenate([np.linspace(-6, 6, 25), RNG.normal(size=10)])
    r = RNG.normal(size=x.shape)

    def loss() -> float:
        return float((gelu(x, approximate="tanh") * r).sum())

    check(gelu_backward(r, x, approximate="tanh"), loss, x)
    # From the forward's output (p = y / x, 1/2 at 0, which x holds)
    y = gelu(x, approximate="tanh")
    assert 0.0 in x
    check(gelu_backward(r, x, approximate="tanh", y=y), loss, x)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_backward_along_either_axis(axis: int) -> None:
    x, r = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))

    def loss() -> float:
        return float((softmax(x, axis=axis) * r).sum())

    check(softmax_backward(r, softmax(x, axis=axis), axis=axis), loss, x)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"is_causal": True},
        {"mask": np.array([[True, False, True, True]] * 3)},
        {"scale": 0.3, "is_causal": True},
    ],
)
def test_attention_backward(kwargs: dict[str, Any]) -> None:
    q = RNG.normal(size=(2, 3, 5))  # 3 queries, 4 keys, d_v 2
    k, v = RNG.normal(size=(2, 4, 5)), RNG.normal(size=(2, 4, 2))
    r = RNG.normal(size=(2, 3, 2))

    def loss() -> float:
        return float((attention(q, k, v, **kwargs) * r).sum())

    weights = attention_weights(q, k, **kwargs)
    dq, dk, dv = attention_backward(r, q, k, v, weights, scale=kwargs.get("scale"))
    check(dq, loss, q)
    check(dk, loss, k)
    check(dv, loss, v)
    if "mask" in kwargs:  # a hidden key changes nothing
        assert np.abs(dk[:, 1]).max() == 0
        assert np.abs(dv[:, 1]).max() == 0


def test_cross_entropy_and_its_backward() -> None:
    logits = RNG.normal(size=(2, 3, 7)) * 4
    targets = RNG.integers(0, 7, size=(2, 3))
    # The loss itself, written out: -log of the target's probability.
    p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    picked = np.take_along_axis(p, targets[..., None], axis=-1)
    assert cross_entropy(logits, targets) == pytest.approx(-np.log(picked).mean(), abs=1e-14)

    def loss() -> float:
        return cross_entropy(logits, targets)

    check(cross_entropy_backward(logits, targets), loss, logits)


def test_cross_entropy_of_huge_scores_is_finite() -> None:
    logits = np.array([[1e4, 0.0, -1e4]], dtype=np.float32)
    assert cross_entropy(logits, np.array([1])) == pytest.approx(1e4)
    grad = cross_entropy_backward(logits, np.array([1]))
    assert grad.dtype == np.float32
    assert grad.tolist() == [[1.0, -1.0, 0.0]]


def test_embed_backward_sums_repeated_tokens() -> None:
    tokens, positions = RNG.normal(size=(6, 3)), RNG.normal(size=(5, 3))
    ids = np.array([[1, 4, 1, 1], [0, 4, 2, 1]])  # 1 is used four times
    r = RNG.normal(size=(2, 4, 3))

    def loss() -> float:
        return float((embed(ids, tokens, positions) * r).sum())

    d_tokens, d_positions = embed_backward(r, ids, tokens, positions)
    check(d_tokens, loss, tokens)
    check(d_positions, loss, positions)


def test_backward_functions_keep_float32() -> None:
    f = np.float32
    x, w, r = np.ones((2, 3), f), np.ones((4, 3), f), np.ones((2, 4), f)
    assert {a.dtype for a in linear_backward(r, x, w)} == {np.dtype(f)}
    assert {a.dtype for a in layer_norm_backward(x, x, np.ones(3, f))} == {np.dtype(f)}
    assert gelu_backward(x, x).dtype == f
    assert softmax_backward(x, x).dtype == f
    q = np.ones((2, 3), f)
    weights = attention_weights(q, q, is_causal=True)
    assert {a.dtype for a in attention_backward(q, q, q, q, weights)} == {np.dtype(f)}
    assert cross_entropy_backward(x, np.array([0, 1])).dtype == f


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: linear_backward(np.ones((2, 5)), np.ones((2, 3)), np.ones((4, 3))), ValueError,
         r"dy needs the shape of linear's output, \(2, 4\)"),
        (lambda: linear_backward(np.ones((2, 4)), np.ones((2, 3)), np.ones((4, 2))), ValueError,
         "linear_backward needs x"),
        (lambda: linear_backward(np.ones((2, 4), np.float32), np.ones((2, 3)), np.ones((4, 3))),
         TypeError, "same dtype"),
        (lambda: layer_norm_backward(np.ones((2, 4)), np.ones((2, 3))), ValueError,
         "dy and x of one shape"),
        (lambda: layer_norm_backward(np.ones((2, 3)), np.ones((2, 3)), np.ones(4)), ValueError,
         r"weight needs shape \(3,\)"),
        (lambda: gelu_backward(np.ones(3), np.ones(3), approximate="none"), ValueError,
         "only the tanh form"),
        (lambda: gelu_backward(np.ones(2), np.ones(3)), ValueError, "dy needs the shape of x"),
        (lambda: gelu_backward(np.ones(3), np.ones(3), y=np.ones(2)), ValueError,
         "y needs the shape of x"),
        (lambda: gelu_backward(np.ones(3), np.ones(3), y=np.ones(3, np.float32)), TypeError,
         "same dtype"),
        (lambda: softmax_backward(np.ones(2), np.ones(3)), ValueError, "one shape"),
        (lambda: attention_backward(np.ones((3, 3)), np.ones((3, 2)), np.ones((4, 2)),
                                    np.ones((4, 2)), np.ones((3, 4))), ValueError,
         r"d_out needs attention's output shape \(3, 2\)"),
        (lambda: attention_backward(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)),
                                    np.ones((4, 2)), np.ones((3, 3))), ValueError,
         r"weights needs the scores' shape \(3, 4\)"),
        (lambda: cross_entropy(np.ones((2, 3)), np.array([0, 3])), ValueError,
         "targets must be between 0 and 2"),
        (lambda: cross_entropy(np.ones((2, 3)), np.array([0.0, 1.0])), TypeError,
         "targets must be integers"),
        (lambda: cross_entropy_backward(np.ones((2, 3)), np.array([0])), ValueError,
         "targets needs one entry per row"),
    ],
)  # fmt: skip
def test_backward_functions_refuse_bad_input(
    call: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_backward_far_out_is_0_or_1_with_no_warning(dtype: type) -> None:
    big = np.finfo(dtype).max
    x: Array = np.array([-big, -1e30, -1e5, -30.0, 30.0, 1e5, 1e30, big], dtype=dtype)
    grad = gelu_backward(np.ones_like(x), x)  # filterwarnings = error
    assert grad.dtype == dtype
    assert grad.tolist() == [0.0] * 4 + [1.0] * 4
    with_y = gelu_backward(np.ones_like(x), x, y=gelu(x, approximate="tanh"))
    assert with_y.tolist() == [0.0] * 4 + [1.0] * 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_backward_from_the_output_is_right_near_0(dtype: type) -> None:
    """Near 0, y / x would divide roundings; the derivative there is 1/2."""
    tiny = np.finfo(dtype).smallest_subnormal
    x: Array = np.array([-1e-20, -3 * tiny, -tiny, 0.0, tiny, 3 * tiny, 1e-20], dtype=dtype)
    grad = gelu_backward(np.ones_like(x), x, y=gelu(x, approximate="tanh"))
    assert grad.tolist() == [0.5] * 7
