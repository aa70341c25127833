"""GPT-2 in NumPy: the forward pass, the backward pass by hand, checkpoints.

The architecture is GPT-2's, exactly as ``transformers.GPT2LMHeadModel``
computes it with dropout off, at any size:

>>> from opbyop import gpt
>>> config = gpt.Config(
...     vocab_size=256, context=64, n_layers=2, n_heads=4, d_model=64
... )
>>> params = gpt.init(config)
>>> gpt.forward(params, [[72, 105, 33]]).shape  # one row of 3 tokens
(1, 3, 256)

The module reads top to bottom as the model runs:

1. `embed`: each token's row of the token table, plus its position's row;
2. ``n_layers`` blocks (`block_forward`), each ``x + attention(ln_1(x))``
   then ``x + mlp(ln_2(x))``: layer norm before each half (pre-norm),
   causal multi-head attention, and an MLP four times as wide with tanh GELU;
3. a final layer norm, then the output layer: a product with the token
   table itself (tied weights), one score (logit) per vocabulary entry.

`forward` runs them. `forward_backward` runs them keeping what the
backward pass needs, measures the cross-entropy, and goes back through
every step with the backward functions of `opbyop` (`linear_backward`,
`layer_norm_backward`, `gelu_backward`, `attention_backward`,
`cross_entropy_backward`), `block_backward` and `embed_backward` here:
no autograd. `loss_and_grads` checks its input and shares a batch's
`forward_backward` between the CPU cores.

`generate` writes: one token at a time, greedy or sampled through
`opbyop.sampling`. With its KV cache (`forward_with_cache`, `block_step`),
each step runs only the new token, against every earlier token's keys and
values; `Model.write` does the same from text to text.

`state_dict` and `from_state_dict` convert to and from Hugging Face's
names and layouts; `save` writes a folder that
``GPT2LMHeadModel.from_pretrained`` loads, and `load` reads one back, or a
real GPT-2 checkpoint.

`Config`'s ``norm``, ``mlp`` and ``positions`` swap GPT-2's pieces for
those Llama-style models use: an RMS norm (`opbyop.rms_norm`, no bias),
the SwiGLU MLP and rotary positions (`opbyop.rotary`, no position table).
A config that swaps any (`is_variant`) runs through
`variant_block_forward`, `variant_block_backward` and `variant_block_step`
instead of GPT-2's `block_forward`, `block_backward` and `block_step`,
which stay GPT-2's exactly.

The same code runs in float32 (to train) and float64 (to check the
gradients): the parameters' dtype is the computation's.

References
----------
.. [1] A. Radford et al., "Language Models are Unsupervised Multitask
   Learners", OpenAI, 2019 (GPT-2).
.. [2] A. Karpathy, nanoGPT, and J. Mody, picoGPT: small GPT-2s in
   PyTorch and in NumPy.
.. [3] Hugging Face ``transformers``, ``GPT2LMHeadModel``, whose values
   ``tests/data/gpt_reference.npz`` holds for comparison.
.. [4] H. Touvron et al., "LLaMA: Open and Efficient Foundation Language
   Models", 2023, arXiv:2302.13971 (RMS norm, SwiGLU, rotary positions).
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache, partial
from importlib.resources import files
from numbers import Integral, Real
from pathlib import Path

import safetensors
import safetensors.numpy

__all__ = [
    "MLP",
    "Attention",
    "Block",
    "BlockCache",
    "Config",
    "KVCache",
    "Linear",
    "Model",
    "Norm",
    "Params",
    "VariantCache",
    "block_backward",
    "block_forward",
    "block_step",
    "draw",
    "embed",
    "embed_backward",
    "forward",
    "forward_backward",
    "forward_with_cache",
    "from_state_dict",
    "generate",
    "init",
    "is_variant",
    "load",
    "loss_and_grads",
    "mlp_half",
    "normalize",
    "normalize_backward",
    "queries_keys_values",
    "save",
    "state_dict",
    "variant_block_backward",
    "variant_block_forward",
    "variant_block_step",
    "variant_forward_backward",
    "variant_mlp_half",
]

# isort: split
# --8<-- [start:setup]
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from opbyop import sampling
from opbyop._threads import blas_threads, pool, usable_cores
from opbyop.bpe import BytePairs
from opbyop.heads import merge_heads, split_heads
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
)
from opbyop.ops import (
    attention_backward,
    attention_weights,
    cross_entropy,
    cross_entropy_backward,
    softmax,
)

Array = NDArray[Any]

LAYER_NORM_EPS = 1e-5  # GPT-2's, and PyTorch's default
# --8<-- [end:setup]
RMS_NORM_EPS = 1e-6  # LlamaRMSNorm's
ROTARY_BASE = 10000.0  # Llama's rope_theta, and the RoFormer paper's


# ------------------------------------------------------------- the weights
# --8<-- [start:weights]
class Config(NamedTuple):
    """A GPT's sizes, and its pieces. `d_model` must divide by `n_heads`.

    The last three choose each piece: GPT-2's (the defaults) or the one
    Llama-style models use instead (see `variant_forward_backward`).
    """

    vocab_size: int  # how many different tokens
    context: int  # the longest sequence (learned: a position vector each)
    n_layers: int  # how many blocks
    n_heads: int  # attention heads per block
    d_model: int  # numbers per token
    norm: str = "layer"  # "layer" (GPT-2's), or "rms": rms_norm, no bias
    mlp: str = "gelu"  # "gelu" (GPT-2's, 4 d_model), or "swiglu"
    positions: str = "learned"  # "learned" (a table), or "rotary"

    @property
    def d_mlp(self) -> int:
        """The MLP's width: 4 d_model, or for SwiGLU 8/3 d_model.

        SwiGLU has three matrices where GPT-2's MLP has two, so at
        ``8/3 d_model`` (rounded up to a multiple of 16, as Llama rounds
        it to a multiple of 256) it has about as many weights.
        """
        if self.mlp == "swiglu":
            return -(-8 * self.d_model // (3 * 16)) * 16  # rounded up
        return 4 * self.d_model

    def __repr__(self) -> str:
        # The sizes, then only the pieces that are not GPT-2's.
        defaults = self._field_defaults  # the pieces have defaults
        shown = [
            f"{k}={v!r}"
            for k, v in zip(self._fields, self, strict=True)
            if k not in defaults or v != defaults[k]
        ]
        return f"Config({', '.join(shown)})"


class Linear(NamedTuple):
    """A linear layer's weights: ``linear(x, *Linear)``."""

    weight: Array  # [d_out, d_in]
    bias: Array | None  # [d_out]; None in the SwiGLU MLP, Llama's has none


class Norm(NamedTuple):
    """A norm's learned scale and shift: ``layer_norm(x, *Norm)``.

    An RMS norm (``config.norm == "rms"``) has a scale only, as Llama's:
    its bias is None, and it is ``rms_norm(x, norm.weight)``.
    """

    weight: Array  # [d_model]
    bias: Array | None  # [d_model]; None in an RMS norm


class Attention(NamedTuple):
    """Causal self-attention: one product for q, k, v, one for the output."""

    qkv: Linear  # [3 * d_model, d_model]: q's rows, then k's, then v's
    output: Linear  # [d_model, d_model]


class MLP(NamedTuple):
    """Widen each token's vector four times, apply GELU, narrow it back.

    SwiGLU (``config.mlp == "swiglu"``, no biases) widens twice in one
    product, the gate's rows then up's, as q, k and v share one:
    ``narrow(silu(gate) * up)``.
    """

    widen: Linear  # [4 * d_model, d_model]; SwiGLU: [2 * d_mlp, d_model]
    narrow: Linear  # [d_model, 4 * d_model]; SwiGLU: [d_model, d_mlp]


class Block(NamedTuple):
    """One transformer block: a norm before each of its two halves."""

    norm_1: Norm
    attention: Attention
    norm_2: Norm
    mlp: MLP


class Params(NamedTuple):
    """All of a GPT's weights, and its config (gradients look the same)."""

    config: Config
    token_embedding: Array  # [vocab_size, d_model]: input and output
    position_embedding: Array  # [context, d_model]; rotary: [0, d_model]
    blocks: tuple[Block, ...]  # n_layers of them
    final_norm: Norm


# --8<-- [end:weights]


# ------------------------------------------------------------ checks
def _checked_config(config: object) -> Config:
    """`config` as a Config of positive integers that fit together."""
    if not isinstance(config, tuple) or not 5 <= len(config) <= 8:
        raise TypeError(
            "config must be a gpt.Config(vocab_size, context, n_layers, "
            f"n_heads, d_model), got {config!r:.100}"
        )
    config = Config(*config)
    for name, choices in _PIECES.items():
        value = getattr(config, name)
        if not isinstance(value, str) or value not in choices:
            raise ValueError(
                f"config.{name} must be {' or '.join(map(repr, choices))}, "
                f"got {value!r}"
            )
    for name, value in config._asdict().items():
        if name in _PIECES:
            continue
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise TypeError(f"config.{name} must be an integer, got {value!r}")
        if value < 1:
            raise ValueError(f"config.{name} must be at least 1, got {value}")
    if config.d_model % config.n_heads:
        raise ValueError(
            f"config.d_model = {config.d_model} does not divide into "
            f"n_heads = {config.n_heads} heads of equal size"
        )
    if config.positions == "rotary" and config.d_model // config.n_heads % 2:
        raise ValueError(
            f"config.positions = 'rotary' turns pairs of numbers: each "
            f"head's d_model / n_heads = {config.d_model // config.n_heads} "
            "must be even"
        )
    sizes: dict[str, Any] = {
        k: int(v) for k, v in config._asdict().items() if k not in _PIECES
    }
    return config._replace(**sizes)


# Each piece's choices, GPT-2's first.
_PIECES = {
    "norm": ("layer", "rms"),
    "mlp": ("gelu", "swiglu"),
    "positions": ("learned", "rotary"),
}


def is_variant(config: Config) -> bool:
    """Whether `config` swaps any piece of GPT-2's for another.

    Examples
    --------
    >>> from opbyop import gpt
    >>> gpt.is_variant(gpt.Config(10, 8, 1, 2, 4))
    False
    >>> gpt.is_variant(gpt.Config(10, 8, 1, 2, 4, norm="rms"))
    True
    """
    return config[5:] != ("layer", "gelu", "learned")


def _checked_ids(ids: object, config: Config, name: str = "ids") -> Array:
    """`ids` as an integer array [batch, n] or [n] of tokens that fit."""
    try:
        array = np.asarray(ids)
    except ValueError:  # NumPy refuses ragged rows
        raise ValueError(
            f"{name} has rows of different lengths: every row of a batch "
            "needs the same number of tokens"
        ) from None
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"{name} must be integer token ids, got dtype {array.dtype} "
            f"(shape {array.shape})"
        )
    if array.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be [batch, n] or [n] token ids, "
            f"got {array.ndim} dimensions, shape {array.shape}"
        )
    n = array.shape[-1]
    if n == 0 or array.size == 0:
        raise ValueError(f"{name} is empty (shape {array.shape})")
    if n > config.context:
        why = (  # a rotary model has no table, but was trained no longer
            "the longest text it was trained on"
            if config.positions == "rotary"
            else "one position vector each"
        )
        raise ValueError(
            f"{name} has {n} tokens per row, more than the model's context "
            f"of {config.context} ({why})"
        )
    low, high = array.min(), array.max()
    if low < 0 or high >= config.vocab_size:
        raise ValueError(
            f"{name} must be between 0 and {config.vocab_size - 1} "
            f"(vocab_size {config.vocab_size}), got {low} to {high}"
        )
    return array


def _checked_params(params: object) -> Params:
    """`params` is a Params (from `init`, `from_state_dict` or `load`)."""
    if not isinstance(params, Params):
        raise TypeError(
            "params must be a gpt.Params (from gpt.init, gpt.from_state_dict "
            f"or gpt.load(...).params), got {type(params).__name__}"
        )
    return params


# ------------------------------------------------------------ the forward pass
# --8<-- [start:embed]
def embed(
    ids: Array,
    token_embedding: Array,
    position_embedding: Array,
    start: int = 0,
) -> Array:  # [..., n], [vocab, d], [context, d] -> [..., n, d]
    """Each token's row of the token table plus its position's row.

    The tokens are at positions ``start, start + 1, ...``: 0 for a whole
    text, later for the new tokens of `forward_with_cache`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.gpt import embed
    >>> tokens = np.array([[1.0, 0.0], [0.0, 1.0]])  # vocab 2, d 2
    >>> positions = np.array([[10.0, 10.0], [20.0, 20.0], [30.0, 30.0]])
    >>> embed(np.array([1, 1]), tokens, positions).tolist()
    [[10.0, 11.0], [20.0, 21.0]]
    """
    n = ids.shape[-1]
    return token_embedding[ids] + position_embedding[start : start + n]


# --8<-- [end:embed]


def queries_keys_values(
    normed: Array, attention: Attention, n_heads: int
) -> tuple[Array, Array, Array]:  # [..., n, d] -> 3 x [..., h, n, d_head]
    """One product for q, k and v, each split into `n_heads` heads.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> q, k, v = gpt.queries_keys_values(x, params.blocks[0].attention, 2)
    >>> q.shape  # 2 heads, 3 tokens, 2 numbers each
    (2, 3, 2)
    """
    qkv = linear(normed, *attention.qkv)  # [..., n, 3 d]
    d = qkv.shape[-1] // 3
    q, k, v = (
        split_heads(qkv[..., i * d : (i + 1) * d], n_heads) for i in range(3)
    )  # each [..., n_heads, n, d_head], views of qkv
    return q, k, v


def mlp_half(
    middle: Array, block: Block
) -> tuple[Array, Array, Array, Array]:  # [..., n, d] -> [..., n, d], ...
    """The block's second half, ``middle + mlp(ln_2(middle))``.

    Returns the output, then what `block_backward` needs: ``ln_2(middle)``,
    the widened vectors before GELU, and after.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> middle = np.ones((3, 4), dtype=np.float32)
    >>> out, normed, widened, activated = gpt.mlp_half(
    ...     middle, params.blocks[0]
    ... )
    >>> out.shape, widened.shape
    ((3, 4), (3, 16))
    """
    normed_2 = layer_norm(middle, *block.norm_2, eps=LAYER_NORM_EPS)
    widened = linear(normed_2, *block.mlp.widen)  # [..., n, 4 d]
    activated = gelu(widened, approximate="tanh")  # GPT-2's "gelu_new"
    out = middle + linear(activated, *block.mlp.narrow)  # residual add
    return out, normed_2, widened, activated


class BlockCache(NamedTuple):
    """What `block_forward` computed on the way, for `block_backward`."""

    x: Array  # the block's input [..., n, d]
    normed_1: Array  # ln_1(x)
    q: Array  # [..., n_heads, n, d_head]
    k: Array
    v: Array
    weights: Array  # attention's [..., n_heads, n, n]
    merged: Array  # attention's heads side by side [..., n, d]
    middle: Array  # x + the attention half
    normed_2: Array  # ln_2(middle)
    widened: Array  # [..., n, 4 d], before GELU
    activated: Array  # after GELU


def _check_gpt2_block(block: Block, name: str) -> None:
    """A block of GPT-2's pieces, or an error pointing to the variants'."""
    if block.norm_1.bias is None or block.mlp.widen.bias is None:
        raise ValueError(
            f"{name} runs GPT-2's blocks: this one has an RMS norm or "
            f"SwiGLU (config.norm or config.mlp); use variant_{name}"
        )


# --8<-- [start:block_forward]
def block_forward(
    x: Array, block: Block, n_heads: int
) -> tuple[Array, BlockCache]:  # [..., n, d] -> [..., n, d]
    """``x + attention(ln_1(x))``, then ``+ mlp(ln_2(...))``; and the cache.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, cache = gpt.block_forward(x, params.blocks[0], n_heads=2)
    >>> out.shape, cache.q.shape, cache.weights.shape
    ((3, 4), (2, 3, 2), (2, 3, 3))
    """
    _check_gpt2_block(block, "block_forward")
    normed_1 = layer_norm(x, *block.norm_1, eps=LAYER_NORM_EPS)
    q, k, v = queries_keys_values(normed_1, block.attention, n_heads)
    weights = attention_weights(q, k, is_causal=True)  # [..., n_heads, n, n]
    merged = merge_heads(weights @ v)  # [..., n, d]
    middle = x + linear(merged, *block.attention.output)  # residual add
    out, normed_2, widened, activated = mlp_half(middle, block)
    cache = BlockCache(
        x,
        normed_1,
        q,
        k,
        v,
        weights,
        merged,
        middle,
        normed_2,
        widened,
        activated,
    )
    return out, cache


# --8<-- [end:block_forward]


# --8<-- [start:forward]
def forward(params: Params, ids: ArrayLike) -> Array:
    # [batch, n] -> [batch, n, vocab], or [n] -> [n, vocab]
    """The logits: for each position, a score for every possible next token.

    Parameters
    ----------
    params : Params
        The weights (from `init`, `from_state_dict` or `load`).
    ids : array_like of int, shape (batch, n) or (n,)
        Token ids, ``0 <= id < vocab_size``, ``1 <= n <= context``.

    Returns
    -------
    numpy.ndarray, shape (batch, n, vocab_size) or (n, vocab_size)
        In the dtype of the parameters. Position ``i``'s scores depend on
        tokens ``0..i`` only; each row of a batch gets what it would alone.

    Raises
    ------
    TypeError
        If `ids` are not integers (floats and booleans are refused).
    ValueError
        If `ids` is empty, longer than the context, not 1-D or 2-D, or holds
        an id outside the vocabulary.

    Examples
    --------
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> gpt.forward(params, [1, 2, 3]).shape
    (3, 10)
    """
    params = _checked_params(params)
    ids = _checked_ids(ids, params.config)
    if is_variant(params.config):
        return _variant_forward(params, ids)
    # --8<-- [start:forward_body]
    x = embed(ids, params.token_embedding, params.position_embedding)
    for block in params.blocks:
        x, _ = block_forward(x, block, params.config.n_heads)
    # --8<-- [end:forward_body]
    # --8<-- [start:forward_norm]
    x = layer_norm(x, *params.final_norm, eps=LAYER_NORM_EPS)
    # --8<-- [end:forward_norm]
    return linear(x, params.token_embedding)  # tied: the token table again


# --8<-- [end:forward]


# ------------------------------------------------------------ writing
# --8<-- [start:kv_cache]
class KVCache(NamedTuple):
    """Every block's keys and values so far: what a new token attends to.

    With a causal mask, a token added later changes nothing before it, so
    the keys and values of the tokens already seen never change: keep them,
    and each new token needs only its own query, key and value.
    """

    keys: tuple[Array, ...]  # one per block: [..., n_heads, length, d_head]
    values: tuple[Array, ...]  # the same shapes

    @property
    def length(self) -> int:
        """How many positions the cache holds (0 when it is empty)."""
        return self.keys[0].shape[-2] if self.keys else 0


# --8<-- [start:block_step]
# --8<-- [start:block_step_def]
def block_step(
    x: Array, block: Block, n_heads: int, past: tuple[Array, Array] | None
) -> tuple[Array, Array, Array]:  # [..., n, d] -> [..., n, d], k, v
    # --8<-- [end:block_step_def]
    """`block_forward` for new tokens, against the cached keys and values.

    `past` holds the keys and values of the ``start`` tokens before `x`
    (None: there are none). Returns the block's output and the keys and
    values of all ``start + n`` tokens. New token ``i`` sits at position
    ``start + i`` and may look at keys ``0 .. start + i``: the causal mask
    aligned bottom-right. `attention_weights`' ``is_causal`` aligns it top
    left (as PyTorch does), right only when ``start`` is 0; a single new
    token may look at every key, so it needs no mask at all.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, k, v = gpt.block_step(x, params.blocks[0], 2, past=None)
    >>> out, k, v = gpt.block_step(x[:1], params.blocks[0], 2, (k, v))
    >>> out.shape, k.shape  # one new token; 4 keys per head
    ((1, 4), (2, 4, 2))
    """
    _check_gpt2_block(block, "block_step")
    # --8<-- [start:block_step_body]
    normed_1 = layer_norm(x, *block.norm_1, eps=LAYER_NORM_EPS)
    q, k, v = queries_keys_values(normed_1, block.attention, n_heads)
    if past is not None:
        k = np.concatenate([past[0], k], axis=-2)  # [..., h, start + n, dh]
        v = np.concatenate([past[1], v], axis=-2)
    n, start = x.shape[-2], k.shape[-2] - x.shape[-2]
    if n == 1:  # one new token looks at every key: softmax(q k^T / sqrt(dh))
        scores = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]))
        weights = softmax(scores)  # [..., h, 1, start + 1]
    else:  # several (the prompt): each looks at the keys up to its own
        mask = np.tri(n, start + n, k=start, dtype=bool)
        weights = attention_weights(q, k, mask=mask)  # [..., h, n, start + n]
    merged = merge_heads(weights @ v)  # [..., n, d]
    middle = x + linear(merged, *block.attention.output)  # residual add
    out, *_ = mlp_half(middle, block)
    return out, k, v
    # --8<-- [end:block_step_body]


# --8<-- [end:block_step]


def forward_with_cache(
    params: Params, ids: ArrayLike, cache: KVCache | None = None
) -> tuple[Array, KVCache]:  # [batch, n] -> [batch, n, vocab], cache
    """`forward` for tokens that follow those in `cache`, and the new cache.

    The first call (no cache) runs the prompt and keeps every block's keys
    and values (the "prefill"); each later call runs only the new tokens,
    at the positions after the cache's, and returns the cache grown by
    them. The logits are those `forward` gives for the new tokens on the
    whole text, up to rounding (one-row and many-row products round
    differently): on the shipped model, about 1e-15 of the largest score
    apart in float64 and 1e-6 in float32.

    Parameters
    ----------
    params : Params
        The weights.
    ids : array_like of int, shape (batch, n) or (n,)
        The new tokens; with a cache, its batch size.
    cache : KVCache, optional
        What an earlier call returned for the tokens before these.

    Returns
    -------
    logits : numpy.ndarray, shape (batch, n, vocab_size) or (n, vocab_size)
    cache : KVCache
        The keys and values of every token so far, ``cache.length`` of them.

    Raises
    ------
    ValueError
        If the tokens would run past the context, or `ids` does not fit
        the cache (another batch size or number of blocks).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4), dtype=np.float64)
    >>> logits, cache = gpt.forward_with_cache(params, [[1, 2, 3]])
    >>> logits, cache = gpt.forward_with_cache(params, [[4]], cache)
    >>> cache.length, cache.keys[0].shape  # [batch, heads, length, d_head]
    (4, (1, 2, 4, 2))
    >>> whole = gpt.forward(params, [[1, 2, 3, 4]])
    >>> bool(np.allclose(logits[:, -1], whole[:, -1], rtol=0, atol=1e-12))
    True
    """
    params = _checked_params(params)
    ids = _checked_ids(ids, params.config)
    config = params.config
    if cache is not None:
        _check_cache_fits(cache, ids, config)
    start = 0 if cache is None else cache.length
    if start + ids.shape[-1] > config.context:
        raise ValueError(
            f"ids: {start} cached + {ids.shape[-1]} new tokens run past the "
            f"model's context of {config.context}"
        )
    return _forward_with_cache(params, ids, cache)


def _forward_with_cache(
    params: Params, ids: Array, cache: KVCache | None
) -> tuple[Array, KVCache]:
    """`forward_with_cache` on checked arguments (checked once per text)."""
    if is_variant(params.config):
        return _variant_forward_with_cache(params, ids, cache)
    config, start = params.config, 0 if cache is None else cache.length
    tokens, positions = params.token_embedding, params.position_embedding
    x = embed(ids, tokens, positions, start)
    keys, values = [], []
    for i, block in enumerate(params.blocks):
        past = None if cache is None else (cache.keys[i], cache.values[i])
        x, k, v = block_step(x, block, config.n_heads, past)
        keys.append(k)
        values.append(v)
    x = layer_norm(x, *params.final_norm, eps=LAYER_NORM_EPS)
    return linear(x, tokens), KVCache(tuple(keys), tuple(values))


# --8<-- [end:kv_cache]


def _check_cache_fits(cache: object, ids: Array, config: Config) -> None:
    if not isinstance(cache, KVCache):
        raise TypeError(
            "cache must be a gpt.KVCache from forward_with_cache, "
            f"got {type(cache).__name__}"
        )
    if len(cache.keys) != config.n_layers:
        raise ValueError(
            f"cache has {len(cache.keys)} blocks' keys, the model "
            f"{config.n_layers}"
        )
    if cache.keys and cache.keys[0].shape[:-3] != ids.shape[:-1]:
        raise ValueError(
            f"ids has batch shape {ids.shape[:-1]}, the cache "
            f"{cache.keys[0].shape[:-3]}"
        )


# --8<-- [start:generate]
def generate(
    params: Params,
    ids: ArrayLike,
    max_new_tokens: int,
    *,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float = 1.0,
    seed: int | None = None,
    use_cache: bool = True,
) -> Array:  # [batch, n] -> [batch, n + max_new_tokens], or [n] -> [n + ...]
    """Write `max_new_tokens` tokens after `ids`, one at a time.

    Each step scores every possible next token, filters the scores with
    `opbyop.sampling` in Hugging Face's order (repetition penalty,
    temperature, top-k, top-p, min-p), and picks one: the highest score
    (greedy, the default) or, with `do_sample`, a draw from the softmax of
    the filtered scores. The names and meanings are those of Hugging Face's
    ``generate``, except that ``top_k=None`` filters nothing (Hugging Face
    defaults to 50), and no end token stops it early.

    Parameters
    ----------
    params : Params
        The weights.
    ids : array_like of int, shape (batch, n) or (n,)
        The prompt: rows of equal length, ``n >= 1``.
    max_new_tokens : int
        How many tokens to add, >= 1; ``n + max_new_tokens`` must not be
        more than the context.
    do_sample : bool, optional
        Draw each token at random (with a NumPy ``Generator`` seeded from
        `seed`) instead of taking the highest score.
    temperature : float, optional
        > 0: divides the scores (sampling only; greedy ignores it).
    top_k : int, optional
        >= 1: keep the `top_k` highest scores (sampling only).
    top_p : float, optional
        In (0, 1]: keep the likeliest tokens that reach this probability
        (sampling only).
    min_p : float, optional
        In [0, 1]: drop the tokens less likely than `min_p` times the
        likeliest (sampling only).
    repetition_penalty : float, optional
        > 0: lowers the scores of the tokens already in the text (above 1),
        in greedy mode too; 1 changes nothing.
    seed : int, optional
        The same seed gives the same tokens. None: a fresh random one.
    use_cache : bool, optional
        Keep every block's keys and values (`forward_with_cache`), so each
        step runs the model on one token; False runs the whole text again
        each step. The scores are the same up to rounding (on the shipped
        model, about 1e-15 of the largest in float64, 1e-6 in float32), so
        the tokens are too, unless a choice falls within that of a tie.

    Returns
    -------
    numpy.ndarray of int, shape (batch, n + max_new_tokens) or (n + ...,)
        The prompt followed by the new tokens.

    Raises
    ------
    TypeError, ValueError
        If an argument is out of range or of the wrong type, or the text
        would run past the context (the message names the argument).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 16, 1, 2, 4))
    >>> gpt.generate(params, [1, 2, 3], 5).shape
    (8,)
    >>> a = gpt.generate(params, [[1, 2]], 6, do_sample=True, seed=0)
    >>> b = gpt.generate(params, [[1, 2]], 6, do_sample=True, seed=0)
    >>> bool(np.array_equal(a, b))  # the same seed, the same tokens
    True
    """
    rows, choose = _prepared(
        params,
        ids,
        max_new_tokens,
        do_sample=do_sample,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        min_p=min_p,
        repetition_penalty=repetition_penalty,
        seed=seed,
        use_cache=use_cache,
    )
    steps = _new_tokens(params, rows, max_new_tokens, choose, use_cache)
    new = np.stack(list(steps), axis=-1)  # [batch, max_new_tokens]
    out = np.concatenate([rows, new], axis=-1)
    return out if np.ndim(ids) == 2 else out[0]


def _new_tokens(
    params: Params,
    rows: Array,
    max_new_tokens: int,
    choose: Callable[[Array, Array], Array],
    use_cache: bool,
) -> Iterator[Array]:  # [batch, n] -> max_new_tokens x [batch]
    """Each new token of every row, as it is chosen."""
    text = rows  # checked by _prepared, so the steps need no more checks
    if use_cache:
        logits, cache = _forward_with_cache(params, rows, None)  # the prefill
    else:
        logits = forward(params, rows)
    for step in range(max_new_tokens):
        new = choose(logits[:, -1], text)  # [batch]
        text = np.concatenate([text, new[:, None]], axis=-1)
        yield new
        if step == max_new_tokens - 1:
            break  # the last token needs no scores after it
        if use_cache:  # run the new token only
            logits, cache = _forward_with_cache(params, new[:, None], cache)
        else:  # run the whole text again
            logits = forward(params, text)


# --8<-- [start:choose]
def _choose(
    scores: Array,
    text: Array,
    *,
    do_sample: bool,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    min_p: float | None,
    repetition_penalty: float,
    rng: np.random.Generator,
) -> Array:  # [batch, vocab], [batch, t] -> [batch]
    """The next token of each row: the filters in Hugging Face's order."""
    if repetition_penalty != 1.0:
        scores = sampling.repetition_penalty(scores, text, repetition_penalty)
    if not do_sample:
        return scores.argmax(axis=-1)  # the first of tied scores
    # As Hugging Face, each filter runs only when it would change something.
    if temperature != 1.0:
        scores = sampling.temperature(scores, temperature)
    if top_k is not None:
        scores = sampling.top_k(scores, top_k)
    if top_p is not None and top_p < 1.0:
        scores = sampling.top_p(scores, top_p)
    if min_p is not None:
        scores = sampling.min_p(scores, min_p)
    return draw(softmax(scores), rng)


# --8<-- [end:choose]


def draw(
    probabilities: Array, rng: np.random.Generator
) -> Array:  # [batch, vocab] -> [batch]
    """One token from each row's probabilities, by the inverse CDF.

    A uniform number ``u`` in (0, 1] picks the first token whose running
    sum of probabilities reaches ``u`` times the row's total, so each token
    comes with its probability, and a token of probability 0 never does.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.gpt import draw
    >>> rng = np.random.default_rng(0)
    >>> draws = draw(np.tile([0.2, 0.0, 0.8], (10_000, 1)), rng)
    >>> np.bincount(draws, minlength=3).tolist()
    [2021, 0, 7979]
    """
    running = np.cumsum(probabilities, axis=-1, dtype=np.float64)
    u = 1.0 - rng.random(running.shape[:-1])  # in (0, 1]
    reached = running >= (u * running[..., -1])[..., None]
    return reached.argmax(axis=-1)  # the first True


# --8<-- [end:generate]


def _prepared(
    params: Params,
    ids: ArrayLike,
    max_new_tokens: int,
    *,
    do_sample: bool,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    min_p: float | None,
    repetition_penalty: float,
    seed: int | None,
    use_cache: bool,
) -> tuple[Array, Callable[[Array, Array], Array]]:
    """`generate`'s arguments checked: the prompt's rows and the chooser."""
    params = _checked_params(params)
    rows = np.atleast_2d(_checked_ids(ids, params.config))
    context, n = params.config.context, rows.shape[-1]
    steps = _integer(max_new_tokens, "max_new_tokens", low=1)
    if n + steps > context:
        raise ValueError(
            f"max_new_tokens = {steps} after {n} prompt tokens makes "
            f"{n + steps}, more than the model's context of {context}: "
            f"ask for at most {context - n}"
        )
    for name, flag in (("do_sample", do_sample), ("use_cache", use_cache)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    if top_p is not None and not 0 < _real(top_p, "top_p") <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if min_p is not None and not 0 <= _real(min_p, "min_p") <= 1:
        raise ValueError(f"min_p must be in [0, 1], got {min_p!r}")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0
    ):
        raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}")
    choose = partial(
        _choose,
        do_sample=bool(do_sample),
        temperature=_real(temperature, "temperature", low=0.0),
        top_k=None if top_k is None else _integer(top_k, "top_k", low=1),
        top_p=None if top_p is None else float(top_p),
        min_p=None if min_p is None else float(min_p),
        repetition_penalty=_real(
            repetition_penalty, "repetition_penalty", low=0.0
        ),
        rng=np.random.default_rng(None if seed is None else int(seed)),
    )
    return rows, choose


def _defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """`generate`'s keyword arguments: those given, and the defaults."""
    defaults: dict[str, Any] = {
        "do_sample": False,
        "temperature": 1.0,
        "top_k": None,
        "top_p": None,
        "min_p": None,
        "repetition_penalty": 1.0,
        "seed": None,
        "use_cache": True,
    }
    unknown = sorted(set(settings) - set(defaults))
    if unknown:
        raise TypeError(
            f"unknown argument {unknown[0]!r}: generate takes "
            f"{', '.join(defaults)}"
        )
    return defaults | settings


def _integer(value: object, name: str, *, low: int) -> int:
    """`value` as an int >= `low`, or an error naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


def _real(value: object, name: str, *, low: float | None = None) -> float:
    """`value` as a finite float (> `low` if given), or an error naming it."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and number <= low:
        raise ValueError(f"{name} must be > {low:g}, got {value!r}")
    return number


# ------------------------------------------------------- the backward pass
# --8<-- [start:embed_backward]
def embed_backward(
    dx: Array, ids: Array, token_embedding: Array, position_embedding: Array
) -> tuple[Array, Array]:  # [..., n, d], [..., n] -> [vocab, d], [context, d]
    """The gradients of `embed` for the token and the position tables.

    A token's row gets the sum of the gradients of every place it was used
    (``np.add.at``, which adds repeated ids up where ``table[ids] += dx``
    would keep only one); position ``i``'s row gets the sum over the batch.
    Rows that were not used get 0.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop.gpt import embed_backward
    >>> tokens, positions = np.zeros((3, 2)), np.zeros((4, 2))
    >>> dx = np.array([[1.0, 1.0], [2.0, 2.0]])
    >>> d_tokens, d_positions = embed_backward(
    ...     dx, np.array([2, 2]), tokens, positions
    ... )
    >>> d_tokens.tolist()  # token 2, used twice
    [[0.0, 0.0], [0.0, 0.0], [3.0, 3.0]]
    >>> d_positions.tolist()
    [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    d = token_embedding.shape[-1]
    d_tokens = np.zeros_like(token_embedding)
    np.add.at(d_tokens, ids.reshape(-1), dx.reshape(-1, d))
    n = ids.shape[-1]
    d_positions = np.zeros_like(position_embedding)
    d_positions[:n] = dx.reshape(-1, n, d).sum(axis=0)
    return d_tokens, d_positions


# --8<-- [end:embed_backward]


# --8<-- [start:block_backward]
# --8<-- [start:block_backward_def]
def block_backward(
    d_out: Array, cache: BlockCache, block: Block, n_heads: int
) -> tuple[Array, Block]:  # [..., n, d] -> [..., n, d], the block's grads
    # --8<-- [end:block_backward_def]
    """The gradients of `block_forward`: its steps backward, last first.

    A residual add ``out = middle + f(middle)`` passes `d_out` straight
    through to `middle`, and adds it to what comes back through ``f``.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, cache = gpt.block_forward(x, params.blocks[0], n_heads=2)
    >>> dx, grads = gpt.block_backward(
    ...     np.ones_like(out), cache, params.blocks[0], n_heads=2
    ... )
    >>> dx.shape, grads.mlp.widen.weight.shape
    ((3, 4), (16, 4))
    """
    _check_gpt2_block(block, "block_backward")
    # --8<-- [start:block_backward_body]
    c, eps = cache, LAYER_NORM_EPS
    # out = middle + narrow(gelu(widen(ln_2(middle))))
    d_activated, *d_narrow = linear_backward(
        d_out, c.activated, block.mlp.narrow.weight
    )
    d_widened = gelu_backward(
        d_activated, c.widened, approximate="tanh", y=c.activated
    )  # y: GELU's output, x * p, saves an exp
    d_normed_2, *d_widen = linear_backward(
        d_widened, c.normed_2, block.mlp.widen.weight
    )
    d_middle, *d_norm_2 = layer_norm_backward(
        d_normed_2, c.middle, block.norm_2.weight, eps=eps
    )
    d_middle += d_out  # the residual add
    # middle = x + output(attention(split(qkv(ln_1(x)))))
    d_merged, *d_output = linear_backward(
        d_middle, c.merged, block.attention.output.weight
    )
    d_heads = split_heads(d_merged, n_heads)  # merge_heads, backward
    d_q, d_k, d_v = attention_backward(d_heads, c.q, c.k, c.v, c.weights)
    d_qkv = np.concatenate(
        [merge_heads(d_q), merge_heads(d_k), merge_heads(d_v)], axis=-1
    )  # [..., n, 3 d]: the split, backward
    d_normed_1, *d_qkv_params = linear_backward(
        d_qkv, c.normed_1, block.attention.qkv.weight
    )
    dx, *d_norm_1 = layer_norm_backward(
        d_normed_1, c.x, block.norm_1.weight, eps=eps
    )
    dx += d_middle  # the residual add
    grads = Block(
        norm_1=Norm(*d_norm_1),
        attention=Attention(Linear(*d_qkv_params), Linear(*d_output)),
        norm_2=Norm(*d_norm_2),
        mlp=MLP(Linear(*d_widen), Linear(*d_narrow)),
    )
    return dx, grads
    # --8<-- [end:block_backward_body]


# --8<-- [end:block_backward]


# --8<-- [start:forward_backward]
# --8<-- [start:forward_backward_def]
def forward_backward(
    params: Params, ids: Array, targets: Array
) -> tuple[float, Params]:  # [batch, n], [batch, n] -> loss, grads
    # --8<-- [end:forward_backward_def]
    """The loss, then every gradient: the forward pass, then back through it.

    The forward pass keeps each block's cache; the backward pass goes
    through every step last first. The token table is used twice (the input
    embedding and the output layer), so its gradient is the sum of both.
    `ids` and `targets` are checked integer arrays ``[batch, n]`` (use
    `loss_and_grads`, which checks them and shares the work between cores).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> ids = np.array([[1, 2, 3]])
    >>> loss, grads = gpt.forward_backward(params, ids, ids)
    >>> grads.token_embedding.shape
    (10, 4)
    """
    if is_variant(params.config):
        return variant_forward_backward(params, ids, targets)
    # --8<-- [start:forward_backward_body]
    config = params.config
    # Forward, keeping what the backward pass needs.
    tokens, positions = params.token_embedding, params.position_embedding
    x = embed(ids, tokens, positions)
    caches = []
    for block in params.blocks:
        x, cache = block_forward(x, block, config.n_heads)
        caches.append(cache)
    normed = layer_norm(x, *params.final_norm, eps=LAYER_NORM_EPS)
    logits = linear(normed, tokens)
    loss = cross_entropy(logits, targets)
    # Backward, last step first.
    d_logits = cross_entropy_backward(logits, targets)
    d_normed, d_tokens_out, _ = linear_backward(d_logits, normed, tokens)
    dx, *d_final_norm = layer_norm_backward(
        d_normed, x, params.final_norm.weight, eps=LAYER_NORM_EPS
    )
    block_grads = []
    for block, cache in zip(params.blocks[::-1], caches[::-1], strict=True):
        dx, grads = block_backward(dx, cache, block, config.n_heads)
        block_grads.append(grads)
    d_tokens_in, d_positions = embed_backward(dx, ids, tokens, positions)
    return loss, Params(
        config=config,
        token_embedding=d_tokens_in + d_tokens_out,  # tied: both uses add
        position_embedding=d_positions,
        blocks=tuple(block_grads[::-1]),
        final_norm=Norm(*d_final_norm),
    )
    # --8<-- [end:forward_backward_body]


# --8<-- [end:forward_backward]


# ---------------------------------------------- since GPT-2: Llama's swaps
#
# A config's norm, mlp and positions choose each piece of a block: GPT-2's
# (the functions above, which pages show and benchmarks time) or the one
# Llama-style models use. The functions below run any mix of them; forward,
# forward_backward and forward_with_cache hand a variant's work to them.


# --8<-- [start:normalize]
def normalize(x: Array, norm: Norm) -> Array:  # [..., n, d] -> [..., n, d]
    """`layer_norm` with the norm's scale and shift, or `rms_norm`.

    A norm with no bias is an RMS norm (``config.norm == "rms"``), with
    eps 1e-6 (``LlamaRMSNorm``'s default; Llama 2 and 3's checkpoints set
    1e-5); otherwise it is GPT-2's layer norm (eps 1e-5).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> rms = gpt.Norm(np.ones(2), None)  # no bias: an RMS norm
    >>> gpt.normalize(np.array([[3.0, 4.0]]), rms).round(4)
    array([[0.8485, 1.1314]])
    """
    if norm.bias is None:
        return rms_norm(x, norm.weight, eps=RMS_NORM_EPS)
    return layer_norm(x, norm.weight, norm.bias, eps=LAYER_NORM_EPS)


def normalize_backward(
    dy: Array, x: Array, norm: Norm
) -> tuple[Array, Norm]:  # [..., n, d] -> [..., n, d], the norm's grads
    """The gradients of `normalize`: for `x`, and for the norm's weights.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> x = np.array([[3.0, 4.0]])
    >>> dx, grads = gpt.normalize_backward(x, x, gpt.Norm(np.ones(2), None))
    >>> grads.bias is None  # an RMS norm's gradients have no bias either
    True
    """
    if norm.bias is None:
        dx, d_weight = rms_norm_backward(dy, x, norm.weight, eps=RMS_NORM_EPS)
        return dx, Norm(d_weight, None)
    dx, d_weight, d_bias = layer_norm_backward(
        dy, x, norm.weight, eps=LAYER_NORM_EPS
    )
    return dx, Norm(d_weight, d_bias)


# --8<-- [end:normalize]


class VariantCache(NamedTuple):
    """What `variant_block_forward` computed, for `variant_block_backward`."""

    x: Array  # the block's input [..., n, d]
    normed_1: Array
    q: Array  # [..., n_heads, n, d_head], rotated if rotary
    k: Array
    v: Array
    weights: Array  # attention's [..., n_heads, n, n]
    merged: Array  # [..., n, d]
    middle: Array  # x + the attention half
    normed_2: Array
    widened: Array  # GELU: [..., n, 4 d]; SwiGLU: gate, then up
    activated: Array  # GELU: gelu(widened); SwiGLU: silu(gate)
    hidden: Array  # what the narrowing gets: activated, or it times up


# --8<-- [start:variant_mlp]
def variant_mlp_half(
    middle: Array, block: Block
) -> tuple[Array, Array, Array, Array, Array]:  # [..., n, d] -> [..., n, d]
    """``middle + mlp(norm_2(middle))``, GELU's MLP or SwiGLU's.

    Returns the output, then what `variant_block_backward` needs: the
    normed input, the widened vectors, the activation, and the hidden
    vectors the narrowing takes.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> block = gpt.init(gpt.Config(10, 8, 1, 2, 6, mlp="swiglu")).blocks[0]
    >>> out, normed, widened, activated, hidden = gpt.variant_mlp_half(
    ...     np.ones((3, 6), dtype=np.float32), block
    ... )
    >>> widened.shape, hidden.shape  # gate and up, 16 each; then 16
    ((3, 32), (3, 16))
    """
    normed_2 = normalize(middle, block.norm_2)
    widened = linear(normed_2, *block.mlp.widen)  # [..., n, 4 d] or 2 h
    activated: Array
    hidden: Array
    if block.mlp.widen.bias is None:  # SwiGLU: silu(gate) * up
        h = widened.shape[-1] // 2
        activated = silu(widened[..., :h])
        hidden = activated * widened[..., h:]  # [..., n, h]
    else:
        activated = hidden = gelu(widened, approximate="tanh")
    out = middle + linear(hidden, *block.mlp.narrow)  # residual add
    return out, normed_2, widened, activated, hidden


# --8<-- [end:variant_mlp]


# --8<-- [start:variant_block_forward]
def variant_block_forward(
    x: Array, block: Block, n_heads: int, positions: Array | None
) -> tuple[Array, VariantCache]:  # [..., n, d] -> [..., n, d], the cache
    """`block_forward` with any norm and MLP, and rotary positions.

    `positions` holds each row's position for rotary positions: the
    queries and keys of every head are turned by `rotary` (the values are
    not). None: the positions are in the embeddings, as GPT-2's.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> config = gpt.Config(10, 8, 1, 2, 4, "rms", "swiglu", "rotary")
    >>> block = gpt.init(config).blocks[0]
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, cache = gpt.variant_block_forward(x, block, 2, np.arange(3))
    >>> out.shape, cache.widened.shape  # 2 x 16: gate and up
    ((3, 4), (3, 32))
    """
    normed_1 = normalize(x, block.norm_1)
    q, k, v = queries_keys_values(normed_1, block.attention, n_heads)
    if positions is not None:  # rotary: turn each head's queries and keys
        q, k = rotary(q, positions), rotary(k, positions)
    weights = attention_weights(q, k, is_causal=True)  # [..., h, n, n]
    merged = merge_heads(weights @ v)  # [..., n, d]
    middle = x + linear(merged, *block.attention.output)  # residual add
    out, *mlp = variant_mlp_half(middle, block)
    return out, VariantCache(
        x, normed_1, q, k, v, weights, merged, middle, *mlp
    )


# --8<-- [end:variant_block_forward]


# --8<-- [start:variant_block_backward]
def variant_block_backward(
    d_out: Array,
    cache: VariantCache,
    block: Block,
    n_heads: int,
    positions: Array | None,
) -> tuple[Array, Block]:  # [..., n, d] -> [..., n, d], the block's grads
    """The gradients of `variant_block_forward`, last step first.

    As `block_backward`, with `normalize_backward` for each norm; for
    SwiGLU, the product ``silu(gate) * up`` sends each factor the other
    times the gradient; for rotary positions, the gradients of the turned
    queries and keys are turned back (`rotary_backward`).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> config = gpt.Config(10, 8, 1, 2, 4, "rms", "swiglu", "rotary")
    >>> block, at = gpt.init(config).blocks[0], np.arange(3)
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, cache = gpt.variant_block_forward(x, block, 2, at)
    >>> dx, grads = gpt.variant_block_backward(
    ...     np.ones_like(out), cache, block, 2, at
    ... )
    >>> dx.shape, grads.mlp.widen.weight.shape, grads.norm_1.bias
    ((3, 4), (32, 4), None)
    """
    c = cache
    d_hidden, *d_narrow = linear_backward(
        d_out, c.hidden, block.mlp.narrow.weight
    )
    if block.mlp.widen.bias is None:  # SwiGLU
        h = c.activated.shape[-1]
        gate, up = c.widened[..., :h], c.widened[..., h:]
        d_gate = silu_backward(d_hidden * up, gate)
        d_widened = np.concatenate([d_gate, d_hidden * c.activated], axis=-1)
    else:
        d_widened = gelu_backward(
            d_hidden, c.widened, approximate="tanh", y=c.activated
        )
    d_normed_2, *d_widen = linear_backward(
        d_widened, c.normed_2, block.mlp.widen.weight
    )
    d_middle, d_norm_2 = normalize_backward(d_normed_2, c.middle, block.norm_2)
    d_middle += d_out  # the residual add
    d_merged, *d_output = linear_backward(
        d_middle, c.merged, block.attention.output.weight
    )
    d_heads = split_heads(d_merged, n_heads)
    d_q, d_k, d_v = attention_backward(d_heads, c.q, c.k, c.v, c.weights)
    if positions is not None:  # turn the gradients back
        d_q, d_k = (
            rotary_backward(d_q, positions),
            rotary_backward(d_k, positions),
        )
    d_qkv = np.concatenate(
        [merge_heads(d_q), merge_heads(d_k), merge_heads(d_v)], axis=-1
    )
    d_normed_1, *d_qkv_params = linear_backward(
        d_qkv, c.normed_1, block.attention.qkv.weight
    )
    dx, d_norm_1 = normalize_backward(d_normed_1, c.x, block.norm_1)
    dx += d_middle  # the residual add
    no_bias = block.mlp.widen.bias is None
    grads = Block(
        norm_1=d_norm_1,
        attention=Attention(Linear(*d_qkv_params), Linear(*d_output)),
        norm_2=d_norm_2,
        mlp=MLP(
            Linear(d_widen[0], None if no_bias else d_widen[1]),
            Linear(d_narrow[0], None if no_bias else d_narrow[1]),
        ),
    )
    return dx, grads


# --8<-- [end:variant_block_backward]


def _rotary_positions(config: Config, start: int, n: int) -> Array | None:
    """Positions ``start .. start + n - 1`` for a rotary model, else None."""
    if config.positions == "rotary":
        return np.arange(start, start + n)
    return None


def _variant_embed(params: Params, ids: Array, start: int) -> Array:
    """Each token's row, plus its position's row unless rotary."""
    if params.config.positions == "rotary":
        return params.token_embedding[ids]  # [..., n, d]
    return embed(ids, params.token_embedding, params.position_embedding, start)


def _variant_embed_backward(
    dx: Array, ids: Array, params: Params
) -> tuple[Array, Array]:  # [..., n, d] -> [vocab, d], [context or 0, d]
    """`embed_backward`; a rotary model's empty table gets an empty grad."""
    if params.config.positions == "rotary":
        d_tokens = np.zeros_like(params.token_embedding)
        np.add.at(d_tokens, ids.reshape(-1), dx.reshape(-1, dx.shape[-1]))
        return d_tokens, np.zeros_like(params.position_embedding)
    tables = params.token_embedding, params.position_embedding
    return embed_backward(dx, ids, *tables)


# --8<-- [start:variant_forward_backward]
def variant_forward_backward(
    params: Params, ids: Array, targets: Array
) -> tuple[float, Params]:  # [batch, n], [batch, n] -> loss, grads
    """`forward_backward` for any config: GPT-2's pieces or Llama's.

    ``config.norm`` "rms" puts `rms_norm` (eps 1e-6, no bias) where GPT-2
    has layer norm, in every block and at the end; ``config.mlp``
    "swiglu" puts ``narrow(silu(gate) * up)``, ``config.d_mlp`` wide and
    without biases, where GPT-2 has its GELU MLP; ``config.positions``
    "rotary" drops the position table and turns every block's queries and
    keys by `rotary` instead. Attention's linear layers keep their biases,
    as GPT-2's. `forward_backward` hands a variant to this function.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> config = gpt.Config(10, 8, 1, 2, 4, positions="rotary")
    >>> params = gpt.init(config)
    >>> ids = np.array([[1, 2, 3]])
    >>> loss, grads = gpt.variant_forward_backward(params, ids, ids)
    >>> grads.position_embedding.shape  # no table
    (0, 4)
    """
    config = params.config
    positions = _rotary_positions(config, 0, ids.shape[-1])
    x = _variant_embed(params, ids, 0)
    caches = []
    for block in params.blocks:
        x, cache = variant_block_forward(x, block, config.n_heads, positions)
        caches.append(cache)
    normed = normalize(x, params.final_norm)
    logits = linear(normed, params.token_embedding)
    loss = cross_entropy(logits, targets)
    d_logits = cross_entropy_backward(logits, targets)
    d_normed, d_tokens_out, _ = linear_backward(
        d_logits, normed, params.token_embedding
    )
    dx, d_final_norm = normalize_backward(d_normed, x, params.final_norm)
    block_grads = []
    for block, cache in zip(params.blocks[::-1], caches[::-1], strict=True):
        dx, grads = variant_block_backward(
            dx, cache, block, config.n_heads, positions
        )
        block_grads.append(grads)
    d_tokens_in, d_positions = _variant_embed_backward(dx, ids, params)
    return loss, Params(
        config=config,
        token_embedding=d_tokens_in + d_tokens_out,  # tied: both uses add
        position_embedding=d_positions,
        blocks=tuple(block_grads[::-1]),
        final_norm=d_final_norm,
    )


# --8<-- [end:variant_forward_backward]


def _variant_forward(params: Params, ids: Array) -> Array:
    """`forward` for any config, on checked ids."""
    config = params.config
    positions = _rotary_positions(config, 0, ids.shape[-1])
    x = _variant_embed(params, ids, 0)
    for block in params.blocks:
        x, _ = variant_block_forward(x, block, config.n_heads, positions)
    x = normalize(x, params.final_norm)
    return linear(x, params.token_embedding)


# --8<-- [start:variant_block_step]
def variant_block_step(
    x: Array,
    block: Block,
    n_heads: int,
    past: tuple[Array, Array] | None,
    rotary_positions: bool,
) -> tuple[Array, Array, Array]:  # [..., n, d] -> [..., n, d], k, v
    """`block_step` with any norm and MLP, and rotary positions.

    With `rotary_positions`, new token ``i`` sits at position ``start +
    i``, ``start`` the number of cached keys: its query and key are
    turned by that position's angles, and the cache keeps the keys turned.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> config = gpt.Config(10, 8, 1, 2, 4, positions="rotary")
    >>> block = gpt.init(config).blocks[0]
    >>> x = np.ones((3, 4), dtype=np.float32)
    >>> out, k, v = gpt.variant_block_step(x, block, 2, None, True)
    >>> out, k, v = gpt.variant_block_step(x[:1], block, 2, (k, v), True)
    >>> k.shape  # the new token's key, turned for position 3, joined them
    (2, 4, 2)
    """
    start = 0 if past is None else past[0].shape[-2]
    n = x.shape[-2]
    normed_1 = normalize(x, block.norm_1)
    q, k, v = queries_keys_values(normed_1, block.attention, n_heads)
    if rotary_positions:
        positions = np.arange(start, start + n)
        q, k = rotary(q, positions), rotary(k, positions)
    if past is not None:
        k = np.concatenate([past[0], k], axis=-2)  # [..., h, start + n, dh]
        v = np.concatenate([past[1], v], axis=-2)
    if n == 1:  # one new token looks at every key
        scores = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]))
        weights = softmax(scores)
    else:  # each looks at the keys up to its own
        mask = np.tri(n, start + n, k=start, dtype=bool)
        weights = attention_weights(q, k, mask=mask)
    merged = merge_heads(weights @ v)
    middle = x + linear(merged, *block.attention.output)
    out, *_ = variant_mlp_half(middle, block)
    return out, k, v


# --8<-- [end:variant_block_step]


def _variant_forward_with_cache(
    params: Params, ids: Array, cache: KVCache | None
) -> tuple[Array, KVCache]:
    """`_forward_with_cache` for any config."""
    config, start = params.config, 0 if cache is None else cache.length
    x = _variant_embed(params, ids, start)
    rotate = config.positions == "rotary"
    keys, values = [], []
    for i, block in enumerate(params.blocks):
        past = None if cache is None else (cache.keys[i], cache.values[i])
        x, k, v = variant_block_step(x, block, config.n_heads, past, rotate)
        keys.append(k)
        values.append(v)
    x = normalize(x, params.final_norm)
    logits = linear(x, params.token_embedding)
    return logits, KVCache(tuple(keys), tuple(values))


# --8<-- [start:loss_and_grads]
def loss_and_grads(
    params: Params, ids: ArrayLike, targets: ArrayLike
) -> tuple[float, Params]:  # [batch, n], [batch, n] -> loss, grads
    """The mean cross-entropy of `targets` given `ids`, and its gradients.

    Runs `forward_backward` on the batch. A large batch is cut into one
    share of rows per core, each share's `forward_backward` runs on its own
    thread with BLAS held to one thread (process-wide, for the call), and
    the shares' losses and gradients are averaged, weighted by their rows:
    the layer norms, GELUs and softmaxes then run side by side too, not
    only the matrix products.

    Parameters
    ----------
    params : Params
        The weights.
    ids : array_like of int, shape (batch, n) or (n,)
        The input tokens, as for `forward`.
    targets : array_like of int, the shape of `ids`
        The token that should come after each position (usually `ids`
        shifted by one).

    Returns
    -------
    loss : float
        The mean cross-entropy over every position, in nats.
    grads : Params
        The gradient of the loss for every parameter, in the structure and
        dtype of `params` (the same `config`).

    Raises
    ------
    TypeError, ValueError
        For bad `ids` or `targets`, as `forward`.

    Notes
    -----
    A step allocates and frees many arrays of a megabyte or more. By
    default glibc hands such memory back to the system as soon as it is
    freed, and the next step pays a page fault for every 4 KiB of it again:
    about a quarter of a small model's step. So the first call asks glibc
    (on Linux; elsewhere nothing happens) to keep up to 256 MiB of freed
    memory for reuse, for the rest of the process.

    Examples
    --------
    >>> import math
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> loss, grads = gpt.loss_and_grads(params, [[1, 2, 3]], [[2, 3, 4]])
    >>> abs(loss - math.log(10)) < 0.1  # untrained: nearly uniform
    True
    >>> grads.blocks[0].attention.qkv.weight.shape
    (12, 4)
    """
    params = _checked_params(params)
    ids = _checked_ids(ids, params.config)
    targets = _checked_ids(targets, params.config, "targets")
    if targets.shape != ids.shape:
        raise ValueError(
            f"targets needs the shape of ids {ids.shape}, got {targets.shape}"
        )
    _keep_freed_memory()
    ids, targets = np.atleast_2d(ids), np.atleast_2d(targets)  # [batch, n]
    size = ids.size * params.config.d_model  # numbers per layer
    shares = _shares(ids.shape[0], size)
    if len(shares) == 1 and size < _SHARE_FROM:
        # Products this small: BLAS's own threads cost more than they save
        # (on busy cores, ten times the step).
        with blas_threads(1):
            return forward_backward(params, ids, targets)
    if len(shares) == 1:
        return forward_backward(params, ids, targets)
    rows = ids.shape[0]
    with blas_threads(1):
        helpers = [
            pool().submit(_share, params, ids[s], targets[s], rows)
            for s in shares[1:]
        ]
        first = _share(params, ids[shares[0]], targets[shares[0]], rows)
        results = [first] + [helper.result() for helper in helpers]
    loss = sum(share_loss for share_loss, _ in results)
    return loss, _add_into(first[1], [grads for _, grads in results[1:]])


# --8<-- [end:loss_and_grads]


# A batch is shared between the cores from this many numbers per layer
# (tokens times d_model) on: below, starting threads costs more than it saves.
_SHARE_FROM = 2**15


def _shares(rows: int, size: int) -> list[slice]:
    """The rows of a batch cut into one run per core (or one run)."""
    n = min(usable_cores(), rows) if size >= _SHARE_FROM else 1
    cuts = [round(i * rows / n) for i in range(n + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(cuts)]


def _share(
    params: Params, ids: Array, targets: Array, rows: int
) -> tuple[float, Params]:
    """One share's loss and gradients, weighted by its part of the batch.

    Each share weights its own gradients, on its own core: all that is left
    to do on one core is to add them up.
    """
    loss, grads = forward_backward(params, ids, targets)
    weight = ids.shape[0] / rows
    for grad in _arrays(grads):
        grad *= weight  # in place: the share's grads are ours; float32 stays
    return weight * loss, grads


def _arrays(tree: Any) -> Iterator[Array]:
    """The arrays of a tree shaped as `Params`, in order."""
    if isinstance(tree, np.ndarray):
        yield tree
    elif tree is not None and not isinstance(tree, Config):  # None: no bias
        for part in tree:
            yield from _arrays(part)


def _add_into(first: Params, others: list[Params]) -> Params:
    """``first + sum(others)``, array by array, in place into `first`."""
    for total, *parts in zip(
        _arrays(first), *map(_arrays, others), strict=True
    ):
        for part in parts:
            total += part
    return first


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@cache
def _keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse (once per process).

    Blocks under 64 MiB come from the heap rather than from their own
    mapping, and up to 256 MiB free at the heap's top is kept: a training
    step's arrays then reuse the last step's pages instead of faulting new
    ones in.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):  # not glibc: leave it be
        return
    mallopt(_M_MMAP_THRESHOLD, 64 * 2**20)
    mallopt(_M_TRIM_THRESHOLD, 256 * 2**20)


# ------------------------------------------------------------ initialisation
def init(
    config: Config, seed: int = 0, dtype: type[np.floating[Any]] = np.float32
) -> Params:
    """New weights, drawn as GPT-2 draws them.

    Every matrix and both tables are normal with standard deviation 0.02,
    except the two projections back into the residual stream (the
    attention's output and the MLP's narrowing), 0.02 / sqrt(2 n_layers),
    so the sum of the blocks' additions keeps its size however deep the
    model. Biases are 0, layer norms' weights 1 and biases 0.

    The variants draw the same way: an RMS norm's weights are 1 (it has
    no bias); SwiGLU's two widening matrices (one array, ``widen``) are
    0.02 and its narrowing 0.02 / sqrt(2 n_layers), with no biases; a
    rotary model has no position table (an empty ``[0, d_model]``), so
    nothing is drawn for it. The linear layers of attention keep GPT-2's
    biases in every variant.

    Parameters
    ----------
    config : Config
        The sizes.
    seed : int, optional
        For `numpy.random.default_rng`. The numbers are drawn in float64 in
        a fixed order (token table, position table unless rotary, then each
        block's qkv, output, widen and narrow matrices) and then rounded to
        `dtype`, so a
        float32 model is the float64 one rounded.
    dtype : numpy.float32 or numpy.float64, optional
        float32 to train (the default), float64 to check gradients.

    Returns
    -------
    Params

    Raises
    ------
    ValueError
        If a size is below 1, or `d_model` does not divide by `n_heads`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(256, 64, 4, 4, 128))
    >>> params.blocks[0].attention.qkv.weight.shape
    (384, 128)
    >>> params.token_embedding.dtype
    dtype('float32')
    """
    config = _checked_config(config)
    work = _checked_dtype(dtype)
    rng = np.random.default_rng(seed)
    d, n_layers = config.d_model, config.n_layers
    residual_std = 0.02 / math.sqrt(2 * n_layers)

    def normal(shape: tuple[int, ...], std: float = 0.02) -> Array:
        return (rng.standard_normal(shape) * std).astype(work)

    def zeros(size: int) -> Array:
        return np.zeros(size, dtype=work)

    def norm() -> Norm:
        bias = zeros(d) if config.norm == "layer" else None
        return Norm(np.ones(d, dtype=work), bias)

    token_embedding = normal((config.vocab_size, d))
    if config.positions == "learned":
        position_embedding = normal((config.context, d))
    else:  # rotary: no table
        position_embedding = np.zeros((0, d), dtype=work)
    h = config.d_mlp
    blocks = []
    for _ in range(n_layers):
        qkv = Linear(normal((3 * d, d)), zeros(3 * d))
        output = Linear(normal((d, d), residual_std), zeros(d))
        if config.mlp == "gelu":
            widen = Linear(normal((h, d)), zeros(h))
            narrow = Linear(normal((d, h), residual_std), zeros(d))
        else:  # SwiGLU: the gate's and up's rows in one array, no biases
            widen = Linear(normal((2 * h, d)), None)
            narrow = Linear(normal((d, h), residual_std), None)
        blocks.append(
            Block(norm(), Attention(qkv, output), norm(), MLP(widen, narrow))
        )
    return Params(
        config, token_embedding, position_embedding, tuple(blocks), norm()
    )


def _checked_dtype(dtype: object) -> np.dtype[Any]:
    try:
        work = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        work = None
    if work not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(
            f"dtype must be numpy.float32 or numpy.float64, got {dtype!r}"
        )
    return work


# ------------------------------------------------------- Hugging Face's format
# Our name for each tensor of a block, and Hugging Face's GPT-2 name. Hugging
# Face's matrices are Conv1D weights, [d_in, d_out]: the transposes of ours.
_BLOCK_NAMES = {
    ("norm_1", "weight"): "ln_1.weight",
    ("norm_1", "bias"): "ln_1.bias",
    ("attention", "qkv", "weight"): "attn.c_attn.weight",
    ("attention", "qkv", "bias"): "attn.c_attn.bias",
    ("attention", "output", "weight"): "attn.c_proj.weight",
    ("attention", "output", "bias"): "attn.c_proj.bias",
    ("norm_2", "weight"): "ln_2.weight",
    ("norm_2", "bias"): "ln_2.bias",
    ("mlp", "widen", "weight"): "mlp.c_fc.weight",
    ("mlp", "widen", "bias"): "mlp.c_fc.bias",
    ("mlp", "narrow", "weight"): "mlp.c_proj.weight",
    ("mlp", "narrow", "bias"): "mlp.c_proj.bias",
}
_TRANSPOSED = {"attn.c_attn.weight", "attn.c_proj.weight"}
_TRANSPOSED |= {"mlp.c_fc.weight", "mlp.c_proj.weight"}


def _expected_shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """Every tensor `state_dict` gives for `config`, and its shape."""
    d, v, h = config.d_model, config.vocab_size, config.d_mlp
    shapes: dict[str, tuple[int, ...]] = {
        "transformer.wte.weight": (v, d),
        "transformer.wpe.weight": (config.context, d),
    }
    block = {
        "ln_1.weight": (d,),
        "ln_1.bias": (d,),
        "attn.c_attn.weight": (d, 3 * d),
        "attn.c_attn.bias": (3 * d,),
        "attn.c_proj.weight": (d, d),
        "attn.c_proj.bias": (d,),
        "ln_2.weight": (d,),
        "ln_2.bias": (d,),
        "mlp.c_fc.weight": (d, 4 * d),
        "mlp.c_fc.bias": (4 * d,),
        "mlp.c_proj.weight": (4 * d, d),
        "mlp.c_proj.bias": (d,),
    }
    if config.mlp == "swiglu":  # Llama's names and layouts, [d_out, d_in]
        block = {k: s for k, s in block.items() if not k.startswith("mlp.")}
        block["mlp.gate_proj.weight"] = (h, d)
        block["mlp.up_proj.weight"] = (h, d)
        block["mlp.down_proj.weight"] = (d, h)
    for i in range(config.n_layers):
        for name, shape in block.items():
            shapes[f"transformer.h.{i}.{name}"] = shape
    shapes["transformer.ln_f.weight"] = (d,)
    shapes["transformer.ln_f.bias"] = (d,)
    if config.norm == "rms":  # no biases
        shapes = {
            k: s
            for k, s in shapes.items()
            if not k.endswith(("ln_1.bias", "ln_2.bias", "ln_f.bias"))
        }
    if config.positions == "rotary":  # no position table
        del shapes["transformer.wpe.weight"]
    return shapes


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for field in path:
        tree = getattr(tree, field)
    return tree


def state_dict(params: Params) -> dict[str, Array]:
    """Every tensor under its ``GPT2LMHeadModel`` name, in its layout.

    The matrices are Hugging Face's ``Conv1D`` weights, ``[d_in, d_out]``,
    the transposes of ours: ``transformer.h.0.attn.c_attn.weight`` is
    ``[d_model, 3 d_model]``, queries, keys and values side by side. There
    is no ``lm_head.weight``: the output layer is the token table. Works on
    gradients too (they are `Params`). Every array is a new contiguous copy.

    A variant's tensors: an RMS norm has only its ``weight`` (no
    ``ln_1.bias``, ``ln_2.bias``, ``ln_f.bias``); a rotary model has no
    ``transformer.wpe.weight``; a SwiGLU MLP is Llama's three matrices in
    Llama's layout, ``[d_out, d_in]``, with no biases:
    ``transformer.h.0.mlp.gate_proj.weight`` and ``up_proj.weight``
    ``[d_mlp, d_model]`` (the two halves of ``mlp.widen.weight``) and
    ``down_proj.weight`` ``[d_model, d_mlp]``.

    Examples
    --------
    >>> from opbyop import gpt
    >>> tensors = gpt.state_dict(gpt.init(gpt.Config(10, 8, 1, 2, 4)))
    >>> tensors["transformer.h.0.attn.c_attn.weight"].shape
    (4, 12)
    >>> len(tensors)  # 2 tables, 12 per block, the final norm's 2
    16
    """
    params = _checked_params(params)
    config = params.config
    tensors = {
        "transformer.wte.weight": params.token_embedding,
        "transformer.wpe.weight": params.position_embedding,
    }
    if config.positions == "rotary":
        del tensors["transformer.wpe.weight"]  # no table
    swiglu = config.mlp == "swiglu"
    for i, block in enumerate(params.blocks):
        for path, name in _BLOCK_NAMES.items():
            tensor = _get(block, path)
            if tensor is None or (swiglu and path[0] == "mlp"):
                continue  # an RMS norm's bias; SwiGLU's, below
            tensors[f"transformer.h.{i}.{name}"] = (
                tensor.T if name in _TRANSPOSED else tensor
            )
        if swiglu:
            gate, up = np.split(block.mlp.widen.weight, 2)
            tensors[f"transformer.h.{i}.mlp.gate_proj.weight"] = gate
            tensors[f"transformer.h.{i}.mlp.up_proj.weight"] = up
            down = block.mlp.narrow.weight
            tensors[f"transformer.h.{i}.mlp.down_proj.weight"] = down
    tensors["transformer.ln_f.weight"] = params.final_norm.weight
    if params.final_norm.bias is not None:
        tensors["transformer.ln_f.bias"] = params.final_norm.bias
    return {name: np.array(t, order="C") for name, t in tensors.items()}


def from_state_dict(
    tensors: Mapping[str, ArrayLike], config: Config
) -> Params:
    """`Params` from ``GPT2LMHeadModel``'s tensors: `state_dict`'s inverse.

    Parameters
    ----------
    tensors : mapping of str to array_like
        Exactly the names `state_dict` gives for `config` (with the
        ``transformer.`` prefix), in its layouts, float32 or float64, one
        dtype for all. `load` reads other spellings of a checkpoint.
    config : Config
        The sizes the tensors must have.

    Returns
    -------
    Params
        New contiguous copies, in the tensors' dtype.

    Raises
    ------
    ValueError
        If a tensor is missing, unexpected, of the wrong shape, or not
        float32 or float64 (the message names it).

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gpt
    >>> config = gpt.Config(10, 8, 1, 2, 4)
    >>> params = gpt.init(config)
    >>> again = gpt.from_state_dict(gpt.state_dict(params), config)
    >>> bool(np.array_equal(again.blocks[0].mlp.widen.weight,
    ...                     params.blocks[0].mlp.widen.weight))
    True
    """
    config = _checked_config(config)
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"tensors must be a dict of name -> array, "
            f"got {type(tensors).__name__}"
        )
    shapes = _expected_shapes(config)
    missing = [name for name in shapes if name not in tensors]
    if missing:
        raise ValueError(
            f"missing tensor{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''} "
            f"for {config}"
        )
    extra = [name for name in tensors if name not in shapes]
    if extra:
        raise ValueError(
            f"unexpected tensor{'s' if len(extra) > 1 else ''} "
            f"{', '.join(map(str, extra[:5]))} for {config}"
        )
    arrays = {}
    for name, want in shapes.items():
        array = np.asarray(tensors[name])
        if array.dtype not in (np.float32, np.float64):
            raise ValueError(
                f"tensor {name} is {array.dtype}: expected float32 or float64"
            )
        if array.shape != want:
            raise ValueError(
                f"tensor {name} has shape {array.shape}, expected {want} "
                f"for {config}"
            )
        arrays[name] = array
    dtypes = {array.dtype for array in arrays.values()}
    if len(dtypes) > 1:
        raise ValueError(
            f"the tensors mix dtypes {sorted(map(str, dtypes))}: "
            "convert them to one"
        )

    def take(name: str) -> Array:
        array = arrays[name]
        short = name.split(".", 3)[-1]  # transformer.h.0.<short>
        return np.array(array.T if short in _TRANSPOSED else array, order="C")

    def norm(prefix: str) -> Norm:
        if config.norm == "rms":
            return Norm(take(f"{prefix}.weight"), None)
        return Norm(take(f"{prefix}.weight"), take(f"{prefix}.bias"))

    def linear_(prefix: str) -> Linear:
        return Linear(take(f"{prefix}.weight"), take(f"{prefix}.bias"))

    def mlp(h: str) -> MLP:
        if config.mlp == "gelu":
            return MLP(linear_(f"{h}.mlp.c_fc"), linear_(f"{h}.mlp.c_proj"))
        gate, up = (
            take(f"{h}.mlp.gate_proj.weight"),
            take(f"{h}.mlp.up_proj.weight"),
        )
        widen = Linear(np.concatenate([gate, up]), None)
        return MLP(widen, Linear(take(f"{h}.mlp.down_proj.weight"), None))

    blocks = []
    for i in range(config.n_layers):
        h = f"transformer.h.{i}"
        blocks.append(
            Block(
                norm_1=norm(f"{h}.ln_1"),
                attention=Attention(
                    linear_(f"{h}.attn.c_attn"), linear_(f"{h}.attn.c_proj")
                ),
                norm_2=norm(f"{h}.ln_2"),
                mlp=mlp(h),
            )
        )
    if config.positions == "rotary":  # no table
        dtype = arrays["transformer.wte.weight"].dtype
        positions = np.zeros((0, config.d_model), dtype=dtype)
    else:
        positions = take("transformer.wpe.weight")
    return Params(
        config,
        take("transformer.wte.weight"),
        positions,
        tuple(blocks),
        norm("transformer.ln_f"),
    )


# ------------------------------------------------------------ files
def _hf_config(config: Config, dtype: np.dtype[Any]) -> dict[str, Any]:
    """config.json for ``GPT2LMHeadModel``: this module's architecture.

    A variant is not GPT-2: its model_type is "opbyop-gpt", which no
    Hugging Face class claims, and it names no architecture, so
    ``transformers``' Auto classes refuse it rather than load it as GPT-2.
    """
    if is_variant(config):
        return _variant_hf_config(config, dtype)
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": config.vocab_size,
        "n_positions": config.context,
        "n_embd": config.d_model,
        "n_layer": config.n_layers,
        "n_head": config.n_heads,
        "n_inner": None,  # 4 * n_embd
        "activation_function": "gelu_new",  # tanh GELU
        "layer_norm_epsilon": LAYER_NORM_EPS,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True,
        "initializer_range": 0.02,
        # No special tokens: nothing stops generation early.
        "bos_token_id": None,
        "eos_token_id": None,
        "dtype": str(dtype),
    }


def _variant_hf_config(config: Config, dtype: np.dtype[Any]) -> dict[str, Any]:
    """config.json for a variant: GPT-2's sizes, and the pieces swapped."""
    found = {
        "model_type": VARIANT_MODEL_TYPE,
        "vocab_size": config.vocab_size,
        "n_positions": config.context,
        "n_embd": config.d_model,
        "n_layer": config.n_layers,
        "n_head": config.n_heads,
        "norm": config.norm,
        "mlp": config.mlp,
        "positions": config.positions,
        "n_inner": config.d_mlp,
        "activation_function": "gelu_new" if config.mlp == "gelu" else "silu",
        "layer_norm_epsilon": LAYER_NORM_EPS,
        "rms_norm_eps": RMS_NORM_EPS,
        "rope_theta": ROTARY_BASE,
        "tie_word_embeddings": True,
        "bos_token_id": None,
        "eos_token_id": None,
        "dtype": str(dtype),
    }
    if config.norm == "layer":
        del found["rms_norm_eps"]
    else:
        del found["layer_norm_epsilon"]
    if config.positions == "learned":
        del found["rope_theta"]
    return found


# A variant's model_type: no Hugging Face class reads it.
VARIANT_MODEL_TYPE = "opbyop-gpt"


def save(
    params: Params, folder: str | Path, tokenizer: BytePairs | None = None
) -> Path:
    """Write a folder that ``GPT2LMHeadModel.from_pretrained`` loads.

    ``config.json`` (GPT-2's keys: ``n_embd``, ``n_layer``, ``n_head``,
    ``n_positions`` = context, ``activation_function`` "gelu_new", dropouts
    0, tied embeddings, no start or end token) and ``model.safetensors``
    (`state_dict`'s tensors); with a `tokenizer`, its ``vocab.json`` and
    ``merges.txt`` too (`opbyop.bpe.BytePairs.save`), so that
    ``transformers.pipeline("text-generation", model=folder)`` runs the
    folder and `load` gives a `Model` that can `Model.write`. The folder is
    created if need be; files of the same names are replaced.

    A variant (`is_variant`: an RMS norm, SwiGLU or rotary positions) is
    not GPT-2, and Hugging Face must not read it as GPT-2: its
    ``config.json`` has ``model_type`` "opbyop-gpt" and no
    ``architectures``, and records ``norm``, ``mlp`` and ``positions``
    (with ``n_inner`` = d_mlp and the eps or ``rope_theta`` it uses) for
    `load`. ``transformers``' ``AutoModelForCausalLM``, ``AutoConfig`` and
    ``pipeline`` refuse it (a ValueError: the model type is not one they
    know); ``GPT2LMHeadModel.from_pretrained``, called by name, still
    builds a GPT-2 from it, and lists the tensors it lacks as newly
    initialised.

    Returns
    -------
    pathlib.Path
        The folder.

    Examples
    --------
    >>> import tempfile
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> folder = gpt.save(params, tempfile.mkdtemp())
    >>> sorted(p.name for p in folder.iterdir())
    ['config.json', 'model.safetensors']
    """
    params = _checked_params(params)
    if not isinstance(folder, (str, Path)):
        raise TypeError(
            f"folder must be a str or Path, got {type(folder).__name__}"
        )
    if tokenizer is not None:
        _check_tokenizer(tokenizer, params.config, "tokenizer")
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    if tokenizer is not None:
        tokenizer.save(path)
    dtype = params.token_embedding.dtype
    config = _hf_config(params.config, dtype)
    (path / "config.json").write_text(
        json.dumps(config, indent=2) + "\n", encoding="utf-8"
    )
    safetensors.numpy.save_file(
        state_dict(params),
        str(path / "model.safetensors"),
        metadata={"format": "pt"},  # what transformers checks for
    )
    return path


class Model:
    """A GPT read from a folder by `load`.

    Attributes
    ----------
    config : Config
        The sizes, from ``config.json``.
    params : Params
        The weights.
    tokenizer : opbyop.bpe.BytePairs or None
        The folder's tokenizer, read from its ``vocab.json`` and
        ``merges.txt`` (None when it has none).
    folder : pathlib.Path
        Where the files were read from.
    """

    def __init__(
        self,
        params: Params,
        *,
        tokenizer: Any = None,
        folder: Path | None = None,
    ) -> None:
        self.config = params.config
        self.params = params
        self.tokenizer = tokenizer
        self.folder = folder

    def __repr__(self) -> str:
        return f"<gpt.Model {self.config} from {self.folder}>"

    def write(
        self,
        prompt: str,
        max_new_tokens: int,
        *,
        on_token: Callable[[str], object] | None = None,
        **settings: Any,
    ) -> str:
        """The text the model writes after `prompt` (the prompt not included).

        Encodes `prompt` with `tokenizer`, runs `generate` and decodes the
        new tokens.

        Parameters
        ----------
        prompt : str
            At least one token's worth of text.
        max_new_tokens : int
            How many tokens to write.
        on_token : callable, optional
            Called with each new piece of text as soon as it is written,
            for example ``lambda text: print(text, end="", flush=True)``.
            A character split across tokens comes once it is whole; the
            pieces join into the returned text.
        **settings
            `generate`'s keyword arguments: ``do_sample``, ``temperature``,
            ``top_k``, ``top_p``, ``min_p``, ``repetition_penalty``,
            ``seed``, ``use_cache``.

        Returns
        -------
        str

        Raises
        ------
        ValueError
            If the model has no tokenizer, `prompt` is empty, or an argument
            of `generate` is out of range.

        Examples
        --------
        >>> import tempfile
        >>> from opbyop import bpe, gpt
        >>> params = gpt.init(gpt.Config(256, 32, 1, 2, 8))
        >>> folder = gpt.save(params, tempfile.mkdtemp(),
        ...                   tokenizer=bpe.BytePairs.train("", 256))
        >>> model = gpt.load(folder)
        >>> pieces = []
        >>> text = model.write("Hi", 5, on_token=pieces.append)
        >>> "".join(pieces) == text  # the pieces as they came, in order
        True
        """
        if self.tokenizer is None:
            raise ValueError(
                f"this model has no tokenizer ({self.folder} holds no "
                "vocab.json and merges.txt): save it with "
                "gpt.save(params, folder, tokenizer=...), or call "
                "gpt.generate on token ids"
            )
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt)}")
        if on_token is not None and not callable(on_token):
            raise TypeError(f"on_token must be callable, got {on_token!r}")
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise ValueError("prompt is empty: the model needs a token")
        settings = _defaults(settings)
        rows, choose = _prepared(
            self.params, [ids], max_new_tokens, **settings
        )
        steps = _new_tokens(
            self.params, rows, max_new_tokens, choose, settings["use_cache"]
        )
        pieces = []
        for piece in _text_pieces(self.tokenizer, (int(t[0]) for t in steps)):
            if on_token is not None:
                on_token(piece)
            pieces.append(piece)
        return "".join(pieces)


# What config.json may say, for this code to compute what transformers does.
_TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh")
_HF_SIZES = {
    "vocab_size": "vocab_size",
    "n_positions": "context",
    "n_layer": "n_layers",
    "n_head": "n_heads",
    "n_embd": "d_model",
}
_IGNORED = (".attn.bias", ".attn.masked_bias")  # old checkpoints' mask buffers


def load(folder: str | Path | None = None) -> Model:
    """Read a GPT-2 folder: one `save` wrote, or a real GPT-2 checkpoint.

    With no folder, the model the package ships: a byte-level GPT trained
    on `opbyop.corpus` by `opbyop.train` (``tools/train_shipped_model.py``
    rebuilds it), its weights checked by SHA-256. Its folder
    (`Model.folder`) also holds ``log.json``, the run's log.

    Parameters
    ----------
    folder : str or pathlib.Path, optional
        Holds ``config.json`` and ``model.safetensors``, for example a
        Hugging Face cache snapshot of ``gpt2``. Names with or without the
        ``transformer.`` prefix are read; ``attn.bias`` mask buffers are
        ignored, and so is an ``lm_head.weight`` equal to the token table.

    Returns
    -------
    Model
        With the parameters in the file's dtype (float16 becomes float32).

    Raises
    ------
    FileNotFoundError
        If the folder or one of its two files is missing.
    ValueError
        If the shipped weights' SHA-256 is not the one recorded, or
        ``config.json`` is malformed or describes another architecture,
        or ``model.safetensors`` is truncated, malformed, lacks a tensor or
        has one of the wrong shape (the message names the file or tensor).

    Examples
    --------
    >>> import tempfile
    >>> from opbyop import gpt
    >>> params = gpt.init(gpt.Config(10, 8, 1, 2, 4))
    >>> model = gpt.load(gpt.save(params, tempfile.mkdtemp()))
    >>> model.config
    Config(vocab_size=10, context=8, n_layers=1, n_heads=2, d_model=4)

    The shipped model, byte-level, with a context of 256:

    >>> gpt.load().config
    Config(vocab_size=256, context=256, n_layers=4, n_heads=4, d_model=128)
    """
    if folder is None:
        return _shipped()
    if not isinstance(folder, (str, Path)):
        raise TypeError(
            f"folder must be a str or Path, got {type(folder).__name__}"
        )
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no folder at {path}")
    for name in ("config.json", "model.safetensors"):
        if not (path / name).is_file():
            raise FileNotFoundError(
                f"{path} has no {name}: a GPT-2 folder needs config.json "
                "and model.safetensors"
            )
    config = _read_config(path / "config.json")
    tensors = _read_tensors(path / "model.safetensors")
    params = from_state_dict(_our_names(tensors), config)
    tokenizer = None
    vocab_json, merges_txt = path / "vocab.json", path / "merges.txt"
    if vocab_json.is_file() and merges_txt.is_file():
        tokenizer = BytePairs.from_files(vocab_json, merges_txt)
        _check_tokenizer(tokenizer, config, str(vocab_json))
    return Model(params, tokenizer=tokenizer, folder=path)


# The shipped model's weights, as tools/train_shipped_model.py printed it.
_SHIPPED_SHA256 = (
    "6b3b9efe90393788a704ba25f2578fbc594b31ee2d3aa7d8aa2828ed61da063e"
)


def _shipped() -> Model:
    """The model in the package's data folder, its weights checked."""
    folder = Path(str(files("opbyop") / "data" / "model"))
    digest = hashlib.sha256(
        (folder / "model.safetensors").read_bytes()
    ).hexdigest()
    if digest != _SHIPPED_SHA256:
        raise ValueError(
            f"{folder / 'model.safetensors'} is damaged: its SHA-256 is "
            f"{digest}, not {_SHIPPED_SHA256}; reinstall opbyop"
        )
    return load(folder)


def _text_pieces(tokenizer: BytePairs, ids: Iterable[int]) -> Iterator[str]:
    """The text of `ids` piece by piece, each as soon as it is whole.

    A character whose bytes are split between tokens decodes as U+FFFD
    until its last byte comes, so trailing U+FFFDs wait for the next token;
    whatever is left at the end comes last.
    """
    new: list[int] = []
    shown = ""
    for token in ids:
        new.append(token)
        whole = tokenizer.decode(new).rstrip("\ufffd")
        if len(whole) > len(shown):
            yield whole[len(shown) :]
            shown = whole
    text = tokenizer.decode(new)
    if len(text) > len(shown):
        yield text[len(shown) :]


def _check_tokenizer(tokenizer: object, config: Config, name: str) -> None:
    if not isinstance(tokenizer, BytePairs):
        raise TypeError(
            f"{name} must be an opbyop.bpe.BytePairs, "
            f"got {type(tokenizer).__name__}"
        )
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(
            f"{name} has {tokenizer.vocab_size} tokens, more than the "
            f"model's vocab_size of {config.vocab_size}"
        )


def _read_config(file: Path) -> Config:
    try:
        found = json.loads(file.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{file} is not valid JSON: {error}") from None
    if not isinstance(found, dict):
        raise ValueError(f"{file} must hold a JSON object")

    def refuse(key: str, want: str) -> ValueError:
        return ValueError(
            f"{file}: {key} is {found.get(key, 'missing')!r}, expected {want}"
            " (this code runs GPT-2's architecture only)"
        )

    model_type = found.get("model_type")
    if model_type not in ("gpt2", VARIANT_MODEL_TYPE):
        raise refuse("model_type", f"'gpt2' or '{VARIANT_MODEL_TYPE}'")
    pieces: dict[str, Any] = dict(Config._field_defaults)
    if model_type == VARIANT_MODEL_TYPE:
        for key, choices in _PIECES.items():
            if found.get(key) not in choices:
                raise refuse(key, " or ".join(map(repr, choices)))
            pieces[key] = found[key]
    if (
        pieces["mlp"] == "gelu"
        and found.get("activation_function", "gelu_new") not in _TANH_GELUS
    ):
        raise refuse("activation_function", "'gelu_new'")
    eps_key, want_eps = "layer_norm_epsilon", LAYER_NORM_EPS
    if pieces["norm"] == "rms":
        eps_key, want_eps = "rms_norm_eps", RMS_NORM_EPS
    eps = found.get(eps_key, want_eps)
    if not isinstance(eps, (int, float)) or not math.isclose(eps, want_eps):
        raise refuse(eps_key, str(want_eps))
    theta = found.get("rope_theta", ROTARY_BASE)
    if pieces["positions"] == "rotary" and theta != ROTARY_BASE:
        raise refuse("rope_theta", str(ROTARY_BASE))
    flags = {
        "tie_word_embeddings": True,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
    }
    for key, want in flags.items():
        if found.get(key, want) is not want:
            raise refuse(key, str(want).lower())
    sizes: dict[str, Any] = {}
    for key, field in _HF_SIZES.items():
        value = found.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise refuse(key, "an integer")
        sizes[field] = value
    try:
        config = _checked_config(Config(**sizes, **pieces))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{file}: {error}") from None
    inner = found.get("n_inner")
    if inner is not None and inner != config.d_mlp:
        raise refuse("n_inner", f"null or {config.d_mlp}")
    return config


def _read_tensors(file: Path) -> dict[str, Array]:
    try:
        tensors = safetensors.numpy.load_file(str(file))
    except (safetensors.SafetensorError, OSError, ValueError) as error:
        raise ValueError(
            f"{file} is not a readable safetensors file (truncated or "
            f"malformed?): {error}"
        ) from None
    for name, tensor in tensors.items():
        if tensor.dtype == np.float16:
            tensors[name] = tensor.astype(np.float32)
    return tensors


def _our_names(tensors: dict[str, Array]) -> dict[str, Array]:
    """A checkpoint's tensors under `state_dict`'s names."""
    out = {}
    for name, tensor in tensors.items():
        if name.endswith(_IGNORED):
            continue
        if name == "lm_head.weight":
            continue  # checked below: tied weights only
        if not name.startswith("transformer."):
            name = f"transformer.{name}"  # as OpenAI's gpt2 on the Hub
        out[name] = tensor
    head = tensors.get("lm_head.weight")
    table = out.get("transformer.wte.weight")
    if head is not None and (table is None or not np.array_equal(head, table)):
        raise ValueError(
            "tensor lm_head.weight differs from the token table "
            "transformer.wte.weight: this code ties the two"
        )
    return out
