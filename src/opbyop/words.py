"""Real word vectors: a small excerpt of all-MiniLM-L6-v2's input embeddings.

Each word is the raw row of the model's word-embedding matrix
(``embeddings.word_embeddings.weight``): 384 float32 numbers, before any
position or token-type embedding is added, before any LayerNorm, and without
the special ``[CLS]``/``[SEP]`` tokens. A few hundred words are shipped with the
library (see `vocabulary`); ``tools/extract_word_vectors.py`` regenerates
them from the model.

The model is sentence-transformers/all-MiniLM-L6-v2, released under the
Apache License 2.0 (see ``NOTICE``).

References
----------
1. N. Reimers and I. Gurevych, "Sentence-BERT: Sentence Embeddings using
   Siamese BERT-Networks", EMNLP 2019. Model card:
   https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2
2. W. Wang et al., "MiniLM: Deep Self-Attention Distillation for
   Task-Agnostic Compression of Pre-Trained Transformers", NeurIPS 2020.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from importlib.resources import files

import numpy as np
from numpy.typing import NDArray

__all__ = ["vocabulary", "word_vectors"]

_DATA_FILE = "data/minilm_words.npz"


@cache
def _excerpt() -> tuple[tuple[str, ...], dict[str, int], NDArray[np.float32]]:
    """Load the shipped excerpt once: words, word -> row, vectors (read-only)."""
    with (
        files("opbyop").joinpath(_DATA_FILE).open("rb") as f,
        np.load(f, allow_pickle=False) as npz,
    ):
        words = tuple(str(w) for w in npz["words"])
        vectors = npz["vectors"]
    vectors.setflags(write=False)  # shared by every call: nobody may change it
    return words, {w: i for i, w in enumerate(words)}, vectors


def vocabulary() -> list[str]:
    """The words `word_vectors` knows, sorted.

    Returns
    -------
    list of str
        A few hundred lower-case English words: the words of the first
        episode's "bank" sentences and a vocabulary to experiment with.

    Examples
    --------
    >>> from opbyop.words import vocabulary
    >>> words = vocabulary()
    >>> "bank" in words, "river" in words, "blood" in words
    (True, True, True)
    """
    return list(_excerpt()[0])


def word_vectors(words: str | Sequence[str]) -> NDArray[np.float32]:
    """Look up the all-MiniLM-L6-v2 input vector of each word.

    Parameters
    ----------
    words : str or sequence of str
        A sentence, lower-cased and split on whitespace, or a list of words
        (each lower-cased). Punctuation is not removed.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_words, 384)``, float32, one row per word in order. A fresh
        array: changing it changes nothing else.

    Raises
    ------
    TypeError
        If `words` is neither a string nor a sequence of strings.
    ValueError
        If `words` has no word, or a word is not in `vocabulary`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.words import word_vectors
    >>> x = word_vectors("The blood bank")
    >>> x.shape, x.dtype
    ((3, 384), dtype('float32'))
    >>> np.linalg.norm(x, axis=1).round(2)  # lengths near 1
    array([0.93, 1.34, 1.34], dtype=float32)
    """
    if isinstance(words, str):
        tokens = words.lower().split()
    elif isinstance(words, Sequence) and not isinstance(words, bytes):
        not_str = [(i, w) for i, w in enumerate(words) if not isinstance(w, str)]
        if not_str:
            i, w = not_str[0]
            raise TypeError(
                f"word_vectors: `words` must be a string or a sequence of strings; "
                f"words[{i}] is {type(w).__name__} {w!r}"
            )
        tokens = [w.lower() for w in words]
    else:
        raise TypeError(
            "word_vectors: `words` must be a string or a sequence of strings, "
            f"got {type(words).__name__}"
        )
    if not tokens:
        raise ValueError(f"word_vectors: `words` has no words (got {words!r})")
    known, row, vectors = _excerpt()
    unknown = list(dict.fromkeys(t for t in tokens if t not in row))
    if unknown:
        raise ValueError(
            f"word_vectors: `words` has {len(unknown)} word(s) not in the shipped excerpt: "
            f"{', '.join(map(repr, unknown))}. Only {len(known)} words are available; "
            "see opbyop.words.vocabulary() (punctuation is not removed)."
        )
    return vectors[[row[t] for t in tokens]]  # [n_words, 384], a copy
