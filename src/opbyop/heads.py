"""Multi-head attention in NumPy: split into heads, attend, merge.

A model of width ``d_model`` with ``n_heads`` heads gives each head
``d_head = d_model // n_heads`` of the numbers of every query, key and value:
head ``h`` takes columns ``h * d_head`` to ``(h + 1) * d_head``. Each head
attends on its own, scaled by ``sqrt(d_head)``, and the heads' outputs are put
side by side again. all-MiniLM-L6-v2 has 12 heads of 32 (``d_model`` 384);
GPT-2 small and BERT-base have 12 heads of 64 (``d_model`` 768).

References
----------
.. [1] A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
   section 3.2.2, "Multi-Head Attention".
.. [2] PyTorch, ``torch.nn.MultiheadAttention``, whose results ``tests/data``
   holds for comparison.
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from opbyop._checks import cast, check_dtypes, real_array
from opbyop.layers import linear
from opbyop.ops import attention

__all__ = ["merge_heads", "multi_head_attention", "split_heads"]

FloatArray = NDArray[np.floating[Any]]


def split_heads(
    x: ArrayLike, n_heads: int
) -> NDArray[Any]:  # [..., n, d_model] -> [..., n_heads, n, d_head]
    """Cut each row into `n_heads` pieces and give each head its own matrix.

    Head ``h`` gets columns ``h * d_head`` to ``(h + 1) * d_head`` of every
    row, where ``d_head = d_model // n_heads``. That takes a reshape to
    ``(..., n, n_heads, d_head)`` and then swapping the two middle axes: a
    reshape straight to ``(..., n_heads, n, d_head)`` has the right shape but
    mixes up rows and heads, with no error.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        One row per token.
    n_heads : int
        How many heads. `d_model` must divide by it.

    Returns
    -------
    numpy.ndarray, shape (..., n_heads, n, d_head)
        A view of `x` (no copy) when `x` is already an array.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import split_heads
    >>> x = np.arange(12).reshape(3, 4)  # 3 tokens, d_model = 4
    >>> x
    array([[ 0,  1,  2,  3],
           [ 4,  5,  6,  7],
           [ 8,  9, 10, 11]])
    >>> heads = split_heads(x, n_heads=2)
    >>> heads.shape
    (2, 3, 2)
    >>> heads[1]  # the second head: the last two columns of every row
    array([[ 2,  3],
           [ 6,  7],
           [10, 11]])
    """
    array = real_array(x, "x")
    _check_heads(array, n_heads)
    *batch, n, d_model = array.shape
    pieces = array.reshape(*batch, n, n_heads, d_model // n_heads)  # [..., n, n_heads, d_head]
    return np.swapaxes(pieces, -3, -2)  # each head its own matrix: [..., n_heads, n, d_head]


def merge_heads(x: ArrayLike) -> NDArray[Any]:  # [..., n_heads, n, d_head] -> [..., n, d_model]
    """Put the heads' rows side by side again: the inverse of `split_heads`.

    Parameters
    ----------
    x : array_like, shape (..., n_heads, n, d_head)
        One matrix per head.

    Returns
    -------
    numpy.ndarray, shape (..., n, n_heads * d_head)
        Row ``i`` is row ``i`` of head 0, then of head 1, and so on.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import merge_heads, split_heads
    >>> heads = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])  # 2 heads
    >>> merge_heads(heads)
    array([[1, 2, 5, 6],
           [3, 4, 7, 8]])
    >>> x = np.arange(24).reshape(2, 3, 4)
    >>> bool((merge_heads(split_heads(x, 2)) == x).all())
    True
    """
    array = real_array(x, "x")
    if array.ndim < 3:
        raise ValueError(
            f"x needs at least 3 dimensions (..., n_heads, n, d_head), got shape {array.shape}"
        )
    *batch, n_heads, n, d_head = array.shape
    rows = np.swapaxes(array, -3, -2)  # [..., n, n_heads, d_head]
    return rows.reshape(*batch, n, n_heads * d_head)  # heads side by side: [..., n, d_model]


def multi_head_attention(
    x: ArrayLike,
    w_q: ArrayLike,
    b_q: ArrayLike | None,
    w_k: ArrayLike,
    b_k: ArrayLike | None,
    w_v: ArrayLike,
    b_v: ArrayLike | None,
    w_o: ArrayLike,
    b_o: ArrayLike | None,
    *,
    n_heads: int,
    mask: ArrayLike | None = None,
    is_causal: bool = False,
) -> FloatArray:  # [..., n, d_model] -> [..., n, d_model]
    """Self-attention with several heads, as BERT and GPT-2 compute it.

    Five steps: project `x` to queries, keys and values (`linear`); split each
    into `n_heads` heads (`split_heads`); attend within each head, scaled by
    ``sqrt(d_head)`` (`attention`); put the heads side by side again
    (`merge_heads`); project the result with `w_o`. All heads are computed at
    once, as one batch of matrices.

    The weights are stored ``[d_out, d_in]``, as in PyTorch's
    ``nn.MultiheadAttention`` and BERT-style checkpoints, and each projection
    is ``x @ w.T + b`` (see `linear`). Head ``h`` uses rows
    ``h * d_head`` to ``(h + 1) * d_head`` of `w_q`, `w_k` and `w_v`.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        One row per token, with any leading batch dimensions.
    w_q, w_k, w_v : array_like, shape (d_model, d_model)
        The query, key and value projections.
    b_q, b_k, b_v : array_like, shape (d_model,), or None
        Their biases; None for none.
    w_o : array_like, shape (d_model, d_model)
        The output projection, applied to the merged heads.
    b_o : array_like, shape (d_model,), or None
        Its bias.
    n_heads : int
        How many heads; `d_model` must divide by it.
    mask : array_like of bool, optional
        True where a query may look at a key. It broadcasts to
        ``(..., n_heads, n, n)``: a padding mask of shape ``(batch, 1, 1, n)``,
        False at the padding tokens, is the common case. A query that may look
        at no key gets zeros from attention, so its output is `b_o`.
    is_causal : bool, optional
        If True, token ``i`` looks only at tokens ``0..i``, as in GPT-2.
        With a `mask` too, a key must pass both.

    Returns
    -------
    numpy.ndarray, shape (..., n, d_model)
        In the dtype of `x` and the weights, which must share one (integers
        and booleans counting as float64), as in PyTorch: float16 is computed
        in float32 and returned as float16.

    Examples
    --------
    Two tokens, ``d_model = 4``, two heads. Every projection is the identity,
    so each head attends with its own two columns of `x`:

    >>> import numpy as np
    >>> from opbyop import multi_head_attention
    >>> x = np.array([[1.0, 0.0, 0.0, 1.0],
    ...               [0.0, 1.0, 0.0, 1.0]])
    >>> params = [np.eye(4), np.zeros(4)] * 4  # w_q, b_q, w_k, b_k, ..., b_o
    >>> out = multi_head_attention(x, *params, n_heads=2)
    >>> out.round(3)  # head 0 tells the tokens apart, head 1 cannot
    array([[0.67, 0.33, 0.  , 1.  ],
           [0.33, 0.67, 0.  , 1.  ]])

    With a batch and a padding mask: the second sentence has one real token.

    >>> batch = np.stack([x, x])  # [2, 2, 4]
    >>> real = np.array([[True, True], [True, False]])  # [batch, n]
    >>> mask = real[:, np.newaxis, np.newaxis, :]  # [batch, 1, 1, n]
    >>> out = multi_head_attention(batch, *params, n_heads=2, mask=mask)
    >>> out[1].round(3)  # both tokens see only the first one
    array([[1., 0., 0., 1.],
           [1., 0., 0., 1.]])
    """
    x_array = real_array(x, "x")
    _check_heads(x_array, n_heads)
    given = {"w_q": w_q, "b_q": b_q, "w_k": w_k, "b_k": b_k}
    given |= {"w_v": w_v, "b_v": b_v, "w_o": w_o, "b_o": b_o}
    params = {
        name: _checked_param(value, name, x_array.shape)
        for name, value in given.items()
        if value is not None or name.startswith("w")  # a bias may be None, a weight not
    }
    mask_array = _checked_mask(mask, x_array.shape, n_heads)
    if not isinstance(is_causal, (bool, np.bool_)):
        raise TypeError(f"is_causal must be True or False, got {is_causal!r}")
    check_dtypes(x=x_array, **params)  # one dtype for all, as in PyTorch
    (x_work, *converted), out_dtype = cast(x_array, *params.values())  # float32 or float64
    p = dict(zip(params, converted, strict=True))

    shape, tokens = x_work.shape, math.prod(x_work.shape[:-1])
    rows = x_work.reshape(tokens, shape[-1])  # [tokens, d_model]: 2-D products are 3x faster
    q, k, v = (
        split_heads(linear(rows, p[f"w_{c}"], p.get(f"b_{c}")).reshape(shape), n_heads)
        for c in "qkv"
    )  # each [..., n_heads, n, d_head]
    heads = attention(q, k, v, mask=mask_array, is_causal=is_causal)  # scaled by sqrt(d_head)
    merged = merge_heads(heads).reshape(tokens, shape[-1])  # [tokens, d_model]
    out = linear(merged, p["w_o"], p.get("b_o")).reshape(shape)  # [..., n, d_model]
    return out.astype(out_dtype, copy=False)


def _check_heads(x: NDArray[Any], n_heads: int) -> None:
    """`x` is (..., n, d_model) and `n_heads` a positive integer that divides d_model."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, Integral):
        raise TypeError(f"n_heads must be an integer, got {n_heads!r}")
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}")
    if x.ndim < 2:
        raise ValueError(f"x needs at least 2 dimensions (..., n, d_model), got shape {x.shape}")
    if x.shape[-1] % n_heads:
        raise ValueError(
            f"d_model = {x.shape[-1]} (the last dimension of x, shape {x.shape}) "
            f"does not divide into n_heads = {n_heads} heads"
        )


def _checked_param(param: ArrayLike | None, name: str, x_shape: tuple[int, ...]) -> NDArray[Any]:
    """A weight (d_model, d_model) or a bias (d_model,) as an array, or a clear error."""
    if param is None:
        raise TypeError(f"{name} must be an array of shape (d_model, d_model), got None")
    array = real_array(param, name)
    d_model = x_shape[-1]
    want = (d_model, d_model) if name.startswith("w") else (d_model,)
    if array.shape != want:
        raise ValueError(
            f"{name} needs shape {want} for x of shape {x_shape} (d_model = {d_model}), "
            f"got {array.shape}"
        )
    return array


def _checked_mask(
    mask: ArrayLike | None, x_shape: tuple[int, ...], n_heads: int
) -> NDArray[Any] | None:
    """`mask` as a boolean array that broadcasts to the scores, (..., n_heads, n, n)."""
    if mask is None:
        return None
    try:
        array = np.asarray(mask)
    except ValueError as error:  # NumPy 1.24+ refuses ragged nested lists
        raise ValueError(f"mask has ragged rows (rows of different lengths): {error}") from None
    *batch, n, _ = x_shape
    scores = (*batch, n_heads, n, n)
    if array.dtype != np.bool_:
        raise TypeError(
            f"mask must be boolean (True where a query may look), got dtype {array.dtype} "
            f"with shape {array.shape}"
        )
    try:
        fits = np.broadcast_shapes(array.shape, scores) == scores
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {array.shape} does not broadcast to the scores' shape {scores} "
            f"(..., n_heads, n, n) for x of shape {x_shape} and n_heads = {n_heads}"
        )
    return array
