"""Regenerate tests/data/layers_reference.npz: PyTorch's layer norm and GELU.

The test suite compares ``opbyop.layer_norm`` and ``opbyop.gelu`` with these
values and needs no PyTorch. To regenerate them, in a virtual environment of
its own (``mpmath`` comes with PyTorch, through ``sympy``)::

    python -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 numpy
    /tmp/torchvenv/bin/python tools/make_layers_reference.py

Every case is a set of arrays stored under ``<case>__<name>``:

- ``gelu_tanh_*`` (``torch.nn.functional.gelu(x, approximate="tanh")``) and
  ``gelu_none_*`` (the exact form), float32 and float64: ``x`` and ``out``.
- ``gelu_exact_f64``: ``x`` and ``out``, GELU computed with ``mpmath`` to 40
  digits and rounded to float64 once: the exact value, for the error bound
  the docstring states. It reaches down to x = -37.5, where GELU is still a
  normal float64.
- ``layer_norm_*`` (``torch.nn.functional.layer_norm`` over the last
  dimension): ``x``, ``weight``, ``bias``, ``eps`` and ``out``. The cases
  are those of the library's defects: constant rows (BERT-base's width 768
  and eps 1e-12, and MiniLM's 384), rows within a few roundings of constant,
  and ordinary random rows for comparison. PyTorch gives ``nan`` for a
  constant row whose squares overflow (7e20 in float32, 3e300 in float64),
  where the exact answer is the bias.

Inputs come from a seeded NumPy generator, so reruns give the same file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import mpmath  # type: ignore[import-not-found]
import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "layers_reference.npz"
Array = np.ndarray[Any, Any]


def torch_gelu(x: Array, approximate: str) -> Array:
    return np.asarray(F.gelu(torch.from_numpy(x), approximate=approximate).numpy())


def gelu_inputs(dtype: type[np.floating[Any]]) -> Array:
    """A fine grid on [-12, 12], then the far ends and the smallest numbers."""
    info = np.finfo(dtype)
    grid = np.linspace(-12.0, 12.0, 4801)
    far = [-info.max, -1e30, -1e10, -100.0, -20.0, 20.0, 100.0, 1e10, 1e30, info.max]
    small = [float(info.tiny), 1e-30, 1e-10, 1e-5]
    extra = far + small + [-v for v in small] + [0.0, -0.0]
    return np.concatenate([grid, np.array(extra)]).astype(dtype)


def exact_gelu(x: Array) -> Array:
    """x * Phi(x) to 40 digits with mpmath, rounded to float64 once."""
    mpmath.mp.dps = 40

    def one(v: float) -> float:
        t = mpmath.mpf(v)
        return float(t * mpmath.erfc(-t / mpmath.sqrt(2)) / 2)

    return np.array([one(float(v)) for v in x])


def exact_gelu_inputs() -> Array:
    """[-37.5, 10] in steps of 0.005, and numbers near 0 of both signs."""
    grid = np.linspace(-37.5, 10.0, 9501)
    near_zero = np.geomspace(1e-300, 1.0, 200)
    return np.concatenate([grid, near_zero, -near_zero, [1.0]])


def torch_layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (x, weight, bias)]
    return np.asarray(F.layer_norm(t[0], t[0].shape[-1:], t[1], t[2], eps=eps).numpy())


def layer_norm_inputs(rng: np.random.Generator) -> dict[str, tuple[Array, Array, Array, float]]:
    """The layer norm cases: name -> (x, weight, bias, eps)."""
    f32, f64 = np.float32, np.float64

    def params(d: int, dtype: Any) -> tuple[Array, Array]:
        weight = (1 + 0.5 * rng.standard_normal(d)).astype(dtype)
        return weight, (0.1 * rng.standard_normal(d)).astype(dtype)

    constants32 = np.array([1.0, 0.1, -3.7, 123.456, 1e-3, 7e20, -2.5e-20])
    constants64 = np.array([1.0, 0.1, -3.7, 1e30, -7.3e-8, 1e-200, 3e300])
    near = 1 + 1e-8 * rng.standard_normal((8, 384))  # within a few float32 roundings of 1
    cases = {
        "layer_norm_constant_bert_f32": (
            np.ones((1, 768), f32),
            np.full(768, 2, f32),
            np.full(768, 0.5, f32),
            1e-12,
        ),
        "layer_norm_constants_f32": (
            np.repeat(constants32[:, np.newaxis], 768, axis=1).astype(f32),
            *params(768, f32),
            1e-12,
        ),
        "layer_norm_constants_f64": (
            np.repeat(constants64[:, np.newaxis], 768, axis=1),
            *params(768, f64),
            1e-12,
        ),
        "layer_norm_constants_eps5_f32": (
            np.repeat(constants32[:, np.newaxis], 384, axis=1).astype(f32),
            *params(384, f32),
            1e-5,
        ),
        "layer_norm_near_constant_f32": (near.astype(f32), *params(384, f32), 1e-12),
        "layer_norm_near_constant_1e6_f32": (  # spread over about 16 roundings of 1
            (1 + 1e-6 * rng.standard_normal((8, 384))).astype(f32),
            *params(384, f32),
            1e-12,
        ),
        "layer_norm_near_constant_f64": (
            1 + 1e-13 * rng.standard_normal((8, 384)),
            *params(384, f64),
            1e-12,
        ),
        "layer_norm_near_constant_big_f64": (
            1e30 * (1 + 1e-15 * rng.standard_normal((4, 768))),
            *params(768, f64),
            1e-12,
        ),
        "layer_norm_random_f32": (
            (3 * rng.standard_normal((4, 12, 384)) + 1).astype(f32),
            *params(384, f32),
            1e-12,
        ),
        "layer_norm_random_f64": (
            3 * rng.standard_normal((5, 64)) - 2,
            *params(64, f64),
            1e-5,
        ),
        "layer_norm_offset_f32": (
            (1000 + rng.standard_normal((6, 384))).astype(f32),
            *params(384, f32),
            1e-12,
        ),
    }
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(21)
    data: dict[str, Array] = {}
    for dtype, tag in ((np.float32, "f32"), (np.float64, "f64")):
        x = gelu_inputs(dtype)
        for form in ("tanh", "none"):
            data[f"gelu_{form}_{tag}__x"] = x
            data[f"gelu_{form}_{tag}__out"] = torch_gelu(x, form)
    x = exact_gelu_inputs()
    data["gelu_exact_f64__x"], data["gelu_exact_f64__out"] = x, exact_gelu(x)
    for name, (x, weight, bias, eps) in layer_norm_inputs(rng).items():
        data[f"{name}__x"], data[f"{name}__weight"], data[f"{name}__bias"] = x, weight, bias
        data[f"{name}__eps"] = np.array(eps)
        data[f"{name}__out"] = torch_layer_norm(x, weight, bias, eps)
    np.savez_compressed(args.out, allow_pickle=False, **data)
    print(f"wrote {len(data)} arrays to {args.out}")


if __name__ == "__main__":
    main()
