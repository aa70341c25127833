"""opbyop.layers: linear, layer_norm and gelu against independent float64 references.

The references are written out here with Python's ``math`` and ``statistics``
(``math.erf`` for GELU), one number at a time, not with the code under test,
or are PyTorch's values and exact ones committed by
``tools/make_layers_reference.py``.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from exact import layer_norm_exact
from numpy.testing import assert_allclose, assert_array_equal

from opbyop import gelu, layer_norm, linear
from opbyop.layers import _erf_float32

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(2024)
# PyTorch's layer norm and GELU, and exact GELU values: tools/make_layers_reference.py.
with np.load(Path(__file__).parent / "data" / "layers_reference.npz") as _data:
    REFERENCE = {name: _data[name] for name in _data.files}


def gelu_reference(x: Array) -> Array:
    """GELU in float64 with math.erf, number by number."""
    flat = [v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in np.asarray(x, float).ravel()]
    return np.array(flat).reshape(np.shape(x))


def layer_norm_reference(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """Layer norm in float64 with the statistics module, row by row."""
    rows = np.asarray(x, float).reshape(-1, np.shape(x)[-1])
    out = []
    for row in rows.tolist():
        mean, variance = statistics.fmean(row), statistics.pvariance(row)
        out.append([(v - mean) / math.sqrt(variance + eps) for v in row])
    return (np.array(out) * weight + bias).reshape(np.shape(x))


# ------------------------------------------------------------------ linear


def test_linear_on_a_batch_is_the_product_of_each_row() -> None:
    x = rng.standard_normal((2, 3, 5))
    weight, bias = rng.standard_normal((4, 5)), rng.standard_normal(4)
    want = np.einsum("bnd,od->bno", x, weight) + bias
    assert_allclose(linear(x, weight, bias), want, rtol=1e-12)
    assert linear(x[0, 0], weight).shape == (4,)
    assert linear(np.zeros((0, 5)), weight).shape == (0, 4)
    assert linear(np.zeros((2, 0)), np.zeros((3, 0))).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("rows", [1, 2, 12, 32, 33, 100])
def test_linear_gives_the_same_products_for_any_number_of_rows(rows: int) -> None:
    # A few rows take another route through BLAS (the weight on the left).
    x = rng.standard_normal((rows, 384)).astype(np.float32)
    weight, bias = rng.standard_normal((96, 384)).astype(np.float32), np.ones(96, np.float32)
    out = linear(x, weight, bias)
    assert out.flags.c_contiguous
    assert out.dtype == np.float32
    want = x.astype(float) @ weight.T.astype(float) + 1
    assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_linear_keeps_float32_and_promotes_integers() -> None:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((2, 4)).astype(np.float32)
    assert linear(x, w, np.zeros(2, np.float32)).dtype == np.float32
    assert linear([[1, 2]], [[1, 1]], [0.5]).tolist() == [[3.5]]  # int product, float bias


def test_linear_turns_integers_and_booleans_into_float64_as_its_module_says() -> None:
    # It used to keep int64 (and bool), unlike the rest of the library and PyTorch.
    ints = linear(np.array([[1, 2], [3, 4]]), np.array([[1, 1], [2, -1]]), np.array([1, 0]))
    assert ints.dtype == np.float64
    assert ints.tolist() == [[4.0, 0.0], [8.0, 2.0]]
    bools = linear(np.array([[True, False, True]]), np.array([[True, True, True]]))
    assert bools.dtype == np.float64
    assert bools.tolist() == [[2.0]]  # a sum, not a logical or
    big = linear(np.array([[2**40]]), np.array([[2**40]]))  # int64 would overflow
    assert big.tolist() == [[2.0**80]]


def test_linear_promotes_a_mix_of_dtypes_as_numpy_does() -> None:
    x32, w64 = np.ones((2, 3), np.float32), np.ones((4, 3))
    assert linear(x32, w64).dtype == np.float64
    assert linear(x32, w64.astype(np.float32), np.ones(4)).dtype == np.float64
    assert linear(np.ones((2, 3), np.int32), w64.astype(np.float32)).dtype == np.float64


def test_linear_computes_float16_in_float32() -> None:
    x = np.full((1, 4096), 0.1, dtype=np.float16)
    weight = np.ones((1, 4096), dtype=np.float16)
    out = linear(x, weight)
    assert out.dtype == np.float16
    assert out[0, 0] == np.float16(4096 * float(np.float16(0.1)))  # float16 sums drift


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (([["a", "b"]], [[1.0, 2.0]]), TypeError, "x must hold real numbers"),
        (([[1.0, 2.0]], [[1.0], [1.0, 2.0]]), ValueError, "weight has ragged rows"),
        (([[1.0, 2.0]], [[1.0, 2.0]], ["a"]), TypeError, "bias must hold real numbers"),
    ],
)
def test_linear_bad_input(args: tuple[Any, ...], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        linear(*args)


# ------------------------------------------------------------------ layer_norm


@pytest.mark.parametrize("eps", [1e-12, 1e-5, 0.5])
def test_layer_norm_matches_the_formula_in_float64(eps: float) -> None:
    x = rng.standard_normal((2, 3, 16)) * 3 + 1
    weight, bias = rng.standard_normal(16), rng.standard_normal(16)
    want = layer_norm_reference(x, weight, bias, eps)
    assert_allclose(layer_norm(x, weight, bias, eps=eps), want, rtol=1e-12, atol=1e-12)


def test_layer_norm_in_float32_is_float32_and_accurate() -> None:
    x = (rng.standard_normal((64, 384)) * 5).astype(np.float32)
    weight = rng.standard_normal(384).astype(np.float32)
    bias = rng.standard_normal(384).astype(np.float32)
    got = layer_norm(x, weight, bias, eps=1e-12)
    assert got.dtype == np.float32
    want = layer_norm_reference(x, weight, bias, 1e-12)
    assert_allclose(got, want, atol=3e-6)  # a few float32 roundings


def test_layer_norm_gives_mean_zero_and_variance_one_before_the_scale() -> None:
    x = rng.standard_normal((5, 7)) * 10 - 4
    out = layer_norm(x, eps=0.0)
    assert_allclose(out.mean(axis=-1), 0.0, atol=1e-12)
    assert_allclose(out.var(axis=-1), 1.0, rtol=1e-12)


def test_layer_norm_dtypes_follow_pytorch() -> None:
    assert layer_norm(np.ones((2, 3), np.float16)).dtype == np.float16
    assert layer_norm([[1, 2, 3]]).dtype == np.float64
    x32 = np.ones((2, 3), np.float32)
    assert layer_norm(x32, np.ones(3, np.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="x and weight need the same dtype"):
        layer_norm(x32, np.ones(3, np.float64))  # PyTorch refuses the mix too


def test_layer_norm_of_a_constant_row() -> None:
    x = np.full((1, 4), 3.0)
    assert layer_norm(x).tolist() == [[0.0] * 4]  # eps keeps it finite
    assert layer_norm(x, bias=[1, 2, 3, 4]).tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert np.isnan(layer_norm(x, eps=0.0)).all()  # 0 / 0, as in PyTorch, no warning


def cases(prefix: str) -> list[str]:
    """The names of the reference file's cases that start with `prefix`."""
    return sorted({name.split("__")[0] for name in REFERENCE if name.startswith(prefix)})


def case(name: str) -> tuple[Array, Array, Array, float, Array]:
    """A layer norm case: x, weight, bias, eps and PyTorch's output."""
    x, weight, bias, eps, out = (
        REFERENCE[f"{name}__{part}"] for part in ("x", "weight", "bias", "eps", "out")
    )
    return x, weight, bias, float(eps), out


def test_layer_norm_of_a_constant_row_is_the_bias_as_in_pytorch() -> None:
    # BERT-base's width and eps: this gave 2.18 or 0.74 (by BLAS), not 0.5.
    out = layer_norm(
        np.ones((1, 768), np.float32),
        np.full(768, 2, np.float32),
        np.full(768, 0.5, np.float32),
        eps=1e-12,
    )
    assert out.dtype == np.float32
    assert_array_equal(out, np.full((1, 768), 0.5, np.float32))


@pytest.mark.parametrize("name", cases("layer_norm_constant"))
def test_layer_norm_of_constant_rows_matches_pytorch_exactly(name: str) -> None:
    x, weight, bias, eps, want = case(name)
    got = layer_norm(x, weight, bias, eps=eps)
    assert got.dtype == x.dtype
    # PyTorch's own squares overflow for a row of 7e20 (float32) or 3e300 (float64):
    # it gives nan there, where the exact answer, the bias, is what we give.
    overflowed = np.isnan(want).all(axis=-1)
    assert overflowed.sum() <= 1
    assert_array_equal(got[~overflowed], want[~overflowed])
    assert_array_equal(got, np.broadcast_to(bias, x.shape))


@pytest.mark.parametrize("name", cases("layer_norm_near_constant"))
def test_layer_norm_of_nearly_constant_rows_is_exact_to_a_few_roundings(name: str) -> None:
    # Rows within a few roundings of 1 (or of 1e30): the old code erred by up to 5.8.
    x, weight, bias, eps, _ = case(name)
    exact = layer_norm_exact(x, weight, bias, eps)
    tolerance = 1e-6 if x.dtype == np.float32 else 4e-15
    assert_allclose(layer_norm(x, weight, bias, eps=eps), exact, rtol=0, atol=tolerance)


@pytest.mark.parametrize(
    "name", ["layer_norm_random_f32", "layer_norm_random_f64", "layer_norm_offset_f32"]
)
def test_layer_norm_matches_pytorch_and_the_exact_values(name: str) -> None:
    x, weight, bias, eps, want = case(name)
    got = layer_norm(x, weight, bias, eps=eps)
    exact = layer_norm_exact(x, weight, bias, eps)
    tolerance = 2e-6 if x.dtype == np.float32 else 1e-14
    assert_allclose(got, exact, rtol=0, atol=tolerance)
    if name != "layer_norm_offset_f32":  # PyTorch's float32 errs by 1.6e-4 on rows near 1000
        assert_allclose(got, want, rtol=0, atol=tolerance)


@pytest.mark.parametrize("d", [2**16, 2**20])
def test_layer_norm_is_accurate_on_long_float32_rows(d: int) -> None:
    # The old code erred by 2.9e-6 at 2**16 and 1.7e-4 at 2**20 (the squares summed in float32).
    x = (rng.standard_normal((2, d)) * 3 + 1).astype(np.float32)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(axis=-1, keepdims=True)) / np.sqrt(
        x64.var(axis=-1, keepdims=True) + 1e-5
    )
    got = layer_norm(x)
    assert got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-6  # as the docstring states


@pytest.mark.parametrize(
    ("dtype", "spread"),
    [
        (np.float32, 1e19),
        (np.float32, 1e30),
        (np.float32, 1e37),
        (np.float64, 1e154),
        (np.float64, 1e300),
    ],
)
def test_layer_norm_of_rows_whose_squares_overflow_is_finite_and_right(
    dtype: Any, spread: float
) -> None:
    # It used to return zeros here; PyTorch returns nan. The exact answer is finite.
    x = (rng.standard_normal((3, 64)) * (spread / 4)).astype(dtype)
    x[0] += dtype(spread / 8)  # one row off 0 too
    weight, bias = rng.standard_normal(64).astype(dtype), rng.standard_normal(64).astype(dtype)
    got = layer_norm(x, weight, bias, eps=1e-12)
    assert got.dtype == dtype
    exact = layer_norm_exact(x, weight, bias, 1e-12)
    assert_allclose(got, exact, rtol=0, atol=2e-6 if dtype == np.float32 else 1e-14)


def test_layer_norm_of_rows_holding_nan_or_inf_is_nan_as_in_pytorch() -> None:
    x = np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [-np.inf, np.inf, 0.0], [1.0, 2.0, 4.0]])
    out = layer_norm(x, eps=1e-12)
    assert np.isnan(out[:3]).all()
    assert_allclose(out[3], layer_norm_exact(x[3:], None, None, 1e-12)[0], rtol=1e-15)


def test_layer_norm_of_tiny_rows_with_eps_zero_is_still_normalised() -> None:
    # Squares of 1e-25 underflow float32 to 0: the rows are scaled first.
    x = (rng.standard_normal((2, 32)) * 1e-25).astype(np.float32)
    got = layer_norm(x, eps=0.0)
    assert_allclose(got, layer_norm_exact(x, None, None, 0.0), rtol=0, atol=1e-6)
    # With BERT's eps, eps outweighs such a variance, as it should.
    assert_allclose(layer_norm(x, eps=1e-12), layer_norm_exact(x, None, None, 1e-12), rtol=1e-6)


def test_layer_norm_refuses_a_negative_eps_as_its_docstring_says() -> None:
    # PyTorch takes eps = -0.5 and returns nan where variance < 0.5; we refuse it.
    with pytest.raises(ValueError, match=r"eps must be a finite number >= 0, got -0\.5"):
        layer_norm(np.ones((2, 4)), eps=-0.5)
    assert "negative eps is refused" in " ".join((layer_norm.__doc__ or "").split())


def test_layer_norm_does_not_change_its_input() -> None:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    before = x.copy()
    layer_norm(x, np.ones(4, np.float32), np.ones(4, np.float32))
    assert_array_equal(x, before)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"x": np.zeros((2, 0))}, ValueError, r"last dimension d >= 1, got shape \(2, 0\)"),
        ({"x": 3.0}, ValueError, r"got shape \(\)"),
        ({"x": [["a", "b"]]}, TypeError, "x must hold real numbers"),
        ({"x": [[1.0, 2.0], [3.0]]}, ValueError, "x has ragged rows"),
        ({"weight": np.ones(3)}, ValueError, r"weight needs shape \(4,\) to match x \(2, 4\)"),
        ({"bias": np.ones((1, 4))}, ValueError, r"bias needs shape \(4,\).*got \(1, 4\)"),
        ({"eps": -1.0}, ValueError, "eps must be a finite number >= 0, got -1.0"),
        ({"eps": math.nan}, ValueError, "eps must be"),
        ({"eps": True}, ValueError, "eps must be"),
        ({"eps": "1e-5"}, ValueError, "eps must be"),
    ],
)
def test_layer_norm_bad_input(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    args: dict[str, Any] = {"x": np.ones((2, 4))} | kwargs
    with pytest.raises(error, match=match):
        layer_norm(**args)


# ------------------------------------------------------------------ gelu


def dense_float32_grid() -> Array:
    """Every 2**-14 from -12 to 12, and small numbers of both signs down to 1e-38."""
    tiny = np.geomspace(1e-38, 1.0, 20_000)
    return np.concatenate([np.arange(-12, 12, 2**-14), tiny, -tiny]).astype(np.float32)


def test_erf_in_float32_is_within_two_tenths_of_a_millionth_of_math_erf() -> None:
    z = dense_float32_grid()
    exact = np.array([math.erf(v) for v in z.astype(float)])
    error = np.abs(_erf_float32(z).astype(float) - exact)
    assert error.max() < 2e-7  # float32's epsilon is 1.19e-7
    nonzero = exact != 0
    assert (error[nonzero] / np.abs(exact[nonzero])).max() < 3e-7  # relative, near 0 too


def test_gelu_in_float32_is_within_float32_rounding_of_the_exact_gelu() -> None:
    x = dense_float32_grid()
    got = gelu(x)
    assert got.dtype == np.float32
    error = np.abs(got.astype(float) - gelu_reference(x))
    assert (error / np.maximum(1.0, np.abs(x.astype(float)))).max() < 2e-7


def test_gelu_in_float64_is_exact_to_a_few_roundings() -> None:
    # Phi(x) to 16 digits from tables of the standard normal distribution.
    phi = {-2.0: 0.022750131948179195, -1.0: 0.15865525393145707, 0.5: 0.6914624612740131}
    x = np.array(list(phi))
    assert_allclose(gelu(x), x * np.array(list(phi.values())), rtol=1e-15)
    y = rng.standard_normal(1000) * 4
    # math.erf's reference is exact only in absolute terms (1 + erf cancels), ours relative.
    assert_allclose(gelu(y), gelu_reference(y), rtol=1e-15, atol=1e-15)


def test_gelu_in_float64_meets_the_relative_bound_its_docstring_states() -> None:
    # Exact values (mpmath, 40 digits) down to x = -37.5, where GELU is still normal.
    x, exact = REFERENCE["gelu_exact_f64__x"], REFERENCE["gelu_exact_f64__out"]
    normal = np.abs(exact) >= np.finfo(np.float64).tiny
    assert normal.sum() > 9800
    assert x.min() == -37.5
    relative = np.abs(gelu(x)[normal] - exact[normal]) / np.abs(exact[normal])
    assert (relative <= 3e-16 * (1 + x[normal] ** 2)).all()
    # Far out it is not -0.0, as 1 + erf would make it: -8.5 * Phi(-8.5) = -8.1e-17.
    assert gelu(np.array([-8.5]))[0] == pytest.approx(-8.1e-17, rel=0.01)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_gelu_matches_pytorch(approximate: str, dtype: str) -> None:
    x = REFERENCE[f"gelu_{approximate}_{dtype}__x"]
    want = REFERENCE[f"gelu_{approximate}_{dtype}__out"]
    got = gelu(x, approximate=approximate)
    assert got.dtype == x.dtype
    assert_array_equal(np.isnan(got), np.isnan(want))  # gelu(nan) and gelu(-inf) only
    assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    error = np.abs(got[finite].astype(float) - want[finite])
    scale = np.maximum(1.0, np.abs(x[finite].astype(float)))  # both are exact to a few ulps
    assert (error / scale).max() < (3e-7 if dtype == "f32" else 5e-16)


def test_gelu_tanh_in_float32_stays_float32_and_is_the_formula() -> None:
    x = np.linspace(-6, 6, 1201).astype(np.float32).astype(float)  # float32's numbers
    tanh_formula = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    got = gelu(x.astype(np.float32), approximate="tanh")
    assert got.dtype == np.float32
    assert_allclose(got, tanh_formula, rtol=3e-7, atol=1e-7)
    assert gelu(np.ones(2, np.float16), approximate="tanh").dtype == np.float16
    assert gelu([1, 2], "tanh").dtype == np.float64  # integers become float64
    assert 4.7e-4 < np.abs(gelu(x, approximate="tanh") - gelu(x)).max() < 4.8e-4


def test_gelu_of_a_single_number_is_a_0d_array() -> None:
    # The float64 path used to fail on it: frompyfunc gives a 0-d input a Python float.
    one = 0.8413447460685429  # 1 * Phi(1), to 16 digits
    for x in (np.float64(1.0), 1.0, 1, np.int64(1), True):
        out = gelu(x)
        assert out.shape == ()
        assert out.dtype == np.float64
        assert out == pytest.approx(one, rel=1e-15)
    assert gelu(np.float32(1.0)).dtype == np.float32
    assert gelu(np.float32(1.0)) == pytest.approx(one, rel=2e-7)
    assert gelu(1.0, approximate="tanh") == pytest.approx(0.8411919906082768, rel=1e-15)


@pytest.mark.parametrize("approximate", ["tanh ", "Tanh", "erf", None, True])
def test_gelu_refuses_an_unknown_approximation(approximate: Any) -> None:
    with pytest.raises(ValueError, match='approximate must be "none" or "tanh"'):
        gelu([1.0], approximate=approximate)


def test_gelu_keeps_shape_and_follows_pytorch_dtypes() -> None:
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    assert gelu(x).shape == (3, 4, 5)
    assert_allclose(gelu(x.transpose(2, 0, 1)), gelu(x).transpose(2, 0, 1), rtol=0)
    assert gelu(np.ones(3, np.float16)).dtype == np.float16
    assert gelu([1, 2]).dtype == np.float64
    assert gelu(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert gelu(np.float32(1.0)).shape == ()


def test_gelu_blocks_give_the_same_numbers_as_one_pass() -> None:
    x = rng.standard_normal(2**17 + 5).astype(np.float32) * 3  # two blocks and a bit
    assert_array_equal(gelu(x)[-10:], gelu(x[-10:]))
    big = rng.standard_normal((3, 2**18 + 7)).astype(np.float32) * 3
    pieces = [gelu(big[i, j : j + 2**15]) for i in range(3) for j in range(0, big.shape[1], 2**15)]
    assert_array_equal(gelu(big).ravel(), np.concatenate(pieces))
    assert_array_equal(gelu(big.T), gelu(big).T)  # not contiguous


def test_gelu_at_the_extremes_raises_no_warning() -> None:
    big = np.finfo(np.float32).max
    x = np.array([-big, -1e30, -20.0, 20.0, 1e30, big, np.inf, np.nan], dtype=np.float32)
    out = gelu(x)
    assert out[:3].tolist() == [0.0, 0.0, 0.0]  # -x * Phi(x) underflows to (-)0
    assert out[3:7].tolist() == x[3:7].tolist()  # Phi(x) is 1
    assert np.isnan(out[7])


def test_gelu_does_not_change_its_input() -> None:
    x = rng.standard_normal(100).astype(np.float32)
    before = x.copy()
    gelu(x)
    assert_array_equal(x, before)


def test_gelu_refuses_what_is_not_numbers() -> None:
    with pytest.raises(TypeError, match="x must hold real numbers"):
        gelu(["a"])
