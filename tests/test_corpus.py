"""opbyop.corpus: the shipped text, its hash, its split, and its rebuild.

The manifest that tools/build_corpus.py wrote beside the text lists every
file and the SHA-256 of both texts; these tests hold the shipped text to it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import platform
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from site_build import ROOT

from opbyop import corpus

MANIFEST = files("opbyop").joinpath("data/corpus_manifest.tsv").read_text("utf-8")


def manifest_rows() -> list[list[str]]:
    """split, file, bytes, reason for every file of Lib/."""
    lines = [line for line in MANIFEST.splitlines() if not line.startswith("#")]
    assert lines[0] == "split\tfile\tbytes\treason"
    return [line.split("\t") for line in lines[1:]]


def manifest_hashes() -> dict[str, str]:
    """split -> the SHA-256 the build printed."""
    hashes = {}
    for line in MANIFEST.splitlines():
        if line.startswith(("# train\t", "# validation\t")):
            split, sha, _ = line.removeprefix("# ").split("\t")
            hashes[split] = sha.removeprefix("sha256 ")
    return hashes


def headers(text: str) -> list[str]:
    """The file names of a text, from its ``# Lib/<name>.py`` lines.

    (A source file may mention Lib/ in a comment, as pyclbr.py does, but
    not on a line of just one top-level module's name.)
    """
    return re.findall(r"^# (Lib/[^/\s]+\.py)$", text, flags=re.MULTILINE)


def test_the_texts_have_the_hashes_the_build_recorded() -> None:
    train, validation = corpus.load()
    got = {
        "train": hashlib.sha256(train.encode("utf-8")).hexdigest(),
        "validation": hashlib.sha256(validation.encode("utf-8")).hexdigest(),
    }
    assert got == manifest_hashes()


def test_a_damaged_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(corpus._SHA256, "validation", "0" * 64)
    with pytest.raises(ValueError, match=r"corpus_validation.txt.xz is damaged"):
        corpus._text.__wrapped__("validation")  # past the cache


def test_the_split_is_by_whole_files_every_tenth_held_out() -> None:
    rows = manifest_rows()
    kept = sorted(f for split, f, _, _ in rows if split in ("train", "validation"))
    held_out = [f for split, f, _, _ in rows if split == "validation"]
    assert held_out == kept[9::10]
    train, validation = corpus.load()
    assert headers(validation) == held_out
    assert headers(train) == [f for f in kept if f not in held_out]
    assert "Lib/argparse.py" in held_out  # the pages name some of them
    assert "Lib/typing.py" not in held_out


def test_the_corpus_is_1_to_5_mb_of_top_level_modules() -> None:
    train, validation = corpus.load()
    total = len(train.encode("utf-8")) + len(validation.encode("utf-8"))
    assert 1_000_000 <= total <= 5_000_000
    assert 0.05 <= len(validation) / (len(train) + len(validation)) <= 0.15
    reasons = {reason for split, _, _, reason in manifest_rows() if split == "left out"}
    assert {"test", "in a package", "not UTF-8"} <= reasons
    for split, name, _, _ in manifest_rows():
        if split != "left out":
            assert name.count("/") == 1, name  # Lib/<module>.py, no package
            assert not name.startswith("Lib/test_"), name
    assert "Lib/stringprep.py" not in headers(train) + headers(validation)  # hex tables


def test_the_text_is_python_that_the_pages_can_prompt() -> None:
    train, validation = corpus.load()
    for text in (train, validation):
        assert "def " in text
        assert "class " in text
        assert "\r" not in text
    assert MANIFEST.startswith(f"# opbyop.corpus: CPython {corpus.PYTHON_VERSION}, Lib/*.py\n")


def test_load_is_deterministic() -> None:
    first = corpus.load()
    again = corpus._text.__wrapped__("train"), corpus._text.__wrapped__("validation")
    assert first == again
    assert corpus.load() == first


@pytest.mark.slow
@pytest.mark.skipif(
    platform.python_implementation() != "CPython" or platform.python_version() != "3.11.7",
    reason="rebuilding the corpus needs CPython 3.11.7's own Lib/",
)
def test_the_build_script_rebuilds_the_same_text(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_corpus.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    rebuilt = (tmp_path / "corpus_manifest.tsv").read_text("utf-8")
    assert rebuilt == MANIFEST


def test_the_build_script_refuses_another_python(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location(
        "build_corpus", ROOT / "tools" / "build_corpus.py"
    )
    assert spec is not None
    assert spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setattr(tool, "VERSION", (3, 99, 0))
    monkeypatch.setattr(sys, "argv", ["build_corpus.py", "--out", "/nonexistent"])
    with pytest.raises(SystemExit, match=r"needs CPython 3\.99\.0"):
        tool.main()
