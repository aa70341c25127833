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
- masked attention cases (``masked_*``): ``q``, ``k``, ``v``, ``is_causal``
  and ``out``, plus ``mask`` (boolean, True where a query may look at a key)
  when there is one. SDPA refuses ``attn_mask`` and ``is_causal`` together,
  so for those cases the causal rule is folded into the mask it is given;
  ``mask`` and ``is_causal`` hold what opbyop is given. The
  ``masked_weights_*`` cases have an identity matrix for ``v``.
- ``math_path_*`` cases: unmasked attention whose scores overflow unless q
  and k are scaled before their product, as SDPA's math path does.

Every SDPA call runs on the math path (``SDPBackend.MATH``), the one PyTorch
takes for 2-D and 3-D inputs, whatever the inputs' number of dimensions.

Inputs come from a seeded NumPy generator, so reruns give the same file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

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


def sdpa(
    q: Array,
    k: Array,
    v: Array,
    scale: float | None = None,
    mask: Array | None = None,
    is_causal: bool = False,
) -> Array:
    """PyTorch's scaled dot-product attention on its math path, no dropout."""
    t = [torch.from_numpy(np.ascontiguousarray(x)) for x in (q, k, v)]
    attn_mask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(
            *t, attn_mask=attn_mask, is_causal=is_causal, scale=scale
        )
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


# ---------------------------------------------------------------- masks


MaskedCase = tuple[Array, Array, Array, Array | None, bool]  # q, k, v, mask, is_causal


def random_mask(rng: np.random.Generator, *shape: int, p: float = 0.7) -> Array:
    """True with probability `p`: the keys a query may look at."""
    return np.asarray(rng.random(shape) < p)


def masked_attention_inputs() -> dict[str, MaskedCase]:
    """The masked attention cases, in float64 and float32: name -> (q, k, v, mask, is_causal)."""
    r = np.random.default_rng(20250310)  # its own generator: other cases do not shift it
    cases: dict[str, MaskedCase] = {}
    for dtype, tag in [("float64", "f64"), ("float32", "f32")]:
        cases |= {f"{name}_{tag}": case for name, case in masked_cases(r, dtype).items()}
    return cases


def masked_cases(r: np.random.Generator, dtype: str) -> dict[str, MaskedCase]:
    """The masked attention cases in one dtype."""
    fully = random_mask(r, 4, 6)
    fully[[1, 3]] = False  # queries 1 and 3 may look at no key
    padding = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=bool)[:, None, None]
    both = random_mask(r, 2, 5, 7, p=0.6)
    both[0, 1, :2] = False  # query 1 sees keys 0 and 1 by the causal rule: now none
    weights_q, weights_k = normal(r, 4, 5, dtype=dtype), normal(r, 6, 5, dtype=dtype)
    causal_q, causal_k = normal(r, 5, 5, dtype=dtype), normal(r, 4, 5, dtype=dtype)
    return {
        "random": (*qkv(r, ((5, 4), (7, 4), (7, 3)), dtype), random_mask(r, 5, 7), False),
        "causal_square": (*qkv(r, ((6, 4), (6, 4), (6, 2)), dtype), None, True),
        "causal_fewer_queries": (*qkv(r, ((3, 4), (6, 4), (6, 2)), dtype), None, True),
        "causal_more_queries": (*qkv(r, ((6, 4), (3, 4), (3, 2)), dtype), None, True),
        "fully_masked_rows": (*qkv(r, ((4, 8), (6, 8), (6, 5)), dtype), fully, False),
        "padding": (*qkv(r, ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 4)), dtype), padding, False),
        "per_head": (
            *qkv(r, ((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 4)), dtype),
            random_mask(r, 1, 3, 5, 6),
            False,
        ),
        "one_row_for_all": (
            *qkv(r, ((3, 4, 4), (3, 5, 4), (3, 5, 2)), dtype),
            random_mask(r, 5),
            False,
        ),
        "causal_and_mask": (*qkv(r, ((2, 5, 4), (2, 7, 4), (2, 7, 3)), dtype), both, True),
        "weights": (weights_q, weights_k, np.eye(6, dtype=dtype), random_mask(r, 4, 6), False),
        "weights_causal": (causal_q, causal_k, np.eye(4, dtype=dtype), None, True),
    }


def masked_reference(case: MaskedCase) -> Array:
    """SDPA's answer, the causal rule folded into the mask when both are given."""
    q, k, v, mask, is_causal = case
    if mask is not None and is_causal:
        n_q, n_k = q.shape[-2], k.shape[-2]
        return sdpa(q, k, v, mask=mask & np.tri(n_q, n_k, dtype=bool))
    return sdpa(q, k, v, mask=mask, is_causal=is_causal)


def math_path_inputs() -> dict[str, tuple[Array, Array, Array]]:
    """Scores that overflow float32 unless q and k are scaled before their product."""
    q = np.array([[1.5e19, 1.5e19], [1, 0]], dtype="float32")  # q @ k.T: 4.5e38 > 3.4e38
    k = np.array([[1.5e19, 1.5e19], [0, 1], [1, 1]], dtype="float32")
    v = np.array([[1, 2], [3, 4], [5, 6]], dtype="float32")
    return {
        "two_keys_f32": (q, k[:2], v[:2]),
        "three_keys_f32": (q, k, v),
        "weights_f32": (q, k, np.eye(3, dtype="float32")),
    }


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
    for name, case in masked_attention_inputs().items():
        key = f"masked_{name}"
        q, k, v, mask, is_causal = case
        data |= {f"{key}__q": q, f"{key}__k": k, f"{key}__v": v}
        data[f"{key}__is_causal"] = np.array(is_causal)
        if mask is not None:
            data[f"{key}__mask"] = mask
        data[f"{key}__out"] = masked_reference(case)
    for name, (q, k, v) in math_path_inputs().items():
        key = f"math_path_{name}"
        data |= {f"{key}__q": q, f"{key}__k": k, f"{key}__v": v, f"{key}__out": sdpa(q, k, v)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, allow_pickle=False, **data)
    cases = {key.split("__")[0] for key in data}
    print(f"wrote {len(cases)} cases to {args.out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
