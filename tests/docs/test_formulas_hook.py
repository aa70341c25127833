"""The math hook converts what it can and refuses what it cannot."""

from __future__ import annotations

import pytest
from docs_harness import load_hook

formulas_hook = load_hook("formulas")


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
