"""The home page's episode lists, as a reader sees them rendered."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from docs_harness import render_markdown
from site_build import ROOT

EPISODES = [
    "Attention is four operations",
    "Where Q, K and V come from",
    "Many heads at once",
    "No peeking (masks)",
    "Words to tokens, and where they stand",
    "The transformer block",
    "The whole model, by hand",
]
COMING_NEXT: list[str] = []  # the series is complete for now


class ListNumbers(HTMLParser):
    """The number a browser shows before each top-level <ol> item, with its text."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[int, str]] = []
        self._next: list[int] = []  # one counter per open <ol>
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "ol":
            self._next.append(int(dict(attrs).get("start") or 1))
        elif tag == "li" and self._next and self._text is None:
            self.items.append((self._next[-1], ""))
            self._next[-1] += 1
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "ol" and self._next:
            self._next.pop()
        elif tag == "li" and self._text is not None:
            number, _ = self.items[-1]
            self.items[-1] = (number, " ".join("".join(self._text).split()))
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def rendered_list_items(markdown_text: str) -> list[tuple[int, str]]:
    parser = ListNumbers()
    parser.feed(render_markdown(markdown_text))
    return parser.items


def test_coming_next_is_numbered_as_the_episodes_are() -> None:
    items = rendered_list_items((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    titles = {number: text for number, text in items}
    for number, title in enumerate(EPISODES + COMING_NEXT, start=1):
        assert titles[number].startswith(title), (number, titles[number])
    assert [number for number, _ in items] == list(range(1, 1 + len(EPISODES) + len(COMING_NEXT)))


def test_the_check_sees_a_list_renumbered_from_1() -> None:
    # Without sane_lists, Markdown ignores "2." and shows 1.; the test must see that.
    items = rendered_list_items("1. one\n\ntext\n\n2. two\n3. three\n")
    assert items == [(1, "one"), (2, "two"), (3, "three")]
    assert re.search(r'<ol start="2">', render_markdown("2. two\n3. three\n"))
