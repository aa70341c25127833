"""The layers of a transformer block in plain Python: layer norm and GELU.

Episode 6 shows these. A matrix is a list of rows, one row per token, as in
`opbyop.scratch.four_ops`; nothing is imported but ``math`` and that
module's checks. The NumPy versions are `opbyop.layer_norm` and
`opbyop.gelu`.

References
----------
1. J. L. Ba, J. R. Kiros and G. E. Hinton, "Layer Normalization", 2016.
2. D. Hendrycks and K. Gimpel, "Gaussian Error Linear Units (GELUs)", 2016.
"""

# --8<-- [start:setup]
import math

from opbyop.scratch.four_ops import Matrix, _check_matrix

Vector = list[float]  # one number per column
# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_layer_norm(
    x: Matrix, weight: Vector, bias: Vector, eps: float
) -> None:
    """x is a matrix; weight and bias have one number per column of x."""
    _check_matrix(x, "x")
    for name, vector in (("weight", weight), ("bias", bias)):
        if not isinstance(vector, (list, tuple)):
            got = type(vector).__name__
            raise TypeError(f"{name} must be a list of numbers, got {got}")
        if len(vector) != len(x[0]):
            raise ValueError(
                f"{name} needs {len(x[0])} numbers, one per column of x: "
                f"got {len(vector)}"
            )
        for j, v in enumerate(vector):
            if not isinstance(v, (int, float)):
                raise TypeError(f"{name}[{j}] must be a number, got {v!r}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a number, got {eps!r}")
    if not 0 <= eps < math.inf:  # also rejects nan
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")


# --8<-- [end:checks]


# --8<-- [start:layer_norm]
def layer_norm(
    x: Matrix, weight: Vector, bias: Vector, eps: float = 1e-5
) -> Matrix:  # [n, d], [d], [d] -> [n, d]
    """Give each row mean 0 and variance 1, then scale and shift it."""
    _check_layer_norm(x, weight, bias, eps)
    result = []
    for row in x:
        mean = sum(row) / len(row)
        variance = sum((v - mean) ** 2 for v in row) / len(row)
        divider = math.sqrt(variance + eps)  # eps: never divide by 0
        normalised = [(v - mean) / divider for v in row]
        # then the learned scale and shift, one pair of numbers per column
        result.append(
            [normalised[j] * weight[j] + bias[j] for j in range(len(row))]
        )
    return result


# --8<-- [end:layer_norm]


# --8<-- [start:gelu]
def gelu(x: Matrix) -> Matrix:  # [n, d] -> [n, d]
    """Each number times the chance that a normal number is below it."""
    _check_matrix(x, "x")
    result = []
    for row in x:
        # (1 + erf(v / sqrt(2))) / 2: the standard normal distribution
        result.append([v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in row])
    return result


# --8<-- [end:gelu]
