"""Regenerate tests/data/attention_reference.npz: PyTorch's answers to fixed inputs.

The test suite compares opbyop with these values and needs no PyTorch. To
regenerate them, in a virtual environment of its own (the CPU build is enough)::

    python -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 numpy
    /tmp/torchvenv/bin/python tools/make_reference.py

Every case is a set of arrays stored under ``<case>__<name>``:

- attention cases (``scaled_dot_product_attention``): ``q``, ``k``, ``v`` and
  ``out``, plus ``scale`` when it is not the default ``1 / sqrt(d_k)``. The
  ``weights_*`` cases have an identity matrix for ``v``, so ``out`` is the
  attention weights themselves.
- softmax cases (``torch.softmax``): ``x``, ``axis`` and ``out``.

Inputs come from a seeded NumPy generator, so reruns give the same file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "attention_reference.npz"
Array = np.ndarray[Any, Any]


def normal(
    rng: np.random.Generator, *shape: int, dtype: str = "float64", mag: float = 1.0
) -> Array:
    """Standard normal numbers times `mag`, in `dtype`."""
    return (mag * rng.standard_normal(shape)).astype(dtype)


def qkv(
    rng: np.random.Generator,
    shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
    dtype: str = "float64",
    mag: float = 1.0,
) -> tuple[Array, Array, Array]:
    """Random q, k and v of the given shapes."""
    q, k, v = (normal(rng, *shape, dtype=dtype, mag=mag) for shape in shapes)
    return q, k, v


def sdpa(q: Array, k: Array, v: Array, scale: float | None = None) -> Array:
    """PyTorch's scaled dot-product attention, no mask, no dropout."""
    t = [torch.from_numpy(np.ascontiguousarray(x)) for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*t, scale=scale)
    return np.asarray(out.numpy())


def torch_softmax(x: Array, axis: int) -> Array:
    return np.asarray(torch.softmax(torch.from_numpy(np.ascontiguousarray(x)), dim=axis).numpy())


def attention_inputs(rng: np.random.Generator) -> dict[str, tuple[Array, ...]]:
    """The attention cases: name -> (q, k, v)."""
    r = rng
    f32, f16 = "float32", "float16"
    big16 = np.full((2, 3), 150.0, dtype=f16)  # q @ k.T = 67500 > 65504, float16's largest
    return {
        "1x1_f64": qkv(r, ((1, 1), (1, 1), (1, 1))),
        "1x1_f32": qkv(r, ((1, 1), (1, 1), (1, 1)), f32),
        "nq_ne_nk_f64": qkv(r, ((3, 4), (5, 4), (5, 4))),
        "dk_ne_dv_f64": qkv(r, ((4, 8), (6, 8), (6, 3))),
        "dk_ne_dv_f32": qkv(r, ((4, 8), (6, 8), (6, 3)), f32),
        "dk_ne_dv_f16": qkv(r, ((4, 8), (6, 8), (6, 3)), f16),
        "batch3d_f64": qkv(r, ((3, 4, 6), (3, 5, 6), (3, 5, 2))),
        "heads4d_f32": qkv(r, ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), f32),
        "heads4d_f64": qkv(r, ((2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16, 8))),
        "heads4d_f16": qkv(r, ((1, 2, 6, 8), (1, 2, 9, 8), (1, 2, 9, 4)), f16),
        "broadcast_f64": qkv(r, ((2, 1, 3, 4), (5, 6, 4), (1, 6, 2))),
        "long_f32": qkv(r, ((64, 32), (128, 32), (128, 16)), f32),
        "d768_f64": qkv(r, ((4, 768), (4, 768), (4, 768))),
        "d768_f32": qkv(r, ((4, 768), (4, 768), (4, 768)), f32),
        "scale_half_f64": (*qkv(r, ((3, 4), (5, 4), (5, 2))), np.array(0.5)),
        "scale_two_f32": (*qkv(r, ((3, 4), (5, 4), (5, 2)), f32), np.array(2.0)),
        "large_f64": (
            np.array([[1e15], [-1e15]]),
            np.array([[1e15], [-1e15], [3.0]]),
            normal(r, 3, 2),
        ),
        "large_f32": (
            np.array([[1e18], [-1e18]], dtype=f32),
            np.array([[1e18], [-1e18], [3.0]], dtype=f32),
            normal(r, 3, 2, dtype=f32),
        ),
        "spread_f64": qkv(r, ((4, 16), (8, 16), (8, 5)), mag=3.0),
        "over65504_f16": (big16, np.concatenate([big16, -big16]), normal(r, 4, 2, dtype=f16)),
        "weights_f64": (*qkv(r, ((3, 5), (4, 5), (4, 1)))[:2], np.eye(4)),
        "weights_f32": (*qkv(r, ((2, 3, 5), (2, 4, 5), (4, 1)), f32)[:2], np.eye(4, dtype=f32)),
        "no_queries_f64": qkv(r, ((0, 4), (3, 4), (3, 2))),
        "no_keys_f64": qkv(r, ((3, 4), (0, 4), (0, 2))),
        "no_keys_f32": qkv(r, ((1, 2, 3, 4), (1, 2, 0, 4), (1, 2, 0, 5)), f32),
        "dk_zero_f64": qkv(r, ((2, 0), (3, 0), (3, 2))),
    }


def softmax_inputs(rng: np.random.Generator) -> dict[str, tuple[Array, int]]:
    """The softmax cases: name -> (x, axis)."""
    r = rng
    inf = np.inf
    max32 = float(np.finfo(np.float32).max)
    cases = {
        "vector_f64": (normal(r, 7), -1),
        "rows_f32": (normal(r, 4, 9, dtype="float32"), -1),
        "axis0_f64": (normal(r, 5, 3), 0),
        "axis1_3d_f32": (normal(r, 2, 6, 3, dtype="float32", mag=10.0), 1),
        "rows_f16": (normal(r, 3, 5, dtype="float16", mag=4.0), -1),
        "extremes_f16": (
            np.array([[65504, -65504, 0], [65504, 65504, 60000]], dtype="float16"),
            -1,
        ),
        "pm1e30_f64": (np.array([[1e30, -1e30, 0.0], [1e30, 1e30, -1e30]]), -1),
        "pm1e30_f32": (np.array([[1e30, -1e30, 0.0], [-1e30, -1e30, -1e30]], dtype="float32"), -1),
        "half_max_f32": (
            np.array([[max32 / 2, -max32 / 2], [-max32 / 2, -max32 / 2]], dtype="float32"),
            -1,
        ),
        "full_max_f32": (np.array([[max32, -max32, 0.0]], dtype="float32"), -1),
        "huge_among_tiny_f64": (np.array([1e300, 1e-300, -1e-300, 0.0]), -1),
        "some_neg_inf_f64": (np.array([[0.0, -inf, 1.0], [-inf, 2.0, -inf]]), -1),
        "nan_rows_f64": (np.array([[-inf, -inf], [inf, 1.0], [np.nan, 1.0], [inf, inf]]), -1),
        "empty_axis_f64": (np.zeros((3, 0)), -1),
    }
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    rng = np.random.default_rng(20250101)
    data: dict[str, Array] = {}
    for name, (q, k, v, *scale) in attention_inputs(rng).items():
        key = f"attention_{name}"
        data |= {f"{key}__q": q, f"{key}__k": k, f"{key}__v": v}
        if scale:
            data[f"{key}__scale"] = scale[0]
        data[f"{key}__out"] = sdpa(q, k, v, float(scale[0]) if scale else None)
    for name, (x, axis) in softmax_inputs(rng).items():
        key = f"softmax_{name}"
        data |= {
            f"{key}__x": x,
            f"{key}__axis": np.array(axis),
            f"{key}__out": torch_softmax(x, axis),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, allow_pickle=False, **data)
    cases = {key.split("__")[0] for key in data}
    print(f"wrote {len(cases)} cases to {args.out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
