"""Bad input gets a clear error that names the argument and the shapes it got."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from opbyop import attention, attention_weights, scratch, softmax

OK = [[1.0, 2.0], [3.0, 4.0]]

# ---------------------------------------------------------------- scratch


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: scratch.mat_mul([[1.0, 2.0], [3.0]], OK), ValueError, r"a has ragged rows"),
        (lambda: scratch.mat_mul(OK, [[1.0], [2.0, 3.0]]), ValueError, r"b has ragged rows"),
        (lambda: scratch.transpose([[1.0], [2.0, 3.0]]), ValueError, r"m has ragged rows"),
        (lambda: scratch.softmax([[1.0, 2.0], []]), ValueError, r"scores has ragged rows"),
        (lambda: scratch.attention(OK, [[1.0, 2.0], [3.0]], OK), ValueError, r"k has ragged"),
    ],
)
def test_scratch_ragged_rows(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_scratch_ragged_rows_message_gives_the_lengths() -> None:
    with pytest.raises(ValueError, match=r"row 0 has 2 numbers, row 2 has 1"):
        scratch.softmax([[1.0, 2.0], [3.0, 4.0], [5.0]])


@pytest.mark.parametrize("empty", [[], [[]], [[], []]])
def test_scratch_empty_matrices(empty: list[list[float]]) -> None:
    shape = r"\(0,\)" if not empty else rf"\({len(empty)}, 0\)"
    with pytest.raises(ValueError, match=rf"a is empty, got shape {shape}"):
        scratch.mat_mul(empty, OK)
    with pytest.raises(ValueError, match=r"b is empty"):
        scratch.mat_mul(OK, empty)
    with pytest.raises(ValueError, match=r"m is empty"):
        scratch.transpose(empty)
    with pytest.raises(ValueError, match=r"scores is empty"):
        scratch.scale(empty, 4)
    with pytest.raises(ValueError, match=r"scores is empty"):
        scratch.softmax(empty)
    for name in "qkv":
        args = {"q": OK, "k": OK, "v": OK, name: empty}
        with pytest.raises(ValueError, match=rf"{name} is empty"):
            scratch.attention(**args)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("12", r"a must be a list of rows, got str"),
        (np.ones((2, 2)), r"a must be a list of rows, got ndarray"),
        ([1.0, 2.0], r"a\[0\] must be a list of numbers, got float"),
        ([[1.0, "2"]], r"a\[0\]\[1\] must be a number, got '2'"),
        ([[1.0], [None]], r"a\[1\]\[0\] must be a number, got None"),
        ([[1j]], r"a\[0\]\[0\] must be a number, got 1j"),
        ([[[1.0]]], r"a\[0\]\[0\] must be a number, got \[1.0\]"),
    ],
)
def test_scratch_non_numeric_entries(bad: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        scratch.mat_mul(bad, OK)


def test_scratch_mat_mul_inner_dimensions_must_match() -> None:
    with pytest.raises(
        ValueError, match=r"a has 2 columns but b has 3 rows: got a \(2, 2\), b \(3, 1\)"
    ):
        scratch.mat_mul(OK, [[1.0], [2.0], [3.0]])


def test_scratch_attention_q_and_k_rows_must_have_the_same_length() -> None:
    with pytest.raises(ValueError, match=r"q and k .* got q \(2, 2\), k \(2, 3\)"):
        scratch.attention(OK, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], OK)


def test_scratch_attention_needs_one_value_per_key() -> None:
    with pytest.raises(ValueError, match=r"k and v .* got k \(2, 2\), v \(3, 2\)"):
        scratch.attention(OK, OK, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


@pytest.mark.parametrize("size", [0, -1, -0.5, math.nan, -math.inf])
def test_scratch_scale_vector_size_must_be_positive(size: float) -> None:
    with pytest.raises(ValueError, match=r"vector_size must be positive"):
        scratch.scale(OK, size)


@pytest.mark.parametrize("size", ["768", None, True, [4]])
def test_scratch_scale_vector_size_must_be_a_number(size: Any) -> None:
    with pytest.raises(TypeError, match=r"vector_size must be a number"):
        scratch.scale(OK, size)


# ---------------------------------------------------------------- NumPy layer

QKV = {"q": np.ones((3, 4)), "k": np.ones((5, 4)), "v": np.ones((5, 2))}


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_ragged_rows(name: str) -> None:
    args: dict[str, Any] = {**QKV, name: [[1.0, 2.0], [3.0]]}
    with pytest.raises(ValueError, match=rf"{name} has ragged rows.*shape"):
        attention(**args)


def test_softmax_ragged_rows() -> None:
    with pytest.raises(ValueError, match=r"x has ragged rows"):
        softmax([[1.0, 2.0], [3.0]])


@pytest.mark.parametrize(
    "bad",
    [
        [["a", "b"]],
        [[1.0, "2"]],
        np.array([[None, 1.0]]),
        [[1 + 2j, 1.0]],
        np.array([["2020-01-01"]], dtype="datetime64[D]"),
        [[b"x"]],
    ],
)
@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_non_numeric_entries(name: str, bad: Any) -> None:
    args: dict[str, Any] = {**QKV, name: bad}
    with pytest.raises(TypeError, match=rf"{name} must hold real numbers, got dtype .* shape"):
        attention(**args)


@pytest.mark.parametrize("bad", [["a"], [None, 1.0], [1j]])
def test_softmax_non_numeric_entries(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"x must hold real numbers"):
        softmax(bad)


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.ones(4), 1.0])
def test_fewer_than_two_dimensions(name: str, bad: Any) -> None:
    args: dict[str, Any] = {**QKV, name: bad}
    shape = re.escape(str(np.shape(bad)))
    with pytest.raises(
        ValueError, match=rf"{name} needs at least 2 dimensions .* got shape {shape}"
    ):
        attention(**args)


def test_attention_weights_fewer_than_two_dimensions() -> None:
    with pytest.raises(ValueError, match=r"k needs at least 2 dimensions"):
        attention_weights(np.ones((3, 4)), np.ones(4))


def test_q_and_k_last_dimensions_must_match() -> None:
    match = r"q and k need the same last dimension d_k: got q \(3, 4\), k \(5, 3\)"
    with pytest.raises(ValueError, match=match):
        attention(np.ones((3, 4)), np.ones((5, 3)), np.ones((5, 2)))
    with pytest.raises(ValueError, match=match):
        attention_weights(np.ones((3, 4)), np.ones((5, 3)))


def test_k_and_v_lengths_must_match() -> None:
    match = r"k and v need the same number of rows n_k: got k \(5, 4\), v \(6, 4\)"
    with pytest.raises(ValueError, match=match):
        attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((6, 4)))


def test_batch_dimensions_must_broadcast() -> None:
    match = r"batch dimensions do not broadcast: got q \(2, 3, 4\), k \(3, 5, 4\), v \(5, 2\)"
    with pytest.raises(ValueError, match=match):
        attention(np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"got q \(2, 3, 4\), k \(1, 3, 5, 4\), v \(4, 5, 2\)"):
        attention(np.ones((2, 3, 4)), np.ones((1, 3, 5, 4)), np.ones((4, 5, 2)))
    with pytest.raises(ValueError, match=r"got q \(2, 3, 4\), k \(3, 5, 4\)$"):
        attention_weights(np.ones((2, 3, 4)), np.ones((3, 5, 4)))


@pytest.mark.parametrize("bad", ["0.5", True, [0.5], 1j])
def test_scale_must_be_a_real_number(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"scale must be a real number or None"):
        attention(QKV["q"], QKV["k"], QKV["v"], scale=bad)
    with pytest.raises(TypeError, match=r"scale must be a real number or None"):
        attention_weights(QKV["q"], QKV["k"], scale=bad)


def test_scale_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        attention(QKV["q"], QKV["k"], QKV["v"], 0.5)  # type: ignore[call-arg]


@pytest.mark.parametrize(("x", "axis"), [(np.ones((2, 3)), 2), (np.ones((2, 3)), -3)])
def test_softmax_axis_out_of_range(x: Any, axis: int) -> None:
    shape = re.escape(str(np.shape(x)))
    with pytest.raises(ValueError, match=rf"axis {axis} is out of range for x with shape {shape}"):
        softmax(x, axis=axis)


@pytest.mark.parametrize("x", [1000.0, np.float32(2.5), np.array(7)])
def test_softmax_of_a_single_number_says_x_needs_a_dimension(x: Any) -> None:
    number = re.escape(repr(np.asarray(x).item()))
    match = rf"x needs at least one dimension.* got the single number {number}, shape \(\)"
    with pytest.raises(ValueError, match=match):
        softmax(x)
    with pytest.raises(ValueError, match=r"x needs at least one dimension"):
        softmax(x, axis=0)


@pytest.mark.parametrize("axis", [1.0, "0", None, (0, 1)])
def test_softmax_axis_must_be_an_integer(axis: Any) -> None:
    with pytest.raises(TypeError, match=r"axis must be an integer"):
        softmax(np.ones((2, 3)), axis=axis)
