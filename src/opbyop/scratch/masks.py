"""Masks in plain Python: which keys each query may look at.

A mask is a table of True and False with one row per query and one column
per key, like the scores: True where the query may look at the key. A masked
score counts as minus infinity, so softmax gives it no weight. A query that
may look at no key at all gets zeros, as PyTorch gives it.

The same, vectorised with NumPy, is the ``mask`` and ``is_causal`` keywords
of `opbyop.attention` and `opbyop.attention_weights`.
"""

# --8<-- [start:setup]
import math

from opbyop.scratch.four_ops import (
    Matrix,
    _check_attention,
    _check_matrix,
    mat_mul,
    scale,
    transpose,
)

Mask = list[list[bool]]  # True where a query may look at a key
# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_mask(mask: object, n_q: int, n_k: int) -> None:
    """Raise a clear error unless `mask` is n_q rows of n_k True/False."""
    if not isinstance(mask, (list, tuple)):
        raise TypeError(
            f"mask must be a list of rows, got {type(mask).__name__}"
        )
    for i, row in enumerate(mask):
        if not isinstance(row, (list, tuple)):
            raise TypeError(
                f"mask[{i}] must be a list of True/False, "
                f"got {type(row).__name__}"
            )
        for j, x in enumerate(row):
            if not isinstance(x, bool):
                raise TypeError(
                    f"mask[{i}][{j}] must be True or False, got {x!r}"
                )
    lengths = sorted({len(row) for row in mask})
    if len(mask) != n_q or lengths != [n_k]:
        got = ", ".join(str(n) for n in lengths) or "-"
        raise ValueError(
            f"mask needs shape ({n_q}, {n_k}), a row per query and a column "
            f"per key: got {len(mask)} rows of length {got}"
        )


def _check_size(n: int) -> None:
    """The number of words is a positive integer."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an integer, got {n!r}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")


# --8<-- [end:checks]


# --8<-- [start:causal_mask]
def causal_mask(n: int) -> Mask:  # -> [n, n]
    """Word i may look at words 0 to i: itself and the ones before it."""
    _check_size(n)
    return [[j <= i for j in range(n)] for i in range(n)]


# --8<-- [end:causal_mask]


# --8<-- [start:masked_softmax]
def masked_softmax(
    scores: Matrix, mask: Mask
) -> Matrix:  # [n_q, n_k], [n_q, n_k] -> [n_q, n_k]
    """Softmax of each row, where a masked score counts as minus infinity."""
    _check_matrix(scores, "scores")
    _check_mask(mask, len(scores), len(scores[0]))
    result = []
    for i in range(len(scores)):
        row = [
            score if allowed else -math.inf
            for score, allowed in zip(scores[i], mask[i], strict=True)
        ]
        biggest = max(row)
        if biggest == -math.inf:  # zeros, as in scaled_dot_product_attention
            result.append([0.0] * len(row))
            continue
        exps = [math.exp(s - biggest) for s in row]  # exp(-inf) is 0
        total = sum(exps)
        result.append([e / total for e in exps])
    return result


# --8<-- [end:masked_softmax]


# --8<-- [start:masked_attention]
def masked_attention(
    q: Matrix, k: Matrix, v: Matrix, mask: Mask
) -> Matrix:  # [n_q, d], [n_k, d], [n_k, d_v], [n_q, n_k] -> [n_q, d_v]
    """Attention where each query looks only at the keys its mask allows."""
    _check_attention(q, k, v)
    scores = mat_mul(q, transpose(k))  # every query against every key
    scores = scale(scores, len(k[0]))  # divide by sqrt(d)
    weights = masked_softmax(scores, mask)  # masked keys get weight 0
    return mat_mul(weights, v)  # weighted average of the allowed values


# --8<-- [end:masked_attention]
