"""Episode 9, gradients by hand: each operation's backward in plain Python.

A backward function takes what its forward took, plus ``dy``: the gradient
of the loss with respect to the forward's output, one number for each
output number (how much the loss moves per unit that output moves). It
returns the gradients with respect to the forward's inputs and weights:
the chain rule, one operation at a time. A matrix is a list of rows, as in
`opbyop.scratch.four_ops`. The NumPy versions are `opbyop.linear_backward`,
`opbyop.cross_entropy_backward`, `opbyop.gelu_backward`,
`opbyop.layer_norm_backward`, `opbyop.softmax_backward`,
`opbyop.attention_backward` and `opbyop.gpt.embed_backward`.

References
----------
1. D. E. Rumelhart, G. E. Hinton and R. J. Williams, "Learning
   representations by back-propagating errors", Nature 323, 1986.
"""

# --8<-- [start:setup]
from collections.abc import Callable

# --8<-- [end:setup]
# isort: split
# --8<-- [start:linear_imports]
from opbyop.scratch.block import Vector
from opbyop.scratch.four_ops import (
    Matrix,
    _check_matrix,
    _shape,
    mat_mul,
    transpose,
)

# --8<-- [end:linear_imports]
# isort: split
# --8<-- [start:cross_entropy_imports]
import math

# --8<-- [start:softmax_import]
from opbyop.scratch.four_ops import softmax

# --8<-- [end:softmax_import]
# --8<-- [end:cross_entropy_imports]
# isort: split
# --8<-- [start:causal_head_imports]
from opbyop.scratch.four_ops import scale
from opbyop.scratch.masks import causal_mask, masked_softmax

# --8<-- [end:causal_head_imports]


# --8<-- [start:checks]
def _check_shape(m: Matrix, name: str, rows: int, cols: int) -> None:
    """`m` is a matrix of `rows` rows of `cols` numbers."""
    _check_matrix(m, name)
    if (len(m), len(m[0])) != (rows, cols):
        raise ValueError(
            f"{name} needs shape ({rows}, {cols}), got {_shape(m)}"
        )


def _check_ids(ids: list[int], name: str, count: int, size: int) -> None:
    """`ids` is `count` integers, each in range(size)."""
    if not isinstance(ids, (list, tuple)) or len(ids) != count:
        raise ValueError(f"{name} needs {count} integers, one per row")
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name} must hold integers, got {i!r}")
        if not 0 <= i < size:
            raise ValueError(f"{name}: {i} is not in 0..{size - 1}")


# --8<-- [end:checks]


# --8<-- [start:one_weight]
def one_weight_loss(w: float, x: float = 2.0, target: float = 3.0) -> float:
    """A model with one weight: it guesses w * x, and pays the miss squared."""
    guess = w * x
    return (guess - target) ** 2


def central_difference(
    f: Callable[[float], float], w: float, h: float = 1e-6
) -> float:
    """The slope of f at w: nudge w up and down by h, divide the change."""
    if not h > 0:
        raise ValueError(f"h must be > 0, got {h!r}")
    return (f(w + h) - f(w - h)) / (2 * h)


# --8<-- [end:one_weight]


# --8<-- [start:linear_backward]
def linear_backward(
    dy: Matrix, x: Matrix, weight: Matrix
) -> tuple[Matrix, Matrix, Vector]:  # [n, d_out], [n, d_in], [d_out, d_in]
    """Back through y = x Wᵀ + b: dx = dy W, dW = dyᵀ x, db = sum of dy."""
    _check_matrix(x, "x")
    _check_shape(weight, "weight", len(weight), len(x[0]))
    _check_shape(dy, "dy", len(x), len(weight))
    dx = mat_mul(dy, weight)  # [n, d_in]: x's shape
    d_weight = mat_mul(transpose(dy), x)  # [d_out, d_in]: the weight's shape
    d_bias = [sum(column) for column in transpose(dy)]  # [d_out]
    return dx, d_weight, d_bias


# --8<-- [end:linear_backward]


# --8<-- [start:cross_entropy]
def cross_entropy(scores: Matrix, targets: list[int]) -> float:
    """The mean over rows of minus the log of the target's probability."""
    _check_matrix(scores, "scores")
    _check_ids(targets, "targets", len(scores), len(scores[0]))
    total = 0.0
    for row, target in zip(scores, targets, strict=True):
        top = max(row)  # log of the sum of exp, with no overflow
        log_sum = top + math.log(sum(math.exp(s - top) for s in row))
        total += log_sum - row[target]  # -log softmax(row)[target]
    return total / len(scores)


# --8<-- [start:cross_entropy_backward]
def cross_entropy_backward(
    scores: Matrix, targets: list[int]
) -> Matrix:  # [n, vocab], [n] -> [n, vocab]
    """Back through softmax and the mean cross-entropy at once: (p - y) / n."""
    _check_matrix(scores, "scores")
    _check_ids(targets, "targets", len(scores), len(scores[0]))
    n = len(scores)
    grad = []
    for p, target in zip(softmax(scores), targets, strict=True):
        y = [1.0 if j == target else 0.0 for j in range(len(p))]  # the answer
        grad.append([(p_j - y_j) / n for p_j, y_j in zip(p, y, strict=True)])
    return grad


# --8<-- [end:cross_entropy_backward]
# --8<-- [end:cross_entropy]


# --8<-- [start:tanh_gelu]
C = math.sqrt(2 / math.pi)  # tanh GELU's two constants, as in GPT-2
CUBIC = 0.044715


def tanh_gelu(x: Matrix) -> Matrix:  # [n, d] -> [n, d]
    """GPT-2's GELU: 0.5 x (1 + tanh(u)), with u = C (x + 0.044715 x³)."""
    _check_matrix(x, "x")
    return [
        [0.5 * v * (1 + math.tanh(C * (v + CUBIC * v**3))) for v in row]
        for row in x
    ]


def tanh_gelu_backward(dy: Matrix, x: Matrix) -> Matrix:  # [n, d] -> [n, d]
    """dy times GELU's slope at each x, by the product rule."""
    _check_matrix(x, "x")
    _check_shape(dy, "dy", len(x), len(x[0]))
    result = []
    for dy_row, x_row in zip(dy, x, strict=True):
        row = []
        for g, v in zip(dy_row, x_row, strict=True):
            t = math.tanh(C * (v + CUBIC * v**3))
            du = C * (1 + 3 * CUBIC * v**2)  # the slope of u
            slope = 0.5 * (1 + t) + 0.5 * v * (1 - t**2) * du  # tanh' = 1 - t²
            row.append(g * slope)
        result.append(row)
    return result


# --8<-- [end:tanh_gelu]


# --8<-- [start:layer_norm_backward]
def layer_norm_backward(
    dy: Matrix, x: Matrix, weight: Vector, eps: float = 1e-5
) -> tuple[Matrix, Vector, Vector]:  # [n, d], [n, d], [d] -> dx, dw, db
    """Back through layer norm: each input moved its row's mean and spread."""
    _check_matrix(x, "x")
    _check_shape(dy, "dy", len(x), len(x[0]))
    _check_shape([weight], "weight", 1, len(x[0]))
    d = len(x[0])
    dx, d_weight, d_bias = [], [0.0] * d, [0.0] * d
    for dy_row, row in zip(dy, x, strict=True):
        mean = sum(row) / d  # the forward again, for this row
        divider = math.sqrt(sum((v - mean) ** 2 for v in row) / d + eps)
        x_hat = [(v - mean) / divider for v in row]  # before weight and bias
        for j in range(d):  # out = x_hat * weight + bias
            d_weight[j] += dy_row[j] * x_hat[j]
            d_bias[j] += dy_row[j]
        g = [dy_row[j] * weight[j] for j in range(d)]  # gradient on x_hat
        mean_g = sum(g) / d  # the part that shifts the whole row
        mean_gx = sum(a * b for a, b in zip(g, x_hat, strict=True)) / d
        # x_hat ignores a shift of its row and a stretch: drop both parts
        dx.append(
            [(g[j] - mean_g - x_hat[j] * mean_gx) / divider for j in range(d)]
        )
    return dx, d_weight, d_bias


# --8<-- [end:layer_norm_backward]


# --8<-- [start:causal_head]
def causal_head(q: Matrix, k: Matrix, v: Matrix) -> tuple[Matrix, Matrix]:
    """One causal head (episodes 1 and 4): its output, and its weights."""
    _check_shape(k, "k", len(q), len(q[0]))
    _check_shape(v, "v", len(q), len(v[0]))
    scores = scale(mat_mul(q, transpose(k)), len(k[0]))  # q kᵀ / sqrt(d)
    weights = masked_softmax(scores, causal_mask(len(q)))
    return mat_mul(weights, v), weights  # [n, d_v], [n, n]


# --8<-- [end:causal_head]


# --8<-- [start:softmax_backward]
def softmax_backward(dy: Matrix, y: Matrix) -> Matrix:  # [n, m] -> [n, m]
    """Back through softmax, row by row: y (dy - the y-weighted sum of dy)."""
    _check_matrix(y, "y")
    _check_shape(dy, "dy", len(y), len(y[0]))
    result = []
    for dy_row, y_row in zip(dy, y, strict=True):
        pairs = list(zip(dy_row, y_row, strict=True))
        average = sum(g * w for g, w in pairs)  # weighted by the weights
        result.append([w * (g - average) for g, w in pairs])
    return result


# --8<-- [end:softmax_backward]


# --8<-- [start:causal_head_backward]
def causal_head_backward(
    d_out: Matrix, q: Matrix, k: Matrix, v: Matrix, weights: Matrix
) -> tuple[Matrix, Matrix, Matrix]:  # -> dq, dk, dv
    """Back through the head, its last step first."""
    _check_shape(weights, "weights", len(q), len(k))
    _check_shape(d_out, "d_out", len(q), len(v[0]))
    dv = mat_mul(transpose(weights), d_out)  # out = weights v
    d_weights = mat_mul(d_out, transpose(v))
    d_scores = softmax_backward(d_weights, weights)  # 0 where masked
    d_scores = scale(d_scores, len(k[0]))  # the same / sqrt(d), backward
    dq = mat_mul(d_scores, k)  # scores = q kᵀ
    dk = mat_mul(transpose(d_scores), q)
    return dq, dk, dv


# --8<-- [end:causal_head_backward]


# --8<-- [start:embed_backward]
def embed_backward(
    dx: Matrix, ids: list[int], vocab_size: int, context: int
) -> tuple[Matrix, Matrix]:  # [n, d], [n] -> [vocab, d], [context, d]
    """Each row of the two tables collects the gradient of every use."""
    _check_matrix(dx, "dx")
    _check_ids(ids, "ids", len(dx), vocab_size)
    if len(ids) > context:
        raise ValueError(f"{len(ids)} tokens, only {context} positions")
    d = len(dx[0])
    d_tokens = [[0.0] * d for _ in range(vocab_size)]
    d_positions = [[0.0] * d for _ in range(context)]
    for position, (token, row) in enumerate(zip(ids, dx, strict=True)):
        for j in range(d):
            d_tokens[token][j] += row[j]  # a repeated token adds up
            d_positions[position][j] += row[j]
    return d_tokens, d_positions


# --8<-- [end:embed_backward]
