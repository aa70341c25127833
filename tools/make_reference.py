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

It also writes tests/data/heads_reference.npz (see `write_heads_reference`):
``torch.nn.MultiheadAttention``'s answers, with its weights set from ours.
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
    write_heads_reference(HEADS_OUT)


# ---------------------------------------------------------------- multi-head attention

HEADS_OUT = OUT.with_name("heads_reference.npz")
PARAMS = ["w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"]


def heads_inputs(rng: np.random.Generator) -> dict[str, dict[str, Array]]:
    """The multi-head cases: name -> x, n_heads, is_causal, the weights, maybe a mask.

    Masks are ours: True where a query may look at a key.
    """
    f32 = "float32"

    def case(
        batch: tuple[int, ...],
        n: int,
        d_model: int,
        n_heads: int,
        dtype: str = "float64",
        mask: Array | None = None,
        is_causal: bool = False,
        bias: bool = True,
    ) -> dict[str, Array]:
        arrays = {
            "x": normal(rng, *batch, n, d_model, dtype=dtype),
            "n_heads": np.array(n_heads),
            "is_causal": np.array(is_causal),
        }
        for name in PARAMS:
            shape = (d_model, d_model) if name[0] == "w" else (d_model,)
            if bias or name[0] == "w":  # weights scaled as nn.Linear initialises them
                arrays[name] = normal(rng, *shape, dtype=dtype, mag=d_model**-0.5)
        if mask is not None:
            arrays["mask"] = mask
        return arrays

    def padding(lengths: list[int], n: int) -> Array:
        """[batch, 1, 1, n]: True at each sentence's first `length` tokens."""
        return (np.arange(n) < np.array(lengths)[:, None])[:, None, None, :]

    shared = (rng.random((4, 4)) < 0.7) | np.eye(4, dtype=bool)  # one for every sentence
    per_head = rng.random((2, 3, 6, 6)) < 0.6
    per_head[:, :, :, 0] = True  # every query may look at one key at least...
    per_head[1, 2, 4, :] = False  # ...but this one, which gets zeros from its head
    return {
        "plain_f64": case((2,), 5, 8, 2),
        "plain_f32": case((2,), 5, 8, 2, f32),
        "unbatched_f64": case((), 6, 12, 3),
        "one_head_f64": case((2,), 4, 6, 1),
        "no_bias_f64": case((2,), 5, 8, 4, bias=False),
        "padding_f64": case((3,), 6, 16, 4, mask=padding([6, 4, 1], 6)),
        "padding_f32": case((3,), 6, 16, 4, f32, mask=padding([6, 4, 1], 6)),
        "causal_f64": case((2,), 6, 12, 3, is_causal=True),
        "causal_f32": case((2,), 6, 12, 3, f32, is_causal=True),
        "padding_causal_f64": case((2,), 5, 8, 2, mask=padding([5, 3], 5), is_causal=True),
        "padding_causal_f32": case((2,), 5, 8, 2, f32, mask=padding([5, 3], 5), is_causal=True),
        "shared_mask_f64": case((2,), 4, 8, 2, mask=shared),
        "per_head_mask_f64": case((2,), 6, 12, 3, mask=per_head),
        "per_head_mask_f32": case((2,), 6, 12, 3, f32, mask=per_head),
        "twelve_heads_f32": case((2,), 7, 48, 12, f32, mask=padding([7, 5], 7)),
        "twelve_heads_f64": case((2,), 7, 48, 12, mask=padding([7, 5], 7)),
    }


def torch_masks(
    mask: Array | None, is_causal: bool, batch: tuple[int, ...], n_heads: int, n: int
) -> dict[str, Any]:
    """Our mask and is_causal as the keywords of ``nn.MultiheadAttention``.

    Its boolean masks mean the opposite of ours (True: may not look), its
    ``is_causal`` is only a hint that needs the causal ``attn_mask`` too, and it
    takes a padding mask as ``key_padding_mask`` ``[batch, n]``.
    """
    causal = np.tril(np.ones((n, n), dtype=bool))  # query i sees keys 0..i
    if mask is None:
        return {"attn_mask": torch.from_numpy(~causal), "is_causal": True} if is_causal else {}
    if mask.shape == (*batch, 1, 1, n) and not is_causal:  # a padding mask
        return {"key_padding_mask": torch.from_numpy(~mask[..., 0, 0, :])}
    allowed = mask & causal if is_causal else mask
    if allowed.ndim == 2:  # one (n, n) mask for every sentence and head
        return {"attn_mask": torch.from_numpy(~allowed)}
    allowed = np.broadcast_to(allowed, (*batch, n_heads, n, n))
    return {"attn_mask": torch.from_numpy(~allowed.reshape(-1, n, n))}  # [batch * heads, n, n]


def torch_multi_head_attention(case: dict[str, Array]) -> Array:
    """``nn.MultiheadAttention`` (batch_first) with the case's weights, on its x."""
    x, n_heads, is_causal = case["x"], int(case["n_heads"]), bool(case["is_causal"])
    d_model, bias = x.shape[-1], "b_q" in case
    dtype = torch.float64 if x.dtype == np.float64 else torch.float32
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True, dtype=dtype)
    params = {"in_proj_weight": np.concatenate([case["w_q"], case["w_k"], case["w_v"]])}
    params["out_proj.weight"] = case["w_o"]
    if bias:
        params["in_proj_bias"] = np.concatenate([case["b_q"], case["b_k"], case["b_v"]])
        params["out_proj.bias"] = case["b_o"]
    mha.load_state_dict({name: torch.from_numpy(value) for name, value in params.items()})
    masks = torch_masks(case.get("mask"), is_causal, x.shape[:-2], n_heads, x.shape[-2])
    t = torch.from_numpy(x)
    # Gradients on (the default): its plain path through SDPA, not the fused
    # inference kernel (on these cases the two agree to rounding).
    out, _ = mha(t, t, t, need_weights=False, **masks)
    return np.asarray(out.detach().numpy())


def write_heads_reference(out: Path) -> None:
    """Write `out`: every multi-head case's inputs and PyTorch's output.

    `main` calls it; to write this file alone::

        python -c "import make_reference as m; m.write_heads_reference(m.HEADS_OUT)"

    from the ``tools`` folder.
    """
    rng = np.random.default_rng(20250102)
    data: dict[str, Array] = {}
    for name, case in heads_inputs(rng).items():
        case["out"] = torch_multi_head_attention(case)
        data |= {f"heads_{name}__{key}": value for key, value in case.items()}
    np.savez_compressed(out, allow_pickle=False, **data)
    cases = {key.split("__")[0] for key in data}
    print(f"wrote {len(cases)} cases to {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
