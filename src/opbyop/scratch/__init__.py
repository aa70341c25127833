"""The operations in plain Python: lists of lists and loops.

This is the code the episodes show first.

One module per episode, each importing nothing but the standard library
(and the modules of earlier episodes):

- `opbyop.scratch.four_ops`: episode 1, the four operations of attention.
- `opbyop.scratch.masks`: masks, which keys each query may look at.

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
from opbyop.scratch.masks import (
    Mask,
    causal_mask,
    masked_attention,
    masked_softmax,
)

__all__ = [
    "Mask",
    "Matrix",
    "attention",
    "causal_mask",
    "masked_attention",
    "masked_softmax",
    "mat_mul",
    "scale",
    "softmax",
    "transpose",
]
