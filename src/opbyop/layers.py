"""The layers of a transformer block in NumPy: linear, layer norm, GELU.

Weights follow PyTorch's ``nn.Linear`` layout, ``[d_out, d_in]``, as BERT-style
checkpoints (all-MiniLM-L6-v2 among them) store them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["linear"]

FloatArray = NDArray[np.floating[Any]]


def linear(
    x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None
) -> FloatArray:  # [..., d_in], [d_out, d_in], [d_out] -> [..., d_out]
    """Multiply by a matrix, then add a bias: ``x @ weight.T + bias``.

    `weight` is stored ``[d_out, d_in]``, as PyTorch's ``nn.Linear`` and
    BERT-style checkpoints store it; GPT-2's ``Conv1D`` stores the
    transpose, ``[d_in, d_out]``, for which ``x @ weight`` is right.

    Parameters
    ----------
    x : array_like, shape (..., d_in)
        The inputs, one row per token.
    weight : array_like, shape (d_out, d_in)
        The matrix, one row per output number.
    bias : array_like, shape (d_out,), optional
        Added to every output row.

    Returns
    -------
    numpy.ndarray, shape (..., d_out)

    Examples
    --------
    >>> from opbyop import linear
    >>> linear([[1.0, 2.0]], [[1.0, 0.0], [1.0, 1.0]], [0.5, 0.0]).tolist()
    [[1.5, 3.0]]
    """
    x, weight = np.asarray(x), np.asarray(weight)
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            "linear needs x (..., d_in) and weight (d_out, d_in): "
            f"got x {x.shape}, weight {weight.shape}"
        )
    out = x @ weight.T
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (weight.shape[0],):
            raise ValueError(
                f"bias needs shape ({weight.shape[0]},) to match weight "
                f"{weight.shape}, got {bias.shape}"
            )
        out = out + bias
    return out
