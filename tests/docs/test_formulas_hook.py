"""The math hook converts what it can and refuses what it cannot."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "formulas.py"


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("formulas_hook", HOOK)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


formulas_hook = load_hook()


def test_a_fraction_becomes_mathml() -> None:
    mathml = formulas_hook.latex_to_mathml(r"\frac{1}{\sqrt{d}}", block=False)
    assert "<mfrac>" in mathml
    assert "<msqrt>" in mathml


def test_block_formulas_are_displayed_as_blocks() -> None:
    assert 'display="block"' in formulas_hook.latex_to_mathml("x^2", block=True)


@pytest.mark.parametrize(
    "latex",
    [r"\notacommand{x}", r"\begin{aligned}a &= b\\ c &= d\end{aligned}", r"\frac{1}{"],
)
def test_what_does_not_convert_is_refused(latex: str) -> None:
    with pytest.raises(ValueError, match="cannot convert"):
        formulas_hook.latex_to_mathml(latex, block=False)
