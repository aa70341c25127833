"""opbyop.scratch.block: layer norm and GELU in plain Python, as episode 6 shows them."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from imports import imported_modules
from numpy.testing import assert_allclose

import opbyop
import opbyop.scratch.block
from opbyop.scratch import gelu, layer_norm

SOURCE = Path(opbyop.scratch.block.__file__).read_text(encoding="utf-8")
rng = np.random.default_rng(6)
TEXT: Any = "a"  # where a number belongs


def test_layer_norm_by_hand() -> None:
    # Row [1, 2, 3]: mean 2, variance 2/3, so (v - 2) / sqrt(2/3).
    (out,) = layer_norm([[1.0, 2.0, 3.0]], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], eps=0.0)
    assert out == pytest.approx([-math.sqrt(1.5), 0.0, math.sqrt(1.5)], abs=1e-15)
    (scaled,) = layer_norm([[1.0, 2.0, 3.0]], [2.0, 2.0, 2.0], [0.0, 0.0, 1.0], eps=0.0)
    assert scaled == pytest.approx([-2 * math.sqrt(1.5), 0.0, 2 * math.sqrt(1.5) + 1])


def test_layer_norm_each_row_alone_with_eps() -> None:
    out = layer_norm([[5.0, 5.0], [0.0, 2.0]], [1.0, 1.0], [0.0, 0.0])
    assert out[0] == [0.0, 0.0]  # a constant row: eps keeps it from 0 / 0
    assert out[1] == pytest.approx([-1 / math.sqrt(1 + 1e-5), 1 / math.sqrt(1 + 1e-5)])


def test_layer_norm_matches_numpy() -> None:
    x = rng.standard_normal((4, 7)) * 3
    w, b = rng.standard_normal(7), rng.standard_normal(7)
    got = layer_norm(x.tolist(), w.tolist(), b.tolist(), eps=1e-12)
    assert_allclose(got, opbyop.layer_norm(x, w, b, eps=1e-12), rtol=1e-12, atol=1e-13)


def test_gelu_by_hand() -> None:
    (row,) = gelu([[0.0, 1.0, -1.0]])  # x times Phi(x), from tables of the normal
    assert row == pytest.approx([0.0, 0.8413447460685429, -0.15865525393145707], rel=1e-15)
    assert gelu([[40.0, -40.0]]) == [[40.0, 0.0]]  # Phi(40) is 1, Phi(-40) is 0


def test_gelu_matches_numpy() -> None:
    x = rng.standard_normal((3, 5)) * 4
    # The scratch form, 1 + erf(x / sqrt 2), cancels far out on the left, where
    # the library's float64 path uses erfc: they agree to float64 rounding in
    # absolute terms, not relative ones, there.
    assert_allclose(gelu(x.tolist()), opbyop.gelu(x), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: gelu([]), ValueError, "x is empty"),
        (lambda: gelu([[1.0], [1.0, 2.0]]), ValueError, "ragged"),
        (lambda: gelu([[TEXT]]), TypeError, r"x\[0\]\[0\] must be a number"),
        (lambda: layer_norm([[1.0, 2.0]], [1.0], [0.0, 0.0]), ValueError, "weight needs 2"),
        (lambda: layer_norm([[1.0, 2.0]], [1.0, 1.0], [0.0]), ValueError, "bias needs 2"),
        (lambda: layer_norm([[1.0]], [1.0], [TEXT]), TypeError, r"bias\[0\] must be a number"),
        (lambda: layer_norm([[1.0]], TEXT, [0.0]), TypeError, "weight must be a list of numbers"),
        (lambda: layer_norm([[1.0]], [1.0], [0.0], eps=-1.0), ValueError, "eps must be"),
        (lambda: layer_norm([[1.0]], [1.0], [0.0], eps=math.nan), ValueError, "eps"),
        (lambda: layer_norm([[1.0]], [1.0], [0.0], eps=TEXT), TypeError, "eps must be"),
        (lambda: layer_norm(TEXT, [1.0], [0.0]), TypeError, "x must be a list of rows, got str"),
    ],
)
def test_bad_input_gets_a_clear_error(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("function", "args"),
    [(layer_norm, ([[1.0, 2.0]], [1.0, 1.0], [0.0, 0.0])), (gelu, ([[1.0, 2.0]],))],
)
def test_functions_are_pure(function: Any, args: tuple[Any, ...]) -> None:
    before = copy.deepcopy(args)
    result = function(*args)
    assert args == before
    assert all(row is not arg for row in result for arg in args)


def test_block_imports_only_math_and_the_first_episode_checks() -> None:
    imported = imported_modules(SOURCE)
    assert imported == {"math", "opbyop.scratch.four_ops"}


def section(name: str) -> str:
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", SOURCE, re.S)
    assert match, f"no section {name!r} in block.py"
    return match.group(1)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("layer_norm", "layer_norm([[1.0, 3.0]], [1.0, 2.0], [0.5, 0.0])"),
        ("gelu", "gelu([[1.0, -2.0]])"),
    ],
)
def test_a_section_runs_with_the_setup_and_checks_alone(name: str, call: str) -> None:
    text = section(name)
    assert re.search(rf"^def {name}\(", text, re.M)
    assert re.search(r"-> \w+:  # \[.*\] -> \[.*\]$", text[: text.index('"""')], re.M)
    namespace: dict[str, Any] = {}
    for part in ["setup", "checks", name]:
        exec(compile(section(part), f"block.py:{part}", "exec"), namespace)
    assert eval(call, namespace) == eval(call, vars(opbyop.scratch.block))


def test_exported_from_the_package() -> None:
    assert opbyop.scratch.layer_norm is opbyop.scratch.block.layer_norm
    assert {"gelu", "layer_norm"} <= set(opbyop.scratch.__all__)
    assert {"gelu", "layer_norm"} <= set(opbyop.__all__)
