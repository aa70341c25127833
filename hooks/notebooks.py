"""Offer each notebook as an .ipynb download, and keep notebook pages offline.

The notebooks live in ``docs/notebooks/`` as jupytext percent-format ``.py``
files; mkdocs-jupyter executes and renders them. This hook adds:

* a generated ``notebooks/<name>.ipynb`` next to each page, converted with
  jupytext, and a download link at the top of the page;
* removal of the scripts nbconvert's template loads from the network
  (MathJax, and Mermaid through an inline import): notebook markdown holds
  no LaTeX and no diagrams, so nothing needs them;
* ``tabindex="0"`` on each code cell's scrolling box, so keyboard users can
  scroll a long line (axe: scrollable-region-focusable), as Material does for
  its own code blocks;
* a check that every figure has alt text. nbconvert writes a matplotlib figure
  as ``<img src="data:image/png...">`` with no ``alt`` and has no way to carry
  one, so a notebook shows its figures through ``opbyop.plot.picture``, which
  displays an SVG ``<img>`` with the description a screen reader reads out::

      picture(attention_heatmap(weights, words), "What it shows, in words.")

  An ``<img>`` on a notebook page without a non-empty ``alt`` is a warning, so
  ``mkdocs build --strict`` (and the test suite) fails and names the page.
  ``opbyop.plot`` draws on a white background, readable in the dark theme too.
"""

from __future__ import annotations

import logging
import re
from pathlib import PurePosixPath
from typing import Any

import jupytext
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

log = logging.getLogger("mkdocs.hooks.notebooks")

NOTEBOOKS = "notebooks/"
# A script loaded from elsewhere, or an inline one that imports from elsewhere.
REMOTE_SCRIPT = re.compile(
    r'<script[^>]*\bsrc="(?:https?:)?//[^"]*"[^>]*>\s*</script>'
    r"|<script\b[^>]*>(?:(?!</script>).)*?\bimport\(\s*[\"'](?:https?:)?//(?:(?!</script>).)*</script>",
    re.DOTALL,
)
SCROLLING_CODE = re.compile(r'<div class="highlight-ipynb\b')
IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
ALT = re.compile(r"""\balt\s*=\s*(?:"\s*[^"\s][^"]*"|'\s*[^'\s][^']*'|[^\s"'>]+)""", re.IGNORECASE)


def is_notebook(src_uri: str) -> bool:
    return src_uri.startswith(NOTEBOOKS) and src_uri.endswith(".py")


def ipynb_uri(src_uri: str) -> str:
    return str(PurePosixPath(src_uri).with_suffix(".ipynb"))


def on_files(files: Files, config: Any) -> Files:
    for file in list(files):
        if is_notebook(file.src_uri):
            notebook = jupytext.read(file.abs_src_path, fmt="py:percent")
            content = jupytext.writes(notebook, fmt="ipynb")
            files.append(File.generated(config, ipynb_uri(file.src_uri), content=content))
    return files


def images_without_alt(html_text: str) -> list[str]:
    """The start of every <img> tag in ``html_text`` that has no non-empty alt text."""
    return [tag[:80] for tag in IMG.findall(html_text) if not ALT.search(tag)]


def on_page_content(html_text: str, page: Any, config: Any = None, **_: Any) -> str:
    if not is_notebook(page.file.src_uri):
        return html_text
    for tag in images_without_alt(html_text):
        log.warning(
            "%s: a figure has no alt text (%s...); display it as "
            '<img alt="..."> through IPython.display.HTML, see hooks/notebooks.py',
            page.file.src_path,
            tag,
        )
    name = PurePosixPath(ipynb_uri(page.file.src_uri)).name
    href = get_relative_url(ipynb_uri(page.file.src_uri), page.url)
    repository = (config or {}).get("repo_url") or "https://github.com/opbyop/opbyop"
    link = (
        f'<p class="opbyop-download"><a href="{href}" download>'
        f"Download this notebook ({name})</a> and open it in Jupyter, with "
        f"<code>opbyop</code> and its <code>plot</code> extra installed: "
        f'<code>pip install "opbyop[plot] @ git+{repository}"</code>.</p>\n'
    )
    html_text = SCROLLING_CODE.sub('<div tabindex="0" class="highlight-ipynb', html_text)
    return link + REMOTE_SCRIPT.sub("", html_text)
