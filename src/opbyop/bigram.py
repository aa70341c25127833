"""The counting bigram model: the next byte guessed from the one before.

`counts` tallies how often each byte follows each byte, `probabilities`
turns the tallies into a table of guesses (one added to every count, so no
byte ever gets probability 0), `bits_per_byte` measures what the guesses
cost on a text, and `sample` writes with them. The same arithmetic as
`opbyop.scratch.next_token`, vectorised: a whole corpus in a fraction of a
second.

>>> from opbyop import bigram
>>> table = bigram.probabilities(bigram.counts("abababab"))
>>> round(float(table[ord("a"), ord("b")]), 4)  # (4 + 1) / (4 + 256)
0.0192

References
----------
.. [1] C. E. Shannon, "A Mathematical Theory of Communication", Bell
   System Technical Journal, 1948 (section 3: letters drawn from counts
   of pairs, "digram" frequencies).
.. [2] D. Jurafsky and J. H. Martin, "Speech and Language Processing",
   chapter 3, "N-gram Language Models" (add-one, or Laplace, smoothing).
"""

from __future__ import annotations

__all__ = ["bits_per_byte", "counts", "probabilities", "sample"]

# isort: split
# --8<-- [start:setup]
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[Any]
# --8<-- [end:setup]


def _byte_ids(text: str | bytes, name: str = "text") -> Array:
    """`text`'s UTF-8 bytes as ids 0-255; at least two, one to guess."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    if not isinstance(text, (bytes, bytearray)):
        raise TypeError(
            f"{name} must be a str or bytes, got {type(text).__name__}"
        )
    if len(text) < 2:
        raise ValueError(
            f"{name} must be at least 2 bytes long, got {len(text)}"
        )
    return np.frombuffer(bytes(text), np.uint8).astype(np.intp)


def _table(table: ArrayLike, name: str = "table") -> Array:
    """A [256, 256] table of probabilities, or a clear error."""
    array = np.asarray(table)
    if array.dtype.kind not in "iuf" or array.shape != (256, 256):
        raise ValueError(
            f"{name} must be a [256, 256] array of numbers, got dtype "
            f"{array.dtype} with shape {array.shape}"
        )
    return array


# --8<-- [start:counts]
def counts(text: str | bytes) -> Array:  # n bytes -> [256, 256]
    """How often each byte follows each byte: ``counts[a, b]``.

    Parameters
    ----------
    text : str or bytes
        A str is read as its UTF-8 bytes. At least 2 bytes.

    Returns
    -------
    numpy.ndarray of int64, shape (256, 256)
        ``counts[a, b]`` is the number of places where byte ``b`` comes
        right after byte ``a``; all together, one less than the bytes.

    Raises
    ------
    TypeError
        If `text` is neither a str nor bytes.
    ValueError
        If `text` is shorter than 2 bytes.

    Examples
    --------
    >>> from opbyop import bigram
    >>> table = bigram.counts(b"abab")
    >>> int(table[ord("a"), ord("b")]), int(table[ord("b"), ord("a")])
    (2, 1)
    """
    ids = _byte_ids(text)
    pairs = ids[:-1] * 256 + ids[1:]  # one number per (a, b): a * 256 + b
    tally = np.bincount(pairs, minlength=256 * 256)
    return tally.astype(np.int64).reshape(256, 256)


# --8<-- [end:counts]


# --8<-- [start:probabilities]
def probabilities(
    counts: ArrayLike, add: float = 1.0
) -> Array:  # [256, 256] -> [256, 256]
    """Each row of counts as probabilities, `add` added to every count.

    Parameters
    ----------
    counts : array_like, shape (256, 256)
        Counts of byte pairs, such as `counts` returns; none negative.
    add : float, default 1.0
        Added to every count first (add-one smoothing): a pair the text
        never showed still gets a small probability, not 0. With 0, a row
        that counted nothing stays 0 (and a pair never seen costs
        infinitely many bits).

    Returns
    -------
    numpy.ndarray of float64, shape (256, 256)
        Row ``a`` is the guess for the byte after ``a``; each row that
        has any count (any row, when `add` > 0) adds up to 1.

    Raises
    ------
    ValueError
        If `counts` is not a [256, 256] array of counts, or `add` < 0.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import bigram
    >>> table = bigram.probabilities(np.zeros((256, 256)))
    >>> float(table[0, 0]) == 1 / 256  # nothing seen: every byte alike
    True
    """
    tally = _table(counts, "counts").astype(np.float64)
    if (tally < 0).any():
        raise ValueError("counts must not be negative")
    if isinstance(add, bool) or not isinstance(add, Real) or not add >= 0:
        raise ValueError(f"add must be a number >= 0, got {add!r}")
    tally += add
    totals = tally.sum(axis=1, keepdims=True)
    zeros = np.zeros_like(tally)  # a row of no counts (add 0) stays 0
    return np.divide(tally, totals, out=zeros, where=totals > 0)


# --8<-- [end:probabilities]


# --8<-- [start:bits_per_byte]
def bits_per_byte(table: ArrayLike, text: str | bytes) -> float:
    """What the table's guesses cost on `text`, in bits per byte.

    Every byte after the first is guessed from the byte before it; the
    total of ``-log2`` of the probability each guess gave the byte that
    came is divided by all of `text`'s bytes, as `opbyop.train.evaluate`
    divides a GPT's.

    Parameters
    ----------
    table : array_like, shape (256, 256)
        Probabilities, such as `probabilities` returns.
    text : str or bytes
        The text to guess: a str is read as its UTF-8 bytes.

    Returns
    -------
    float
        ``inf`` if the table gave a byte that came probability 0.

    Raises
    ------
    TypeError
        If `text` is neither a str nor bytes.
    ValueError
        If `table` is not [256, 256] or `text` is shorter than 2 bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import bigram
    >>> uniform = np.full((256, 256), 1 / 256)
    >>> bigram.bits_per_byte(uniform, b"ab")  # 8 bits for "b", over 2 bytes
    4.0
    """
    probs = _table(table).astype(np.float64)
    ids = _byte_ids(text)
    came = probs[ids[:-1], ids[1:]]  # what each guess gave the byte that came
    with np.errstate(divide="ignore"):  # a probability of 0: inf bits
        bits = -np.log2(came).sum()
    return float(bits) / len(ids)


# --8<-- [end:bits_per_byte]


# --8<-- [start:sample]
def sample(
    table: ArrayLike,
    first: int,
    n: int,
    *,
    temperature: float = 1.0,
    seed: int | None = None,
) -> bytes:
    """`n` bytes written by the table, after the byte `first`.

    Each byte is drawn from the row of the byte before it, with its
    scores (log-probabilities) divided by `temperature` first.

    Parameters
    ----------
    table : array_like, shape (256, 256)
        Probabilities, such as `probabilities` returns.
    first : int
        The byte to start from, 0 to 255 (it is not part of the result).
    n : int
        How many bytes to write, >= 0.
    temperature : float, default 1.0
        > 0: below 1 the likely bytes grow likelier, above 1 the odds
        flatten towards uniform.
    seed : int, optional
        The same seed gives the same bytes.

    Returns
    -------
    bytes
        `n` bytes; not always valid UTF-8.

    Raises
    ------
    ValueError
        If an argument is out of range, or a row `sample` reaches
        holds no probability.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import bigram
    >>> always_b = np.zeros((256, 256))
    >>> always_b[:, ord("b")] = 1.0
    >>> bigram.sample(always_b, ord("a"), 3, seed=0)
    b'bbb'
    """
    probs = _table(table).astype(np.float64)
    if isinstance(first, bool) or not isinstance(first, Integral):
        raise TypeError(f"first must be an int, got {first!r}")
    if not 0 <= first < 256:
        raise ValueError(f"first must be a byte, 0 to 255, got {first}")
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if not isinstance(temperature, Real) or not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    rows = _with_temperature(probs, float(temperature))
    edges = np.cumsum(rows, axis=1)  # row a cut into 256 stretches of [0, 1)
    rng = np.random.default_rng(seed)
    out, byte = bytearray(), int(first)
    for draw in rng.random(n):
        total = edges[byte, -1]
        if not total > 0:
            raise ValueError(f"table row {byte} holds no probability")
        byte = int(np.searchsorted(edges[byte], draw * total, "right"))
        byte = min(byte, 255)  # draw * total may round onto the last edge
        out.append(byte)
    return bytes(out)


# --8<-- [end:sample]


def _with_temperature(probs: Array, t: float) -> Array:
    """Each row's scores divided by `t`, through softmax again."""
    if t == 1.0:
        return probs
    with np.errstate(divide="ignore"):  # probability 0: a score of -inf
        scores = np.log(probs) / t
    top = scores.max(axis=1, keepdims=True)
    top[~np.isfinite(top)] = 0.0  # a row of zeros stays zeros
    weights = np.exp(scores - top)
    totals = weights.sum(axis=1, keepdims=True)
    zeros = np.zeros_like(weights)
    return np.divide(weights, totals, out=zeros, where=totals > 0)
