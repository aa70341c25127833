"""Properties softmax, attention, layer_norm and gelu have for any input (hypothesis)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from exact import layer_norm_exact
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from opbyop import attention, gelu, layer_norm, scratch, softmax

Array = np.ndarray[Any, Any]


def floats(bound: float, width: Literal[16, 32, 64] = 64) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=width)


def matrices(
    dtype: Any = np.float64, elements: st.SearchStrategy[float] | None = None
) -> st.SearchStrategy[Array]:
    shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8)
    return hnp.arrays(dtype, shapes, elements=elements)


@st.composite
def qkv(draw: st.DrawFn, bound: float = 10.0) -> tuple[Array, Array, Array]:
    """Queries, keys and values of fitting shapes, with a batch dimension or not."""
    batch = draw(st.lists(st.integers(1, 3), max_size=1))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 6)) for _ in range(4))
    elements = floats(bound)
    q = draw(hnp.arrays(np.float64, (*batch, n_q, d_k), elements=elements))
    k = draw(hnp.arrays(np.float64, (*batch, n_k, d_k), elements=elements))
    v = draw(hnp.arrays(np.float64, (*batch, n_k, d_v), elements=elements))
    return q, k, v


@given(matrices(np.float64, floats(float(np.finfo(np.float64).max))))
def test_softmax_rows_add_up_to_one_float64(x: Array) -> None:
    weights = softmax(x)
    assert ((weights >= 0) & (weights <= 1)).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@given(matrices(np.float32, floats(float(np.finfo(np.float32).max), width=32)))
def test_softmax_rows_add_up_to_one_float32(x: Array) -> None:
    weights = softmax(x)
    assert weights.dtype == np.float32
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-6)


@given(matrices(np.float64, floats(100)), st.data())
def test_adding_a_constant_to_a_row_changes_nothing(x: Array, data: st.DataObject) -> None:
    shift = data.draw(hnp.arrays(np.float64, (*x.shape[:-1], 1), elements=floats(100)))
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=1e-12, atol=0)


@given(qkv(bound=1e3))
def test_each_output_lies_between_the_smallest_and_largest_value(args: tuple[Array, ...]) -> None:
    q, k, v = args
    out = attention(q, k, v)
    slack = 1e-12 * (1 + np.abs(v).max())  # rounding: the weights add up to 1 within a few ulps
    assert (out >= v.min(axis=-2, keepdims=True) - slack).all()
    assert (out <= v.max(axis=-2, keepdims=True) + slack).all()


@given(qkv(), st.randoms(use_true_random=False))
def test_permuting_the_queries_permutes_the_output(args: tuple[Array, ...], rnd: Any) -> None:
    q, k, v = args
    order = list(range(q.shape[-2]))
    rnd.shuffle(order)
    np.testing.assert_allclose(
        attention(q[..., order, :], k, v), attention(q, k, v)[..., order, :], rtol=1e-12, atol=1e-12
    )


@given(qkv(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(
    args: tuple[Array, ...], rnd: Any
) -> None:
    q, k, v = args
    order = list(range(k.shape[-2]))
    rnd.shuffle(order)
    np.testing.assert_allclose(
        attention(q, k[..., order, :], v[..., order, :]), attention(q, k, v), rtol=1e-12, atol=1e-12
    )


@settings(deadline=None)
@given(qkv())
def test_scratch_and_numpy_agree(args: tuple[Array, ...]) -> None:
    q, k, v = (x.reshape(-1, *x.shape[-2:])[0] for x in args)  # scratch takes one matrix
    from_scratch = scratch.attention(q.tolist(), k.tolist(), v.tolist())
    np.testing.assert_allclose(from_scratch, attention(q, k, v), rtol=1e-12, atol=1e-12)
    weights = scratch.softmax(q.tolist())
    np.testing.assert_allclose(weights, softmax(q), rtol=1e-12, atol=0)


# ---------------------------------------------------------------- masks


@given(qkv(), st.data())
def test_masking_a_key_is_deleting_it(args: tuple[Array, ...], data: st.DataObject) -> None:
    q, k, v = args
    n_k = k.shape[-2]
    keys = data.draw(hnp.arrays(np.bool_, n_k).filter(lambda keys: keys.any()))
    kept = np.flatnonzero(keys)
    np.testing.assert_allclose(
        attention(q, k, v, mask=keys),
        attention(q, k[..., kept, :], v[..., kept, :]),
        rtol=1e-12,
        atol=1e-12,
    )


@given(qkv(), st.data())
def test_each_query_with_its_own_mask_is_attention_over_its_kept_keys(
    args: tuple[Array, ...], data: st.DataObject
) -> None:
    q, k, v = (x.reshape(-1, *x.shape[-2:])[0] for x in args)  # one matrix each
    n_q, n_k = q.shape[0], k.shape[0]
    rows = hnp.arrays(np.bool_, n_k).filter(lambda keys: keys.any())  # a key left for each
    keep = np.stack([data.draw(rows) for _ in range(n_q)])
    out = attention(q, k, v, mask=keep)
    for i in range(n_q):
        kept = np.flatnonzero(keep[i])
        alone = attention(q[i : i + 1], k[kept], v[kept])
        np.testing.assert_allclose(out[i : i + 1], alone, rtol=1e-12, atol=1e-12)


@given(qkv(), st.integers(1, 6))
def test_causal_attention_on_a_prefix_is_the_prefix_of_the_outputs(
    args: tuple[Array, ...], prefix: int
) -> None:
    q, k, v = args
    n = min(q.shape[-2], k.shape[-2])  # the same length for queries and keys
    q, k, v = q[..., :n, :], k[..., :n, :], v[..., :n, :]
    p = min(prefix, n)
    whole = attention(q, k, v, is_causal=True)
    start = attention(q[..., :p, :], k[..., :p, :], v[..., :p, :], is_causal=True)
    np.testing.assert_allclose(start, whole[..., :p, :], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------ layer_norm and gelu

FLOAT_TYPES = st.sampled_from([np.float32, np.float64])
EPSILONS = st.sampled_from([0.0, 1e-12, 1e-5, 0.5])
BOUND = {np.float32: 1e-6, np.float64: 2e-15}  # layer_norm's docstring, before weight and bias


def normal_floats(dtype: Any) -> st.SearchStrategy[Array]:
    """Arrays of `dtype` holding any finite numbers but subnormal ones (which round x / 2)."""
    width: Literal[32, 64] = 32 if dtype == np.float32 else 64
    biggest = float(np.finfo(dtype).max)
    elements = st.floats(-biggest, biggest, width=width, allow_subnormal=False)
    return hnp.arrays(dtype, hnp.array_shapes(max_dims=2, max_side=20), elements=elements)


@st.composite
def rows(draw: st.DrawFn, kind: str) -> tuple[Array, Any]:
    """Rows of one kind, in float32 or float64, with magnitudes from tiny to huge."""
    dtype: Any = draw(FLOAT_TYPES)
    n, d = draw(st.integers(1, 3)), draw(st.integers(1, 40))
    info = np.finfo(dtype)
    exponent = draw(
        st.integers(-int(np.log2(float(info.max))) + 30, int(np.log2(float(info.max))) - 8)
    )
    size = 2.0**exponent
    x: Array
    if kind == "constant":
        x = np.full((n, d), draw(st.floats(-1, 1, allow_nan=False, width=32)) * size)
    else:
        unit = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-1, 1)))
        if kind == "near constant":  # a few roundings either side of one number
            steps = np.round(unit * draw(st.integers(1, 8)))
            x = size * (1 + steps * float(info.eps))
        else:
            x = size * unit
    return x.astype(dtype), dtype


@settings(max_examples=150, deadline=None)
@given(rows("constant"), EPSILONS, st.data())
def test_layer_norm_of_a_constant_row_is_the_bias(
    args: tuple[Array, Any], eps: float, data: st.DataObject
) -> None:
    x, dtype = args
    bias = data.draw(hnp.arrays(dtype, x.shape[-1:], elements=floats(10, width=32)))
    weight = np.full(x.shape[-1], 3, dtype)
    out = layer_norm(x, weight, bias, eps=eps)
    assert out.dtype == dtype
    if eps == 0:  # 0 / 0, as in PyTorch
        assert np.isnan(out).all()
    else:
        np.testing.assert_array_equal(out, np.broadcast_to(bias, x.shape))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["near constant", "spread"]).flatmap(rows), EPSILONS)
def test_layer_norm_is_within_its_stated_bound_of_the_exact_value(
    args: tuple[Array, Any], eps: float
) -> None:
    x, dtype = args
    exact = layer_norm_exact(x, None, None, eps)
    out = layer_norm(x, eps=eps)
    assert out.dtype == dtype
    defined = ~np.isnan(exact)  # a constant row with eps = 0
    assert np.isnan(out[~defined]).all()
    error = np.abs(out[defined].astype(np.float64) - exact[defined])
    assert (error <= BOUND[dtype] * np.maximum(1, np.abs(exact[defined]))).all()


@settings(max_examples=200, deadline=None)
@given(FLOAT_TYPES.flatmap(normal_floats), st.sampled_from(["none", "tanh"]))
def test_gelu_lies_between_0_and_x_and_gelu_x_minus_gelu_minus_x_is_x(x: Array, form: str) -> None:
    out = gelu(x, approximate=form)
    assert out.dtype == x.dtype
    assert np.isfinite(out).all()
    assert (np.minimum(x, 0) <= out).all()
    assert (out <= np.maximum(x, 0)).all()
    # x Phi(x) - (-x) Phi(-x) = x, as Phi(x) + Phi(-x) = 1 (and likewise for the tanh form)
    difference = out.astype(np.float64) - gelu(-x, approximate=form).astype(np.float64)
    rounding = float(np.finfo(x.dtype).eps)
    np.testing.assert_allclose(difference, x, rtol=4 * rounding, atol=0)


@settings(max_examples=200, deadline=None)
@given(normal_floats(np.float32))
def test_gelu_in_float32_is_float64_gelu_to_float32_rounding(x: Array) -> None:
    # Two different methods: a fitted erf and exp in float32, math.erfc in float64.
    got, exact = gelu(x).astype(np.float64), gelu(x.astype(np.float64))
    assert (np.abs(got - exact) <= 2e-7 * np.maximum(1, np.abs(x.astype(np.float64)))).all()
    # Far below 1, GELU(x) is x / 2 to within x**2 / sqrt(2 pi) (x / 2 not subnormal).
    tiny = (np.abs(x) < 1e-30) & (np.abs(x) >= 2 * np.finfo(np.float32).tiny)
    np.testing.assert_array_equal(got[tiny], x[tiny].astype(np.float64) / 2)
