"""The training text: the Python source of CPython 3.11.7's standard library.

Every reader trains on the same bytes: the standard library's single-file
modules (``Lib/*.py``: argparse.py, typing.py...), shipped in the package
compressed with xz, 4.65 MB of text in all, checked by SHA-256 at load.

The held-out split is by whole files: of the kept files, in name order,
every tenth is held out (16 files, 418 KB: ``_py_abc.py``,
``argparse.py``, ``cgi.py``, ``contextlib.py``, ``dis.py``,
``getopt.py``, ``imghdr.py``, ``mailcap.py``, ``optparse.py``,
``poplib.py``, ``quopri.py``, ``shutil.py``, ``sre_parse.py``,
``tabnanny.py``, ``trace.py``, ``wave.py``). Which files are held out
changes the validation figure: tables of hex numbers are far harder to
predict than ordinary code, so the split is fixed, and the corpus leaves
such tables out (the packages, ``encodings``' codec tables among them,
and ``stringprep.py``). Tests and non-UTF-8 files are left out too.

``tools/build_corpus.py`` builds the files from CPython 3.11.7's own
``Lib/``; ``opbyop/data/corpus_manifest.tsv``, shipped beside them, lists
every ``.py`` file of ``Lib/``, where it went and why. The text is under
the Python Software Foundation License (see ``NOTICE`` and
``LICENSES/Python-2.0.txt``).
"""

from __future__ import annotations

import hashlib
import lzma
from functools import cache
from importlib.resources import files

__all__ = ["PYTHON_VERSION", "load"]

#: The CPython release whose standard library the text is.
PYTHON_VERSION = "3.11.7"

# The SHA-256 of each text's UTF-8 bytes, as tools/build_corpus.py printed
# them (and wrote them into corpus_manifest.tsv).
_SHA256 = {
    "train": (
        "7ff6996b968bdfd3dd76e74f62227ce55b1d2bc5cc5d76df28abc4ae410cb99b"
    ),
    "validation": (
        "ed77b6d28c2521a54454bbe31a1da430b1d5024b5d8b86df2b06bf0439ae5724"
    ),
}
_FILE = "data/corpus_{split}.txt.xz"


def load() -> tuple[str, str]:
    """The training text and the held-out validation text.

    Returns
    -------
    train_text, validation_text : str
        Each is whole files of the standard library, one after another,
        each starting with a line ``# Lib/<name>``; 4,233,131 and 418,342
        bytes of UTF-8.

    Raises
    ------
    ValueError
        If a shipped file does not match its SHA-256 (a damaged install).

    Examples
    --------
    >>> from opbyop import corpus
    >>> train, validation = corpus.load()
    >>> print(validation.splitlines()[0])
    # Lib/_py_abc.py
    >>> "def " in train and "class " in train
    True
    """
    return _text("train"), _text("validation")


@cache
def _text(split: str) -> str:
    """One split, decompressed and checked (once: it takes a moment)."""
    path = files("opbyop").joinpath(_FILE.format(split=split))
    data = lzma.decompress(path.read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != _SHA256[split]:
        raise ValueError(
            f"opbyop/{_FILE.format(split=split)} is damaged: its text has "
            f"SHA-256 {digest}, not {_SHA256[split]}; reinstall opbyop"
        )
    return data.decode("utf-8")
