"""The layers of a transformer block in NumPy: linear, layer norm, GELU.

And the pieces Llama-style models use instead, each with its backward:
RMS norm, the SwiGLU MLP (with SiLU) and rotary positions.

Weights follow PyTorch's ``nn.Linear`` layout, ``[d_out, d_in]``, as BERT-style
checkpoints (all-MiniLM-L6-v2 among them) store them. Numerics follow PyTorch:
float32 and float64 stay as they are, float16 is computed in float32 and
returned as float16, integers and booleans become float64.

References
----------
.. [1] J. L. Ba, J. R. Kiros and G. E. Hinton, "Layer Normalization", 2016,
   arXiv:1607.06450.
.. [2] D. Hendrycks and K. Gimpel, "Gaussian Error Linear Units (GELUs)",
   2016, arXiv:1606.08415.
.. [3] B. Zhang and R. Sennrich, "Root Mean Square Layer Normalization",
   2019, arXiv:1910.07467.
.. [4] N. Shazeer, "GLU Variants Improve Transformer", 2020,
   arXiv:2002.05202.
.. [5] J. Su et al., "RoFormer: Enhanced Transformer with Rotary Position
   Embedding", 2021, arXiv:2104.09864.
"""

from __future__ import annotations

import math
from functools import lru_cache
from numbers import Real
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from opbyop._checks import cast, check_dtypes, real_array, work_dtype

__all__ = [
    "gelu",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "linear",
    "linear_backward",
    "rms_norm",
    "rms_norm_backward",
    "rotary",
    "rotary_backward",
    "silu",
    "silu_backward",
    "swiglu",
    "swiglu_backward",
]

FloatArray = NDArray[np.floating[Any]]

# From 2 to about 40 rows, weight @ rows.T is quicker than rows @ weight.T (OpenBLAS).
_FEW_ROWS = (2, 32)


def linear(
    x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None
) -> FloatArray:  # [..., d_in], [d_out, d_in], [d_out] -> [..., d_out]
    """Multiply by a matrix, then add a bias: ``x @ weight.T + bias``.

    `weight` is stored ``[d_out, d_in]``, as PyTorch's ``nn.Linear`` and
    BERT-style checkpoints store it; GPT-2's ``Conv1D`` stores the
    transpose, ``[d_in, d_out]``, for which ``x @ weight`` is right.

    Parameters
    ----------
    x : array_like, shape (..., d_in)
        The inputs, one row per token.
    weight : array_like, shape (d_out, d_in)
        The matrix, one row per output number.
    bias : array_like, shape (d_out,), optional
        Added to every output row.

    Returns
    -------
    numpy.ndarray, shape (..., d_out)
        float32 and float64 stay as they are, float16 is computed in float32,
        integers and booleans give float64. A mix of dtypes gives the wider
        one, as in NumPy (integers and booleans counting as float64):
        float32 with float64 is float64.

    Examples
    --------
    >>> from opbyop import linear
    >>> linear([[1.0, 2.0]], [[1.0, 0.0], [1.0, 1.0]], [0.5, 0.0]).tolist()
    [[1.5, 3.0]]
    >>> linear([[1, 2]], [[1, 1]]).dtype
    dtype('float64')
    """
    # The usual case (arrays of one float dtype that fit) in a few
    # comparisons: the full checks cost more than a one-token product.
    plain = _plain(x, weight, bias)
    x, weight, bias, out_dtype = plain or _checked_linear(x, weight, bias)
    # One 2-D product for all the rows: BLAS is about 3x faster on one tall
    # matrix than on a stack of short ones.
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    if _FEW_ROWS[0] <= rows.shape[0] <= _FEW_ROWS[1]:
        # The same products with the weight on the left: for a few rows (a
        # sentence's tokens), OpenBLAS computes them up to 1.7x faster.
        out = np.ascontiguousarray((weight @ rows.T).T)
    else:
        out = rows @ weight.T
    out = out.reshape(*x.shape[:-1], weight.shape[0])
    if bias is not None:
        out += bias  # in place: one array fewer
    return out.astype(out_dtype, copy=False)


def _plain(
    x: object, weight: object, bias: object
) -> tuple[FloatArray, FloatArray, FloatArray | None, np.dtype[Any]] | None:
    """As `_checked_linear`, if x, weight (and bias) are arrays of one float dtype that fit."""
    if not (
        type(x) is np.ndarray
        and type(weight) is np.ndarray
        and x.dtype in _LIMITS
        and weight.dtype == x.dtype
        and weight.ndim == 2
        and x.ndim >= 1
        and x.shape[-1] == weight.shape[1]
    ):
        return None
    if bias is not None and not (
        type(bias) is np.ndarray and bias.dtype == x.dtype and bias.shape == weight.shape[:1]
    ):
        return None
    return x, weight, bias, x.dtype


def _checked_linear(
    x: ArrayLike, weight: ArrayLike, bias: ArrayLike | None
) -> tuple[FloatArray, FloatArray, FloatArray | None, np.dtype[Any]]:
    """`linear`'s arguments checked and in the dtype to compute in, and the dtype to return."""
    x, weight = real_array(x, "x"), real_array(weight, "weight")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            "linear needs x (..., d_in) and weight (d_out, d_in): "
            f"got x {x.shape}, weight {weight.shape}"
        )
    arrays = {"x": x, "weight": weight}
    if bias is not None:
        arrays["bias"] = real_array(bias, "bias")
        if arrays["bias"].shape != (weight.shape[0],):
            raise ValueError(
                f"bias needs shape ({weight.shape[0]},) to match weight "
                f"{weight.shape}, got {arrays['bias'].shape}"
            )
    (x, weight, *rest), out_dtype = _promoted(*arrays.values())
    return x, weight, rest[0] if rest else None, out_dtype


def _promoted(*arrays: NDArray[Any]) -> tuple[list[FloatArray], np.dtype[Any]]:
    """The arrays in the one dtype to compute in, and the dtype to return.

    As `cast`, but a mix of dtypes is promoted (as NumPy promotes it), not refused.
    """
    first = arrays[0].dtype
    if first in _LIMITS and all(x.dtype == first for x in arrays[1:]):  # float32 or float64
        return list(arrays), first  # the usual case: nothing to convert
    out_dtype = np.result_type(*(work_dtype(x.dtype) for x in arrays))
    return cast(*(x.astype(out_dtype, copy=False) for x in arrays))[0], out_dtype


def layer_norm(
    x: ArrayLike,
    weight: ArrayLike | None = None,
    bias: ArrayLike | None = None,
    *,
    eps: float = 1e-5,
) -> FloatArray:  # [..., d], [d], [d] -> [..., d]
    """Normalise each row to mean 0 and variance 1, then scale and shift it.

    ``(x - mean) / sqrt(variance + eps) * weight + bias``, with the mean and
    the variance of each row (its last axis), as
    ``torch.nn.functional.layer_norm`` computes it over the last dimension.
    The variance divides by ``d``, not ``d - 1``. A constant row gives
    exactly `bias`, as in PyTorch.

    Parameters
    ----------
    x : array_like, shape (..., d)
        The rows to normalise, one per token.
    weight : array_like, shape (d,), optional
        Multiplies every normalised row (learned). Default: ones.
    bias : array_like, shape (d,), optional
        Then added to it (learned). Default: zeros.
    eps : float, optional
        Added to the variance, so a constant row does not divide by zero.
        Default 1e-5, PyTorch's; BERT-style models, all-MiniLM-L6-v2 among
        them, use 1e-12. A negative eps is refused with a ValueError
        (PyTorch takes it, and gives nan where the variance is below -eps).
        With eps = 0, a constant row is 0 / 0: nan, as in PyTorch.

    Returns
    -------
    numpy.ndarray, shape (..., d)
        float32 and float64 stay as they are, float16 is computed in
        float32, integers and booleans give float64. A row holding nan or
        inf gives nan, as in PyTorch.

    Notes
    -----
    The mean and the variance come from two passes over each row, the
    variance from the centred numbers, and what rounding leaves of the mean
    is measured and taken off where it would show: before `weight` and
    `bias`, each normalised number is within ``1e-6 * max(1, |y|)`` of the
    exact one ``y`` in float32, and ``2e-15 * max(1, |y|)`` in float64, at
    any magnitude and any length (rows longer than 4096 numbers are summed in
    float64). PyTorch's float32 errs by up to 0.17 on rows within a few
    roundings of a constant, where the variance is near eps. Rows whose
    squares overflow (a spread of 1e19 in float32, 1e154 in float64) are
    scaled by a power of two first, so they give the finite right answer,
    where PyTorch gives nan.

    Examples
    --------
    >>> from opbyop import layer_norm
    >>> layer_norm([[1.0, 2.0, 3.0]], eps=0.0).round(4)
    array([[-1.2247,  0.    ,  1.2247]])
    >>> weight, bias = [2.0, 2.0, 2.0], [0.0, 0.0, 1.0]
    >>> layer_norm([[1.0, 2.0, 3.0]], weight, bias, eps=0.0).round(4)
    array([[-2.4495,  0.    ,  3.4495]])
    """
    rows = real_array(x, "x")
    if rows.ndim < 1 or rows.shape[-1] == 0:
        raise ValueError(f"layer_norm needs x with a last dimension d >= 1, got shape {rows.shape}")
    weight, bias = _vector(weight, "weight", rows), _vector(bias, "bias", rows)
    if not (type(eps) is float and 0 <= eps < math.inf) and (  # a float: the quick check
        isinstance(eps, bool) or not isinstance(eps, Real) or not 0 <= eps < math.inf
    ):
        raise ValueError(f"layer_norm: eps must be a finite number >= 0, got {eps!r}")
    out_dtype = rows.dtype
    if not (  # the usual case, float32 or float64 throughout: nothing to convert
        out_dtype in _LIMITS
        and (weight is None or weight.dtype == out_dtype)
        and (bias is None or bias.dtype == out_dtype)
    ):
        given = {"x": rows, "weight": weight, "bias": bias}
        arrays = {name: a for name, a in given.items() if a is not None}
        check_dtypes(**arrays)  # one dtype for all, as in PyTorch
        converted, out_dtype = cast(*arrays.values())
        params = dict(zip(arrays, converted, strict=True))
        rows, weight, bias = params["x"], params.get("weight"), params.get("bias")
    out = _normalized(rows, float(eps))
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out if out.dtype == out_dtype else out.astype(out_dtype)


def _vector(p: ArrayLike | None, name: str, x: NDArray[Any]) -> NDArray[Any] | None:
    """`p` as one number per column of `x`, or None."""
    if p is None:
        return None
    vector = real_array(p, name)
    if vector.shape != x.shape[-1:]:
        raise ValueError(
            f"layer_norm: {name} needs shape ({x.shape[-1]},) to match x {x.shape}, "
            f"got {vector.shape}"
        )
    return vector


def _normalized(rows: FloatArray, eps: float) -> FloatArray:  # [..., d] -> [..., d]
    """``(rows - mean) / sqrt(variance + eps)``, row by row, in a new array.

    The statistics are products with vectors (BLAS is several times faster
    than ``.mean()``), in two passes: the variance from the centred rows.
    """
    d, limits = rows.shape[-1], _LIMITS[rows.dtype]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # nan, inf: nan
        # The mean, times a rounded 1/d: off by a rounding or so, which `left` measures.
        out = rows - (rows @ _filled(d, 1 / d, rows.dtype))[..., np.newaxis]
        left = _row_sums(out)  # d times what is left of the mean
        squares = _row_dots(out)
        scale = math.sqrt(d) / np.sqrt(squares + d * eps)  # 1 / sqrt(variance + eps)
        # (what is left of the mean / the spread about it)**2, times d, at most:
        left *= left
        left /= squares
        left_over_spread = left.max(initial=0.0)
    # Almost always (on every row of all-MiniLM-L6-v2), what is left of the mean
    # is under half a rounding of the row's spread, as the subtraction's own
    # rounding is: then no output moves by more, and a pass over the rows is
    # saved. Otherwise (a row far from 0 for its spread, a constant row), where
    # the squares overflow (a scale of 0) and where they underflow and eps
    # cannot make up for it, the rows are redone.
    if (
        not left_over_spread <= d * limits.half_rounding**2
        or scale.min(initial=1.0) == 0
        or (eps < limits.tiny and squares.min(initial=np.inf) < d * limits.tiny)
    ):
        return _recentred(rows, out, eps)
    out *= scale[..., np.newaxis]
    return out


class _Limits(NamedTuple):
    half_rounding: float  # half the distance from 1 to the next number
    tiny: float  # the smallest normal number


_LIMITS = {
    np.dtype(t): _Limits(float(np.finfo(t).eps) / 2, float(np.finfo(t).tiny))
    for t in (np.float32, np.float64)
}


def _recentred(rows: FloatArray, out: FloatArray, eps: float) -> FloatArray:
    """`_normalized` for rows whose mean is still off or whose squares overflow or underflow.

    `out` is `rows` minus their rounded means. Its own mean is taken off,
    as a sum divided by d (not a product with a rounded 1/d): a constant
    row's deviations are all one number of a few significant bits, whose sum
    is exact, so the row becomes exactly 0, as in PyTorch. Rows whose
    squares overflow (or, with eps below the dtype's smallest normal number,
    underflow) are scaled by a power of two first.
    """
    d, tiny = rows.shape[-1], _LIMITS[rows.dtype].tiny
    # Overflow and underflow are found below; eps = 0 and a constant row: nan, as in PyTorch.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(2):  # the second time takes off what the first one's rounding left
            out -= (_row_sums(out) / d)[..., np.newaxis]
        squares = _row_dots(out)
        scale = math.sqrt(d) / np.sqrt(squares + d * eps)
        wild = (squares == np.inf) | ((squares < d * tiny) & (eps < tiny))
        if wild.any():
            out[wild] = _scaled_normalized(rows[wild], eps)
            scale[wild] = 1.0
        out *= scale[..., np.newaxis]
    return out


def _scaled_normalized(rows: FloatArray, eps: float) -> FloatArray:  # [m, d] -> [m, d]
    """`_normalized` with each row first scaled by a power of two to bring it near 1.

    For rows whose squares overflow or underflow the dtype. A scale by a
    power of two is exact; eps is scaled with the squares (by its square),
    and so as not to make ``eps * scale**2`` overflow, rows are scaled up at
    most to where it is 1: further, eps outweighs the variance anyway.
    """
    biggest = np.abs(rows).max(axis=-1, initial=0.0)
    _, exponent = np.frexp(biggest)  # biggest = m * 2**exponent, 0.5 <= m < 1
    power = -exponent.astype(np.int64)
    if eps > 0:  # eps * 2**(2 * power) at most 1
        power = np.minimum(power, math.floor(-math.log2(eps) / 2))
    power[~np.isfinite(biggest)] = 0  # inf or nan rows: nan, as in PyTorch
    with np.errstate(divide="ignore", invalid="ignore"):  # eps = 0, constant row: nan
        scaled = np.ldexp(rows, power[:, np.newaxis].astype(np.int32))
        centred = scaled - scaled.mean(axis=-1, keepdims=True)
        centred -= centred.mean(axis=-1, keepdims=True)  # exact for a constant row, as above
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        eps_scaled = np.ldexp(eps, 2 * power)[:, np.newaxis].astype(rows.dtype)
        centred *= 1 / np.sqrt(variance + eps_scaled)
    return centred


@lru_cache(maxsize=16)
def _filled(d: int, value: float, dtype: np.dtype[Any]) -> FloatArray:
    """A read-only vector of `d` copies of `value`, kept for the sizes last used."""
    vector = np.full(d, value, dtype=dtype)
    vector.flags.writeable = False
    return vector


def _row_sums(x: FloatArray) -> FloatArray:  # [..., d] -> [...]
    """Each row's sum, in the dtype of `x` (a product with ones: BLAS is fastest)."""
    if x.shape[-1] > _LONG_ROWS:
        return np.einsum("...i->...", x, dtype=np.float64).astype(x.dtype)
    return x @ _filled(x.shape[-1], 1.0, x.dtype)


def _row_dots(x: FloatArray) -> FloatArray:  # [..., d] -> [...]
    """Each row's dot product with itself, its sum of squares, in the dtype of `x`."""
    if x.shape[-1] > _LONG_ROWS:
        return np.einsum("...i,...i->...", x, x, dtype=np.float64).astype(x.dtype)
    if _vecdot is not None:  # NumPy 2: 3x faster than einsum
        dots: FloatArray = _vecdot(x, x)
        return dots
    return np.einsum("...i,...i->...", x, x)


_vecdot = getattr(np, "vecdot", None)


def _column_sums(rows: FloatArray) -> FloatArray:  # [m, d] -> [d]
    """Each column's sum, as a product with ones (BLAS: twice as fast as ``sum``)."""
    if rows.shape[0] > _LONG_ROWS:
        return rows.sum(axis=0, dtype=np.float64).astype(rows.dtype)
    return _filled(rows.shape[0], 1.0, rows.dtype) @ rows


# Summed in float32, a row loses about a rounding per thousand numbers (3e-6
# at 2**20, against 1e-7 at 384): longer rows are summed in float64.
_LONG_ROWS = 4096


def gelu(x: ArrayLike, approximate: str = "none") -> FloatArray:  # [...] -> [...]
    """The Gaussian error linear unit, ``x * Phi(x)``, or its tanh approximation.

    ``Phi(x) = (1 + erf(x / sqrt(2))) / 2`` is the chance that a standard
    normal number is below `x`: GELU lets large positive inputs through, turns
    large negative ones into 0, and bends smoothly in between. The exact form
    is the one BERT and all-MiniLM-L6-v2 use (``hidden_act`` "gelu"). The tanh
    approximation, ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``,
    is GPT-2's ("gelu_new"). The names of `approximate` are PyTorch's.

    Parameters
    ----------
    x : array_like
        Any shape, a single number too.
    approximate : {"none", "tanh"}, optional
        "none" (the default): the exact form. "tanh": the tanh approximation,
        within 4.8e-4 of it.

    Returns
    -------
    numpy.ndarray
        Same shape as `x` (a 0-d array for a single number). float32 and
        float64 stay as they are, float16 is computed in float32, integers
        and booleans give float64. ``gelu(-inf)`` is ``nan``, as in PyTorch.

    Notes
    -----
    NumPy has no erf. For float32 (and float16, computed in float32) this
    function computes ``erf(z)`` as ``tanh(z * P(z**2))``, with ``P`` a
    polynomial of degree 6 in ``z**2`` fitted by ``tools/fit_erf.py``: against
    ``math.erf`` in float64 it is within 2e-7 everywhere (under two float32
    epsilons, about float32 rounding). Rewritten with
    ``(1 + tanh(u)) / 2 = 1 / (1 + exp(-2u))``, GELU becomes
    ``x / (1 + exp(x * Q(x**2)))``: 17 passes over the numbers with NumPy's
    vectorised ``exp``, a block at a time so each block stays in the CPU
    cache. The result is within ``2e-7 * max(1, |x|)`` of the exact GELU.

    float64 (and integer) input uses ``math.erfc`` on each number instead,
    as ``x * erfc(-x / sqrt(2)) / 2``, much more slowly. Unlike
    ``x * (1 + erf(x / sqrt(2))) / 2``, PyTorch's formula, which is exact
    only to within 2.3e-16 in absolute terms and gives -0.0 for every x
    below about -8.5, it is accurate relative to the result in the negative
    tail too: within ``3e-16 * (1 + x**2)`` of the exact GELU, relative to
    it (the ``x**2`` is the tail's sensitivity to the rounding of
    ``x / sqrt(2)``), wherever that is a normal float64, for x above about
    -37.5. Further out the exact GELU is subnormal, then rounds to -0.0.

    The tanh approximation goes through the same identity, with
    ``Q(s) = -2 * sqrt(2 / pi) * (1 + 0.044715 * s)``, in float32 and float64
    alike: 7 passes. It is within a few roundings of
    ``torch.nn.functional.gelu(x, approximate="tanh")``, and more accurate
    than it where ``x`` is very negative, where ``1 + tanh`` cancels.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gelu
    >>> gelu(np.array([-3.0, -1.0, 0.0, 1.0, 3.0])).round(4)
    array([-0.004 , -0.1587,  0.    ,  0.8413,  2.996 ])
    >>> gelu(np.array([-3.0, -1.0, 0.0, 1.0, 3.0]), approximate="tanh").round(4)
    array([-0.0036, -0.1588,  0.    ,  0.8412,  2.9964])
    >>> gelu(np.array([1.0], dtype=np.float32)).dtype
    dtype('float32')
    """
    if not isinstance(approximate, str) or approximate not in _GELU_FORMS:
        raise ValueError(f'gelu: approximate must be "none" or "tanh", got {approximate!r}')
    values = real_array(x, "x")
    (values,), out_dtype = cast(values)
    if approximate == "tanh":
        out = _gelu_by_exp(values, _TANH_COEFFICIENTS[values.dtype.type])
    elif values.dtype == np.float32:
        out = _gelu_by_exp(values, _GELU_COEFFICIENTS)
    else:
        out = _gelu_float64(values)
    return out.astype(out_dtype, copy=False)


_GELU_FORMS = ("none", "tanh")  # as PyTorch spells them


def _gelu_float64(x: FloatArray) -> FloatArray:
    """``x * erfc(-x / sqrt(2)) / 2``, with ``math.erfc`` on each number."""
    flat = x.reshape(-1)  # at least one dimension: frompyfunc gives a 0-d input a float
    tails = np.asarray(np.frompyfunc(math.erfc, 1, 1)(flat * -math.sqrt(0.5)), dtype=np.float64)
    with np.errstate(invalid="ignore"):  # gelu(-inf) = -inf * 0: nan, as in PyTorch
        out = flat * 0.5 * tails  # x / 2 first: x * 2 would overflow near float64's largest
    return out.reshape(x.shape)


# erf(z) = tanh(z * P(z**2)), P's coefficients lowest power first, from
# tools/fit_erf.py (a minimax fit of the relative error of erf on [0, 4]).
_ERF_COEFFICIENTS = (
    1.1283792743070922,
    0.10276905579032322,
    -0.000191830809094008,
    -0.0006197846436221951,
    8.763731842853452e-05,
    -5.668473690974405e-06,
    1.4185209105743207e-07,
)
# Phi(x) = (1 + tanh(g)) / 2 = 1 / (1 + exp(-2g)) with g = x / sqrt(2) * P(x**2 / 2),
# so GELU(x) = x / (1 + exp(x * Q(x**2))), Q's k-th coefficient -sqrt(2) * p_k / 2**k.
_GELU_COEFFICIENTS = np.array(
    [-math.sqrt(2) * p / 2**k for k, p in enumerate(_ERF_COEFFICIENTS)], dtype=np.float32
)
# The tanh form: (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)) with u = c * (x + 0.044715 x**3),
# so GELU(x) = x / (1 + exp(x * Q(x**2))) with Q(s) = -2c - 2c * 0.044715 s.
_TANH_C = math.sqrt(2 / math.pi)
_TANH_COEFFICIENTS: dict[type[np.floating[Any]], FloatArray] = {
    dtype: np.array([-2 * _TANH_C, -2 * _TANH_C * 0.044715], dtype=dtype)
    for dtype in (np.float32, np.float64)
}
_GELU_BLOCK = 2**16  # numbers per block: 256 KiB of float32, within the L2 cache


def _erf_float32(z: NDArray[np.float32]) -> NDArray[np.float32]:
    """erf in float32 as `gelu` computes it, written out for the tests to measure."""
    p = _ERF_COEFFICIENTS_32
    s = z * z
    out = s * p[-1]
    for c in p[-2:0:-1]:  # Horner's rule, as in _gelu_by_exp
        out += c
        out *= s
    out += p[0]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.tanh(out * z)


_ERF_COEFFICIENTS_32 = np.array(_ERF_COEFFICIENTS, dtype=np.float32)


def _gelu_by_exp(x: FloatArray, q: FloatArray) -> FloatArray:
    """``x / (1 + exp(x * Q(x**2)))``, Q's coefficients `q`, a cache-sized block at a time."""
    flat = x.reshape(-1)  # a view when x is contiguous
    out = np.empty_like(flat)
    squares = np.empty(min(flat.size, _GELU_BLOCK), dtype=x.dtype)
    # Far out, x**2 or exp overflow to inf: the result is still x or -0.0.
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, flat.size, _GELU_BLOCK):
            xb, ob = flat[start : start + _GELU_BLOCK], out[start : start + _GELU_BLOCK]
            s = np.multiply(xb, xb, out=squares[: xb.size])
            np.multiply(s, q[-1], out=ob)
            for c in q[-2:0:-1]:  # Horner's rule, down to the constant term
                ob += c
                ob *= s
            ob += q[0]
            ob *= xb
            np.exp(ob, out=ob)
            ob += 1
            np.divide(xb, ob, out=ob)
    return out.reshape(x.shape)


# ---------------------------------------------------------------- backward
#
# Each function below takes what its forward took, plus `dy`, the gradient of
# the loss with respect to the forward's output, and returns the gradients
# with respect to the forward's inputs: the chain rule, one operation at a
# time. `opbyop.gpt.loss_and_grads` chains them through a whole model.


def linear_backward(
    dy: ArrayLike, x: ArrayLike, weight: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    # [..., d_out], [..., d_in], [d_out, d_in] -> [..., d_in], [d_out, d_in], [d_out]
    """The gradients of `linear`: ``dx = dy @ weight``, ``dweight = dy.T @ x``, ``dbias``.

    ``y = x @ weight.T + bias`` makes each output number a sum of products, so
    each input number's gradient collects the outputs it went into
    (``dy @ weight``), each weight's gradient is its input times its output's
    gradient, summed over the rows (``dy.T @ x``), and the bias's gradient is
    the sum of `dy` over the rows.

    Parameters
    ----------
    dy : array_like, shape (..., d_out)
        The gradient of the loss with respect to `linear`'s output.
    x : array_like, shape (..., d_in)
        `linear`'s input.
    weight : array_like, shape (d_out, d_in)
        `linear`'s weight (the bias plays no part in the gradients).

    Returns
    -------
    dx : numpy.ndarray, shape (..., d_in)
    dweight : numpy.ndarray, shape (d_out, d_in)
    dbias : numpy.ndarray, shape (d_out,)
        In the dtype of the inputs, which must share one.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import linear_backward
    >>> x = np.array([[1.0, 2.0]])
    >>> weight = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> dx, dweight, dbias = linear_backward(np.array([[1.0, 0.0]]), x, weight)
    >>> dx.tolist(), dweight.tolist(), dbias.tolist()
    ([[1.0, 0.0]], [[1.0, 2.0], [0.0, 0.0]], [1.0, 0.0])
    """
    dy, x, weight = (real_array(a, name) for a, name in ((dy, "dy"), (x, "x"), (weight, "weight")))
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            "linear_backward needs x (..., d_in) and weight (d_out, d_in): "
            f"got x {x.shape}, weight {weight.shape}"
        )
    if dy.shape != (*x.shape[:-1], weight.shape[0]):
        raise ValueError(
            f"dy needs the shape of linear's output, {(*x.shape[:-1], weight.shape[0])}, "
            f"got {dy.shape}"
        )
    check_dtypes(dy=dy, x=x, weight=weight)
    (dy, x, weight), out_dtype = cast(dy, x, weight)
    d_out, d_in = weight.shape
    rows_dy = dy.reshape(-1, d_out)  # every token a row: one 2-D product each
    rows_x = x.reshape(-1, d_in)
    dx = (rows_dy @ weight).reshape(x.shape)
    d_weight = rows_dy.T @ rows_x
    d_bias = rows_dy.sum(axis=0)
    return (
        dx.astype(out_dtype, copy=False),
        d_weight.astype(out_dtype, copy=False),
        d_bias.astype(out_dtype, copy=False),
    )


def layer_norm_backward(
    dy: ArrayLike,
    x: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    eps: float = 1e-5,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    # [..., d], [..., d], [d] -> [..., d], [d], [d]
    """The gradients of `layer_norm` with respect to `x`, `weight` and `bias`.

    With ``x_hat = (x - mean) / sqrt(variance + eps)`` the normalised row and
    ``g = dy * weight`` the gradient with respect to it::

        dx = (g - mean(g) - x_hat * mean(g * x_hat)) / sqrt(variance + eps)

    (the means over each row): every number of a row moved its mean and
    variance, so its gradient loses the row's average pull and the part along
    ``x_hat``. ``dweight`` is the sum of ``dy * x_hat`` over the rows and
    ``dbias`` the sum of `dy`. The mean and the variance are recomputed from
    `x`, as `layer_norm` computes them.

    Parameters
    ----------
    dy : array_like, shape (..., d)
        The gradient of the loss with respect to `layer_norm`'s output.
    x : array_like, shape (..., d)
        `layer_norm`'s input.
    weight : array_like, shape (d,), optional
        `layer_norm`'s weight. Default: ones.
    eps : float, optional
        `layer_norm`'s eps. Default 1e-5.

    Returns
    -------
    dx : numpy.ndarray, shape (..., d)
    dweight, dbias : numpy.ndarray, shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import layer_norm_backward
    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> dx, dweight, dbias = layer_norm_backward(np.ones((1, 3)), x)
    >>> dx.round(6).tolist()  # adding 1 to every output: x cannot do that
    [[0.0, 0.0, 0.0]]
    >>> dbias.tolist()
    [1.0, 1.0, 1.0]
    """
    dy, x = real_array(dy, "dy"), real_array(x, "x")
    if x.ndim < 1 or x.shape[-1] == 0 or dy.shape != x.shape:
        raise ValueError(
            f"layer_norm_backward needs dy and x of one shape (..., d), d >= 1: "
            f"got dy {dy.shape}, x {x.shape}"
        )
    arrays = {"dy": dy, "x": x}
    weights = _vector(weight, "weight", x)
    if weights is not None:
        arrays["weight"] = weights
    if isinstance(eps, bool) or not isinstance(eps, Real) or not 0 <= eps < math.inf:
        raise ValueError(f"layer_norm_backward: eps must be a finite number >= 0, got {eps!r}")
    check_dtypes(**arrays)
    converted, out_dtype = cast(*arrays.values())
    dy, x = converted[0], converted[1]
    d = x.shape[-1]
    # Row means as products with ones (BLAS), and in place where the
    # arrays are ours: each new array costs about a pass over it.
    x_hat = x - (_row_sums(x) / d)[..., np.newaxis]  # centred, for now
    variance = _row_dots(x_hat) / d
    inverse_std = (1 / np.sqrt(variance + float(eps)))[..., np.newaxis]  # float32 stays
    x_hat *= inverse_std
    work = dy * x_hat
    d_weight = _column_sums(work.reshape(-1, d))
    d_bias = _column_sums(dy.reshape(-1, d))
    g = dy * converted[2] if weight is not None else dy.copy()  # gradient with respect to x_hat
    mean_g = (_row_sums(g) / d)[..., np.newaxis]
    np.multiply(g, x_hat, out=work)
    mean_g_x_hat = (_row_sums(work) / d)[..., np.newaxis]
    dx = g
    dx -= mean_g
    dx -= np.multiply(x_hat, mean_g_x_hat, out=work)
    dx *= inverse_std
    return (
        dx.astype(out_dtype, copy=False),
        d_weight.astype(out_dtype, copy=False),
        d_bias.astype(out_dtype, copy=False),
    )


# tanh GELU: 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))), c = sqrt(2 / pi).
_TANH_GELU_C = math.sqrt(2 / math.pi)  # a Python float: float32 stays float32
_TANH_GELU_CUBIC = 0.044715


def gelu_backward(
    dy: ArrayLike, x: ArrayLike, approximate: str = "tanh", *, y: ArrayLike | None = None
) -> FloatArray:  # [...], [...] -> [...]
    """The gradient of ``gelu(x, approximate="tanh")`` with respect to `x`.

    With ``u = c * (x + 0.044715 * x**3)``, ``c = sqrt(2 / pi)``, GELU is
    ``0.5 * x * (1 + tanh(u))``; by the product rule and
    ``tanh' = 1 - tanh**2`` its derivative is::

        0.5 * (1 + tanh(u)) + 0.5 * x * (1 - tanh(u)**2) * du/dx

    with ``du/dx = c * (1 + 3 * 0.044715 * x**2)``, and the gradient is `dy`
    times it. It is computed through ``p = (1 + tanh(u)) / 2 = 1 / (1 +
    exp(-2u))``, as `gelu` computes the forward (NumPy's ``exp`` is much
    quicker than its ``tanh`` in float32): the derivative is then
    ``p * (1 + 2 * x * (1 - p) * du/dx``). GPT-2 uses this form
    ("gelu_new"). GELU's output is ``x * p``: given it as `y`, p is
    ``y / x`` (1/2 near 0), and no ``exp`` is taken again.

    Parameters
    ----------
    dy : array_like
        The gradient of the loss with respect to GELU's output.
    x : array_like
        GELU's input, the shape of `dy`.
    approximate : {"tanh"}, optional
        The form of GELU, spelled as in PyTorch. Only the tanh form has a
        backward here.
    y : array_like, optional
        ``gelu(x, approximate="tanh")``, if the forward pass kept it: the
        same gradient (to float rounding), quicker.

    Returns
    -------
    numpy.ndarray
        The gradient with respect to `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import gelu_backward
    >>> x = np.array([0.0, 1.0, 10.0])
    >>> gelu_backward(np.ones(3), x).round(4)
    array([0.5  , 1.083, 1.   ])
    >>> y = gelu(x, approximate="tanh")
    >>> gelu_backward(np.ones(3), x, y=y).round(4)
    array([0.5  , 1.083, 1.   ])
    """
    if approximate != "tanh":
        raise ValueError(
            f'gelu_backward has only the tanh form, approximate="tanh": got {approximate!r}'
        )
    dy, x = real_array(dy, "dy"), real_array(x, "x")
    if dy.shape != x.shape:
        raise ValueError(f"dy needs the shape of x {x.shape}, got {dy.shape}")
    arrays = {"dy": dy, "x": x}
    if y is not None:
        arrays["y"] = real_array(y, "y")
        if arrays["y"].shape != x.shape:
            raise ValueError(f"y needs the shape of x {x.shape}, got {arrays['y'].shape}")
    check_dtypes(**arrays)
    (dy, x, *output), out_dtype = cast(*arrays.values())
    p = _gelu_p_from_output(output[0], x) if output else None
    # Beyond |x| = 1e4, p is exactly 0 or 1 and the derivative exactly 0 or
    # 1: clipping changes nothing there, and keeps x**3 finite in float32.
    x = np.clip(x, -1e4, 1e4)
    # In place, a few arrays for all the passes: each new array of this size
    # costs about as much as a pass over it.
    squares = x * x
    if p is None:
        p = _gelu_p(x, squares)
    slope = np.multiply(squares, 2 * _TANH_GELU_C * 3 * _TANH_GELU_CUBIC)
    slope += 2 * _TANH_GELU_C  # 2 du/dx
    grad = np.subtract(1, p, out=squares)  # 1 - p
    grad *= x
    grad *= slope
    grad += 1
    grad *= p  # p * (1 + 2 x (1 - p) du/dx)
    grad *= dy
    return grad.astype(out_dtype, copy=False)


def _gelu_p(x: FloatArray, squares: FloatArray) -> FloatArray:
    """``p = (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u))``, from x and x**2."""
    p = np.multiply(squares, -2 * _TANH_GELU_C * _TANH_GELU_CUBIC)
    p -= 2 * _TANH_GELU_C
    p *= x  # -2u
    with np.errstate(over="ignore"):  # exp(-2u) = inf far left: p = 0
        np.exp(p, out=p)
    p += 1
    return np.reciprocal(p, out=p)


# Below this, p = 1/2 + 0.4 x rounds to 1/2 (in float64 too), where y / x
# would lose to the rounding of a subnormal y.
_GELU_NEAR_ZERO = 1e-18


def _gelu_p_from_output(y: FloatArray, x: FloatArray) -> FloatArray:
    """The same p from GELU's output ``y = x * p``: ``y / x``, 1/2 near 0."""
    p = np.full_like(x, 0.5)
    np.divide(y, x, out=p, where=np.abs(x) > _GELU_NEAR_ZERO)
    return p


# ------------------------------------------------- since GPT-2: Llama's swaps
#
# Three pieces that Llama-style models use where GPT-2 has layer norm, the
# GELU MLP and learned position rows, each followed by its backward. The
# forwards are checked against ``transformers``' ``LlamaRMSNorm``,
# ``LlamaMLP`` and ``apply_rotary_pos_emb`` (tests/data/modern_reference.npz).
# Pages show them, so they keep to 79 columns: the formatter, set to 100 for
# this module, leaves them as they are.
# fmt: off


def _checked_eps(eps: object, name: str) -> float:
    """`eps` as a finite float > 0, or an error naming the function."""
    if isinstance(eps, bool) or not isinstance(eps, Real):
        raise TypeError(f"{name}: eps must be a number, got {eps!r}")
    if not 0 < float(eps) < math.inf:
        raise ValueError(f"{name}: eps must be finite and > 0, got {eps!r}")
    return float(eps)


def _checked_rows(x: ArrayLike, name: str) -> NDArray[Any]:
    """`x` as real numbers with a last dimension of at least 1."""
    rows = real_array(x, "x")
    if rows.ndim < 1 or rows.shape[-1] == 0:
        raise ValueError(
            f"{name} needs x with a last dimension d >= 1, "
            f"got shape {rows.shape}"
        )
    return rows


# --8<-- [start:rms_norm]
def rms_norm(
    x: ArrayLike, weight: ArrayLike | None = None, *, eps: float = 1e-6
) -> FloatArray:  # [..., d], [d] -> [..., d]
    """Divide each row by its root mean square, then scale it.

    ``x / sqrt(mean(x**2) + eps) * weight``, the mean over each row (its
    last axis): `layer_norm` without taking the mean off first, and without
    a bias. The rows keep their direction; only their size is set.

    Parameters
    ----------
    x : array_like, shape (..., d)
        The rows to normalise, one per token.
    weight : array_like, shape (d,), optional
        Multiplies every normalised row (learned). Default: ones.
    eps : float, optional
        Added to the mean square, > 0. Default 1e-6, ``LlamaRMSNorm``'s.

    Returns
    -------
    numpy.ndarray, shape (..., d)
        float32 and float64 stay as they are, float16 is computed in
        float32, integers and booleans give float64.

    Notes
    -----
    ``transformers``' ``LlamaRMSNorm`` converts its input to float32,
    normalises it there, converts the result back to the input's dtype and
    then multiplies by its weight. In float32 that is this function's
    arithmetic (within 1e-6 of it); in float64 Llama's is only as accurate
    as float32, where this one computes in float64 throughout.

    Examples
    --------
    >>> from opbyop import rms_norm
    >>> rms_norm([[3.0, 4.0]], eps=1e-12).round(4)  # root mean square 3.54
    array([[0.8485, 1.1314]])
    >>> rms_norm([[3.0, 4.0]], [2.0, 1.0], eps=1e-12).round(4)
    array([[1.6971, 1.1314]])
    """
    rows = _checked_rows(x, "rms_norm")
    eps = _checked_eps(eps, "rms_norm")
    arrays = {"x": rows}
    if weight is not None:
        arrays["weight"] = _rms_vector(weight, rows, "rms_norm")
    check_dtypes(**arrays)
    (rows, *scale), out_dtype = cast(*arrays.values())
    out = rows * _inverse_rms(rows, eps)[..., np.newaxis]
    if scale:
        out *= scale[0]
    return out.astype(out_dtype, copy=False)


# --8<-- [end:rms_norm]


def _rms_vector(
    weight: ArrayLike, rows: NDArray[Any], name: str
) -> NDArray[Any]:
    """`weight` as one number per column of `rows`."""
    vector = real_array(weight, "weight")
    if vector.shape != rows.shape[-1:]:
        raise ValueError(
            f"{name}: weight needs shape ({rows.shape[-1]},) to match x "
            f"{rows.shape}, got {vector.shape}"
        )
    return vector


def _inverse_rms(rows: FloatArray, eps: float) -> FloatArray:  # [..., d]
    """``1 / sqrt(mean(rows**2) + eps)`` for each row: [...]."""
    mean_square = _row_dots(rows) / rows.shape[-1]
    return 1 / np.sqrt(mean_square + eps)  # a Python float: float32 stays


# --8<-- [start:rms_norm_backward]
def rms_norm_backward(
    dy: ArrayLike,
    x: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    eps: float = 1e-6,
) -> tuple[FloatArray, FloatArray]:  # [..., d], [..., d], [d] -> dx, dweight
    """The gradients of `rms_norm` with respect to `x` and `weight`.

    With ``r = 1 / sqrt(mean(x**2) + eps)``, ``x_hat = x * r`` the
    normalised row and ``g = dy * weight`` the gradient with respect to
    it::

        dx = r * (g - x_hat * mean(g * x_hat))

    (the mean over each row): every number of a row moved its mean square,
    so its gradient loses the part along ``x_hat``. Unlike `layer_norm`'s,
    nothing is taken off for the mean: layer norm's output ignores a shift
    of the whole row, so its gradient has no part along one; an RMS norm's
    output changes with a shift, so it keeps that part. ``dweight`` is the
    sum of ``dy * x_hat`` over the rows.

    Parameters
    ----------
    dy : array_like, shape (..., d)
        The gradient of the loss with respect to `rms_norm`'s output.
    x : array_like, shape (..., d)
        `rms_norm`'s input.
    weight : array_like, shape (d,), optional
        `rms_norm`'s weight. Default: ones.
    eps : float, optional
        `rms_norm`'s eps. Default 1e-6.

    Returns
    -------
    dx : numpy.ndarray, shape (..., d)
    dweight : numpy.ndarray, shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import rms_norm_backward
    >>> x = np.array([[3.0, 4.0]])
    >>> dx, dweight = rms_norm_backward(np.array([[4.0, -3.0]]), x)
    >>> dx.round(4)  # across x: the whole pull goes through
    array([[ 1.1314, -0.8485]])
    >>> dx, dweight = rms_norm_backward(x, x)
    >>> dx.round(4)  # along x: growing x does not grow the output
    array([[0., 0.]])
    """
    dy, rows = real_array(dy, "dy"), _checked_rows(x, "rms_norm_backward")
    if dy.shape != rows.shape:
        raise ValueError(
            f"rms_norm_backward: dy needs the shape of x {rows.shape}, "
            f"got {dy.shape}"
        )
    eps = _checked_eps(eps, "rms_norm_backward")
    arrays = {"dy": dy, "x": rows}
    if weight is not None:
        arrays["weight"] = _rms_vector(weight, rows, "rms_norm_backward")
    check_dtypes(**arrays)
    (dy, rows, *scale), out_dtype = cast(*arrays.values())
    d = rows.shape[-1]
    r = _inverse_rms(rows, eps)[..., np.newaxis]
    x_hat = rows * r
    d_weight = _column_sums((dy * x_hat).reshape(-1, d))
    g = dy * scale[0] if scale else dy  # the gradient for x_hat
    mean_g_x_hat = (_row_dots_of(g, x_hat) / d)[..., np.newaxis]
    dx = (g - x_hat * mean_g_x_hat) * r
    return dx.astype(out_dtype, copy=False), d_weight.astype(out_dtype)


# --8<-- [end:rms_norm_backward]


def _row_dots_of(a: FloatArray, b: FloatArray) -> FloatArray:
    """Each row of `a`'s dot product with the same row of `b`: [...]."""
    return np.einsum("...i,...i->...", a, b)


# --8<-- [start:silu]
def silu(x: ArrayLike) -> FloatArray:  # [...] -> [...]
    """The sigmoid linear unit, ``x * sigmoid(x) = x / (1 + exp(-x))``.

    Like GELU, it lets large positive inputs through and turns large
    negative ones into 0, bending smoothly (and dipping a little below 0)
    in between. Also called swish. Llama's MLP uses it (``hidden_act``
    "silu").

    Parameters
    ----------
    x : array_like
        Any shape.

    Returns
    -------
    numpy.ndarray
        Same shape as `x`. float32 and float64 stay as they are, float16 is
        computed in float32, integers and booleans give float64.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import silu
    >>> silu(np.array([-3.0, -1.0, 0.0, 1.0, 3.0])).round(4)
    array([-0.1423, -0.2689,  0.    ,  0.7311,  2.8577])
    """
    (values,), out_dtype = cast(real_array(x, "x"))
    with np.errstate(over="ignore"):  # exp(-x) = inf far left: x / inf = -0
        out = values / (1 + np.exp(-values))
    return out.astype(out_dtype, copy=False)


# --8<-- [end:silu]


# --8<-- [start:silu_backward]
def silu_backward(dy: ArrayLike, x: ArrayLike) -> FloatArray:  # [...] -> [...]
    """The gradient of `silu` with respect to `x`.

    With ``s = sigmoid(x)``, whose derivative is ``s * (1 - s)``, the
    product rule on ``x * s`` gives::

        s + x * s * (1 - s) = s * (1 + x * (1 - s))

    and the gradient is `dy` times it.

    Parameters
    ----------
    dy : array_like
        The gradient of the loss with respect to `silu`'s output.
    x : array_like
        `silu`'s input, the shape of `dy`.

    Returns
    -------
    numpy.ndarray
        The gradient with respect to `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import silu_backward
    >>> silu_backward(np.ones(3), np.array([0.0, 1.0, 10.0])).round(4)
    array([0.5   , 0.9277, 1.0004])
    """
    dy, values = real_array(dy, "dy"), real_array(x, "x")
    if dy.shape != values.shape:
        raise ValueError(
            f"silu_backward: dy needs the shape of x {values.shape}, "
            f"got {dy.shape}"
        )
    check_dtypes(dy=dy, x=values)
    (dy, values), out_dtype = cast(dy, values)
    with np.errstate(over="ignore"):  # exp(-x) = inf far left: s = 0
        s = 1 / (1 + np.exp(-values))
    grad = dy * s * (1 + values * (1 - s))
    return grad.astype(out_dtype, copy=False)


# --8<-- [end:silu_backward]


# --8<-- [start:swiglu]
def swiglu(
    x: ArrayLike, w_gate: ArrayLike, w_up: ArrayLike, w_down: ArrayLike
) -> FloatArray:  # [..., d], [h, d], [h, d], [d_out, h] -> [..., d_out]
    """A gated MLP: ``down(silu(gate(x)) * up(x))``, no biases.

    Two products widen each row to ``h`` numbers; one of them goes through
    `silu` and then multiplies the other, number by number (the gate);
    a third product narrows the result back. This is ``LlamaMLP`` with
    ``hidden_act="silu"``. Its three matrices cost as much as GPT-2's two
    at ``h = 8/3 d`` instead of ``4 d``.

    Parameters
    ----------
    x : array_like, shape (..., d)
        The rows, one per token.
    w_gate, w_up : array_like, shape (h, d)
        The two widening matrices, stored ``[d_out, d_in]`` as for
        `linear` (and as Llama's ``gate_proj`` and ``up_proj``).
    w_down : array_like, shape (d_out, h)
        The narrowing matrix (Llama's ``down_proj``).

    Returns
    -------
    numpy.ndarray, shape (..., d_out)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import swiglu
    >>> x = np.array([[1.0, 2.0]])
    >>> w_gate, w_up = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    >>> swiglu(x, w_gate, w_up, np.array([[1.0]])).round(4)  # silu(1) * 2
    array([[1.4621]])
    """
    rows = _checked_rows(x, "swiglu")
    weights = _swiglu_weights(rows, w_gate, w_up, w_down)
    check_dtypes(x=rows, **weights)
    gate = linear(rows, weights["w_gate"])  # [..., h]
    up = linear(rows, weights["w_up"])
    return linear(silu(gate) * up, weights["w_down"])


# --8<-- [end:swiglu]


def _swiglu_weights(
    rows: NDArray[Any], w_gate: ArrayLike, w_up: ArrayLike, w_down: ArrayLike
) -> dict[str, NDArray[Any]]:
    """The three matrices, checked to fit `rows` and each other."""
    weights = {
        name: real_array(w, name)
        for name, w in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down))
    }
    gate, up, down = weights.values()
    d = rows.shape[-1]
    if gate.ndim != 2 or gate.shape[1] != d:
        raise ValueError(
            f"swiglu: w_gate needs shape (h, {d}) for x {rows.shape}, "
            f"got {gate.shape}"
        )
    if up.shape != gate.shape:
        raise ValueError(
            f"swiglu: w_up needs the shape of w_gate {gate.shape}, "
            f"got {up.shape}"
        )
    if down.ndim != 2 or down.shape[1] != gate.shape[0]:
        raise ValueError(
            f"swiglu: w_down needs shape (d_out, {gate.shape[0]}) for "
            f"w_gate {gate.shape}, got {down.shape}"
        )
    return weights


# --8<-- [start:swiglu_backward]
def swiglu_backward(
    dy: ArrayLike,
    x: ArrayLike,
    w_gate: ArrayLike,
    w_up: ArrayLike,
    w_down: ArrayLike,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    # [..., d_out], [..., d], ... -> dx, dw_gate, dw_up, dw_down
    """The gradients of `swiglu` for `x` and its three matrices.

    The forward's steps backward, last first: the narrowing product
    (`linear_backward`), the gate ``a * up`` with ``a = silu(gate)`` (each
    factor's gradient is the other times the gradient of the product),
    `silu_backward`, then the two widening products, whose gradients for
    `x` add up (x went into both). The widened rows are recomputed from
    `x`.

    Parameters
    ----------
    dy : array_like, shape (..., d_out)
        The gradient of the loss with respect to `swiglu`'s output.
    x, w_gate, w_up, w_down : array_like
        `swiglu`'s inputs.

    Returns
    -------
    dx : numpy.ndarray, shape (..., d)
    dw_gate, dw_up : numpy.ndarray, shape (h, d)
    dw_down : numpy.ndarray, shape (d_out, h)

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import swiglu_backward
    >>> x = np.array([[1.0, 2.0]])
    >>> w_gate, w_up = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    >>> dx, *_ = swiglu_backward(np.ones((1, 1)), x, w_gate, w_up, [[1.0]])
    >>> dx.round(4)  # 2 silu'(1), then silu(1)
    array([[1.8553, 0.7311]])
    """
    rows = _checked_rows(x, "swiglu_backward")
    weights = _swiglu_weights(rows, w_gate, w_up, w_down)
    w_gate, w_up, w_down = weights.values()
    dy = real_array(dy, "dy")
    if dy.shape != (*rows.shape[:-1], w_down.shape[0]):
        raise ValueError(
            "swiglu_backward: dy needs the shape of swiglu's output, "
            f"{(*rows.shape[:-1], w_down.shape[0])}, got {dy.shape}"
        )
    check_dtypes(dy=dy, x=rows, **weights)
    gate, up = linear(rows, w_gate), linear(rows, w_up)  # the forward's
    activated = silu(gate)
    d_hidden, d_down, _ = linear_backward(dy, activated * up, w_down)
    d_gate = silu_backward(d_hidden * up, gate)
    d_up = d_hidden * activated
    dx, d_w_gate, _ = linear_backward(d_gate, rows, w_gate)
    dx_up, d_w_up, _ = linear_backward(d_up, rows, w_up)
    dx += dx_up  # x went into both products
    return dx, d_w_gate, d_w_up, d_down


# --8<-- [end:swiglu_backward]


# --8<-- [start:rotary]
def rotary(
    x: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:  # [..., n, d_head], [n] -> [..., n, d_head]
    """Rotate each row's pairs of numbers by angles that grow with position.

    Row ``j`` (at position ``p = positions[j]``) is cut into ``d_head / 2``
    pairs, and pair ``i`` is turned by the angle ``p * base**(-2i /
    d_head)``: fast for the first pairs, slower and slower for the last.
    Applied to queries and keys, a score ``q . k`` then depends on how far
    apart the two positions are, not on where they are.

    The pairs follow Hugging Face's Llama (``apply_rotary_pos_emb``, its
    ``rotate_half``): number ``i`` pairs with number ``i + d_head / 2``,
    the first half of the row with the second. The RoFormer paper's formula
    and GPT-J pair neighbours instead (``2i`` with ``2i + 1``, the
    "interleaved" convention): the same idea, but the numbers sit in other
    places, so a checkpoint trained one way is wrong read the other way.

    Parameters
    ----------
    x : array_like, shape (..., n, d_head)
        Queries or keys, one row per position (a head's, or all heads'
        along the leading dimensions); `d_head` even.
    positions : array_like of int, shape (n,)
        The position of each row, for example ``np.arange(n)``.
    base : float, optional
        > 1; sets how slowly the last pairs turn. Default 10000, the
        paper's and Llama 1 and 2's (Llama 3 uses 500000).

    Returns
    -------
    numpy.ndarray, shape (..., n, d_head)
        float32 and float64 stay as they are, float16 is computed in
        float32, integers and booleans give float64. The angles are
        computed in float64.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import rotary
    >>> x = np.array([[1.0, 0.0]])  # one pair: (1, 0)
    >>> rotary(x, [0]).round(4), rotary(x, [1]).round(4)  # 0 and 1 radian
    (array([[1., 0.]]), array([[0.5403, 0.8415]]))
    """
    rows, at = _checked_rotary(x, positions, base, "rotary")
    (rows,), out_dtype = cast(rows)
    cos, sin = _rotary_angles(at, rows.shape[-1], float(base), rows.dtype)
    return _rotated(rows, cos, sin).astype(out_dtype, copy=False)


def _rotated(x: FloatArray, cos: FloatArray, sin: FloatArray) -> FloatArray:
    """Each pair ``(x1, x2)``, first half with second, turned by its angle."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    out = np.empty_like(x)
    out[..., :half] = x1 * cos - x2 * sin
    out[..., half:] = x2 * cos + x1 * sin
    return out


def _rotary_angles(
    positions: NDArray[Any], d_head: int, base: float, dtype: np.dtype[Any]
) -> tuple[FloatArray, FloatArray]:  # [n] -> [n, d_head / 2] twice
    """cos and sin of ``position * base**(-2i / d_head)``, in `dtype`."""
    speeds = 1 / base ** (np.arange(0, d_head, 2) / d_head)  # float64
    angles = positions[:, np.newaxis] * speeds  # [n, d_head / 2]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


# --8<-- [end:rotary]


def _checked_rotary(
    x: ArrayLike, positions: ArrayLike, base: object, name: str
) -> tuple[NDArray[Any], NDArray[Any]]:
    """`x` and `positions` checked to fit each other, and `base` > 1."""
    rows = real_array(x, "x")
    if rows.ndim < 2 or rows.shape[-1] == 0 or rows.shape[-1] % 2:
        raise ValueError(
            f"{name} needs x of shape (..., n, d_head) with d_head even "
            f"(numbers in pairs), got shape {rows.shape}"
        )
    at = np.asarray(positions)
    if at.dtype.kind not in "iu":
        raise TypeError(
            f"{name}: positions must be integers, got dtype {at.dtype}"
        )
    if at.shape != rows.shape[-2:-1]:
        raise ValueError(
            f"{name}: positions needs shape ({rows.shape[-2]},), one per row "
            f"of x {rows.shape}, got {at.shape}"
        )
    if (
        isinstance(base, bool)
        or not isinstance(base, Real)
        or not 1 < float(base) < math.inf
    ):
        raise ValueError(
            f"{name}: base must be a finite number > 1, got {base!r}"
        )
    return rows, at


# --8<-- [start:rotary_backward]
def rotary_backward(
    dy: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:  # [..., n, d_head], [n] -> [..., n, d_head]
    """The gradient of `rotary` with respect to `x`: the inverse rotation.

    A rotation is linear, ``y = R x``, so ``dx = R^T dy``; and the
    transpose of a rotation by an angle is the rotation by minus that
    angle. So each pair of `dy` is turned back by its angle: `rotary` with
    ``-sin`` for ``sin``. `x` itself is not needed.

    Parameters
    ----------
    dy : array_like, shape (..., n, d_head)
        The gradient of the loss with respect to `rotary`'s output.
    positions : array_like of int, shape (n,)
        `rotary`'s positions.
    base : float, optional
        `rotary`'s base. Default 10000.

    Returns
    -------
    numpy.ndarray, shape (..., n, d_head)
        The gradient with respect to `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from opbyop import rotary, rotary_backward
    >>> x = np.array([[1.0, 2.0, 3.0, 4.0]])
    >>> rotary_backward(rotary(x, [5]), [5]).round(12)  # turned back
    array([[1., 2., 3., 4.]])
    """
    rows, at = _checked_rotary(dy, positions, base, "rotary_backward")
    (rows,), out_dtype = cast(rows)
    cos, sin = _rotary_angles(at, rows.shape[-1], float(base), rows.dtype)
    return _rotated(rows, cos, -sin).astype(out_dtype, copy=False)


# --8<-- [end:rotary_backward]
# fmt: on
