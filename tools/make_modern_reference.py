"""Regenerate tests/data/modern_reference.npz: Llama's RMSNorm, MLP and rotary.

The test suite compares ``opbyop.rms_norm``, ``opbyop.silu``,
``opbyop.swiglu`` and ``opbyop.rotary`` (and their backward functions) with
these values and needs no PyTorch. Run it with a Python that has PyTorch and
``transformers``::

    /work/torchvenv/bin/python tools/make_modern_reference.py

Every case is a set of arrays stored under ``<case>__<name>``; ``versions``
holds the versions of PyTorch, transformers and NumPy that made them.

- ``rms_norm_<shape>_<dtype>``: ``x``, ``weight``, ``eps``, ``out``. In
  float32, ``out`` is ``transformers``' own ``LlamaRMSNorm``. In float64
  ``LlamaRMSNorm`` computes in float32 (it converts its input) and is only as
  accurate as float32, so ``out`` is its formula in float64 torch operations,
  and ``llama_out`` what ``LlamaRMSNorm`` gives, for the record.
- ``mlp_<shape>_<dtype>``: ``x``, ``w_gate``, ``w_up``, ``w_down``, ``out``:
  ``LlamaMLP`` with ``hidden_act="silu"`` (no biases), in the dtype.
- ``silu_<dtype>``: ``x`` and ``out``, ``torch.nn.functional.silu``.
- ``rotary_<shape>_<dtype>``: ``q``, ``k`` ``[batch, heads, n, d_head]``,
  ``positions`` ``[n]``, ``q_out``, ``k_out``: ``apply_rotary_pos_emb`` with
  the cos and sin of ``LlamaRotaryEmbedding`` (default rope, base 10000).
  ``LlamaRotaryEmbedding`` computes its angles in float32 whatever the
  dtype; in float64 the cos and sin are its formula in float64, and
  ``llama_cos`` what it gives.
- Each float64 case also holds ``dy`` (a random gradient of the output, or
  ``dq`` and ``dk``) and PyTorch autograd's gradients, ``grad_<input>``.

Inputs come from a seeded NumPy generator, so reruns give the same file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers.models.llama import modeling_llama as llama

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "modern_reference.npz"
Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(13)
DTYPES = {"f32": np.float32, "f64": np.float64}
BASE = 10000.0


def tensor(a: Array, grad: bool = False) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(grad)


def numpy(t: torch.Tensor) -> Array:
    return np.asarray(t.detach().numpy())


def config(d_model: int, hidden: int, n_heads: int) -> Any:
    return transformers.LlamaConfig(
        hidden_size=d_model,
        intermediate_size=hidden,
        num_attention_heads=n_heads,
        hidden_act="silu",
        mlp_bias=False,
        rms_norm_eps=1e-6,
        rope_theta=BASE,
        max_position_embeddings=64,
    )


def rms_norm_case(shape: tuple[int, ...], tag: str) -> dict[str, Array]:
    dtype, eps = DTYPES[tag], 1e-6
    x = (RNG.normal(size=shape) * 2 + 0.5).astype(dtype)
    weight = RNG.normal(1.0, 0.3, size=shape[-1]).astype(dtype)
    norm = llama.LlamaRMSNorm(shape[-1], eps=eps).to(
        torch.float64 if tag == "f64" else torch.float32
    )
    with torch.no_grad():
        norm.weight.copy_(tensor(weight))
    llama_out = numpy(norm(tensor(x)))
    case = {"x": x, "weight": weight, "eps": np.array(eps)}
    if tag == "f32":
        return case | {"out": llama_out}
    tx, tw = tensor(x, True), tensor(weight, True)
    out = tx * torch.rsqrt(tx.pow(2).mean(-1, keepdim=True) + eps) * tw
    dy = RNG.normal(size=shape)
    out.backward(tensor(dy))
    return case | {
        "out": numpy(out),
        "llama_out": llama_out,
        "dy": dy,
        "grad_x": numpy(tx.grad),
        "grad_weight": numpy(tw.grad),
    }


def mlp_case(shape: tuple[int, ...], hidden: int, tag: str) -> dict[str, Array]:
    dtype = DTYPES[tag]
    d = shape[-1]
    x = RNG.normal(size=shape).astype(dtype)
    w_gate, w_up = (RNG.normal(0, 0.5, (hidden, d)).astype(dtype) for _ in range(2))
    w_down = RNG.normal(0, 0.5, (d, hidden)).astype(dtype)
    mlp = llama.LlamaMLP(config(d, hidden, 1)).to(torch.float64 if tag == "f64" else torch.float32)
    with torch.no_grad():
        mlp.gate_proj.weight.copy_(tensor(w_gate))
        mlp.up_proj.weight.copy_(tensor(w_up))
        mlp.down_proj.weight.copy_(tensor(w_down))
    tx = tensor(x, grad=tag == "f64")
    out = mlp(tx)
    case = {"x": x, "w_gate": w_gate, "w_up": w_up, "w_down": w_down, "out": numpy(out)}
    if tag == "f32":
        return case
    dy = RNG.normal(size=out.shape)
    out.backward(tensor(dy))
    return case | {
        "dy": dy,
        "grad_x": numpy(tx.grad),
        "grad_w_gate": numpy(mlp.gate_proj.weight.grad),
        "grad_w_up": numpy(mlp.up_proj.weight.grad),
        "grad_w_down": numpy(mlp.down_proj.weight.grad),
    }


def silu_case(tag: str) -> dict[str, Array]:
    x = np.concatenate([np.linspace(-20, 20, 401), [-1e4, -100.0, 100.0, 1e4]]).astype(DTYPES[tag])
    return {"x": x, "out": numpy(F.silu(tensor(x)))}


def rotary_case(shape: tuple[int, int, int, int], tag: str, positions: Array) -> dict[str, Array]:
    dtype = DTYPES[tag]
    _, heads, _, d_head = shape
    q, k = (RNG.normal(size=shape).astype(dtype) for _ in range(2))
    rope = llama.LlamaRotaryEmbedding(config(heads * d_head, 4, heads))
    position_ids = torch.from_numpy(positions[np.newaxis].astype(np.int64))
    llama_cos, llama_sin = rope(tensor(q), position_ids)  # [1, n, d_head], float32 angles
    case = {"q": q, "k": k, "positions": positions}
    if tag == "f32":
        q_out, k_out = llama.apply_rotary_pos_emb(tensor(q), tensor(k), llama_cos, llama_sin)
        return case | {"q_out": numpy(q_out), "k_out": numpy(k_out)}
    # The same formula as LlamaRotaryEmbedding, in float64.
    inv_freq = 1.0 / (BASE ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head))
    freqs = position_ids[..., None].double() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    tq, tk = tensor(q, True), tensor(k, True)
    q_out, k_out = llama.apply_rotary_pos_emb(tq, tk, emb.cos(), emb.sin())
    dq, dk = RNG.normal(size=shape), RNG.normal(size=shape)
    (q_out * tensor(dq) + k_out * tensor(dk)).sum().backward()
    return case | {
        "q_out": numpy(q_out),
        "k_out": numpy(k_out),
        "llama_cos": numpy(llama_cos[0]),
        "cos": numpy(emb.cos()[0]),
        "dq": dq,
        "dk": dk,
        "grad_q": numpy(tq.grad),
        "grad_k": numpy(tk.grad),
    }


def cases() -> dict[str, dict[str, Array]]:
    out: dict[str, dict[str, Array]] = {}
    for tag in DTYPES:
        for shape in ((5, 8), (2, 3, 16)):
            out[f"rms_norm_{'x'.join(map(str, shape))}_{tag}"] = rms_norm_case(shape, tag)
        for shape, hidden in (((4, 8), 24), ((2, 3, 12), 32)):
            out[f"mlp_{'x'.join(map(str, shape))}_{tag}"] = mlp_case(shape, hidden, tag)
        out[f"silu_{tag}"] = silu_case(tag)
        out[f"rotary_1x2x5x8_{tag}"] = rotary_case((1, 2, 5, 8), tag, np.arange(5))
        out[f"rotary_2x1x4x16_{tag}"] = rotary_case((2, 1, 4, 16), tag, np.array([7, 0, 3, 12]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.manual_seed(0)
    arrays = {
        f"{case}__{name}": value
        for case, values in cases().items()
        for name, value in values.items()
    }
    versions = (torch.__version__, transformers.__version__, np.__version__)
    arrays["versions"] = np.array("torch {}, transformers {}, numpy {}".format(*versions))
    np.savez_compressed(args.out, allow_pickle=False, **arrays)
    print(f"wrote {len(arrays)} arrays to {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
