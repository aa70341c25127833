"""The operations in plain Python: lists of lists and loops.

This is the code the episodes show first.

One module per episode, each importing nothing but the standard library:

- `opbyop.scratch.four_ops`: episode 1, the four operations of attention.
- `opbyop.scratch.block`: episode 6, layer norm and GELU.

Every function is also importable from ``opbyop.scratch`` itself.
"""

from opbyop.scratch.block import Vector, gelu, layer_norm
from opbyop.scratch.four_ops import (
    Matrix,
    attention,
    mat_mul,
    scale,
    softmax,
    transpose,
)

__all__ = [
    "Matrix",
    "Vector",
    "attention",
    "gelu",
    "layer_norm",
    "mat_mul",
    "scale",
    "softmax",
    "transpose",
]
