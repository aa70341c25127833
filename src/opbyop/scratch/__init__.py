"""The operations in plain Python: lists of lists and loops.

This is the code the episodes show first.

One module per episode, each importing nothing but the standard library
(and the modules of earlier episodes):

- `opbyop.scratch.four_ops`: episode 1, the four operations of attention.
- `opbyop.scratch.projections`: episode 2, the linear layer that makes
  queries, keys and values.
- `opbyop.scratch.heads`: episode 3, multi-head attention.
- `opbyop.scratch.masks`: episode 4, masks: which keys each query may look
  at.
- `opbyop.scratch.embeddings`: episode 5, the input vectors: a token's word
  row plus its position's row.
- `opbyop.scratch.block`: episode 6, layer norm and GELU.
- `opbyop.scratch.next_token`: episode 8, guess the next token: a model
  that counts which byte follows which, and its bits per byte.
- `opbyop.scratch.backward`: episode 9, gradients by hand: the backward
  pass of each operation of a GPT, and the slope of a one-weight model.
- `opbyop.scratch.byte_pairs`: episode 12, byte pairs: merges learned from
  text, and text encoded with them (with ``regex`` for GPT-2's pattern).

Every function is also importable from ``opbyop.scratch`` itself.
"""

from opbyop.scratch.backward import (
    causal_head,
    causal_head_backward,
    central_difference,
    cross_entropy,
    cross_entropy_backward,
    embed_backward,
    layer_norm_backward,
    linear_backward,
    one_weight_loss,
    softmax_backward,
    tanh_gelu,
    tanh_gelu_backward,
)
from opbyop.scratch.block import Vector, gelu, layer_norm
from opbyop.scratch.byte_pairs import (
    GPT2_PATTERN,
    Pair,
    count_pairs,
    decode_ids,
    encode_text,
    merge_pair,
    split_pieces,
    train_merges,
)
from opbyop.scratch.embeddings import embed
from opbyop.scratch.four_ops import (
    Matrix,
    attention,
    mat_mul,
    scale,
    softmax,
    transpose,
)
from opbyop.scratch.heads import (
    merge_heads,
    multi_head_attention,
    split_heads,
)
from opbyop.scratch.masks import (
    Mask,
    causal_mask,
    masked_attention,
    masked_softmax,
)
from opbyop.scratch.next_token import (
    Table,
    add_one,
    bits_per_byte,
    count_next_bytes,
    sample_bytes,
    with_temperature,
)
from opbyop.scratch.projections import linear

__all__ = [
    "GPT2_PATTERN",
    "Mask",
    "Matrix",
    "Pair",
    "Table",
    "Vector",
    "add_one",
    "attention",
    "bits_per_byte",
    "causal_head",
    "causal_head_backward",
    "causal_mask",
    "central_difference",
    "count_next_bytes",
    "count_pairs",
    "cross_entropy",
    "cross_entropy_backward",
    "decode_ids",
    "embed",
    "embed_backward",
    "encode_text",
    "gelu",
    "layer_norm",
    "layer_norm_backward",
    "linear",
    "linear_backward",
    "masked_attention",
    "masked_softmax",
    "mat_mul",
    "merge_heads",
    "merge_pair",
    "multi_head_attention",
    "one_weight_loss",
    "sample_bytes",
    "scale",
    "softmax",
    "softmax_backward",
    "split_heads",
    "split_pieces",
    "tanh_gelu",
    "tanh_gelu_backward",
    "train_merges",
    "transpose",
    "with_temperature",
]
