"""A linear layer in plain Python: where queries, keys and values come from.

A linear layer multiplies each row by a matrix of learned numbers, then adds
a vector of learned numbers, the bias. The matrix is stored as PyTorch and
BERT-style checkpoints store it, one row per output number:
``[d_out, d_in]``, so the product is with its transpose.

The same operation in NumPy, on batches, is `opbyop.linear`.

References
----------
1. A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
   section 3.2.2, "Multi-Head Attention" (the projections W^Q, W^K, W^V).
"""

# --8<-- [start:setup]
from opbyop.scratch.four_ops import (  # episode 1's functions and checks
    Matrix,
    _check_matrix,
    _shape,
    mat_mul,
    transpose,
)

# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_vector(v: object, name: str, size: int) -> None:
    """Raise a clear error unless `v` is a list of `size` numbers."""
    if not isinstance(v, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of numbers, got {type(v).__name__}"
        )
    if len(v) != size:
        raise ValueError(f"{name} needs {size} numbers, got {len(v)}")
    for j, x in enumerate(v):
        if not isinstance(x, (int, float)):
            raise TypeError(f"{name}[{j}] must be a number, got {x!r}")


def _check_linear(x: Matrix, weight: Matrix, bias: list[float]) -> None:
    """Rows of `x` and `weight` have one length; one bias per weight row."""
    _check_matrix(x, "x")
    _check_matrix(weight, "weight")
    if len(x[0]) != len(weight[0]):
        raise ValueError(
            "x and weight need rows of the same length d_in: "
            f"got x {_shape(x)}, weight {_shape(weight)}"
        )
    _check_vector(bias, "bias", len(weight))


# --8<-- [end:checks]


# --8<-- [start:linear]
def linear(
    x: Matrix, weight: Matrix, bias: list[float]
) -> Matrix:  # [n, d_in], [d_out, d_in], [d_out] -> [n, d_out]
    """Multiply each row by `weight` (stored [d_out, d_in]); add `bias`."""
    _check_linear(x, weight, bias)
    product = mat_mul(x, transpose(weight))  # [n, d_out]
    result = []
    for row in product:
        result.append([row[j] + bias[j] for j in range(len(bias))])
    return result


# --8<-- [end:linear]
