"""Guard: no Python block in the docs escapes the tests (DESIGN pitfall 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_harness import skips_without_reason, uncollected_fences
from site_build import ROOT

PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


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
