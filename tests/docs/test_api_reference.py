"""Guard: every name the package exports is on the API reference page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_build import ROOT

import opbyop
import opbyop.bigram
import opbyop.bpe
import opbyop.corpus
import opbyop.gpt
import opbyop.minilm
import opbyop.optim
import opbyop.sampling
import opbyop.scratch
import opbyop.train

PAGE = ROOT / "docs" / "reference.md"


def documented_members() -> dict[str, list[str]]:
    """Each ``::: module`` block of the page: module -> the members it lists."""
    blocks: dict[str, list[str]] = {}
    module = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("::: "):
            module = line.removeprefix("::: ").strip()
            blocks[module] = []
        elif module and (member := re.fullmatch(r"\s+- (\w+)\s*", line)):
            blocks[module].append(member.group(1))
        elif line.strip() and not line.startswith(" "):
            module = None  # the block ended
    return blocks


# Part 2's modules are used as modules (from opbyop import bpe): each is its own package here.
PACKAGES = {
    p.__name__: p
    for p in (
        opbyop,
        opbyop.scratch,
        opbyop.minilm,
        opbyop.optim,
        opbyop.sampling,
        opbyop.corpus,
        opbyop.bpe,
        opbyop.gpt,
        opbyop.train,
        opbyop.bigram,
    )
}


def exported() -> list[str]:
    """``package.name`` for every name in ``__all__`` of opbyop and of each module above."""
    return [f"{p.__name__}.{name}" for p in PACKAGES.values() for name in p.__all__]


def homes(qualified: str) -> set[str]:
    """Where `qualified` may be documented: its package, or the module defining it."""
    package, name = qualified.rsplit(".", 1)
    obj = getattr(PACKAGES[package], name)
    return {package, getattr(obj, "__module__", package)}  # e.g. opbyop.words


@pytest.mark.parametrize("qualified", exported())
def test_every_exported_name_is_on_the_reference_page(qualified: str) -> None:
    name = qualified.rsplit(".", 1)[1]
    blocks = documented_members()
    assert any(name in blocks.get(home, []) for home in homes(qualified)), (
        f"{qualified} is exported but not listed on {PAGE.name} (blocks: {sorted(blocks)})"
    )


def test_the_parser_sees_the_blocks() -> None:
    blocks = documented_members()
    assert "attention" in blocks["opbyop"]
    assert "mat_mul" in blocks["opbyop.scratch"]
    assert len(exported()) >= 10


@pytest.mark.slow
def test_the_built_page_shows_every_exported_name(built_site: Path) -> None:
    html = (built_site / "reference" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'\bid="([\w.]+)"', html))
    for qualified in exported():
        name = qualified.rsplit(".", 1)[1]
        assert {f"{home}.{name}" for home in homes(qualified)} & ids, f"{qualified} not shown"
