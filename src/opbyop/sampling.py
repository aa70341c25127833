"""Choosing the next token: the filters applied to a model's scores first.

Each function takes logits ``[..., vocab]`` (one row of scores per
position, the last axis over the vocabulary) and returns new logits of the
same shape and dtype; the input is left untouched. A token a filter removes
gets the score ``-inf``, so softmax gives it probability 0. Each computes
what Hugging Face's logits processor of the same purpose computes
(transformers 5.24: ``TemperatureLogitsWarper``, ``TopKLogitsWarper``,
``TopPLogitsWarper``, ``MinPLogitsWarper``,
``RepetitionPenaltyLogitsProcessor``), in float32 and float64 (the dtypes
the tests check against it). Hugging Face's ``generate`` applies them in this
order: repetition penalty, temperature, top-k, top-p, min-p.

Every row keeps at least one token. The logits must hold no NaN and no
``+inf``, and every row at least one score above ``-inf``.

References
----------
.. [1] A. Holtzman, J. Buys, L. Du, M. Forbes and Y. Choi, "The Curious Case
   of Neural Text Degeneration", 2019, arXiv:1904.09751 (top-p).
.. [2] N. S. Keskar, B. McCann, L. R. Varshney, C. Xiong and R. Socher,
   "CTRL: A Conditional Transformer Language Model for Controllable
   Generation", 2019, arXiv:1909.05858 (the repetition penalty).
.. [3] M. N. Nguyen, A. Baker, C. Neo, A. Roush, A. Kirsch and
   R. Shwartz-Ziv, "Turning Up the Heat: Min-p Sampling for Creative and
   Coherent LLM Outputs", 2024, arXiv:2407.01082.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from opbyop.ops import softmax

__all__ = ["min_p", "repetition_penalty", "temperature", "top_k", "top_p"]

FloatArray = NDArray[np.floating[Any]]


# --8<-- [start:temperature]
def temperature(
    logits: ArrayLike, t: float
) -> FloatArray:  # [..., vocab] -> [..., vocab]
    """Divide the scores by `t`: below 1 sharpens the odds, above 1 flattens.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        The scores, floating point.
    t : float
        The temperature, > 0 and finite.

    Returns
    -------
    numpy.ndarray, shape (..., vocab)
        ``logits / t``, in the dtype of `logits`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import sampling
    >>> sampling.temperature(np.array([1.0, 2.0, -np.inf]), 0.5).tolist()
    [2.0, 4.0, -inf]
    """
    scores = _logits(logits)
    t = _positive(t, "t")
    # --8<-- [start:temperature_body]
    with np.errstate(over="ignore"):  # a huge score over a tiny t: inf
        return scores / t
    # --8<-- [end:temperature_body]


# --8<-- [end:temperature]


# --8<-- [start:top_k]
def top_k(
    logits: ArrayLike, k: int
) -> FloatArray:  # [..., vocab] -> [..., vocab]
    """Keep the `k` highest scores of each row; the others become ``-inf``.

    Every token whose score is at least the k-th highest is kept, so a tie
    at the k-th place keeps more than `k` tokens, as Hugging Face's
    ``TopKLogitsWarper`` does. A `k` of the vocabulary's size or more keeps
    every token.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        The scores, floating point.
    k : int
        How many tokens to keep, >= 1.

    Returns
    -------
    numpy.ndarray, shape (..., vocab)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import sampling
    >>> sampling.top_k(np.array([1.0, 3.0, 2.0, 0.0]), 2).tolist()
    [-inf, 3.0, 2.0, -inf]
    >>> sampling.top_k(np.array([1.0, 3.0, 1.0, 0.0]), 2).tolist()
    [1.0, 3.0, 1.0, -inf]
    """
    scores = _logits(logits)
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    # --8<-- [start:top_k_body]
    vocab = scores.shape[-1]
    k = min(int(k), vocab)
    # The k-th highest score of each row, without sorting the whole row.
    kth = np.partition(scores, vocab - k, axis=-1)[..., vocab - k, None]
    return np.where(scores < kth, -np.inf, scores).astype(
        scores.dtype, copy=False
    )
    # --8<-- [end:top_k_body]


# --8<-- [end:top_k]


# --8<-- [start:top_p]
def top_p(
    logits: ArrayLike, p: float
) -> FloatArray:  # [..., vocab] -> [..., vocab]
    """Keep the most likely tokens whose probabilities add up to `p`.

    Hugging Face's ``TopPLogitsWarper``: sort each row's probabilities in
    ascending order, add them up, and remove the tokens whose running sum
    is at most ``1 - p``. So the token that carries the sum past ``1 - p``
    is kept (the kept tokens reach at least `p`), the most likely token is
    always kept, and even at ``p = 1`` the tokens whose probability is
    exactly 0 are removed.

    Where tied tokens straddle the cut (some of a tie are kept, some
    removed), which of them are kept depends on the order of the sort. Here
    the sort is stable (of equal scores, the one with the lower id comes
    first, so is the first removed); PyTorch's sort, which Hugging Face
    uses, does not promise an order.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        The scores, floating point.
    p : float
        The probability to keep, ``0 < p <= 1``.

    Returns
    -------
    numpy.ndarray, shape (..., vocab)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import sampling
    >>> logits = np.log([0.5, 0.3, 0.15, 0.05])
    >>> sampling.top_p(logits, 0.7).round(2).tolist()
    [-0.69, -1.2, -inf, -inf]
    >>> sampling.top_p(logits, 0.9).round(2).tolist()
    [-0.69, -1.2, -1.9, -inf]
    """
    scores = _logits(logits)
    p = _number(p, "p")
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p!r}")
    # --8<-- [start:top_p_body]
    order = np.argsort(scores, axis=-1, kind="stable")  # ascending
    probs = softmax(np.take_along_axis(scores, order, axis=-1))
    # PyTorch on CPU adds float32 up in float64, then rounds each sum to
    # float32.
    running = np.cumsum(probs, axis=-1, dtype=np.float64).astype(probs.dtype)
    drop_sorted = running <= probs.dtype.type(1 - p)
    drop_sorted[..., -1] = False  # the most likely token stays
    drop = np.empty_like(drop_sorted)
    np.put_along_axis(drop, order, drop_sorted, axis=-1)  # back to id order
    return np.where(drop, -np.inf, scores).astype(scores.dtype, copy=False)
    # --8<-- [end:top_p_body]


# --8<-- [end:top_p]


# --8<-- [start:min_p]
def min_p(
    logits: ArrayLike, p: float
) -> FloatArray:  # [..., vocab] -> [..., vocab]
    """Remove the tokens less likely than `p` times the most likely one.

    Hugging Face's ``MinPLogitsWarper``: a token is removed when its
    probability is below ``p * max(probabilities)``; the most likely token
    is always kept. The cut follows the model's confidence: strict when one
    token stands out, lenient when many are alike.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        The scores, floating point.
    p : float
        The fraction of the top probability a token needs, in [0, 1]; 0
        keeps every token, 1 only the most likely (and its ties).

    Returns
    -------
    numpy.ndarray, shape (..., vocab)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import sampling
    >>> logits = np.log([0.5, 0.3, 0.15, 0.05])
    >>> sampling.min_p(logits, 0.2).round(2).tolist()
    [-0.69, -1.2, -1.9, -inf]
    """
    scores = _logits(logits)
    p = _number(p, "p")
    if not 0 <= p <= 1:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    # --8<-- [start:min_p_body]
    probs = softmax(scores)
    # The threshold in the probabilities' dtype, as PyTorch computes it.
    threshold = probs.max(axis=-1, keepdims=True) * probs.dtype.type(p)
    return np.where(probs < threshold, -np.inf, scores).astype(
        scores.dtype, copy=False
    )
    # --8<-- [end:min_p_body]


# --8<-- [end:min_p]


# --8<-- [start:repetition_penalty]
def repetition_penalty(
    logits: ArrayLike, ids: ArrayLike, penalty: float
) -> FloatArray:  # [..., vocab], [..., n] -> [..., vocab]
    """Make the tokens in `ids` less likely (or, with a penalty below 1, more).

    Hugging Face's ``RepetitionPenaltyLogitsProcessor``: the score of every
    token that appears in `ids` is divided by `penalty` if it is positive
    and multiplied by it if it is negative, so a penalty above 1 always
    lowers it. A token is penalised once, however often it appears.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        The scores, floating point.
    ids : array_like of int, shape (..., n)
        The tokens so far (the prompt included), each in ``[0, vocab)``;
        its leading dimensions are those of `logits`. ``n`` may be 0.
    penalty : float
        > 0 and finite; 1 changes nothing.

    Returns
    -------
    numpy.ndarray, shape (..., vocab)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import sampling
    >>> logits = np.array([2.0, -1.0, 0.5, 3.0])
    >>> sampling.repetition_penalty(logits, [0, 1, 1], 2.0).tolist()
    [1.0, -2.0, 0.5, 3.0]
    """
    scores = _logits(logits)
    tokens = _ids(ids, scores)
    penalty = _positive(penalty, "penalty")
    # --8<-- [start:repetition_penalty_body]
    seen = np.take_along_axis(scores, tokens, axis=-1)
    penalised = np.where(seen < 0, seen * penalty, seen / penalty)
    out = scores.copy()
    np.put_along_axis(out, tokens, penalised.astype(out.dtype), axis=-1)
    return out
    # --8<-- [end:repetition_penalty_body]


# --8<-- [end:repetition_penalty]


def _logits(logits: ArrayLike) -> FloatArray:
    """`logits` as a float array ``[..., vocab]``, or an error naming it."""
    scores = np.asarray(logits)
    if scores.dtype.kind != "f":
        raise TypeError(
            "logits must be a floating-point array, "
            f"got dtype {scores.dtype} with shape {scores.shape}"
        )
    if scores.ndim < 1 or scores.shape[-1] < 1:
        raise ValueError(
            "logits needs a last axis over the vocabulary (..., vocab) "
            f"with vocab >= 1, got shape {scores.shape}"
        )
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("logits must hold no NaN and no +inf")
    if np.isneginf(scores).all(axis=-1).any():
        raise ValueError(
            "logits has a row of only -inf: no token left to choose"
        )
    return scores


def _ids(ids: ArrayLike, scores: FloatArray) -> NDArray[np.intp]:
    """`ids` checked against the logits they go with, as an index array."""
    tokens = np.asarray(ids)
    if tokens.size == 0 and tokens.dtype.kind == "f":
        tokens = tokens.astype(np.intp)  # [] is float64 to NumPy
    if tokens.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers, got dtype {tokens.dtype}")
    if tokens.ndim < 1 or tokens.shape[:-1] != scores.shape[:-1]:
        raise ValueError(
            f"ids needs shape (..., n) with the leading dimensions of logits "
            f"{scores.shape[:-1]}: got {tokens.shape}"
        )
    vocab = scores.shape[-1]
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
        bad = tokens[(tokens < 0) | (tokens >= vocab)][0]
        raise ValueError(f"ids must be in [0, {vocab}), got {bad}")
    return tokens.astype(np.intp, copy=False)


def _number(value: object, name: str) -> float:
    """`value` as a float, or a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _positive(value: object, name: str) -> float:
    """`value` as a float > 0 and finite, or a ValueError naming `name`."""
    number = _number(value, name)
    if not 0 < number < float("inf"):
        raise ValueError(f"{name} must be > 0 and finite, got {value!r}")
    return number
