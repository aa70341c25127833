"""Count the words on an episode's reading path, in its built HTML.

The reading path is the prose a reader who opens nothing meets: the words of
paragraphs and list items in the page's article, outside

- folded boxes (``???``, a ``<details>``) and every tab but the first;
- code and its output (``<pre>``), tables, figures and their captions;
- headings and admonition titles;
- the sections Exercises, See it in pictures and Further reading.

Open boxes (``!!!``) count: they are on the path. Inline code inside a
sentence counts as the words it holds. CONTRIBUTING.md states the same rule.

Run it on a built site to see every page's count::

    python tests/reading_path.py site
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

LIMIT = 2500
OFF_PATH_SECTIONS = {"exercises", "see it in pictures", "further reading"}
SKIPPED_TAGS = {"details", "pre", "table", "figure", "figcaption", "script", "style", "svg"}
SKIPPED_TAGS |= {"math", "h1", "h2", "h3", "h4", "h5", "h6"}
VOID_TAGS = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
SKIPPED_CLASSES = {"admonition-title", "tabbed-labels", "highlight", "headerlink"}
WORD = re.compile(r"[^\W_]")  # a whitespace-separated token with a letter or digit


class _ReadingPath(HTMLParser):
    """Collect the words of the reading path as the page streams past."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.words: list[str] = []
        self._open: list[_Element] = []
        self._in_article = False
        self._off_path_section = False
        self._tabs_seen: list[int] = []  # blocks met in each open tabbed-content
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        if tag == "article" and "md-content__inner" in classes:
            self._in_article = True
        if tag == "h2":
            self._heading = []
        if tag in VOID_TAGS:
            return
        parent = self._open[-1] if self._open else _Element("", False, False, False)
        skipped = parent.skipped or tag in SKIPPED_TAGS or bool(classes & SKIPPED_CLASSES)
        if "tabbed-block" in classes and self._tabs_seen:
            self._tabs_seen[-1] += 1
            skipped = skipped or self._tabs_seen[-1] > 1  # only the first tab counts
        opens_tabs = "tabbed-content" in classes
        if opens_tabs:
            self._tabs_seen.append(0)
        prose = parent.prose or tag in {"p", "li"}
        self._open.append(_Element(tag, skipped, prose, opens_tabs))

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._heading is not None:
            title = " ".join("".join(self._heading).split()).lower()
            self._off_path_section = title in OFF_PATH_SECTIONS
            self._heading = None
        if tag == "article":
            self._in_article = False
        if tag in VOID_TAGS or all(element.tag != tag for element in self._open):
            return
        while self._open:  # close the tag and anything left open inside it
            element = self._open.pop()
            if element.opens_tabs:
                self._tabs_seen.pop()
            if element.tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data.replace("\u00b6", ""))
        if not (self._in_article and self._open) or self._off_path_section:
            return
        if self._open[-1].prose and not self._open[-1].skipped:
            self.words.extend(token for token in data.split() if WORD.search(token))


class _Element(NamedTuple):
    tag: str
    skipped: bool  # inside something off the reading path
    prose: bool  # inside a paragraph or a list item
    opens_tabs: bool


def reading_path_words(html: str) -> list[str]:
    """The words on the reading path of one built page."""
    parser = _ReadingPath()
    parser.feed(html)
    parser.close()
    return parser.words


def episode_pages(site: Path) -> list[Path]:
    """The built episode pages of a site folder."""
    return sorted((site / "episodes").glob("*/index.html"))


if __name__ == "__main__":
    site = Path(sys.argv[1] if len(sys.argv) > 1 else "site")
    for page in episode_pages(site):
        count = len(reading_path_words(page.read_text(encoding="utf-8")))
        flag = "" if count <= LIMIT else f"  over {LIMIT}"
        print(f"{count:6d}  {page.parent.name}{flag}")
