"""opbyop.scratch.masks: masks in plain Python, checked against the NumPy layer and by hand."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from imports import imported_modules

import opbyop.scratch.masks
from opbyop import attention, attention_weights
from opbyop.scratch import causal_mask, masked_attention, masked_softmax, softmax

SOURCE = Path(opbyop.scratch.masks.__file__).read_text(encoding="utf-8")
FUNCTIONS = ["causal_mask", "masked_softmax", "masked_attention"]


def test_causal_mask() -> None:
    assert causal_mask(1) == [[True]]
    assert causal_mask(3) == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]


def test_masked_softmax_by_hand() -> None:
    e = math.e
    weights = masked_softmax([[1.0, 5.0, 2.0]], [[True, False, True]])
    assert weights == [[pytest.approx(1 / (1 + e)), 0.0, pytest.approx(e / (1 + e))]]


def test_a_row_with_every_key_masked_gives_zeros() -> None:
    weights = masked_softmax([[1.0, 2.0], [3.0, 4.0]], [[False, False], [True, True]])
    assert weights[0] == [0.0, 0.0]
    assert weights[1] == softmax([[3.0, 4.0]])[0]


def test_a_mask_of_all_true_is_plain_softmax() -> None:
    scores = [[1.0, -2.0, 3.0], [1000.0, 1000.0, -1000.0]]
    assert masked_softmax(scores, [[True] * 3] * 2) == softmax(scores)


def test_masked_attention_by_hand() -> None:
    q = [[1.0, 0.0], [0.0, 1.0]]
    k = [[1.0, 0.0], [0.0, 1.0]]
    v = [[10.0], [20.0]]
    # Query 0 may look only at key 0, query 1 at no key.
    assert masked_attention(q, k, v, [[True, False], [False, False]]) == [[10.0], [0.0]]


def test_causal_masked_attention_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((5, 3)) for _ in range(3))
    got = masked_attention(q.tolist(), k.tolist(), v.tolist(), causal_mask(5))
    np.testing.assert_allclose(got, attention(q, k, v, is_causal=True), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(10))
def test_random_masks_match_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q, n_k, d, d_v = rng.integers(1, 7, size=4)
    q, k = rng.standard_normal((n_q, d)) * 3, rng.standard_normal((n_k, d)) * 3
    v = rng.standard_normal((n_k, d_v))
    keep = rng.random((n_q, n_k)) < 0.5  # some rows may keep no key at all
    mask = keep.tolist()
    scores = (q @ k.T / math.sqrt(d)).tolist()
    np.testing.assert_allclose(
        masked_softmax(scores, mask), attention_weights(q, k, mask=keep), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(
        masked_attention(q.tolist(), k.tolist(), v.tolist(), mask),
        attention(q, k, v, mask=keep),
        rtol=1e-12,
        atol=1e-14,
    )


def test_functions_are_pure() -> None:
    x, mask = [[1.0, 2.0], [3.0, 4.0]], [[True, False], [False, False]]
    before = copy.deepcopy((x, mask))
    weights = masked_softmax(x, mask)
    out = masked_attention(x, x, x, mask)
    assert (x, mask) == before
    assert all(row is not given for row in weights + out for given in x + mask)  # fresh rows


# ---------------------------------------------------------------- bad input

OK = [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    ("mask", "error", "match"),
    [
        ("TF", TypeError, r"mask must be a list of rows, got str"),
        ([True, False], TypeError, r"mask\[0\] must be a list of True/False, got bool"),
        ([[True, 1], [True, True]], TypeError, r"mask\[0\]\[1\] must be True or False, got 1"),
        ([[True, np.True_]] * 2, TypeError, r"mask\[0\]\[1\] must be True or False"),
        ([[True, True]], ValueError, r"mask needs shape \(2, 2\), .* got 1 rows of length 2"),
        ([[True], [True]], ValueError, r"mask needs shape \(2, 2\), .* got 2 rows of length 1"),
        ([[True, True], [True]], ValueError, r"got 2 rows of length 1, 2"),
        ([], ValueError, r"got 0 rows of length -"),
    ],
)
def test_bad_masks(mask: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        masked_softmax(OK, mask)
    with pytest.raises(error, match=match):
        masked_attention(OK, OK, OK, mask)


def test_masked_attention_checks_q_k_and_v_first() -> None:
    with pytest.raises(ValueError, match=r"k and v need the same number of rows"):
        masked_attention(OK, OK, [[1.0]], [[True, True]] * 2)
    with pytest.raises(ValueError, match=r"scores is empty"):
        masked_softmax([], [])


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-1, ValueError), (2.0, TypeError)])
def test_causal_mask_needs_a_positive_integer(n: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"n must be"):
        causal_mask(n)
    with pytest.raises(TypeError, match=r"n must be an integer, got True"):
        causal_mask(True)


# ---------------------------------------------------------------- the source


def test_masks_imports_the_standard_library_and_the_first_episode_only() -> None:
    imported = imported_modules(SOURCE)
    assert imported == {"math", "opbyop.scratch.four_ops"}


def section(name: str) -> str:
    """The text between the ``--8<--`` markers of section `name`, as the docs include it."""
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", SOURCE, re.S)
    assert match, f"no section {name!r} in masks.py"
    return match.group(1)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_has_a_section_with_a_one_line_docstring(name: str) -> None:
    text = section(name)
    assert re.search(rf"^def {name}\(", text, re.M)
    signature = text[: text.index('"""')]
    assert re.search(r"-> \w+:  # .*\]$", signature, re.M), signature
    assert re.search(r'^    """[^\n]+"""$', text, re.M), "a one-line docstring"


@pytest.mark.parametrize(
    ("name", "needs", "call"),
    [
        ("causal_mask", [], "causal_mask(2)"),
        ("masked_softmax", [], "masked_softmax([[1.0, 2.0]], [[True, False]])"),
        (
            "masked_attention",
            ["masked_softmax"],
            "masked_attention([[1.0]], [[1.0]], [[2.0]], [[False]])",
        ),
    ],
)
def test_a_section_runs_with_the_setup_checks_and_the_sections_it_calls(
    name: str, needs: list[str], call: str
) -> None:
    namespace: dict[str, Any] = {}
    for part in ["setup", "checks", *needs, name]:
        exec(compile(section(part), f"masks.py:{part}", "exec"), namespace)
    assert eval(call, namespace) == eval(call, vars(opbyop.scratch.masks))
