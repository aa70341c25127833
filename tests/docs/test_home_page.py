"""The home page's episode lists, as a reader sees them rendered."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from docs_harness import render_markdown
from site_build import ROOT

# Every episode, by number. The home page lists each once, under its part
# once its page exists (under a "Coming next" heading, if any, until then),
# each with the number it has in the series.
EPISODES = {
    1: "Attention is four operations",
    2: "Where Q, K and V come from",
    3: "Many heads at once",
    4: "No peeking (masks)",
    5: "Words to tokens, and where they stand",
    6: "The transformer block",
    7: "The whole model, by hand",
    8: "Guess the next token",
    9: "Gradients by hand",
    10: "Training a tiny GPT",
    11: "Writing, one token at a time",
    12: "Byte pairs",
    13: "What changed since GPT-2",
}


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


def test_every_episode_is_listed_once_with_its_number() -> None:
    items = rendered_list_items((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert sorted(number for number, _ in items) == sorted(EPISODES)
    for number, text in items:
        assert text.startswith(EPISODES[number]), (number, text)


def test_episodes_with_a_page_link_to_it() -> None:
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    published = text.split("### Coming next")[0]
    for page in sorted((ROOT / "docs" / "episodes").glob("*.md")):
        number = int(page.name.split("-")[0])
        assert f"{number}. [{EPISODES[number]}](episodes/{page.name})" in published, page.name


def test_the_check_sees_a_list_renumbered_from_1() -> None:
    # Without sane_lists, Markdown ignores "2." and shows 1.; the test must see that.
    items = rendered_list_items("1. one\n\ntext\n\n2. two\n3. three\n")
    assert items == [(1, "one"), (2, "two"), (3, "three")]
    assert re.search(r'<ol start="2">', render_markdown("2. two\n3. three\n"))
