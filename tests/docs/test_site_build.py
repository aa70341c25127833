"""Guards on the built site: strict build, math, offline, notebook downloads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from docs_harness import load_hook
from site_build import ROOT, remote_resources

pytestmark = pytest.mark.slow

# Parts of a page where a backslash or a dollar sign is expected and fine.
NOT_PROSE = re.compile(
    r"<(pre|code|script|style|math|textarea)\b.*?</\1>", re.DOTALL | re.IGNORECASE
)
RAW_LATEX = re.compile(r"\\[(\[]|\\(frac|sqrt|sum|text|cdot|top)\b|\$\$|\$[^$\s<][^$<]*\$")


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", NOT_PROSE.sub(" ", html))


def test_site_has_every_nav_page(built_site: Path) -> None:
    expected = ["index.html", "episodes/01-attention-is-four-operations/index.html"]
    for page in expected:
        assert (built_site / page).is_file(), f"{page} missing from the build"


def test_no_formula_left_unrendered(built_site: Path) -> None:
    for page in pages(built_site):
        html = page.read_text(encoding="utf-8")
        leftover = RAW_LATEX.findall(visible_text(html))
        assert not leftover, f"{page.relative_to(built_site)}: raw LaTeX {leftover[:3]}"
        assert 'class="arithmatex"' not in html, f"{page.name}: formula not converted"


def test_math_renders_where_the_source_has_math(built_site: Path) -> None:
    for source in (ROOT / "docs").rglob("*.md"):
        if re.search(r"\$[^$\n]+\$", source.read_text(encoding="utf-8")):
            name = source.relative_to(ROOT / "docs").with_suffix("")
            html_page = built_site / (
                "index.html" if name.name == "index" else f"{name}/index.html"
            )
            assert "<math" in html_page.read_text(encoding="utf-8"), f"no MathML in {html_page}"


def test_nothing_loads_from_the_network(built_site: Path) -> None:
    for page in pages(built_site):
        remote = remote_resources(page.read_text(encoding="utf-8"))
        assert not remote, f"{page.relative_to(built_site)} loads {remote[:3]}"


def test_each_notebook_is_offered_as_ipynb(built_site: Path) -> None:
    for source in (ROOT / "docs" / "notebooks").glob("*.py"):
        ipynb = built_site / "notebooks" / f"{source.stem}.ipynb"
        notebook = json.loads(ipynb.read_text(encoding="utf-8"))
        assert notebook["nbformat"] == 4
        assert any(cell["cell_type"] == "code" for cell in notebook["cells"])
        page = (built_site / "notebooks" / source.stem / "index.html").read_text(encoding="utf-8")
        assert f'href="../{source.stem}.ipynb"' in page, "the page does not link its .ipynb"


def test_every_registered_figure_is_in_the_site(built_site: Path) -> None:
    """hooks/figures.py drew each figure into the build, as the function draws it."""
    figures = load_hook("figures").FIGURES
    assert figures
    for path, draw in figures.items():
        built = (built_site / path).read_text(encoding="utf-8")
        assert built == draw(), f"{path} in the site is not what its function draws"
