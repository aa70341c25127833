"""Guards on the docs' code blocks: each runs (DESIGN pitfall 1), each shown
output is compared, and each fits the page without scrolling sideways."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_harness import (
    expand_snippets,
    paste_error,
    skips_without_reason,
    unchecked_outputs,
    uncollected_fences,
    unpasteable_blocks,
)
from site_build import ROOT

SITE_PAGES = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [*SITE_PAGES, ROOT / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_fence_runs(page: Path) -> None:
    missed = uncollected_fences(page)
    assert not missed, (
        "Sybil does not run these blocks; use a plain ```python fence, "
        'or mark the block with <!-- skip: next "reason" -->:\n' + "\n".join(missed)
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_skip_says_why(page: Path) -> None:
    assert not skips_without_reason(page), f'{page.name}: write <!-- skip: next "reason" -->'


def test_the_guard_sees_the_pages() -> None:
    # If the glob went wrong, the tests above would pass on nothing.
    assert any(page.name.startswith("01-") for page in PAGES)


# How many characters of code fit on one line of a code block at 1280 px, the
# desktop width, measured in Chromium: 80 in the page's own column and in
# content tabs, 97 inside admonitions (smaller type), 70 in a notebook cell
# (the "In [1]:" prompt takes the rest). The project holds shown code to 79;
# the notebooks to 70 (docs/notebooks/ruff.toml). tests/site/test_browser.py
# checks in the browser that no block scrolls.
MAX_COLUMNS = 79
FENCED_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def too_wide(path: Path, limit: int = MAX_COLUMNS) -> list[str]:
    """Lines of the page's code blocks, includes expanded, longer than ``limit``."""
    text = expand_snippets(path.read_text(encoding="utf-8"))
    found = []
    for block in FENCED_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start("body")) + 1
        for offset, line in enumerate(block.group("body").split("\n")):
            line = line.removeprefix(block.group("indent"))
            if len(line) > limit:
                found.append(f"{path.name}:{first + offset}: {len(line)} columns: {line}")
    return found


# Pages whose blocks are still too wide, each with the work that narrows it.
# strict: once a page fits, its entry must go.
NOT_YET_NARROW: dict[str, str] = {}
WIDTH_CASES = [
    pytest.param(
        page,
        id=str(page.relative_to(ROOT)),
        marks=[pytest.mark.xfail(reason=NOT_YET_NARROW[page.name], strict=True)]
        if page.name in NOT_YET_NARROW
        else [],
    )
    for page in SITE_PAGES
]


@pytest.mark.parametrize("page", WIDTH_CASES)
def test_every_code_block_fits_without_scrolling(page: Path) -> None:
    wide = too_wide(page)
    assert not wide, f"code lines over {MAX_COLUMNS} columns scroll sideways:\n" + "\n".join(wide)


def test_the_width_check_finds_a_long_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n" + "y = " + "1" * 80 + "\n```\n", encoding="utf-8")
    assert [line.split(":")[1] for line in too_wide(page)] == ["3"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_output_follows_a_block(page: Path) -> None:
    orphans = unchecked_outputs(page)
    assert not orphans, (
        "an ```output fence must follow the ```python block whose output it shows, "
        "or nothing compares it:\n" + "\n".join(orphans)
    )


# Pages whose blocks the classic Python prompt still rejects when pasted, each
# with what to restructure. Their owners fix them; the test after next fails
# once a page pastes, so its entry must then go.
NOT_YET_PASTEABLE: dict[str, str] = {
    "performance.md": (
        "two blocks go on after an indented block with no blank line before "
        "the next statement: the `with threadpool_limits` block (line 228) and "
        "the `for dtype` loop (line 414)"
    ),
}


@pytest.mark.parametrize(
    "page",
    [page for page in PAGES if page.name not in NOT_YET_PASTEABLE],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_block_pastes_into_the_python_prompt(page: Path) -> None:
    rejected = unpasteable_blocks(page)
    assert not rejected, (
        "Python's classic prompt rejects these blocks when a reader pastes them: end "
        "an indented block with a blank line before the next statement, keep blank "
        "lines out of function bodies, or put the loop last:\n" + "\n".join(rejected)
    )


@pytest.mark.parametrize("name", sorted(NOT_YET_PASTEABLE))
def test_the_pages_not_yet_pasteable_still_need_it(name: str) -> None:
    page = next(page for page in PAGES if page.name == name)
    assert unpasteable_blocks(page), f"{name} pastes now: remove it from NOT_YET_PASTEABLE"


@pytest.mark.parametrize(
    ("block", "rejected"),
    [
        ("for i in range(2):\n    print(i)\nassert i == 1\n", True),
        ("def f():\n    x = 1\n\n    return x\n", True),  # blank line ends f
        ("for i in range(2):\n    print(i)\n\nassert i == 1\n", False),
        ("if True:\n    x = 1\nelse:\n    x = 2\n", False),
        ("assert True\nfor i in range(2):\n    print(i)\n", False),
    ],
)
def test_the_paste_check_follows_the_prompt(block: str, rejected: bool) -> None:
    # What python3.11 -q did with each block, pasted line by line into a terminal.
    assert (paste_error(block) is not None) is rejected
