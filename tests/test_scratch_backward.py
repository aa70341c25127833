"""opbyop.scratch.backward: each backward in plain Python, against two references.

The references: the library's NumPy backward functions in float64 (written
separately, vectorised), and central differences of the plain-Python forward
``loss = sum(forward(inputs) * r)`` with a random ``r``, whose gradient is the
backward at ``dy = r``. With h = 1e-6 a central difference errs by about
h**2 plus rounding (1e-16 / h): 1e-8 leaves room.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from imports import imported_modules
from numpy.testing import assert_allclose

import opbyop
import opbyop.scratch.backward
from opbyop import gpt
from opbyop.scratch import (
    causal_head,
    causal_head_backward,
    central_difference,
    cross_entropy,
    cross_entropy_backward,
    embed_backward,
    layer_norm,
    layer_norm_backward,
    linear,
    linear_backward,
    one_weight_loss,
    softmax,
    softmax_backward,
    tanh_gelu,
    tanh_gelu_backward,
)

SOURCE = Path(opbyop.scratch.backward.__file__).read_text(encoding="utf-8")
RNG = np.random.default_rng(9)
Nested = list[Any]
TEXT: Any = "x"  # where a matrix belongs


def numeric(loss: Callable[[], float], x: Nested, h: float = 1e-6) -> np.ndarray[Any, Any]:
    """The central difference of loss() for every number of the list x, in place and back."""
    flat: list[tuple[Nested, int]] = []

    def walk(m: Nested) -> None:
        for i, item in enumerate(m):
            if isinstance(item, list):
                walk(item)
            else:
                flat.append((m, i))

    walk(x)
    out = []
    for row, i in flat:
        keep = row[i]
        row[i] = keep + h
        up = loss()
        row[i] = keep - h
        down = loss()
        row[i] = keep
        out.append((up - down) / (2 * h))
    return np.array(out).reshape(np.shape(x))


def dot(a: Nested, b: np.ndarray[Any, Any]) -> float:
    return float((np.array(a) * b).sum())


def test_the_one_weight_model_by_hand() -> None:
    # guess 1 * 2 = 2, target 3: miss -1, loss 1; slope 2 * miss * x = -4
    assert one_weight_loss(1.0) == 1.0
    assert central_difference(one_weight_loss, 1.0) == pytest.approx(-4.0, abs=1e-8)
    assert central_difference(math.sin, 0.5, h=1e-5) == pytest.approx(math.cos(0.5), abs=1e-9)
    with pytest.raises(ValueError, match="h must be > 0"):
        central_difference(math.sin, 0.5, h=0.0)


def test_linear_backward_against_numpy_and_nudges() -> None:
    x, w, b = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4)), RNG.normal(size=5)
    r = RNG.normal(size=(3, 5))
    dx, dw, db = linear_backward(r.tolist(), x.tolist(), w.tolist())
    got: Any
    for got, want in zip((dx, dw, db), opbyop.linear_backward(r, x, w), strict=True):
        assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    xs, ws, bs = x.tolist(), w.tolist(), b.tolist()

    def loss() -> float:
        return dot(linear(xs, ws, bs), r)

    assert_allclose(dx, numeric(loss, xs), atol=1e-8)
    assert_allclose(dw, numeric(loss, ws), atol=1e-8)
    assert_allclose(db, numeric(loss, bs), atol=1e-8)


def test_cross_entropy_and_its_backward() -> None:
    scores, targets = RNG.normal(size=(4, 6)) * 3, [0, 5, 2, 2]
    assert cross_entropy(scores.tolist(), targets) == pytest.approx(
        opbyop.cross_entropy(scores, np.array(targets)), rel=1e-14
    )
    grad = cross_entropy_backward(scores.tolist(), targets)
    assert_allclose(grad, opbyop.cross_entropy_backward(scores, np.array(targets)), atol=1e-15)
    s = scores.tolist()
    assert_allclose(grad, numeric(lambda: cross_entropy(s, targets), s), atol=1e-8)
    assert cross_entropy([[0.0] * 4], [1]) == pytest.approx(math.log(4))
    assert cross_entropy([[1000.0, 0.0]], [0]) == 0.0  # no overflow


def test_tanh_gelu_and_its_backward() -> None:
    x = RNG.normal(size=(3, 5)) * 3
    assert_allclose(tanh_gelu(x.tolist()), opbyop.gelu(x, approximate="tanh"), atol=1e-14)
    r = RNG.normal(size=x.shape)
    grad = tanh_gelu_backward(r.tolist(), x.tolist())
    assert_allclose(grad, opbyop.gelu_backward(r, x), rtol=1e-12, atol=1e-14)
    xs = x.tolist()
    assert_allclose(grad, numeric(lambda: dot(tanh_gelu(xs), r), xs), atol=1e-8)


def test_layer_norm_backward_against_numpy_and_nudges() -> None:
    x = RNG.normal(size=(3, 6)) * 2 + 1
    w, b, r = RNG.normal(size=6), RNG.normal(size=6), RNG.normal(size=(3, 6))
    got = layer_norm_backward(r.tolist(), x.tolist(), w.tolist())
    part: Any
    for part, want in zip(got, opbyop.layer_norm_backward(r, x, w), strict=True):
        assert_allclose(part, want, rtol=1e-12, atol=1e-13)
    xs, ws, bs = x.tolist(), w.tolist(), b.tolist()

    def loss() -> float:
        return dot(layer_norm(xs, ws, bs), r)

    for part, wrt in zip(got, (xs, ws, bs), strict=True):
        assert_allclose(part, numeric(loss, wrt), atol=1e-8)


def test_softmax_backward() -> None:
    s, r = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    y = softmax(s.tolist())
    grad = softmax_backward(r.tolist(), y)
    assert_allclose(grad, opbyop.softmax_backward(r, np.array(y)), atol=1e-15)
    ss = s.tolist()
    assert_allclose(grad, numeric(lambda: dot(softmax(ss), r), ss), atol=1e-8)


def test_causal_head_and_its_backward() -> None:
    q, k, v = (RNG.normal(size=(4, 3)) for _ in range(3))
    out, weights = causal_head(q.tolist(), k.tolist(), v.tolist())
    assert_allclose(out, opbyop.attention(q, k, v, is_causal=True), atol=1e-14)
    assert all(weights[i][j] == 0 for i in range(4) for j in range(i + 1, 4))
    r = RNG.normal(size=(4, 3))
    grads = causal_head_backward(r.tolist(), q.tolist(), k.tolist(), v.tolist(), weights)
    want = opbyop.attention_backward(r, q, k, v, np.array(weights))
    for got, w in zip(grads, want, strict=True):
        assert_allclose(got, w, rtol=1e-12, atol=1e-14)
    qs, ks, vs = q.tolist(), k.tolist(), v.tolist()

    def loss() -> float:
        return dot(causal_head(qs, ks, vs)[0], r)

    for got, wrt in zip(grads, (qs, ks, vs), strict=True):
        assert_allclose(got, numeric(loss, wrt), atol=1e-8)
    # query 0 sees key 0 alone, with weight 1 whatever its score: no gradient
    assert grads[0][0] == [0.0] * 3
    assert np.abs(np.array(grads[0][1:])).min() > 0


def test_embed_backward_sums_repeated_tokens() -> None:
    ids = [2, 0, 2, 1]
    dx = RNG.normal(size=(4, 3))
    tokens, positions = RNG.normal(size=(5, 3)), RNG.normal(size=(6, 3))
    d_tokens, d_positions = embed_backward(dx.tolist(), ids, 5, 6)
    want = gpt.embed_backward(dx, np.array(ids), tokens, positions)
    assert_allclose(d_tokens, want[0], atol=1e-15)
    assert_allclose(d_positions, want[1], atol=1e-15)
    assert_allclose(d_tokens[2], dx[0] + dx[2], atol=1e-15)  # used twice
    assert d_tokens[3] == [0.0] * 3  # never used
    assert d_positions[5] == [0.0] * 3
    ts = tokens.tolist()

    def loss() -> float:
        return dot(gpt.embed(np.array(ids), np.array(ts), positions).tolist(), dx)

    assert_allclose(d_tokens, numeric(loss, ts), atol=1e-8)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: linear_backward([[1.0]], [[1.0, 2.0]], [[1.0]]), ValueError, "weight needs"),
        (lambda: linear_backward([[1.0, 2.0]], [[1.0]], [[1.0]]), ValueError, "dy needs"),
        (lambda: cross_entropy([[1.0, 2.0]], [2]), ValueError, "targets: 2 is not"),
        (lambda: cross_entropy([[1.0, 2.0]], [0, 1]), ValueError, "targets needs 1"),
        (lambda: cross_entropy([[1.0, 2.0]], [True]), TypeError, "integers"),
        (lambda: tanh_gelu_backward([[1.0]], [[1.0, 2.0]]), ValueError, "dy needs"),
        (lambda: layer_norm_backward([[1.0, 2.0]], [[1.0, 2.0]], [1.0]), ValueError, "weight"),
        (lambda: softmax_backward([[1.0]], [[0.5, 0.5]]), ValueError, "dy needs"),
        (lambda: causal_head([[1.0]], [[1.0], [2.0]], [[1.0]]), ValueError, "k needs"),
        (lambda: embed_backward([[1.0]], [3], 2, 4), ValueError, "ids: 3"),
        (lambda: embed_backward([[1.0], [1.0]], [0, 1], 2, 1), ValueError, "positions"),
        (lambda: linear_backward(TEXT, [[1.0]], [[1.0]]), TypeError, "dy must be"),
    ],
)
def test_bad_input_is_refused_by_name(call: Callable[[], object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


M = [[1.0, 2.0], [0.5, -1.0]]


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (linear_backward, (M, M, M)),
        (cross_entropy_backward, (M, [0, 1])),
        (tanh_gelu_backward, (M, M)),
        (layer_norm_backward, (M, M, [1.0, 2.0])),
        (softmax_backward, (M, softmax(M))),
        (causal_head_backward, (M, M, M, M, causal_head(M, M, M)[1])),
        (embed_backward, (M, [1, 1], 2, 3)),
    ],
)
def test_backwards_leave_their_arguments_alone(function: Any, args: tuple[Any, ...]) -> None:
    before = copy.deepcopy(args)
    function(*args)
    assert args == before


def test_it_imports_only_the_standard_library_and_earlier_episodes() -> None:
    imported = imported_modules(SOURCE)
    assert imported == {
        "math",
        "collections.abc",
        "opbyop.scratch.block",
        "opbyop.scratch.four_ops",
        "opbyop.scratch.masks",
    }
