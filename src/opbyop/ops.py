"""Attention's operations in NumPy, on arrays with any leading batch dimensions.

These are the operations of :mod:`opbyop.scratch`, vectorised: ``@`` is
``mat_mul``, ``np.swapaxes(k, -1, -2)`` is ``transpose``, and scaling is one
multiplication, so only softmax and attention need functions. Every function
takes array-likes of shape ``(..., n, d)``: the leading batch dimensions (batch,
heads, ...) broadcast against each other as in ``@``.

Numerics follow PyTorch:

- float64 and float32 stay as they are; float16 is computed in float32 and
  returned as float16; integers and booleans become float64. q, k and v must
  share one dtype (integers and booleans counting as float64): PyTorch
  refuses a mix too, and a silent promotion would hide a float64 array that
  makes everything twice as slow.
- softmax subtracts each row's largest score first, so no finite input
  overflows ``exp`` or raises a RuntimeWarning.
- A softmax row holding ``+inf`` or ``nan``, or only ``-inf``, is all ``nan``.
- Attention follows the math path of PyTorch's
  ``scaled_dot_product_attention`` (the one PyTorch 2.13 takes for 2-D and 3-D inputs):
  q and k are each multiplied by ``sqrt(scale)`` before their product, so
  scores overflow only where ``q @ k.T * scale`` itself is too large for the
  dtype. Such a score becomes ``inf`` and its row ``nan``, with no
  RuntimeWarning. (PyTorch's fused CPU kernel, which 2.13 uses for 4-D inputs
  and 2.14 for 3-D ones too, scales after the product, so it overflows sooner.)
- In attention, a query row whose scores are all ``-inf`` (every key masked
  out) gets zero weights and a zero output, as in PyTorch 2.5 and later.

References
----------
.. [1] A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
   section 3.2.1, "Scaled Dot-Product Attention".
.. [2] PyTorch, ``torch.nn.functional.scaled_dot_product_attention`` and
   ``torch.softmax``, whose results ``tests/data`` holds for comparison.
"""

from __future__ import annotations

import math
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from numbers import Real
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from opbyop._checks import cast, check_dtypes, real_array
from opbyop._threads import blas_threads, usable_cores

__all__ = [
    "attention",
    "attention_backward",
    "attention_weights",
    "cross_entropy",
    "cross_entropy_backward",
    "softmax",
    "softmax_backward",
]

FloatArray = NDArray[np.floating[Any]]
T = TypeVar("T", bound=np.generic)


def softmax(x: ArrayLike, axis: int = -1) -> FloatArray:  # [..., n] -> [..., n]
    """Turn scores into weights between 0 and 1 that add up to 1 along `axis`.

    Stable: each row's largest score is subtracted before ``exp``, so any finite
    input works, from ``-1e308`` to ``1e308``.

    Parameters
    ----------
    x : array_like
        Scores, with at least one dimension.
    axis : int, optional
        The axis that adds up to 1. Default: the last.

    Returns
    -------
    numpy.ndarray
        Weights, same shape as `x`. float32 and float64 stay as they are,
        float16 is computed in float32, integers and booleans give float64.
        A row holding ``+inf`` or ``nan``, or only ``-inf``, gives ``nan``,
        as with ``torch.softmax``. (Attention gives such a row of only
        ``-inf`` zeros instead: see `attention_weights`.)

    Examples
    --------
    >>> from opbyop import softmax
    >>> softmax([1.0, 2.0, 3.0]).round(3)
    array([0.09 , 0.245, 0.665])
    >>> softmax([[0, 0], [0, 1e30]])
    array([[0.5, 0.5],
           [0. , 1. ]])
    """
    (scores,) = _checked(x=x)
    if scores.ndim == 0:
        raise ValueError(
            "x needs at least one dimension, an axis to add up along: got the single"
            f" number {scores.item()!r}, shape (); pass [x] for a row of one score"
        )
    axis = _check_axis(axis, scores, "x")
    (scores,), out_dtype = cast(scores)
    return _softmax(scores.copy(), axis).astype(out_dtype, copy=False)


def attention_weights(
    q: ArrayLike,
    k: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> FloatArray:  # [..., n_q, d_k], [..., n_k, d_k] -> [..., n_q, n_k]
    """How much each query attends to each key: ``softmax(q @ k.T * scale)``.

    The first episode's four operations at once: compare every query with
    every key (``@`` with `k` transposed), scale, then softmax each row.
    Keys a query may not look at (`mask`, `is_causal`) get weight 0. The
    weights are those `attention` uses, computed as the math path of
    PyTorch's ``scaled_dot_product_attention`` computes them: q and k are each
    multiplied by ``sqrt(scale)`` before their product.

    Use it to look at the weights: to print, plot or test them. It holds all
    ``n_q x n_k`` of them (1 GiB of float32 at n = 16384), so to compute
    attention itself use `attention`, which never does and is faster.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
        The queries.
    k : array_like, shape (..., n_k, d_k)
        The keys. Batch dimensions broadcast against those of `q`. Same
        dtype as `q` (integers and booleans count as float64).
    mask : array_like of bool, optional
        Which keys each query may look at: True where it may. Any shape
        that broadcasts to the scores' ``(..., n_q, n_k)``; a padding mask
        of shape ``(batch, 1, 1, n_k)`` hides the same keys from every head
        and query.
    is_causal : bool, optional
        If True, query ``i`` looks at keys ``0..i`` only, counted from the
        top left as in PyTorch when ``n_q != n_k``. With a `mask` too, a
        key must pass both.
    scale : float, optional
        What the scores are multiplied by. Default: ``1 / sqrt(d_k)``.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, n_k)
        Each row holds one query's weights, adding up to 1. A query that may
        look at no key (or whose scores all overflow to ``-inf``) gets a row
        of zeros, as in PyTorch 2.5 and later; JAX's
        ``dot_product_attention`` gives it equal weights on every key
        instead. With no keys the rows are empty. A scaled score too large
        for the dtype overflows to ``inf`` and makes its row ``nan``, hidden
        key or not, as on PyTorch's math path.

    Examples
    --------
    >>> from opbyop import attention_weights
    >>> x = [[1.0, 0.0], [0.0, 1.0]]
    >>> attention_weights(x, x).round(3)
    array([[0.67, 0.33],
           [0.33, 0.67]])
    >>> attention_weights(x, x, is_causal=True).round(3)
    array([[1.  , 0.  ],
           [0.33, 0.67]])
    """
    q, k = _checked(q=q, k=k)
    keep = _checked_mask(mask, is_causal, q, k)
    scale = _scale(scale, d_k=q.shape[-1])
    (q, k), out_dtype = cast(q, k)
    q, k = _scaled(q, k, scale)  # each by sqrt(scale), as PyTorch's math path
    with np.errstate(over="ignore", invalid="ignore"):  # too-big scores: inf, as in PyTorch
        scores = q @ np.swapaxes(k, -1, -2)  # mat_mul with k transposed: [..., n_q, n_k]
        # softmax, but hidden keys weigh 0 and a query that sees no key gets zeros
        sums = _exp_kept(scores, q, k, keep, diagonal=0 if is_causal else None)
        scores /= sums  # each row adds up to 1
    return scores.astype(out_dtype, copy=False)


def attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> FloatArray:  # [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> [..., n_q, d_v]
    """Scaled dot-product attention: each query's weighted average of the values.

    ``attention_weights(q, k, mask=mask, is_causal=is_causal) @ v``, as the
    math path of ``torch.nn.functional.scaled_dot_product_attention`` computes
    it without dropout: q and k are each multiplied by ``sqrt(scale)`` before
    their product. PyTorch 2.13 takes that path for 2-D and 3-D inputs; its fused
    CPU kernel, which it uses for 4-D ones (2.14: 3-D too), scales after the product and so
    overflows sooner.

    Use it for the result; use `attention_weights` to look at the weights. It
    goes through the queries a block of rows at a time, so it never holds all
    ``n_q x n_k`` weights: memory grows with n, not n squared. Large inputs
    are split over the CPU cores, with BLAS held to one thread per core for the
    duration of the call (process-wide: BLAS has no per-thread setting).
    Each block's weights are left unnormalised (at most 1, the largest exactly
    1) and the ``(n_q, d_v)`` result is divided by their sums: values within a
    factor n_k of the dtype's largest number can then overflow to ``inf``,
    where PyTorch still returns them (values that large are no real model's).
    A mask is read a block at a time and costs one multiplication per score;
    with `is_causal` no score above the diagonal is computed, which saves
    about half the time.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
        The queries.
    k : array_like, shape (..., n_k, d_k)
        The keys.
    v : array_like, shape (..., n_k, d_v)
        The values, one per key. Batch dimensions of `q`, `k` and `v`
        broadcast. All three share one dtype (integers and booleans count as
        float64); a mix is refused, as PyTorch refuses it.
    mask : array_like of bool, optional
        Which keys each query may look at: True where it may. Any shape
        that broadcasts to the scores' ``(..., n_q, n_k)``, such as a padding
        mask of shape ``(batch, 1, 1, n_k)``.
    is_causal : bool, optional
        If True, query ``i`` looks at keys ``0..i`` only, counted from the
        top left as in PyTorch when ``n_q != n_k``. With a `mask` too, a
        key must pass both (PyTorch refuses the two together).
    scale : float, optional
        What the scores are multiplied by. Default: ``1 / sqrt(d_k)``, where
        ``d_k`` is the last dimension of `q` and `k` (not of `v`).

    Returns
    -------
    numpy.ndarray, shape (..., n_q, d_v)
        One mixed vector per query. A query that may look at no key gets
        zeros, as in PyTorch 2.5 and later; JAX's ``dot_product_attention``
        gives it the plain average of all the values instead. No queries
        give an empty result; no keys give zeros, as in PyTorch.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import attention
    >>> x = np.eye(2, dtype=np.float32)
    >>> out = attention(x, x, x)
    >>> out.round(3), out.dtype
    (array([[0.67, 0.33],
           [0.33, 0.67]], dtype=float32), dtype('float32'))
    >>> attention(x, x, x, mask=[[True, False], [False, False]])
    array([[1., 0.],
           [0., 0.]], dtype=float32)
    """
    q, k, v = _checked(q=q, k=k, v=v)
    keep = _checked_mask(mask, is_causal, q, k, v)
    scale = _scale(scale, d_k=q.shape[-1])
    (q, k, v), out_dtype = cast(q, k, v)  # float32 or wider, even for float16
    out = _blocked_attention(q, k, v, scale, keep=keep, is_causal=is_causal)
    return out.astype(out_dtype, copy=False)


def _softmax(x: FloatArray, axis: int) -> FloatArray:
    """Softmax of a float array along `axis`, computed in place in `x`."""
    _exp_minus_max(x, axis)
    with np.errstate(invalid="ignore"):  # a nan row stays nan
        x /= x.sum(axis=axis, keepdims=True)
    return x


def _exp_minus_max(x: FloatArray, axis: int, *, hidden_rows_zero: bool = False) -> None:
    """``exp(x - max(x))`` along `axis`, in place in `x`: softmax but for the division.

    With `hidden_rows_zero` a row of only ``-inf`` becomes zeros, not ``nan``.
    """
    # An empty row has no maximum: `initial` makes it -inf (and the row stays empty).
    biggest = x.max(axis=axis, keepdims=True, initial=-np.inf)
    if hidden_rows_zero:
        biggest[biggest == -np.inf] = 0.0  # then exp(-inf - 0) = 0, not exp(nan)
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf is nan, as in PyTorch
        x -= biggest  # now at most 0, so exp(x) is at most 1
        np.exp(x, out=x)


# ---------------------------------------------------------------- hidden keys
#
# A hidden key counts as a score of -inf: weight 0. Writing -inf into the
# scores where a random mask says so (np.copyto with where=) takes several
# times as long as a pass of exp: the processor cannot guess which element
# comes next. Multiplying by the mask (0 or 1) takes less than a pass of exp,
# and does not branch. So the exps are taken against the row's largest score,
# hidden keys included, and then multiplied by the mask. That gives the same
# weights unless a hidden key's score is so far above the kept ones that their
# exps underflow: those few rows are redone the slow way.


def _exp_kept(
    scores: FloatArray,
    q: FloatArray,
    k: FloatArray,
    keep: NDArray[np.bool_] | None,
    diagonal: int | None,
) -> FloatArray:  # [..., r, n_k] -> [..., r, 1]
    """Softmax's numerators, in place in `scores`, with hidden keys at 0; return the row sums.

    `scores` is ``q @ k.T``. `keep` is True where a query may look at a key.
    With `diagonal`, row ``i`` also hides the keys after ``diagonal + i``: the
    causal rule for a block whose first query is number `diagonal`. A row
    that keeps no key is all zeros, with a sum of 1 to divide by.
    """
    n_rows, n_cols = scores.shape[-2:]
    _exp_minus_max(scores, axis=-1, hidden_rows_zero=True)
    if keep is not None:
        np.multiply(scores, keep.view(np.uint8), out=scores)  # uint8: faster than bool
    if diagonal is not None and diagonal + 1 < n_cols:
        part = scores[..., diagonal:]  # the square holding the block's diagonal
        np.multiply(part, np.tri(n_rows, n_cols - diagonal, dtype=np.uint8), out=part)
    # Each row's sum, for the division: BLAS adds up rows 3x faster than np.sum.
    sums = np.matmul(scores, np.ones(n_cols, dtype=scores.dtype))[..., np.newaxis]
    if keep is not None or diagonal is not None:
        _redo_faint_rows(scores, sums, q, k, keep, diagonal)
    sums[sums == 0.0] = 1.0  # a query that sees no key: zeros, as in PyTorch
    return sums


def _redo_faint_rows(
    scores: FloatArray,
    sums: FloatArray,
    q: FloatArray,
    k: FloatArray,
    keep: NDArray[np.bool_] | None,
    diagonal: int | None,
) -> None:
    """Recompute, hidden keys set to -inf first, the rows whose kept exps nearly underflowed.

    A row whose sum is at least sqrt(tiny), tiny being the dtype's smallest
    normal number, lost at most tiny / sum <= sqrt(tiny) of its weight to
    underflow: far below rounding. The others (none, in real inputs) are redone.
    """
    faint = np.nonzero(sums[..., 0] < math.sqrt(np.finfo(scores.dtype).tiny))
    if faint[0].size == 0:
        return
    batch, n_cols = scores.shape[:-2], scores.shape[-1]
    q_rows = np.broadcast_to(q, (*batch, *q.shape[-2:]))[faint]  # [m, d_k]
    k_rows = np.broadcast_to(k, (*batch, *k.shape[-2:]))[faint[:-1]]  # [m, n_k, d_k]
    with np.errstate(over="ignore", invalid="ignore"):
        rows = np.matmul(k_rows, q_rows[..., np.newaxis])[..., 0]  # [m, n_k]
    hidden = np.zeros(rows.shape, dtype=bool)
    if keep is not None:
        hidden |= ~np.broadcast_to(keep, scores.shape)[faint]
    if diagonal is not None:
        hidden |= np.arange(n_cols) > (diagonal + faint[-1])[:, np.newaxis]
    rows[hidden] = -np.inf
    _exp_minus_max(rows, axis=-1, hidden_rows_zero=True)
    scores[faint] = rows
    sums[faint] = rows.sum(axis=-1, keepdims=True)


def _checked(**arrays: ArrayLike) -> list[NDArray[Any]]:
    """Each argument as an array of real numbers whose shape fits the others'."""
    checked = {name: real_array(x, name) for name, x in arrays.items()}
    if "q" in checked:
        _check_shapes(**checked)
        check_dtypes(**checked)
    return list(checked.values())


def _checked_mask(
    mask: ArrayLike | None, is_causal: bool, *arrays: NDArray[Any]
) -> NDArray[np.bool_] | None:
    """`mask` broadcast to the scores' shape (a read-only view), or None.

    `arrays` are q, k (and v), already checked. `is_causal` is only checked:
    the causal rule is applied block by block, never as a whole mask.
    """
    if not isinstance(is_causal, (bool, np.bool_)):
        raise TypeError(f"is_causal must be True or False, got {is_causal!r}")
    n_q, n_k = arrays[0].shape[-2], arrays[1].shape[-2]
    scores = (*_batch_shape(*(x.shape for x in arrays)), n_q, n_k)
    keep = None
    if mask is not None:
        try:
            keep = np.asarray(mask)
        except ValueError as error:  # NumPy 1.24+ refuses ragged nested lists
            raise ValueError(f"mask has ragged rows (rows of different lengths): {error}") from None
        if keep.dtype != np.bool_:
            raise TypeError(
                "mask must be boolean, True where a query may look at a key:"
                f" got dtype {keep.dtype} with shape {keep.shape}"
            )
        try:
            keep = np.broadcast_to(keep, scores)
        except ValueError:
            raise ValueError(
                f"mask with shape {keep.shape} does not broadcast to the scores,"
                f" shape (..., n_q, n_k) = {scores}"
            ) from None
    return keep


def _check_axis(axis: int, x: NDArray[Any], name: str) -> int:
    """`axis` as a valid non-negative axis of `x`."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} with shape {x.shape}")
    return int(axis) % x.ndim


def _check_shapes(**arrays: NDArray[Any]) -> None:
    """q, k (and v) are stacks of matrices whose sizes fit together."""
    shapes = {name: x.shape for name, x in arrays.items()}
    for name, shape in shapes.items():
        if len(shape) < 2:
            raise ValueError(f"{name} needs at least 2 dimensions (..., n, d), got shape {shape}")
    q, k = shapes["q"], shapes["k"]
    if q[-1] != k[-1]:
        raise ValueError(f"q and k need the same last dimension d_k: got q {q}, k {k}")
    if "v" in shapes and k[-2] != shapes["v"][-2]:
        v = shapes["v"]
        raise ValueError(f"k and v need the same number of rows n_k: got k {k}, v {v}")
    try:
        _batch_shape(*shapes.values())
    except ValueError:
        got = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"batch dimensions do not broadcast: got {got}") from None


def _batch_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The leading dimensions of stacks of matrices, broadcast together."""
    batches = [shape[:-2] for shape in shapes]
    if all(batch == batches[0] for batch in batches):  # the common case, 10x faster
        return batches[0]
    return np.broadcast_shapes(*batches)


def _scale(scale: float | None, d_k: int) -> float:
    """The factor scores are multiplied by, as a Python float.

    A Python float keeps float32 scores float32; ``np.sqrt`` of an int would be
    a float64 and promote them.
    """
    if scale is None:
        return 1 / math.sqrt(d_k) if d_k > 0 else 1.0  # d_k = 0: every score is 0 anyway
    if isinstance(scale, bool) or not isinstance(scale, Real):
        raise TypeError(f"scale must be a real number or None, got {scale!r}")
    return float(scale)


def _scaled(
    q: FloatArray, k: FloatArray, scale: float
) -> tuple[FloatArray, FloatArray]:  # [..., n_q, d_k], [..., n_k, d_k] -> same shapes
    """q and k each multiplied by ``sqrt(scale)``, as PyTorch's SDPA math path does.

    Their product is then the scaled scores, and it overflows only where the
    scaled scores themselves are too large for the dtype. A negative scale
    goes into q's factor, as in PyTorch.
    """
    if scale == 1.0:
        return q, k
    root = math.sqrt(abs(scale))
    with np.errstate(over="ignore", invalid="ignore"):  # too big: inf, as in PyTorch
        return q * (root if scale >= 0 else -root), k * root


# ---------------------------------------------------------------- blocked attention
#
# softmax(q @ k.T) is an n_q x n_k matrix: 1 GiB of float32 at n = 16384. Its
# arithmetic is cheap (one subtraction and one exp per score); what costs is
# reading and writing it, once per pass over it. So attention goes through the
# queries a block of rows at a time: a block's scores stay in the cache through
# every pass over them, and memory holds one block per thread, not all scores.

# A block's scores take about this many bytes (in the L2 or L3 cache).
_BLOCK_BYTES = 2**22
# Each block's two matrix products pack all of k and v for BLAS: with fewer
# rows than this, or than a third of d_k + d_v, packing costs more than it saves.
_MIN_BLOCK_ROWS = 128
# From this many scores in all (just past 512 x 512), blocks on threads pay for their start.
_THREADS_FROM = 512 * 512 + 1


def _blocked_attention(
    q: FloatArray,
    k: FloatArray,
    v: FloatArray,
    scale: float,
    *,
    keep: NDArray[np.bool_] | None = None,
    is_causal: bool = False,
    block_rows: int | None = None,
    workers: int | None = None,
) -> FloatArray:  # [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> [..., n_q, d_v]
    """``softmax(q @ k.T * scale) @ v`` a block of query rows at a time, never all scores.

    `q`, `k` and `v` are float arrays of one dtype whose shapes fit; `keep`,
    if given, is True where a query may look at a key, in the scores' shape
    (a broadcast view: it is read a block at a time, never copied whole).
    With `is_causal`, a block computes no score for the keys after its last
    query. The other keyword arguments, for tests, set the query rows per
    block and the number of threads.
    """
    batch = _batch_shape(q.shape, k.shape, v.shape)
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    if n_k == 0 or n_q == 0 or 0 in batch:  # no keys: zeros, as in PyTorch
        return np.zeros((*batch, n_q, d_v), dtype=q.dtype)
    q, k = _scaled(q, k, scale)  # each by sqrt(scale), as PyTorch's math path
    n_scores = math.prod(batch) * n_q * n_k
    if block_rows is None and n_scores < _THREADS_FROM:  # small: one block, no threads
        out = np.empty((*batch, n_q, d_v), dtype=q.dtype)
        scores = np.empty((*batch, n_q, n_k), dtype=q.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # as in _run_blocks
            _attend(q, k, v, out, scores, keep, diagonal=0 if is_causal else None)
        return out
    q, k, v = (_flat_batch(x, batch) for x in (q, k, v))  # [b, n, d]: one loop over blocks
    out = np.empty((math.prod(batch), n_q, d_v), dtype=q.dtype)
    workers = workers or usable_cores()
    rows = block_rows or _block_rows(q, k, v, workers)
    blocks = _blocks(out.shape[0], n_q, rows)
    if is_causal:  # the costliest blocks (the last rows, which see the most keys) first
        blocks.sort(key=lambda block: block[1].stop, reverse=True)
    masks = None if keep is None else _BatchMask(keep, batch)
    _run_blocks(q, k, v, out, blocks, min(workers, len(blocks)), masks, is_causal)
    return out.reshape(*batch, n_q, d_v)


def _flat_batch(x: NDArray[T], batch: tuple[int, ...]) -> NDArray[T]:  # [..., n, d] -> [b, n, d]
    """`x` broadcast to the batch shape and flattened to one batch dimension."""
    # A view when x already has the full batch shape; a copy of x (not of any scores) if not.
    return np.broadcast_to(x, (*batch, *x.shape[-2:])).reshape(math.prod(batch), *x.shape[-2:])


def _block_rows(q: FloatArray, k: FloatArray, v: FloatArray, workers: int) -> int:
    """How many query rows (of all batch entries) to put in one block."""
    (n_batch, n_q, d_k), n_k, d_v = q.shape, k.shape[1], v.shape[2]
    rows = max(_BLOCK_BYTES // (q.itemsize * n_k), _MIN_BLOCK_ROWS, (d_k + d_v) // 3)
    # At least two blocks per thread, so that a thread slowed down does not hold up the rest.
    return max(min(rows, math.ceil(n_batch * n_q / (2 * workers))), 1)


Block = tuple[slice, slice]  # (batch entries, query rows)


def _blocks(n_batch: int, n_q: int, rows: int) -> list[Block]:
    """Split the batch and the query rows into blocks of about `rows` query rows."""
    if rows < n_q:  # several blocks per batch entry
        return [
            (slice(b, b + 1), slice(r, r + rows))
            for b in range(n_batch)
            for r in range(0, n_q, rows)
        ]
    entries = max(rows // n_q, 1)  # small matrices: several batch entries per block
    return [(slice(b, b + entries), slice(0, n_q)) for b in range(0, n_batch, entries)]


class _BatchMask:
    """A mask broadcast to ``(*batch, n_q, n_k)``, read by flat batch entry and rows.

    The batch of q, k and v is flattened to one dimension; the mask's batch
    may broadcast (a padding mask ``(b, 1, 1, n)`` over heads and queries), and
    flattening it would copy it whole. So each block's part is looked up in
    the mask as it is: a view for one batch entry, a copy of just that block's
    part for several.
    """

    def __init__(self, keep: NDArray[np.bool_], batch: tuple[int, ...]) -> None:
        self.keep, self.batch = keep, batch

    def block(self, entries: slice, rows: slice, n_cols: int) -> NDArray[np.bool_]:
        """The part of the mask for `entries`, `rows` and the first `n_cols` keys."""
        first, stop = entries.start, min(entries.stop, math.prod(self.batch))
        if stop - first == 1:
            index = np.unravel_index(first, self.batch) if self.batch else ()
            return self.keep[index][np.newaxis, rows, :n_cols]
        index = np.unravel_index(np.arange(first, stop), self.batch)
        return self.keep[index][:, rows, :n_cols]


def _run_blocks(
    q: FloatArray,
    k: FloatArray,
    v: FloatArray,
    out: FloatArray,
    blocks: list[Block],
    workers: int,
    masks: _BatchMask | None,
    is_causal: bool,
) -> None:
    """Compute every block of `out`, with `workers` threads taking blocks as they finish."""
    todo = deque(blocks)
    n_k = k.shape[1]

    def work() -> None:
        buffer = np.empty(max(_block_size(block, n_k) for block in blocks), dtype=q.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # errstate is per thread
            while todo:
                try:
                    entries, rows = todo.popleft()  # atomic: two threads never take one block
                except IndexError:  # another thread took the last block
                    return
                # Causal: the block's last query sees keys up to its own number, no further.
                n_cols = min(rows.stop, n_k) if is_causal else n_k
                into = out[entries, rows]
                scores = buffer[: into[..., 0].size * n_cols].reshape(*into.shape[:-1], n_cols)
                keep = None if masks is None else masks.block(entries, rows, n_cols)
                _attend(
                    q[entries, rows],
                    k[entries, :n_cols],
                    v[entries, :n_cols],
                    into,
                    scores,
                    keep,
                    diagonal=rows.start if is_causal else None,
                )

    if workers == 1:
        work()
        return
    # NumPy releases the GIL in matrix products and ufuncs, so threads run on
    # separate cores; BLAS gets one thread each, or its own threads would fight ours.
    with blas_threads(1), ThreadPoolExecutor(workers - 1) as pool:
        helpers = [pool.submit(work) for _ in range(workers - 1)]
        work()  # this thread works too: one thread fewer to start
        for done in helpers:
            done.result()  # re-raises a helper's exception here


def _block_size(block: Block, n_k: int) -> int:
    """How many scores a block has."""
    entries, rows = block
    return (entries.stop - entries.start) * (rows.stop - rows.start) * n_k


def _attend(
    q: FloatArray,
    k: FloatArray,
    v: FloatArray,
    out: FloatArray,
    scores: FloatArray,
    keep: NDArray[np.bool_] | None = None,
    diagonal: int | None = None,
) -> None:  # [..., r, d_k], [..., n_k, d_k], [..., n_k, d_v] -> out [..., r, d_v]
    """One block of attention into `out`, its scores ``[..., r, n_k]`` into `scores`.

    q and k are already scaled. `keep` and `diagonal` hide keys, as in `_exp_kept`.
    """
    np.matmul(q, np.swapaxes(k, -1, -2), out=scores)
    sums = _exp_kept(scores, q, k, keep, diagonal)
    n_k, d_v = scores.shape[-1], out.shape[-1]
    if d_v < n_k:  # divide the r x d_v outputs rather than the r x n_k weights
        np.matmul(scores, v, out=out)
        out /= sums
    else:
        scores /= sums
        np.matmul(scores, v, out=out)


# ---------------------------------------------------------------- backward
#
# Each function below takes what its forward took (or returned), plus the
# gradient of the loss with respect to the forward's output, and returns the
# gradients with respect to the forward's inputs. `opbyop.gpt.loss_and_grads`
# chains them through a whole model.


def softmax_backward(
    dy: ArrayLike, y: ArrayLike, axis: int = -1
) -> FloatArray:  # [..., n], [..., n] -> [..., n]
    """The gradient of `softmax` with respect to its scores: ``y * (dy - sum(dy * y))``.

    Raising one score raises its own weight and lowers every other (the
    weights still add up to 1), so each score's gradient is its weight times
    how much its own gradient beats the weighted average of all of them.

    Parameters
    ----------
    dy : array_like
        The gradient of the loss with respect to softmax's output.
    y : array_like
        Softmax's output (the weights), the shape of `dy`.
    axis : int, optional
        The axis softmax added up along. Default: the last.

    Returns
    -------
    numpy.ndarray
        The gradient with respect to the scores, the shape of `y`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import softmax, softmax_backward
    >>> y = softmax(np.array([0.0, 0.0]))
    >>> softmax_backward(np.array([1.0, 0.0]), y).tolist()
    [0.25, -0.25]
    """
    dy, y = _checked(dy=dy, y=y)
    if dy.shape != y.shape or y.ndim == 0:
        raise ValueError(f"dy and y need one shape, at least 1-D: got dy {dy.shape}, y {y.shape}")
    check_dtypes(dy=dy, y=y)
    axis = _check_axis(axis, y, "y")
    (dy, y), out_dtype = cast(dy, y)
    return _softmax_backward(dy.copy(), y, axis).astype(out_dtype, copy=False)


# Rows up to this long are summed by einsum (in order, in their dtype); longer
# ones pairwise (np.sum), which loses less to rounding, as layer_norm does.
_EINSUM_ROWS = 4096


def _softmax_backward(dy: FloatArray, y: FloatArray, axis: int) -> FloatArray:
    """`softmax_backward` of checked arrays, in place in `dy`; `axis` >= 0."""
    if axis == y.ndim - 1 and y.shape[-1] <= _EINSUM_ROWS:
        # Each row's sum of dy * y without an array of the products: 4x quicker.
        weighted = np.einsum("...i,...i->...", dy, y)[..., np.newaxis]
    else:  # summed pairwise, more accurate on long rows
        weighted = (dy * y).sum(axis=axis, keepdims=True)
    dy -= weighted
    dy *= y
    return dy


def attention_backward(
    d_out: ArrayLike,
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    weights: ArrayLike,
    *,
    scale: float | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    # [..., n_q, d_v], [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v],
    # [..., n_q, n_k] -> dq, dk, dv
    """The gradients of attention with respect to `q`, `k` and `v`.

    Attention is ``weights @ v`` with ``weights = softmax(q @ k.T * scale)``
    (`attention_weights`): three operations, taken backward in turn.

    1. ``dv = weights.T @ d_out`` and ``d_weights = d_out @ v.T`` (a product);
    2. ``d_scores = softmax_backward(d_weights, weights)``: hidden keys have
       weight 0, so they get no gradient (the weights carry the mask);
    3. ``dq = d_scores @ k * scale`` and ``dk = d_scores.T @ q * scale``.

    Parameters
    ----------
    d_out : array_like, shape (..., n_q, d_v)
        The gradient of the loss with respect to attention's output.
    q, k, v : array_like
        Attention's inputs.
    weights : array_like, shape (..., n_q, n_k)
        What ``attention_weights(q, k, ...)`` gave them in the forward pass,
        with its mask, `is_causal` and `scale`.
    scale : float, optional
        The scale the weights were computed with. Default:
        ``1 / sqrt(d_k)``.

    Returns
    -------
    dq, dk, dv : numpy.ndarray
        The shapes of `q`, `k` and `v` (with the batch dimensions of the
        result: a `k` broadcast over the batch gets one gradient per entry).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import attention_backward, attention_weights
    >>> x = np.eye(2)
    >>> weights = attention_weights(x, x, is_causal=True)
    >>> dq, dk, dv = attention_backward(np.ones((2, 2)), x, x, x, weights)
    >>> dv.round(2).tolist()  # query 0 sees value 0 only; query 1 sees both
    [[1.33, 1.33], [0.67, 0.67]]
    """
    q_array, k_array, v_array, d_out_array = _checked(q=q, k=k, v=v, d_out=d_out)
    (weights_array,) = _checked(weights=weights)
    check_dtypes(q=q_array, weights=weights_array)
    batch = _batch_shape(q_array.shape, k_array.shape, v_array.shape)
    want = (*batch, q_array.shape[-2], v_array.shape[-1])
    if d_out_array.shape != want:
        raise ValueError(f"d_out needs attention's output shape {want}, got {d_out_array.shape}")
    scores_shape = (*batch, q_array.shape[-2], k_array.shape[-2])
    if weights_array.shape != scores_shape:
        raise ValueError(
            f"weights needs the scores' shape {scores_shape} (..., n_q, n_k), "
            f"got {weights_array.shape}"
        )
    factor = _scale(scale, d_k=q_array.shape[-1])
    (d_out_array, q_array, k_array, v_array, weights_array), out_dtype = cast(
        d_out_array, q_array, k_array, v_array, weights_array
    )
    dv = np.swapaxes(weights_array, -1, -2) @ d_out_array
    d_weights = d_out_array @ np.swapaxes(v_array, -1, -2)
    d_scores = _softmax_backward(d_weights, weights_array, d_weights.ndim - 1)  # in place
    dq = d_scores @ k_array
    dq *= factor
    dk = np.swapaxes(d_scores, -1, -2) @ q_array
    dk *= factor
    return (
        dq.astype(out_dtype, copy=False),
        dk.astype(out_dtype, copy=False),
        dv.astype(out_dtype, copy=False),
    )


def cross_entropy(logits: ArrayLike, targets: ArrayLike) -> float:  # [..., vocab], [...] -> ()
    """The mean cross-entropy, in nats: ``mean(-log softmax(logits)[target])``.

    How surprised the model is by each right answer, on average: 0 if it
    gave the target probability 1, ``log(vocab)`` if it guessed uniformly.
    Computed from the log-softmax directly (``logits - max - log(sum(exp))``),
    so no probability underflows to 0 and no log of 0 is taken; this is
    ``torch.nn.functional.cross_entropy`` with its default mean.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
        One row of scores per prediction.
    targets : array_like of int, shape (...)
        The right answer for each row, ``0 <= target < vocab``.

    Returns
    -------
    float
        The average over every row.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import cross_entropy
    >>> round(cross_entropy(np.zeros((1, 4)), np.array([2])), 4)  # log(4)
    1.3863
    """
    scores, target_index = _checked_logits_and_targets(logits, targets)
    log_probs = _log_softmax(scores)
    picked = np.take_along_axis(log_probs, target_index[..., np.newaxis], axis=-1)
    return -float(picked.mean())


def cross_entropy_backward(
    logits: ArrayLike, targets: ArrayLike
) -> FloatArray:  # [..., vocab], [...] -> [..., vocab]
    """The gradient of `cross_entropy` with respect to the logits: ``(p - y) / count``.

    ``p = softmax(logits)`` and ``y`` is 1 at the target and 0 elsewhere:
    the gradient pushes the target's score up by what its probability lacks
    of 1, and every other score down by its probability. ``count``, the
    number of rows, comes from the mean.

    Parameters
    ----------
    logits : array_like, shape (..., vocab)
    targets : array_like of int, shape (...)
        As for `cross_entropy`.

    Returns
    -------
    numpy.ndarray, shape (..., vocab)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import cross_entropy_backward
    >>> cross_entropy_backward(np.zeros((1, 4)), np.array([2])).tolist()
    [[0.25, 0.25, -0.75, 0.25]]
    """
    scores, target_index = _checked_logits_and_targets(logits, targets)
    grad = _softmax(scores.copy(), axis=-1)  # p, each row adding up to 1
    rows = grad.reshape(-1, grad.shape[-1])
    rows[np.arange(rows.shape[0]), target_index.reshape(-1)] -= 1  # p - y
    grad /= rows.shape[0]  # the mean over the rows
    return grad


def _log_softmax(scores: FloatArray) -> FloatArray:
    """``log(softmax(scores))`` along the last axis, with no log of 0."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return shifted


def _checked_logits_and_targets(
    logits: ArrayLike, targets: ArrayLike
) -> tuple[FloatArray, NDArray[np.integer[Any]]]:
    """`logits` as floats (..., vocab) and `targets` as integers (...) in range."""
    (scores,) = _checked(logits=logits)
    if scores.ndim < 1 or scores.shape[-1] == 0 or scores.size == 0:
        raise ValueError(f"logits needs shape (..., vocab) with rows, got {scores.shape}")
    (scores,), _ = cast(scores)
    index = np.asarray(targets)
    if index.dtype.kind not in "iu":
        raise TypeError(f"targets must be integers, got dtype {index.dtype}")
    if index.shape != scores.shape[:-1]:
        raise ValueError(
            f"targets needs one entry per row of logits, shape {scores.shape[:-1]}, "
            f"got {index.shape}"
        )
    if index.min() < 0 or index.max() >= scores.shape[-1]:
        raise ValueError(
            f"targets must be between 0 and {scores.shape[-1] - 1}, "
            f"got {index.min()} to {index.max()}"
        )
    return scores, index
