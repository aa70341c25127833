"""The input checks every NumPy module shares: real numbers, one dtype, the dtype to compute in.

Numerics follow PyTorch: float32 and float64 stay as they are, float16 is
computed in float32 and returned as float16, integers and booleans become
float64. Arrays that go into one operation share one dtype (integers and
booleans counting as float64): PyTorch refuses a mix too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.floating[Any]]

_WORK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def real_array(x: ArrayLike, name: str) -> NDArray[Any]:
    """`x` as an array of integers, booleans or floats, or a clear error naming `name`."""
    try:
        array = np.asarray(x)
    except ValueError as error:  # NumPy 1.24+ refuses ragged nested lists
        raise ValueError(f"{name} has ragged rows (rows of different lengths): {error}") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must hold real numbers, got dtype {array.dtype} with shape {array.shape}"
        )
    return array


def cast(*arrays: NDArray[Any]) -> tuple[list[FloatArray], np.dtype[Any]]:
    """The arrays in the dtype to compute in, and the dtype to return.

    Integers and booleans become float64; float16 is computed in float32.
    """
    out_dtype = work_dtype(arrays[0].dtype)  # one dtype for all: check_dtypes saw to it
    if out_dtype in _WORK_DTYPES and all(x.dtype == out_dtype for x in arrays):
        return list(arrays), out_dtype  # nothing to convert
    compute_dtype = np.float32 if out_dtype == np.float16 else out_dtype
    return [x.astype(compute_dtype, copy=False) for x in arrays], out_dtype


def check_dtypes(**arrays: NDArray[Any]) -> None:
    """The arrays share one dtype, integers and booleans counting as float64.

    PyTorch refuses a mix as well; promoting silently would hide, for example,
    one float64 array that makes float32 attention twice as slow.
    """
    if len({work_dtype(x.dtype) for x in arrays.values()}) > 1:
        *names, last = arrays
        got = ", ".join(f"{name} {x.dtype}" for name, x in arrays.items())
        raise TypeError(
            f"{', '.join(names)} and {last} need the same dtype (integers and booleans count"
            f" as float64): got {got}; convert them first, for example with .astype(np.float32)"
        )


def work_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype an array of `dtype` is treated as: integers and booleans as float64."""
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype
