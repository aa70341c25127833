"""Op by Op: how large language models work, one operation at a time.

`opbyop.scratch` writes each operation out in plain Python, with lists and
loops. The functions exported here are the same operations in NumPy, on arrays
with any leading batch dimensions: the versions to copy into real code.
"""

from opbyop.heads import merge_heads, multi_head_attention, split_heads
from opbyop.layers import linear
from opbyop.ops import attention, attention_weights, softmax
from opbyop.words import vocabulary, word_vectors

__all__ = [
    "attention",
    "attention_weights",
    "linear",
    "merge_heads",
    "multi_head_attention",
    "softmax",
    "split_heads",
    "vocabulary",
    "word_vectors",
]
