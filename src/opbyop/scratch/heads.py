"""Multi-head attention in plain Python: a loop over heads.

Each head gets its own slice of the columns of the queries, keys and values:
with ``d_model`` numbers per row and ``n_heads`` heads, head ``h`` takes
``d_head = d_model // n_heads`` of them, from column ``h * d_head`` on. Each
head attends on its own, scaled by the square root of ``d_head``, and the
heads' outputs are put side by side again, then projected once more.

The same operations in NumPy, all heads at once and on batches, are
`opbyop.split_heads`, `opbyop.merge_heads` and `opbyop.multi_head_attention`.

References
----------
1. A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
   section 3.2.2, "Multi-Head Attention".
"""

# --8<-- [start:setup]
from opbyop.scratch.four_ops import Matrix, _check_matrix, _shape, attention
from opbyop.scratch.projections import _check_vector, linear

Heads = list[Matrix]  # one matrix per head: [n_heads, n, d_head]
# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_split(x: Matrix, n_heads: int) -> None:
    """`x` is a matrix whose row length divides into `n_heads` heads."""
    _check_matrix(x, "x")
    if isinstance(n_heads, bool) or not isinstance(n_heads, int):
        raise TypeError(f"n_heads must be an integer, got {n_heads!r}")
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}")
    if len(x[0]) % n_heads != 0:
        raise ValueError(
            f"rows of {len(x[0])} numbers (x {_shape(x)}) do not divide "
            f"into n_heads = {n_heads} heads"
        )


def _check_merge(heads: Heads) -> None:
    """`heads` is a non-empty list of matrices of one shape."""
    if not isinstance(heads, (list, tuple)) or len(heads) == 0:
        raise ValueError(f"heads must be a non-empty list, got {heads!r}")
    for h, head in enumerate(heads):
        _check_matrix(head, f"heads[{h}]")
        if _shape(head) != _shape(heads[0]):
            raise ValueError(
                "every head needs the same shape: "
                f"heads[0] is {_shape(heads[0])}, heads[{h}] is {_shape(head)}"
            )


def _check_multi_head(
    x: Matrix, n_heads: int, weights: list[Matrix], biases: list[list[float]]
) -> None:
    """Weights are [d_model, d_model], biases have d_model numbers."""
    _check_split(x, n_heads)
    d_model = len(x[0])
    for name, weight in zip(
        ["w_q", "w_k", "w_v", "w_o"], weights, strict=True
    ):
        _check_matrix(weight, name)
        if len(weight) != d_model or len(weight[0]) != d_model:
            raise ValueError(
                f"{name} needs shape ({d_model}, {d_model}) for x "
                f"{_shape(x)}, got {_shape(weight)}"
            )
    for name, bias in zip(["b_q", "b_k", "b_v", "b_o"], biases, strict=True):
        _check_vector(bias, name, d_model)


# --8<-- [end:checks]


# --8<-- [start:split_heads]
def split_heads(
    x: Matrix, n_heads: int
) -> Heads:  # [n, d_model] -> [n_heads, n, d_head]
    """Give each head its own slice of the columns of `x`."""
    _check_split(x, n_heads)
    d_head = len(x[0]) // n_heads
    heads = []
    for h in range(n_heads):
        first = h * d_head  # head h: columns first .. first + d_head - 1
        heads.append([row[first : first + d_head] for row in x])
    return heads


# --8<-- [end:split_heads]


# --8<-- [start:merge_heads]
def merge_heads(
    heads: Heads,
) -> Matrix:  # [n_heads, n, d_head] -> [n, d_model]
    """Put the heads' rows side by side again: undoes `split_heads`."""
    _check_merge(heads)
    merged = []
    for i in range(len(heads[0])):
        row = []
        for head in heads:
            row.extend(head[i])  # head 0's numbers, then head 1's, ...
        merged.append(row)
    return merged


# --8<-- [end:merge_heads]


# --8<-- [start:multi_head_attention]
def multi_head_attention(
    x: Matrix,
    w_q: Matrix,
    b_q: list[float],
    w_k: Matrix,
    b_k: list[float],
    w_v: Matrix,
    b_v: list[float],
    w_o: Matrix,
    b_o: list[float],
    *,
    n_heads: int,
) -> Matrix:  # [n, d_model] -> [n, d_model]
    """Project, split into heads, attend in each head, merge, project."""
    _check_multi_head(x, n_heads, [w_q, w_k, w_v, w_o], [b_q, b_k, b_v, b_o])
    q = split_heads(linear(x, w_q, b_q), n_heads)  # [n_heads, n, d_head]
    k = split_heads(linear(x, w_k, b_k), n_heads)
    v = split_heads(linear(x, w_v, b_v), n_heads)
    outputs = []
    for h in range(n_heads):
        # one head on its own columns, scaled by sqrt(d_head), not d_model
        outputs.append(attention(q[h], k[h], v[h]))  # [n, d_head]
    return linear(merge_heads(outputs), w_o, b_o)  # [n, d_model]


# --8<-- [end:multi_head_attention]
