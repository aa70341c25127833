"""Build opbyop's training text from CPython 3.11.7's standard library.

Run it with CPython 3.11.7 itself; it reads that interpreter's own ``Lib/``
(``sysconfig.get_paths()["stdlib"]``) and refuses any other version, so
everyone who runs it gets the same bytes::

    /root/.pyenv/versions/3.11.7/bin/python tools/build_corpus.py

(any CPython 3.11.7 does: ``Lib/`` is the same as in the v3.11.7 release's
source, but for the build's generated ``_sysconfigdata``, left out below).

What it keeps: the standard library's single-file modules, ``Lib/*.py``
(argparse.py, typing.py...), 4.6 MB of ordinary Python. What it leaves out,
each listed in the manifest with its reason:

- files that are not valid UTF-8 (in 3.11.7, all of them are test data);
- tests (any file under a ``test``, ``tests`` or ``idle_test`` folder, or
  named ``test_*.py``);
- the packages (``Lib/asyncio/``, ``Lib/encodings/``...): with them the
  text would be 12 MB, over the 5 MB the package may carry, and they hold
  the generated tables (``encodings``' codec tables of hex numbers,
  ``pydoc_data``'s help text) that are far harder to predict than code;
- generated files: ``_sysconfigdata_*.py`` (written when the interpreter
  was built, different on every machine) and ``stringprep.py`` (tables of
  hex numbers made from RFC 3454 by a script).

The held-out split is by whole files: of the kept files, sorted by name
(as Python sorts strings), every tenth (the 10th, 20th, ...) is the
validation text, the rest the training text. That fixes it without a seed,
and it spreads the held-out files over the alphabet; they are all ordinary
modules, so the validation figure measures code, not tables.

Each file becomes a line ``# Lib/<name>`` followed by its text (ending in a
newline), and the files are joined in name order. It writes, in
``src/opbyop/data/``:

- ``corpus_train.txt.xz`` and ``corpus_validation.txt.xz`` (xz, with the
  standard library's ``lzma``);
- ``corpus_manifest.tsv``: every ``.py`` file of ``Lib/`` (but
  ``site-packages``), where it went and why, and the SHA-256 of both texts,
  which `opbyop.corpus` checks at load.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import sys
import sysconfig
from pathlib import Path

VERSION = (3, 11, 7)
DATA = Path(__file__).resolve().parent.parent / "src" / "opbyop" / "data"
TEST_FOLDERS = {"test", "tests", "idle_test"}
GENERATED = {
    "stringprep.py": "generated: tables of hex numbers made from RFC 3454",
}
EVERY = 10  # every tenth kept file is held out
MAX_BYTES = 5_000_000


def reason_left_out(path: Path, lib: Path) -> str | None:
    """Why `path` is not in the corpus, or None if it is kept."""
    parts = path.relative_to(lib).parts
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    if TEST_FOLDERS & set(parts[:-1]) or path.name.startswith("test_"):
        return "test"
    if len(parts) > 1:
        return "in a package"
    if path.name.startswith("_sysconfigdata"):
        return "generated: the build's configuration, different on every machine"
    return GENERATED.get(path.name)


def file_text(path: Path, lib: Path) -> str:
    """One file of the corpus: its name on a comment line, then its text."""
    text = path.read_bytes().decode("utf-8")
    if not text.endswith("\n"):
        text += "\n"
    return f"# Lib/{path.relative_to(lib).as_posix()}\n{text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DATA, help="default: %(default)s")
    out_dir = parser.parse_args().out
    if sys.implementation.name != "cpython" or sys.version_info[:3] != VERSION:
        sys.exit(
            f"tools/build_corpus.py needs CPython {'.'.join(map(str, VERSION))}, "
            f"to read that version's Lib/: this is {sys.implementation.name} "
            f"{sys.version.split()[0]}"
        )
    lib = Path(sysconfig.get_paths()["stdlib"])
    every = sorted(
        (p for p in lib.rglob("*.py") if "site-packages" not in p.relative_to(lib).parts),
        key=lambda p: p.relative_to(lib).as_posix(),
    )
    rows, kept = [], []
    for path in every:
        reason = reason_left_out(path, lib)
        if reason is None:
            kept.append(path)
        else:
            rows.append(("left out", path, reason))
    held_out = set(kept[EVERY - 1 :: EVERY])
    for path in kept:
        if path in held_out:
            rows.append(("validation", path, f"every {EVERY}th kept file"))
        else:
            rows.append(("train", path, ""))
    texts = {
        split: "".join(
            file_text(p, lib) for p in kept if (p in held_out) == (split == "validation")
        )
        for split in ("train", "validation")
    }
    total = sum(len(t.encode("utf-8")) for t in texts.values())
    assert 1_000_000 <= total <= MAX_BYTES, total
    header = [
        f"# opbyop.corpus: CPython {'.'.join(map(str, VERSION))}, Lib/*.py",
        "# made by tools/build_corpus.py; every .py file of Lib/ (but site-packages)",
    ]
    for split, text in texts.items():
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        header.append(f"# {split}\tsha256 {digest}\tbytes {len(data)}")
        out = out_dir / f"corpus_{split}.txt.xz"
        out.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
        print(f"{out.name}: {len(data):,} bytes, {out.stat().st_size:,} compressed, {digest}")
    lines = [*header, "split\tfile\tbytes\treason"]
    rows.sort(key=lambda row: row[1].relative_to(lib).as_posix())
    for split, path, reason in rows:
        name = f"Lib/{path.relative_to(lib).as_posix()}"
        lines.append(f"{split}\t{name}\t{path.stat().st_size}\t{reason}")
    (out_dir / "corpus_manifest.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = {s: sum(r[0] == s for r in rows) for s in ("train", "validation", "left out")}
    print(f"corpus_manifest.tsv: {counts}")


if __name__ == "__main__":
    main()
