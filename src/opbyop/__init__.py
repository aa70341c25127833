"""Op by Op: how large language models work, one operation at a time.

`opbyop.scratch` writes each operation out in plain Python, with lists and
loops. The functions exported here are the same operations in NumPy, on arrays
with any leading batch dimensions: the versions to copy into real code.
"""

from opbyop.layers import gelu, layer_norm, linear
from opbyop.ops import attention, attention_weights, softmax
from opbyop.words import vocabulary, word_vectors

__all__ = [
    "attention",
    "attention_weights",
    "gelu",
    "layer_norm",
    "linear",
    "softmax",
    "vocabulary",
    "word_vectors",
]
