"""Offer each notebook as an .ipynb download, and keep notebook pages offline.

The notebooks live in ``docs/notebooks/`` as jupytext percent-format ``.py``
files; mkdocs-jupyter executes and renders them. This hook adds:

* a generated ``notebooks/<name>.ipynb`` next to each page, converted with
  jupytext, and a download link at the top of the page;
* removal of the scripts nbconvert's template loads from the network
  (MathJax, and Mermaid through an inline import): notebook markdown holds
  no LaTeX and no diagrams, so nothing needs them.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import jupytext
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

NOTEBOOKS = "notebooks/"
# A script loaded from elsewhere, or an inline one that imports from elsewhere.
REMOTE_SCRIPT = re.compile(
    r'<script[^>]*\bsrc="(?:https?:)?//[^"]*"[^>]*>\s*</script>'
    r"|<script\b[^>]*>(?:(?!</script>).)*?\bimport\(\s*[\"'](?:https?:)?//(?:(?!</script>).)*</script>",
    re.DOTALL,
)


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


def on_page_content(html_text: str, page: Any, **_: Any) -> str:
    if not is_notebook(page.file.src_uri):
        return html_text
    name = PurePosixPath(ipynb_uri(page.file.src_uri)).name
    href = get_relative_url(ipynb_uri(page.file.src_uri), page.url)
    link = (
        f'<p class="opbyop-download"><a href="{href}" download>'
        f"Download this notebook ({name})</a>, or run it with "
        f"<code>jupyter lab</code> after <code>pip install -e .</code>.</p>\n"
    )
    return link + REMOTE_SCRIPT.sub("", html_text)
