"""opbyop.scratch for episodes 2 and 3: linear, split_heads, merge_heads and
multi_head_attention in plain Python, against the NumPy layer and PyTorch."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from imports import imported_modules

import opbyop
import opbyop.scratch.heads
import opbyop.scratch.projections
from opbyop import scratch

REFERENCE = Path(__file__).parent / "data" / "heads_reference.npz"
PARAMS = ["w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"]
MODULES = {"projections": opbyop.scratch.projections, "heads": opbyop.scratch.heads}
Array = np.ndarray[Any, Any]


def random_params(d_model: int, rng: np.random.Generator) -> list[list[Any]]:
    shapes = [(d_model, d_model) if name[0] == "w" else (d_model,) for name in PARAMS]
    return [(rng.standard_normal(shape) / math.sqrt(d_model)).tolist() for shape in shapes]


# ---------------------------------------------------------------- linear


def test_linear_by_hand() -> None:
    x = [[1.0, 2.0], [0.0, -1.0]]  # 2 tokens, d_in = 2
    weight = [[1.0, 0.0], [1.0, 1.0], [0.0, 3.0]]  # d_out = 3: one row per output number
    bias = [0.5, 0.0, -1.0]
    # token 0: [1, 1 + 2, 3 * 2] + bias; token 1: [0, -1, -3] + bias
    assert scratch.linear(x, weight, bias) == [[1.5, 3.0, 5.0], [0.5, -1.0, -4.0]]


@pytest.mark.parametrize("seed", range(5))
def test_linear_matches_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, d_in, d_out = (int(i) for i in rng.integers(1, 8, size=3))
    x, weight, bias = (
        rng.standard_normal((n, d_in)),
        rng.standard_normal((d_out, d_in)),
        rng.standard_normal(d_out),
    )
    want = x @ weight.T + bias  # written here, not opbyop.linear
    got = scratch.linear(x.tolist(), weight.tolist(), bias.tolist())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, opbyop.linear(x, weight, bias), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- split and merge


def test_split_heads_slices_columns() -> None:
    x: list[list[float]] = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # 3 tokens, d_model 4
    assert scratch.split_heads(x, 2) == [[[0, 1], [4, 5], [8, 9]], [[2, 3], [6, 7], [10, 11]]]
    assert scratch.split_heads(x, 1) == [x]
    assert scratch.merge_heads(scratch.split_heads(x, 2)) == x
    assert scratch.merge_heads(scratch.split_heads(x, 4)) == x


@pytest.mark.parametrize(("n", "n_heads", "d_head"), [(1, 1, 1), (5, 3, 4), (7, 12, 2)])
def test_split_and_merge_match_numpy(n: int, n_heads: int, d_head: int) -> None:
    x = np.random.default_rng(n).standard_normal((n, n_heads * d_head))
    heads = scratch.split_heads(x.tolist(), n_heads)
    np.testing.assert_array_equal(heads, opbyop.split_heads(x, n_heads))
    np.testing.assert_array_equal(scratch.merge_heads(heads), x)


# ---------------------------------------------------------------- multi-head attention


@pytest.mark.parametrize(("n", "n_heads", "d_head"), [(1, 1, 3), (4, 2, 3), (6, 4, 2), (3, 12, 1)])
def test_multi_head_attention_matches_numpy(n: int, n_heads: int, d_head: int) -> None:
    rng = np.random.default_rng(n * n_heads)
    x = rng.standard_normal((n, n_heads * d_head)).tolist()
    params = random_params(n_heads * d_head, rng)
    got = scratch.multi_head_attention(x, *params, n_heads=n_heads)
    want = opbyop.multi_head_attention(np.array(x), *map(np.array, params), n_heads=n_heads)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def _unmasked_float64_cases() -> dict[str, dict[str, Array]]:
    cases: dict[str, dict[str, Array]] = {}
    with np.load(REFERENCE, allow_pickle=False) as data:
        for key in data.files:
            case, name = key.split("__")
            cases.setdefault(case, {})[name] = data[key]
    return {
        name: case
        for name, case in cases.items()
        if "mask" not in case
        and not case["is_causal"]
        and "b_q" in case
        and case["x"].dtype == np.float64
    }


UNMASKED = _unmasked_float64_cases()


@pytest.mark.parametrize("name", sorted(UNMASKED))
def test_multi_head_attention_matches_pytorch(name: str) -> None:
    case = UNMASKED[name]
    params = [case[p].tolist() for p in PARAMS]
    sentences = case["x"].reshape(-1, *case["x"].shape[-2:])  # one call per sentence
    got = [
        scratch.multi_head_attention(s.tolist(), *params, n_heads=int(case["n_heads"]))
        for s in sentences
    ]
    np.testing.assert_allclose(
        np.reshape(got, case["out"].shape), case["out"], rtol=1e-12, atol=1e-13
    )


def test_unmasked_cases_exist() -> None:
    assert len(UNMASKED) >= 3


# ---------------------------------------------------------------- bad input

OK = [[1.0, 2.0], [3.0, 4.0]]
P2 = random_params(2, np.random.default_rng(0))
MHA: Any = scratch.multi_head_attention  # called with one argument replaced


ERRORS: list[tuple[Any, type[Exception], str]] = [
    (
        lambda: scratch.linear(OK, [[1.0, 2.0, 3.0]], [0.0]),
        ValueError,
        r"x and weight need rows of the same length d_in: got x \(2, 2\), weight \(1, 3\)",
    ),
    (lambda: scratch.linear(OK, OK, [0.0]), ValueError, r"bias needs 2 numbers, got 1"),
    (
        lambda: scratch.linear(OK, OK, cast(Any, 0.0)),
        TypeError,
        r"bias must be a list of numbers, got float",
    ),
    (
        lambda: scratch.linear(OK, OK, cast(Any, [0.0, "1"])),
        TypeError,
        r"bias\[1\] must be a number, got '1'",
    ),
    (lambda: scratch.linear([[1.0], [2.0, 3.0]], OK, [0.0]), ValueError, r"x has ragged rows"),
    (lambda: scratch.linear(OK, [], [0.0]), ValueError, r"weight is empty"),
    (
        lambda: scratch.split_heads([[1.0, 2.0, 3.0]], 2),
        ValueError,
        r"rows of 3 numbers \(x \(1, 3\)\) do not divide into n_heads = 2",
    ),
    (lambda: scratch.split_heads(OK, 0), ValueError, r"n_heads must be at least 1, got 0"),
    (
        lambda: scratch.split_heads(OK, cast(Any, 1.0)),
        TypeError,
        r"n_heads must be an integer, got 1.0",
    ),
    (lambda: scratch.split_heads(OK, True), TypeError, r"n_heads must be an integer, got True"),
    (lambda: scratch.split_heads([], 1), ValueError, r"x is empty"),
    (lambda: scratch.merge_heads([]), ValueError, r"heads must be a non-empty list"),
    (
        lambda: scratch.merge_heads([OK, [[1.0]]]),
        ValueError,
        r"heads\[0\] is \(2, 2\), heads\[1\] is \(1, 1\)",
    ),
    (lambda: scratch.merge_heads([OK, OK, []]), ValueError, r"heads\[2\] is empty"),
    (
        lambda: scratch.multi_head_attention(OK, *P2, n_heads=3),
        ValueError,
        r"do not divide into n_heads = 3",
    ),
    (
        lambda: MHA(OK, *P2[:6], [[1.0, 2.0]], P2[7], n_heads=1),
        ValueError,
        r"w_o needs shape \(2, 2\) for x \(2, 2\), got \(1, 2\)",
    ),
    (
        lambda: MHA(OK, *P2[:3], [1.0], *P2[4:], n_heads=1),
        ValueError,
        r"b_k needs 2 numbers, got 1",
    ),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS)
def test_errors(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------- the code the pages show


@pytest.mark.parametrize(
    ("function", "args", "kwargs"),
    [
        (scratch.linear, (OK, OK, [0.5, 1.0]), {}),
        (scratch.split_heads, (OK, 2), {}),
        (scratch.merge_heads, ([OK, OK],), {}),
        (scratch.multi_head_attention, (OK, *P2), {"n_heads": 2}),
    ],
)
def test_functions_are_pure(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    before = copy.deepcopy(args)
    result = function(*args, **kwargs)
    assert args == before  # the arguments are unchanged
    given = [row for arg in args if isinstance(arg, list) for row in arg]
    rows = [row for item in result for row in (item if isinstance(item[0], list) else [item])]
    assert all(row is not g for row in rows for g in given)  # fresh rows


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_import_only_earlier_episodes(module: str) -> None:
    source = Path(MODULES[module].__file__ or "").read_text(encoding="utf-8")
    imported = imported_modules(source)
    earlier = {
        "projections": {"opbyop.scratch.four_ops"},
        "heads": {"opbyop.scratch.four_ops", "opbyop.scratch.projections"},
    }
    assert imported <= earlier[module]


def section(module: str, name: str) -> str:
    """The text between the ``--8<--`` markers of section `name`, as the docs include it."""
    source = Path(MODULES[module].__file__ or "").read_text(encoding="utf-8")
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", source, re.S)
    assert match, f"no section {name!r} in {module}.py"
    return match.group(1)


SECTIONS = [
    ("projections", "linear", "linear([[1, 2]], [[3, 4]], [5])"),
    ("heads", "split_heads", "split_heads([[1, 2, 3, 4]], 2)"),
    ("heads", "merge_heads", "merge_heads([[[1, 2]], [[3, 4]]])"),
    (
        "heads",
        "multi_head_attention",
        "multi_head_attention([[1.0, 2.0]], *P2, n_heads=2)",
    ),
]


@pytest.mark.parametrize(("module", "name", "call"), SECTIONS)
def test_each_function_has_a_section_with_its_shape_comment(
    module: str, name: str, call: str
) -> None:
    text = section(module, name)
    assert re.search(rf"^def {name}\(", text, re.M)
    signature = text[: text.index('"""')]
    assert re.search(r"-> \w+:  # \[.*\] -> \[.*\]$", signature, re.M), signature


@pytest.mark.parametrize(("module", "name", "call"), SECTIONS)
def test_a_section_runs_with_its_setup_checks_and_the_sections_it_calls(
    module: str, name: str, call: str
) -> None:
    namespace: dict[str, Any] = {}
    needs = {"multi_head_attention": ["split_heads", "merge_heads"]}.get(name, [])
    for part in ["setup", "checks", *needs, name]:
        exec(compile(section(module, part), f"{module}.py:{part}", "exec"), namespace)
    namespace["P2"] = P2
    assert eval(call, namespace) == eval(call, {**vars(MODULES[module]), "P2": P2})
