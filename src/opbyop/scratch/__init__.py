"""The operations in plain Python: lists of lists and loops.

This is the code the episodes show first.

One module per episode, each importing nothing but the standard library:

- `opbyop.scratch.four_ops`: episode 1, the four operations of attention.

Every function is also importable from ``opbyop.scratch`` itself.
"""

from opbyop.scratch.four_ops import (
    Matrix,
    attention,
    mat_mul,
    scale,
    softmax,
    transpose,
)

__all__ = ["Matrix", "attention", "mat_mul", "scale", "softmax", "transpose"]
