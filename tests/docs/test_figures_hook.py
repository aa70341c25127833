"""The figures hook: every registered figure draws, with alt text, from tested code."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from docs_harness import load_hook
from site_build import ROOT

figures_hook = load_hook("figures")
SVG = "{http://www.w3.org/2000/svg}"


def test_there_are_figures() -> None:
    assert "figures/01-scores.svg" in figures_hook.FIGURES


@pytest.mark.parametrize("path", sorted(figures_hook.FIGURES))
def test_each_figure_is_an_svg_with_a_title(path: str) -> None:
    root = ET.fromstring(figures_hook.FIGURES[path]())
    assert root.tag == f"{SVG}svg"
    assert root[0].tag == f"{SVG}title"
    assert root[0].text
    assert root[0].text.strip()


@pytest.mark.parametrize("path", sorted(figures_hook.FIGURES))
def test_each_figure_is_shown_on_a_page(path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    pages = [p for p in (ROOT / "docs").rglob("*.md") if name in p.read_text(encoding="utf-8")]
    assert pages, f"no page shows {path}"


def test_the_scores_figure_shows_the_episodes_scores() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/01-scores.svg"]())[0].text or ""
    assert "Row 0: 2, 0, 2. Row 1: 0, 8, 4. Row 2: 2, 4, 4." in title
    page = (ROOT / "docs" / "episodes" / "01-attention-is-four-operations.md").read_text(
        encoding="utf-8"
    )
    assert re.search(r"Row 0 reads 2, 0, 2; row 1 reads 0, 8, 4; row 2 reads 2, 4, 4", page)


def test_the_weights_figure_matches_the_page() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/01-weights.svg"]())[0].text or ""
    assert "Row 0: 0.42, 0.16, 0.42. Row 1: 0.02, 0.87, 0.12." in title


def test_a_path_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="two figures"):
        figures_hook.figure("figures/01-scores.svg")(lambda: "<svg/>")


def test_the_positions_figure_matches_the_page() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/05-positions.svg"]())[0].text or ""
    assert "neighbouring positions average 0.87" in title
    assert "only 0.11 to 0.31" in title
    page = (ROOT / "docs" / "episodes" / "05-words-to-tokens.md").read_text(encoding="utf-8")
    assert "is 0.87 on average" in page
    assert "(cosine 0.11 to 0.31)" in page
