"""The notebook hook's accessibility part: figures need alt text, code cells take focus."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from docs_harness import load_hook

notebooks_hook = load_hook("notebooks")
NOTEBOOK_PAGE = SimpleNamespace(
    file=SimpleNamespace(src_uri="notebooks/01_demo.py", src_path="notebooks/01_demo.py"),
    url="notebooks/01_demo/",
)


@pytest.mark.parametrize(
    "tag",
    [
        '<img src="data:image/png;base64,AAAA">',
        '<img src="data:image/png;base64,AAAA" alt="">',
        '<img alt="  " src="x.png">',
        "<IMG SRC='x.png' ALT=''>",
    ],
)
def test_an_image_without_alt_text_is_found(tag: str) -> None:
    assert notebooks_hook.images_without_alt(f"<div>{tag}</div>") == [tag[:80]]


@pytest.mark.parametrize(
    "tag",
    [
        '<img src="data:image/png;base64,AAAA" alt="Heatmap of the weights">',
        "<img alt='A curve' src=\"x.png\">",
        "<img alt=curve src=x.png>",
    ],
)
def test_an_image_with_alt_text_passes(tag: str) -> None:
    assert notebooks_hook.images_without_alt(tag) == []


def test_a_figure_without_alt_text_is_a_build_warning(caplog: pytest.LogCaptureFixture) -> None:
    html = '<div class="jp-RenderedImage"><img src="data:image/png;base64,AAAA"></div>'
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        notebooks_hook.on_page_content(html, page=NOTEBOOK_PAGE)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].name.startswith("mkdocs."), "mkdocs --strict counts only its own loggers"
    assert "notebooks/01_demo.py" in warnings[0].getMessage()
    assert "alt" in warnings[0].getMessage()


def test_figures_with_alt_text_build_quietly(caplog: pytest.LogCaptureFixture) -> None:
    html = '<img src="data:image/png;base64,AAAA" alt="Heatmap">'
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        notebooks_hook.on_page_content(html, page=NOTEBOOK_PAGE)
    assert not caplog.records


def test_code_cells_can_be_scrolled_from_the_keyboard() -> None:
    html = '<div class="highlight-ipynb hl-python"><pre>x = 1</pre></div>'
    out = notebooks_hook.on_page_content(html, page=NOTEBOOK_PAGE)
    assert '<div tabindex="0" class="highlight-ipynb hl-python">' in out


def test_other_pages_are_left_alone() -> None:
    html = '<img src="x.png"><div class="highlight-ipynb">'
    page = SimpleNamespace(file=SimpleNamespace(src_uri="index.md"), url="")
    assert notebooks_hook.on_page_content(html, page=page) == html
