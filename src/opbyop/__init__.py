"""Op by Op: how large language models work, one operation at a time.

`opbyop.scratch` writes each operation out in plain Python, with lists and
loops. The functions exported here are the same operations in NumPy, on arrays
with any leading batch dimensions: the versions to copy into real code.
`WordPiece` and its steps turn text into the token ids a model reads; they
work on strings, in plain Python.
"""

from opbyop.heads import merge_heads, multi_head_attention, split_heads
from opbyop.layers import (
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    linear,
    linear_backward,
    rms_norm,
    rms_norm_backward,
    rotary,
    rotary_backward,
    silu,
    silu_backward,
    swiglu,
    swiglu_backward,
)
from opbyop.ops import (
    attention,
    attention_backward,
    attention_weights,
    cross_entropy,
    cross_entropy_backward,
    softmax,
    softmax_backward,
)
from opbyop.tokenizer import WordPiece, normalize_text, split_words, word_pieces
from opbyop.words import vocabulary, word_vectors

__all__ = [
    "WordPiece",
    "attention",
    "attention_backward",
    "attention_weights",
    "cross_entropy",
    "cross_entropy_backward",
    "gelu",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "linear",
    "linear_backward",
    "merge_heads",
    "multi_head_attention",
    "normalize_text",
    "rms_norm",
    "rms_norm_backward",
    "rotary",
    "rotary_backward",
    "silu",
    "silu_backward",
    "softmax",
    "softmax_backward",
    "split_heads",
    "split_words",
    "swiglu",
    "swiglu_backward",
    "vocabulary",
    "word_pieces",
    "word_vectors",
]
