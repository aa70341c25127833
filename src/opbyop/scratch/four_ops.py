"""Attention's four operations in plain Python: lists of lists and loops.

A matrix here is a list of rows, and each row is one word's vector: a list of
numbers, all rows the same length. Nothing is imported but ``math``, so every
step of the arithmetic is in plain view. The functions never change their
arguments; each returns a new list of lists.

The same operations, vectorised with NumPy and working on batches, are
`opbyop.softmax`, `opbyop.attention_weights` and
`opbyop.attention`.

References
----------
1. A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
   section 3.2.1, "Scaled Dot-Product Attention".
"""

# --8<-- [start:setup]
import math

# A table of numbers: a list of rows, all of the same length.
Matrix = list[list[float]]

# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_matrix(m: object, name: str) -> None:
    """Raise a clear error unless `m` is a non-empty table of numbers."""
    if not isinstance(m, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of rows, got {type(m).__name__}"
        )
    for i, row in enumerate(m):
        if not isinstance(row, (list, tuple)):
            raise TypeError(
                f"{name}[{i}] must be a list of numbers, "
                f"got {type(row).__name__}"
            )
    if len(m) == 0 or len(m[0]) == 0:
        got = f"({len(m)}, 0)" if m else "(0,)"
        raise ValueError(
            f"{name} is empty, got shape {got}: it needs a row and a column"
        )
    for i, row in enumerate(m):
        if len(row) != len(m[0]):
            raise ValueError(
                f"{name} has ragged rows: row 0 has {len(m[0])} numbers, "
                f"row {i} has {len(row)}"
            )
        for j, x in enumerate(row):
            if not isinstance(x, (int, float)):
                raise TypeError(
                    f"{name}[{i}][{j}] must be a number, got {x!r}"
                )


def _check_mat_mul(a: Matrix, b: Matrix) -> None:
    """Both are matrices; rows of `a` are as long as columns of `b`."""
    _check_matrix(a, "a")
    _check_matrix(b, "b")
    if len(a[0]) != len(b):
        raise ValueError(
            f"a has {len(a[0])} columns but b has {len(b)} rows: "
            f"got a {_shape(a)}, b {_shape(b)}"
        )


def _check_vector_size(vector_size: float) -> None:
    """The vector size is a positive number."""
    if isinstance(vector_size, bool) or not isinstance(
        vector_size, (int, float)
    ):
        raise TypeError(f"vector_size must be a number, got {vector_size!r}")
    if not vector_size > 0:  # also rejects nan
        raise ValueError(f"vector_size must be positive, got {vector_size!r}")


def _check_attention(q: Matrix, k: Matrix, v: Matrix) -> None:
    """Queries and keys have rows of one length; there is one value per key."""
    _check_matrix(q, "q")
    _check_matrix(k, "k")
    _check_matrix(v, "v")
    if len(q[0]) != len(k[0]):
        raise ValueError(
            "q and k need rows of the same length: "
            f"got q {_shape(q)}, k {_shape(k)}"
        )
    if len(k) != len(v):
        raise ValueError(
            "k and v need the same number of rows: "
            f"got k {_shape(k)}, v {_shape(v)}"
        )


def _shape(m: Matrix) -> str:
    """The shape of a checked matrix, as NumPy prints it: ``(rows, cols)``."""
    return f"({len(m)}, {len(m[0])})"


# --8<-- [end:checks]


# --8<-- [start:mat_mul]
def mat_mul(a: Matrix, b: Matrix) -> Matrix:  # [n, m], [m, p] -> [n, p]
    """Multiply two matrices: every row of `a` with every column of `b`."""
    _check_mat_mul(a, b)
    result = []
    for i in range(len(a)):
        row = []
        for j in range(len(b[0])):
            total = 0.0  # dot product of row i of a with column j of b
            for t in range(len(b)):
                total += a[i][t] * b[t][j]
            row.append(total)
        result.append(row)
    return result


# --8<-- [end:mat_mul]


# --8<-- [start:transpose]
def transpose(m: Matrix) -> Matrix:  # [rows, cols] -> [cols, rows]
    """Swap rows and columns: row ``i`` of `m` becomes column ``i``."""
    _check_matrix(m, "m")
    result = []
    for j in range(len(m[0])):
        column = []  # column j of m, which becomes row j of the result
        for i in range(len(m)):
            column.append(m[i][j])
        result.append(column)
    return result


# --8<-- [end:transpose]


# --8<-- [start:scale]
def scale(scores: Matrix, vector_size: float) -> Matrix:  # [n, m] -> [n, m]
    """Divide every score by the square root of the vector size."""
    _check_matrix(scores, "scores")
    _check_vector_size(vector_size)
    divider = math.sqrt(vector_size)  # for 768, about 27.7
    result = []
    for row in scores:
        result.append([score / divider for score in row])
    return result


# --8<-- [end:scale]


# --8<-- [start:softmax]
def softmax(scores: Matrix) -> Matrix:  # [n, m] -> [n, m]
    """Turn each row of scores into weights that add up to 1."""
    _check_matrix(scores, "scores")
    result = []
    for row in scores:
        biggest = max(row)
        # exp(s - biggest) is at most 1: same weights as exp(s), no overflow
        exps = [math.exp(score - biggest) for score in row]
        total = sum(exps)
        result.append([e / total for e in exps])
    return result


# --8<-- [end:softmax]


# --8<-- [start:attention]
def attention(
    q: Matrix, k: Matrix, v: Matrix
) -> Matrix:  # [n_q, d], [n_k, d], [n_k, d_v] -> [n_q, d_v]
    """Each query's average of the values, weighted by softmax."""
    _check_attention(q, k, v)
    # every query against every key: [n_q, n_k]
    scores = mat_mul(q, transpose(k))
    scores = scale(scores, len(k[0]))  # divide by sqrt(d)
    weights = softmax(scores)  # each row adds up to 1
    return mat_mul(weights, v)  # weighted average of the values: [n_q, d_v]


# --8<-- [end:attention]
