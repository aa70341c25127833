"""opbyop.sampling against Hugging Face's logits processors.

The reference values come from tools/make_sampling_reference.py
(transformers 5.24.0, torch 2.13.0).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opbyop import sampling

DATA = np.load(Path(__file__).parent / "data" / "sampling_reference.npz")
DTYPES = ["float64", "float32"]
FILTERS = ["top_k", "top_p", "min_p"]
CALLS: dict[str, Callable[..., np.ndarray]] = {
    "temperature": lambda x, arg, ids: sampling.temperature(x, arg),
    "top_k": lambda x, arg, ids: sampling.top_k(x, int(arg)),
    "top_p": lambda x, arg, ids: sampling.top_p(x, arg),
    "min_p": lambda x, arg, ids: sampling.min_p(x, arg),
    "repetition_penalty": lambda x, arg, ids: sampling.repetition_penalty(x, ids, arg),
}


def cases(name: str) -> list[Any]:
    """One pytest param per (dtype, case) of processor `name`."""
    params = []
    for dtype in DTYPES:
        kinds = DATA[f"kinds__{dtype}"]
        kind_index = DATA[f"{name}__{dtype}__kind"]
        args = DATA[f"{name}__{dtype}__arg"]
        for case, (k, arg) in enumerate(zip(kind_index, args, strict=True)):
            label = f"{dtype}-{kinds[k]}-{arg:g}"
            params.append(pytest.param(dtype, case, id=label))
    return params


def reference(name: str, dtype: str, case: int) -> tuple[Any, ...]:
    """The input, the ids, the argument, HF's output and its straddle flags."""
    kind = int(DATA[f"{name}__{dtype}__kind"][case])
    logits = DATA[f"input__{dtype}"][kind]
    ids = DATA[f"ids__{dtype}"][kind]
    arg = float(DATA[f"{name}__{dtype}__arg"][case])
    result = DATA[f"{name}__{dtype}__result"][case]
    if name in FILTERS:  # stored as the mask of removed tokens
        result = np.where(result, -np.inf, logits).astype(logits.dtype)
    return logits, ids, arg, result, DATA[f"{name}__{dtype}__straddles"][case]


def check(name: str, dtype: str, case: int) -> None:
    logits, ids, arg, expected, straddles = reference(name, dtype, case)
    before = logits.copy()
    got = CALLS[name](logits, arg, ids)
    np.testing.assert_array_equal(logits, before)  # the input is untouched
    assert got.dtype == logits.dtype
    assert got.shape == logits.shape
    exact = ~straddles
    np.testing.assert_array_equal(got[exact] == -np.inf, expected[exact] == -np.inf)
    np.testing.assert_allclose(got[exact], expected[exact], rtol=1e-6, atol=1e-6)
    for row in np.flatnonzero(straddles):
        # Tied scores straddle the cut: which ids are kept depends on the
        # sort's order, but the same scores are kept, as many of each.
        ours, theirs = got[row][got[row] > -np.inf], expected[row][expected[row] > -np.inf]
        np.testing.assert_array_equal(np.sort(ours), np.sort(theirs))
    assert ((got > -np.inf).sum(axis=-1) >= 1).all()  # a token is always left


@pytest.mark.parametrize(("dtype", "case"), cases("temperature"))
def test_temperature_matches_hugging_face(dtype: str, case: int) -> None:
    check("temperature", dtype, case)


@pytest.mark.parametrize(("dtype", "case"), cases("top_k"))
def test_top_k_matches_hugging_face(dtype: str, case: int) -> None:
    check("top_k", dtype, case)


@pytest.mark.parametrize(("dtype", "case"), cases("top_p"))
def test_top_p_matches_hugging_face(dtype: str, case: int) -> None:
    check("top_p", dtype, case)


@pytest.mark.parametrize(("dtype", "case"), cases("min_p"))
def test_min_p_matches_hugging_face(dtype: str, case: int) -> None:
    check("min_p", dtype, case)


@pytest.mark.parametrize(("dtype", "case"), cases("repetition_penalty"))
def test_repetition_penalty_matches_hugging_face(dtype: str, case: int) -> None:
    check("repetition_penalty", dtype, case)


def test_the_reference_covers_what_it_should() -> None:
    """Filters that remove, filters that keep everything, ties straddling a cut."""
    for dtype in DTYPES:
        kinds = set(DATA[f"kinds__{dtype}"].tolist())
        assert {"ties", "neg_inf", "huge", "tiny", "spread"} <= kinds
        for name in FILTERS:
            removed = DATA[f"{name}__{dtype}__result"]
            assert removed.any()
            assert not removed.all(axis=-1).any()
        assert DATA[f"top_p__{dtype}__straddles"].any()
        assert not DATA[f"top_k__{dtype}__straddles"].any()  # ties all kept
        assert not DATA[f"min_p__{dtype}__straddles"].any()
    # p = 1 still removes the tokens whose probability underflows to 0.
    p_one = DATA["top_p__float64__arg"] == 1.0
    assert DATA["top_p__float64__result"][p_one].any()
    assert 1.0 in DATA["repetition_penalty__float32__arg"]
    assert 1.3 in DATA["repetition_penalty__float32__arg"]


# ------------------------------------------------------------- properties


def test_top_k_keeps_ties_at_the_cut_and_k_beyond_the_vocabulary() -> None:
    logits = np.array([[2.0, 1.0, 1.0, 0.0], [0.0, -1.0, 5.0, -np.inf]])
    assert sampling.top_k(logits, 2).tolist() == [
        [2.0, 1.0, 1.0, -np.inf],
        [0.0, -np.inf, 5.0, -np.inf],
    ]
    assert sampling.top_k(logits, 99).tolist() == logits.tolist()


def test_top_p_keeps_the_token_that_crosses_p() -> None:
    logits = np.log(np.array([0.1, 0.6, 0.3], dtype=np.float32))
    out = sampling.top_p(logits, 0.61)  # 0.6 alone falls short: 0.3 is kept
    assert (out > -np.inf).tolist() == [False, True, True]
    assert out.dtype == np.float32
    assert (sampling.top_p(logits, 1e-9) > -np.inf).tolist() == [False, True, False]


def test_top_p_at_1_drops_only_tokens_of_probability_0() -> None:
    logits = np.array([0.0, -1000.0, -30.0, -np.inf])  # exp(-1000) is 0
    assert sampling.top_p(logits, 1.0).tolist() == [0.0, -np.inf, -30.0, -np.inf]


def test_min_p_keeps_the_most_likely_token_even_at_1() -> None:
    logits = np.array([[0.0, 3.0, 2.9], [1.0, 1.0, -2.0]])
    assert (sampling.min_p(logits, 1.0) > -np.inf).tolist() == [
        [False, True, False],
        [True, True, False],
    ]


def test_repetition_penalty_works_on_leading_dimensions() -> None:
    logits = np.arange(-3.0, 3.0).reshape(2, 1, 3)  # [[-3, -2, -1]], [[0, 1, 2]]
    ids = np.array([[[0, 0]], [[2, 1]]])
    out = sampling.repetition_penalty(logits, ids, 2.0)
    assert out.tolist() == [[[-6.0, -2.0, -1.0]], [[0.0, 0.5, 1.0]]]
    assert sampling.repetition_penalty(logits[0, 0], [], 2.0).tolist() == [-3.0, -2.0, -1.0]


# ------------------------------------------------------------- errors

NOT_A_NUMBER: Any = "hot"
NOT_AN_INT: Any = 2.5


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: sampling.temperature([1.0], 0.0), ValueError, r"t must be > 0"),
        (lambda: sampling.temperature([1.0], float("inf")), ValueError, r"t must be > 0"),
        (lambda: sampling.temperature([1.0], NOT_A_NUMBER), ValueError, r"t must be a real"),
        (lambda: sampling.top_k([1.0], 0), ValueError, r"k must be an integer >= 1"),
        (lambda: sampling.top_k([1.0], NOT_AN_INT), ValueError, r"k must be an integer >= 1"),
        (lambda: sampling.top_k([1.0], True), ValueError, r"k must be an integer >= 1"),
        (lambda: sampling.top_p([1.0], 0.0), ValueError, r"p must be in \(0, 1\]"),
        (lambda: sampling.top_p([1.0], 1.5), ValueError, r"p must be in \(0, 1\]"),
        (lambda: sampling.min_p([1.0], -0.1), ValueError, r"p must be in \[0, 1\]"),
        (lambda: sampling.min_p([1.0], float("nan")), ValueError, r"p must be in \[0, 1\]"),
        (
            lambda: sampling.repetition_penalty([1.0], [0], 0.0),
            ValueError,
            r"penalty must be > 0",
        ),
        (
            lambda: sampling.repetition_penalty([1.0, 2.0], [2], 1.3),
            ValueError,
            r"ids must be in \[0, 2\), got 2",
        ),
        (
            lambda: sampling.repetition_penalty([1.0, 2.0], [-1], 1.3),
            ValueError,
            r"ids must be in \[0, 2\), got -1",
        ),
        (
            lambda: sampling.repetition_penalty([[1.0, 2.0]], [0], 1.3),
            ValueError,
            r"ids needs shape \(\.\.\., n\) with the leading dimensions of logits \(1,\)",
        ),
        (
            lambda: sampling.repetition_penalty([1.0], [0.0], 1.3),
            TypeError,
            r"ids must be integers",
        ),
        (lambda: sampling.top_k([1, 2], 1), TypeError, r"logits must be a floating-point"),
        (lambda: sampling.top_k(np.float64(1.0), 1), ValueError, r"logits needs a last axis"),
        (lambda: sampling.top_p([np.nan, 1.0], 0.5), ValueError, r"logits must hold no NaN"),
        (lambda: sampling.min_p([np.inf, 1.0], 0.5), ValueError, r"no NaN and no \+inf"),
        (
            lambda: sampling.top_p([[0.0, 1.0], [-np.inf, -np.inf]], 0.5),
            ValueError,
            r"a row of only -inf",
        ),
    ],
)
def test_bad_arguments_are_refused_by_name(
    call: Callable[[], object], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        call()
