"""The input vectors in plain Python: a word's row plus its position's row.

Episode 5 shows this. Each token id picks a row of the word table; the row
of the token's position and the token-type row are added to it, number by
number. The NumPy version, with the layer norm that follows, is
`opbyop.minilm.input_vectors`.

References
----------
1. J. Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers
   for Language Understanding", NAACL 2019, section 3, "Input/Output
   Representations".
"""

# --8<-- [start:setup]
from collections.abc import Mapping

from opbyop.scratch.block import Vector
from opbyop.scratch.four_ops import Matrix, _check_matrix

# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_embed(
    token_ids: list[int],
    words: Mapping[int, Vector],
    positions: Matrix,
    token_type: Vector,
) -> None:
    """Every id has a row, every token a position, every row one width."""
    if not isinstance(token_ids, (list, tuple)):
        got = type(token_ids).__name__
        raise TypeError(f"token_ids must be a list of integers, got {got}")
    if not token_ids:
        raise ValueError("token_ids is empty: it needs at least one token")
    if not isinstance(words, Mapping):
        got = type(words).__name__
        raise TypeError(f"words must map ids to rows (a dict), got {got}")
    for token_id in token_ids:
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise TypeError(f"token ids must be integers, got {token_id!r}")
        if token_id not in words:
            raise ValueError(f"words has no row for token id {token_id}")
    _check_matrix([token_type], "token_type")
    _check_matrix(positions, "positions")
    # the rows this sentence uses, in its order, with the type row last
    _check_matrix([words[i] for i in token_ids] + [token_type], "word rows")
    if len(token_ids) > len(positions):
        raise ValueError(
            f"{len(token_ids)} tokens need {len(token_ids)} position rows, "
            f"positions has {len(positions)}"
        )
    if len(positions[0]) != len(token_type):
        raise ValueError(
            f"position rows have {len(positions[0])} numbers, "
            f"token_type {len(token_type)}"
        )


# --8<-- [end:checks]


# --8<-- [start:embed]
def embed(
    token_ids: list[int],
    words: Mapping[int, Vector],
    positions: Matrix,
    token_type: Vector,
) -> Matrix:  # [n] -> [n, d]
    """Each token's word row, plus its position's row and the type row."""
    _check_embed(token_ids, words, positions, token_type)
    vectors = []
    for position, token_id in enumerate(token_ids):
        word = words[token_id]
        where = positions[position]
        # number j of the result adds up number j of the three rows
        vectors.append(
            [word[j] + where[j] + token_type[j] for j in range(len(word))]
        )
    return vectors


# --8<-- [end:embed]
