"""Turn the page's LaTeX into MathML at build time.

`pymdownx.arithmatex` (generic mode) wraps each formula as ``\\(...\\)`` or
``\\[...\\]``; this hook replaces those with MathML, which browsers render
natively: no script, no font download, nothing from the network.

`latex2mathml` raises only on syntax errors. An unknown command or an
unsupported environment (``aligned``) comes out as junk, so the output is
inspected and the build stops on anything that was not converted.
"""

from __future__ import annotations

import html
import re
from typing import Any

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

FORMULA = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*'
    r"\\(?P<open>[(\[])(?P<latex>.*?)\\[)\]]\s*</(?P=tag)>",
    re.DOTALL,
)
# What unconverted LaTeX looks like once it is inside MathML: a command name
# kept as text, or an alignment "&" turned into a symbol.
LEFTOVER = re.compile(r">[^<]*\\[A-Za-z]+|<m[io]>&</m[io]>")


def latex_to_mathml(latex: str, *, block: bool) -> str:
    """Convert one formula, or raise ValueError saying what could not be converted."""
    try:
        mathml = convert(latex, display="block" if block else "inline")
    except Exception as error:  # latex2mathml raises many types on bad syntax
        raise ValueError(f"cannot convert {latex!r}: {error}") from error
    leftover = LEFTOVER.search(mathml)
    if leftover:
        raise ValueError(f"cannot convert {latex!r}: {leftover.group(0)!r} left in the output")
    return mathml


def on_page_content(html_text: str, page: Any, **_: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        latex = html.unescape(match.group("latex")).strip()
        try:
            return latex_to_mathml(latex, block=match.group("open") == "[")
        except ValueError as error:
            raise PluginError(f"{page.file.src_path}: {error}") from error

    return FORMULA.sub(replace, html_text)
