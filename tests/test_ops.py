"""The NumPy layer: softmax, attention_weights and attention on batched arrays."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import opbyop
from opbyop import attention, attention_weights, softmax

Array = np.ndarray[Any, Any]


def rand(*shape: int, seed: int = 0, dtype: Any = np.float64) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- the package


def test_the_package_exports_its_api() -> None:
    for name in ["attention", "attention_weights", "softmax"]:
        assert name in opbyop.__all__
        assert callable(getattr(opbyop, name))
    assert (Path(opbyop.__file__).parent / "py.typed").is_file()


def test_no_module_shares_a_name_with_an_exported_function() -> None:
    modules = {path.stem for path in Path(opbyop.__file__).parent.glob("*.py")}
    assert not modules & set(opbyop.__all__)


# ---------------------------------------------------------------- dtypes

DTYPES = [
    (np.float64, np.float64),
    (np.float32, np.float32),
    (np.float16, np.float16),
    (np.int64, np.float64),
    (np.int32, np.float64),
    (np.uint8, np.float64),
    (np.bool_, np.float64),
]


@pytest.mark.parametrize(("given", "returned"), DTYPES)
def test_dtypes(given: Any, returned: Any) -> None:
    x = (rand(2, 3, 4) * 3).astype(given)
    assert softmax(x).dtype == returned
    assert attention_weights(x, x).dtype == returned
    assert attention(x, x, x).dtype == returned


def test_python_lists_give_float64() -> None:
    assert softmax([1, 2]).dtype == np.float64
    assert attention([[1, 2]], [[3, 4]], [[5.0]]).dtype == np.float64


def test_float32_stays_float32_whatever_the_type_of_scale() -> None:
    x = rand(3, 5, dtype=np.float32)
    scales: list[Any] = [None, 0.5, np.float64(0.5), np.float32(0.5), 2]  # NumPy scalars too
    for scale in scales:
        assert attention(x, x, x, scale=scale).dtype == np.float32


def test_mixed_dtypes_are_refused_as_in_pytorch() -> None:
    f16, f32, f64 = (rand(2, 4, dtype=t) for t in (np.float16, np.float32, np.float64))
    match = r"q, k and v need the same dtype .* got q float32, k float16, v float32"
    with pytest.raises(TypeError, match=match):
        attention(f32, f16, f32)
    with pytest.raises(TypeError, match=r"q and k need the same dtype .* got q float32, k float64"):
        attention_weights(f32, f64)
    with pytest.raises(TypeError, match=r"got q int32, k float32, v float32"):
        attention(np.ones((2, 4), dtype=np.int32), f32, f32)  # integers count as float64
    # Integers, booleans and float64 all count as float64: no mix there.
    integers, booleans = np.ones((2, 4), dtype=np.int32), np.ones((2, 4), dtype=bool)
    assert attention(integers, booleans, f64).dtype == np.float64
    assert attention_weights([[1, 2]], [[0.5, 1.5]]).dtype == np.float64


def test_float16_is_computed_in_float32() -> None:
    q = np.full((2, 3), 150.0, dtype=np.float16)  # q @ q.T = 67500, past float16's 65504
    k = np.concatenate([q, -q])
    v = np.arange(8, dtype=np.float16).reshape(4, 2)
    weights = attention_weights(q, k)
    assert weights.dtype == np.float16
    np.testing.assert_allclose(weights, [[0.5, 0.5, 0, 0]] * 2)
    np.testing.assert_allclose(attention(q, k, v), [[1.0, 2.0]] * 2)
    want = softmax(rand(3, 7).astype(np.float32) * 4)
    got = softmax(rand(3, 7).astype(np.float16) * 4)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


# ---------------------------------------------------------------- shapes


def test_default_scale_uses_d_k_not_d_v() -> None:
    q, k, v = rand(4, 8, seed=1), rand(6, 8, seed=2), rand(6, 3, seed=3)
    expected = attention(q, k, v, scale=1 / math.sqrt(8))
    np.testing.assert_array_equal(attention(q, k, v), expected)
    assert not np.allclose(attention(q, k, v, scale=1 / math.sqrt(3)), expected)


def test_scale_multiplies_the_scores() -> None:
    q, k = rand(3, 4, seed=1), rand(5, 4, seed=2)
    np.testing.assert_allclose(attention_weights(q, k, scale=2.0), softmax(2 * q @ k.T))
    np.testing.assert_allclose(attention_weights(q, k, scale=0), np.full((3, 5), 0.2))


def test_weights_then_values() -> None:
    q, k, v = rand(2, 3, 4, seed=1), rand(2, 5, 4, seed=2), rand(2, 5, 6, seed=3)
    np.testing.assert_allclose(attention(q, k, v), attention_weights(q, k) @ v, rtol=1e-14)


@pytest.mark.parametrize(
    ("q", "k", "v", "out"),
    [
        ((3, 4), (5, 4), (5, 2), (3, 2)),
        ((7, 3, 4), (7, 5, 4), (7, 5, 2), (7, 3, 2)),
        ((2, 8, 3, 4), (2, 8, 5, 4), (2, 8, 5, 2), (2, 8, 3, 2)),
        ((2, 1, 3, 4), (5, 5, 4), (1, 5, 2), (2, 5, 3, 2)),  # batch dimensions broadcast
        ((2, 3, 4), (5, 4), (5, 2), (2, 3, 2)),  # one k and v for the whole batch
    ],
)
def test_batch_dimensions(
    q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], out: tuple[int, ...]
) -> None:
    got = attention(rand(*q, seed=1), rand(*k, seed=2), rand(*v, seed=3))
    assert got.shape == out
    assert attention_weights(rand(*q), rand(*k)).shape == (*out[:-1], k[-2])


def test_each_batch_entry_is_its_own_attention() -> None:
    q, k, v = rand(2, 3, 3, 4, seed=1), rand(2, 3, 5, 4, seed=2), rand(2, 3, 5, 2, seed=3)
    batched = attention(q, k, v)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(batched[i, j], attention(q[i, j], k[i, j], v[i, j]))


def test_no_queries_give_an_empty_result() -> None:
    assert attention(np.ones((0, 4)), np.ones((3, 4)), np.ones((3, 2))).shape == (0, 2)
    assert attention_weights(np.ones((2, 0, 4)), np.ones((3, 4))).shape == (2, 0, 3)


def test_no_keys_give_zeros_as_in_pytorch() -> None:
    out = attention(np.ones((3, 4)), np.ones((0, 4)), np.ones((0, 2)))
    np.testing.assert_array_equal(out, np.zeros((3, 2)))
    assert attention_weights(np.ones((3, 4)), np.ones((0, 4))).shape == (3, 0)


def test_vectors_of_size_zero_give_equal_weights_as_in_pytorch() -> None:
    v = rand(3, 2)
    np.testing.assert_allclose(attention(np.ones((2, 0)), np.ones((3, 0)), v), [v.mean(0)] * 2)


def test_softmax_axis() -> None:
    x = rand(2, 3, 4)
    for axis in range(-3, 3):
        np.testing.assert_allclose(softmax(x, axis=axis).sum(axis), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(
        softmax(x, axis=1), np.swapaxes(softmax(np.swapaxes(x, 1, 2)), 1, 2)
    )
    assert softmax(np.zeros((3, 0))).shape == (3, 0)
    assert softmax(np.zeros((0, 3))).shape == (0, 3)


# ---------------------------------------------------------------- numerics


def test_softmax_by_hand() -> None:
    e = math.e
    np.testing.assert_allclose(softmax([0.0, 1.0]), [1 / (1 + e), e / (1 + e)], rtol=1e-15)
    np.testing.assert_array_equal(softmax([[5.0, 5.0, 5.0, 5.0]]), [[0.25] * 4])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_no_warning_and_right_answers_for_extreme_finite_scores(dtype: Any) -> None:
    big = float(np.finfo(dtype).max)
    rows = [
        [big, -big, 0.0],  # big - (-big) overflows: exp of it is still 0
        [big / 2, -big / 2, 0.0],
        [-big, -big, -big],
        [big, big, big],
        [1e4, 1e-4, -1e-4],  # one huge score among tiny ones
    ]
    x = np.array(rows, dtype=dtype)
    want = np.array([[1, 0, 0], [1, 0, 0], [1 / 3] * 3, [1 / 3] * 3, [1, 0, 0]])
    np.testing.assert_allclose(softmax(x), want, rtol=1e-3)  # -W error: any warning fails
    np.testing.assert_allclose(softmax(x.T, axis=0), want.T, rtol=1e-3)
    if dtype != np.float16:
        x = np.array([[1e30, -1e30, 1e-30], [-1e30, -1e30, 0.0]], dtype=dtype)
        np.testing.assert_array_equal(softmax(x), [[1, 0, 0], [0, 0, 1]])


def test_large_finite_inputs_to_attention() -> None:
    v = rand(3, 2)
    k = np.array([[1e15], [-1e15], [3.0]])
    out = attention(np.array([[1e15], [-1e15]]), k, v)  # scores up to 1e30
    np.testing.assert_array_equal(out, [v[0], v[1]])
    k32 = k.astype(np.float32) * 1000  # scores up to 1e36, below float32's 3.4e38
    out32 = attention(np.array([[1e18], [-1e18]], dtype=np.float32), k32, v.astype(np.float32))
    np.testing.assert_array_equal(out32, v[:2].astype(np.float32))


def test_scores_past_the_dtype_overflow_to_nan_rows_as_in_pytorch() -> None:
    q = np.array([[1e20], [1.0]], dtype=np.float32)  # 1e20 * 1e20 > float32's 3.4e38
    k = np.array([[1e20], [1.0]], dtype=np.float32)
    v = np.array([[1.0], [2.0]], dtype=np.float32)
    out = attention(q, k, v)  # -W error: no RuntimeWarning either
    assert np.isnan(out[0]).all()
    assert np.isfinite(out[1]).all()  # only the overflowing row
    big = np.finfo(np.float64).max / 2
    out64 = attention([[big, big]], [[big, big]], [[1.0]])
    assert np.isnan(out64).all()


@pytest.mark.parametrize("n_k", [2, 3])
def test_scores_overflow_only_where_the_scaled_scores_do_as_in_sdpas_math_path(n_k: int) -> None:
    # q @ k.T is 4.5e38 for row 0 and key 0, past float32's 3.4e38; scaled by
    # 1/sqrt(2) it is 3.2e38, which fits. PyTorch's math path multiplies q and
    # k by sqrt(scale) each before the product and returns [1, 2] for row 0.
    q = np.array([[1.5e19, 1.5e19], [1, 0]], dtype=np.float32)
    k = np.array([[1.5e19, 1.5e19], [0, 1], [1, 1]][:n_k], dtype=np.float32)
    v = np.array([[1, 2], [3, 4], [5, 6]][:n_k], dtype=np.float32)
    out = attention(q, k, v)  # -W error: no RuntimeWarning either
    np.testing.assert_array_equal(out[0], [1, 2])
    weights = attention_weights(q, k)
    np.testing.assert_array_equal(weights[0], [1] + [0] * (n_k - 1))
    np.testing.assert_allclose(weights @ v, out, rtol=1e-6)  # the two functions agree


def test_a_row_whose_scores_all_overflow_to_minus_inf_gives_zeros_as_in_pytorch() -> None:
    # Every score of row 0 is -1e40: -inf in float32. SDPA treats such a row as
    # fully masked (zeros); torch.softmax, and so our softmax, gives nan.
    q = np.array([[1e20], [1.0]], dtype=np.float32)
    k = np.array([[-1e20], [-1e20]], dtype=np.float32)
    v = np.array([[1.0], [2.0]], dtype=np.float32)
    np.testing.assert_array_equal(attention(q, k, v), [[0.0], [1.5]])
    np.testing.assert_array_equal(attention_weights(q, k), [[0, 0], [0.5, 0.5]])
    assert np.isnan(softmax(np.array([-np.inf, -np.inf]))).all()


def test_a_negative_scale_flips_the_scores() -> None:
    q, k, v = rand(3, 4, seed=1), rand(5, 4, seed=2), rand(5, 2, seed=3)
    np.testing.assert_allclose(attention_weights(q, k, scale=-0.5), softmax(-0.5 * q @ k.T))
    np.testing.assert_allclose(attention(q, k, v, scale=-0.5), softmax(-0.5 * q @ k.T) @ v)


def test_values_near_the_largest_float_give_no_warning() -> None:
    big = np.finfo(np.float32).max
    v = np.array([[big], [big], [big]], dtype=np.float32)
    out = attention(rand(2, 4, dtype=np.float32), rand(3, 4, dtype=np.float32), v)
    assert ((out >= big * 0.999) | np.isinf(out)).all()


def test_infinite_and_nan_scores_give_nan_rows_as_in_pytorch() -> None:
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf], [inf, 1.0], [inf, -inf], [nan, 1.0], [-inf, 1.0]])
    got = softmax(x)
    assert np.isnan(got[:4]).all()
    np.testing.assert_array_equal(got[4], [0.0, 1.0])  # -inf beside finite scores: weight 0
    out = attention([[1.0], [np.inf]], [[1.0], [2.0]], [[1.0], [2.0]])
    assert np.isfinite(out[0]).all()
    assert np.isnan(out[1]).all()


def test_inputs_are_not_changed_and_results_are_new_arrays() -> None:
    x = rand(3, 4)
    before = x.copy()
    for result in [softmax(x), attention_weights(x, x), attention(x, x, x)]:
        assert not np.shares_memory(result, x)
    np.testing.assert_array_equal(x, before)


def test_attention_is_the_episodes_formula() -> None:
    # softmax(q k^T / sqrt(d_k)) v, written out in float64 with no opbyop function
    q, k, v = rand(3, 6, seed=1), rand(4, 6, seed=2), rand(4, 5, seed=3)
    scores = q @ k.T / math.sqrt(6)
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(attention_weights(q, k), weights, rtol=1e-13)
    np.testing.assert_allclose(attention(q, k, v), weights @ v, rtol=1e-13, atol=1e-15)


def test_linear_multiplies_by_the_transpose_then_adds_the_bias() -> None:
    from opbyop import linear

    x = np.array([[1.0, 2.0, 3.0]])
    weight = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])  # [d_out, d_in]
    assert linear(x, weight).tolist() == [[1.0, 5.0]]
    assert linear(x, weight, [1.0, -1.0]).tolist() == [[2.0, 4.0]]
    with pytest.raises(ValueError, match=r"weight \(2, 3\)"):
        linear(np.ones((1, 2)), weight)
    with pytest.raises(ValueError, match=r"bias needs shape \(2,\)"):
        linear(x, weight, [1.0])
