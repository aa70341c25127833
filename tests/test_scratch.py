"""opbyop.scratch: the operations in plain Python, as the episode first shows them."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pytest
from imports import imported_modules

import opbyop.scratch.four_ops
from opbyop.scratch import attention, mat_mul, scale, softmax, transpose

SOURCE = Path(opbyop.scratch.four_ops.__file__).read_text(encoding="utf-8")
FUNCTIONS = ["mat_mul", "transpose", "scale", "softmax", "attention"]


def test_mat_mul() -> None:
    a: list[list[float]] = [[1, 2, 3], [4, 5, 6]]  # integers work too
    b: list[list[float]] = [[7, 8], [9, 10], [11, 12]]
    assert mat_mul(a, b) == [[58.0, 64.0], [139.0, 154.0]]
    assert mat_mul([[2]], [[3]]) == [[6.0]]
    assert mat_mul([[1, 2]], [[3], [4]]) == [[11.0]]  # a row times a column: one dot product


def test_transpose() -> None:
    m = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert transpose(m) == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert transpose(transpose(m)) == m
    assert transpose([[7.0]]) == [[7.0]]


def test_scale_divides_by_the_square_root_of_the_vector_size() -> None:
    assert scale([[768.0, -1.0]], 768) == [[768 / math.sqrt(768), -1 / math.sqrt(768)]]
    assert math.sqrt(768) == pytest.approx(27.71, abs=0.01)
    assert scale([[3.0]], vector_size=1) == [[3.0]]
    assert scale([[1.0, 2.0]], vector_size=0.25) == [[2.0, 4.0]]


def test_softmax_rows_add_up_to_one() -> None:
    weights = softmax([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-5.0, 5.0, 0.0]])
    for row in weights:
        assert sum(row) == pytest.approx(1.0, abs=1e-15)
        assert all(0.0 <= w <= 1.0 for w in row)
    assert weights[1] == [1 / 3, 1 / 3, 1 / 3]
    e = math.e
    assert weights[0] == pytest.approx(
        [1 / (1 + e + e * e), e / (1 + e + e * e), e * e / (1 + e + e * e)]
    )


def test_softmax_is_stable_for_any_finite_scores() -> None:
    assert softmax([[1000.0, 1000.0]]) == [[0.5, 0.5]]
    assert softmax([[-1000.0, -1000.0]]) == [[0.5, 0.5]]
    big = 1.7976931348623157e308  # the largest float
    assert softmax([[big, -big, 0.0]]) == [[1.0, 0.0, 0.0]]
    assert softmax([[1e300, 1e-300, -1e-300]]) == [[1.0, 0.0, 0.0]]


def test_softmax_of_infinite_or_nan_rows_is_nan_as_in_pytorch() -> None:
    inf = math.inf
    weights = softmax([[-inf, -inf], [inf, 1.0], [math.nan, 1.0], [1.0, math.nan], [-inf, 0.0]])
    for row in weights[:4]:
        assert all(math.isnan(w) for w in row)
    assert weights[4] == [0.0, 1.0]  # -inf only where other scores are finite: weight 0


def test_attention_by_hand() -> None:
    q = [[1.0, 0.0]]
    k = [[1.0, 0.0], [0.0, 1.0]]
    v = [[10.0, 0.0, 1.0], [0.0, 10.0, 1.0]]  # d_v = 3, d_k = 2
    s = 1 / math.sqrt(2)  # the scaled scores are [s, 0]
    w = [math.exp(s) / (math.exp(s) + 1), 1 / (math.exp(s) + 1)]
    [out] = attention(q, k, v)
    assert out == pytest.approx([10 * w[0], 10 * w[1], 1.0], rel=1e-15)


def test_attention_of_one_key_returns_its_value() -> None:
    assert attention([[3.0]], [[-2.0]], [[5.0, 6.0]]) == [[5.0, 6.0]]
    assert attention([[1.0], [2.0]], [[1.0]], [[4.0]]) == [[4.0], [4.0]]


def test_attention_is_the_four_operations_then_a_mat_mul() -> None:
    q = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    k = [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    v = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]
    weights = softmax(scale(mat_mul(q, transpose(k)), 3))
    assert attention(q, k, v) == mat_mul(weights, v)


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (mat_mul, ([[1.0, 2.0]], [[3.0], [4.0]])),
        (transpose, ([[1.0, 2.0]],)),
        (scale, ([[1.0, 2.0]], 4)),
        (softmax, ([[1.0, 2.0]],)),
        (attention, ([[1.0, 2.0]], [[3.0, 4.0]], [[5.0]])),
    ],
)
def test_functions_are_pure(function: Any, args: tuple[Any, ...]) -> None:
    before = copy.deepcopy(args)
    result = function(*args)
    assert args == before  # the arguments are unchanged
    inputs = [row for arg in args if isinstance(arg, list) for row in arg]
    assert all(row is not given for row in result for given in inputs)  # fresh rows


def test_scratch_imports_nothing_but_math() -> None:
    imported = imported_modules(SOURCE)
    assert imported == {"math"}


def section(name: str) -> str:
    """The text between the ``--8<--`` markers of section `name`, as the docs include it."""
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", SOURCE, re.S)
    assert match, f"no section {name!r} in four_ops.py"
    return match.group(1)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_has_a_section_with_its_shape_comment(name: str) -> None:
    text = section(name)
    assert re.search(rf"^def {name}\(", text, re.M)
    signature = text[: text.index('"""')]
    assert re.search(r"-> \w+:  # \[.*\] -> \[.*\]$", signature, re.M), signature


@pytest.mark.parametrize(
    ("name", "needs", "call"),
    [
        ("mat_mul", [], "mat_mul([[1, 2]], [[3], [4]])"),
        ("transpose", [], "transpose([[1, 2]])"),
        ("scale", [], "scale([[4.0]], 4)"),
        ("softmax", [], "softmax([[0.0, 0.0]])"),
        (
            "attention",
            ["mat_mul", "transpose", "scale", "softmax"],
            "attention([[1]], [[1]], [[2]])",
        ),
    ],
)
def test_a_section_runs_with_the_setup_checks_and_the_sections_it_calls(
    name: str, needs: list[str], call: str
) -> None:
    namespace: dict[str, Any] = {}
    for part in ["setup", "checks", *needs, name]:
        exec(compile(section(part), f"scratch.py:{part}", "exec"), namespace)
    assert eval(call, namespace) == eval(call, vars(opbyop.scratch.four_ops))
