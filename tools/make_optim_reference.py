"""Regenerate tests/data/optim_reference.npz: PyTorch's AdamW and clipping.

The test suite compares `opbyop.optim` with these values and needs no
PyTorch. Run with a Python that has torch 2.13.0::

    /path/to/torch-venv/bin/python tools/make_optim_reference.py

Each case is a few parameters of 1, 2 and 3 dimensions, in float64 or
float32, trained for `STEPS` steps on seeded random gradients. Each step
sets the learning rate (from a warm-up and cosine schedule, so the lr
changes between steps), clips the gradients with
``torch.nn.utils.clip_grad_norm_`` and calls ``torch.optim.AdamW.step``.
Parameters of two or more dimensions are in a group with weight decay, the
others in a group without, as nanoGPT's ``configure_optimizers`` makes them.

Arrays are stored as ``<case>__<what>``:

- ``settings``: betas, eps, weight_decay, max_norm;
- ``lr``: the learning rate of each step;
- ``init__<name>``: the parameters before the first step;
- ``grad<i>__<name>``: step i's gradient, before clipping;
- ``norm``: the total norm clip_grad_norm_ returned at each step;
- ``param<i>__<name>``: the parameters after step i;
- ``exp_avg__<name>``, ``exp_avg_sq__<name>``: AdamW's state at the end.

``schedule__*`` holds nanoGPT's ``get_lr``, written out below as nanoGPT's
train.py has it, at chosen steps (warm-up, cosine, after the end).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "optim_reference.npz"
STEPS = 5
SHAPES = {"wte": (6, 4), "ln_w": (4,), "proj": (2, 3, 4), "bias": (3,)}
CASES: dict[str, dict[str, Any]] = {
    "float64_defaults": {
        "dtype": "float64",
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.01,
        "max_norm": 1.0,
    },
    "float64_strong": {
        "dtype": "float64",
        "betas": (0.8, 0.95),
        "eps": 1e-6,
        "weight_decay": 0.1,
        "max_norm": 3.0,
    },
    "float32_defaults": {
        "dtype": "float32",
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.01,
        "max_norm": 1.0,
    },
    "float32_strong": {
        "dtype": "float32",
        "betas": (0.8, 0.95),
        "eps": 1e-6,
        "weight_decay": 0.1,
        "max_norm": 3.0,
    },
}
SCHEDULE = {"max_lr": 6e-4, "min_lr": 6e-5, "warmup": 10, "total": 110}
SCHEDULE_STEPS = [0, 1, 4.5, 9, 9.5, 10, 11, 37.25, 60, 100, 109, 109.5, 110, 111, 5000]


def get_lr(it: float, max_lr: float, min_lr: float, warmup: float, total: float) -> float:
    """nanoGPT's get_lr, with its names mapped to ours."""
    learning_rate, warmup_iters, lr_decay_iters = max_lr, warmup, total
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def run_case(name: str, case: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """One case: STEPS steps of clipping and AdamW in PyTorch."""
    rng = np.random.default_rng(seed)
    dtype = case["dtype"]
    init = {k: rng.standard_normal(s).astype(dtype) for k, s in SHAPES.items()}
    tensors = {k: torch.tensor(v, requires_grad=True) for k, v in init.items()}
    decay = [t for t in tensors.values() if t.dim() >= 2]
    no_decay = [t for t in tensors.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": case["weight_decay"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=1.0,
        betas=case["betas"],
        eps=case["eps"],
    )
    out: dict[str, np.ndarray] = {
        "settings": np.array([*case["betas"], case["eps"], case["weight_decay"], case["max_norm"]]),
    }
    out.update({f"init__{k}": v for k, v in init.items()})
    lrs, norms = [], []
    for step in range(STEPS):
        lr = get_lr(step * 25, max_lr=3e-2, min_lr=3e-3, warmup=30, total=100)
        lrs.append(lr)
        # Gradients of different sizes, so that some steps clip and some do not.
        size = [2.0, 0.05, 1.0, 0.2, 5.0][step]
        for k, t in tensors.items():
            grad = (size * rng.standard_normal(t.shape)).astype(dtype)
            out[f"grad{step}__{k}"] = grad
            t.grad = torch.tensor(grad)
        norm = torch.nn.utils.clip_grad_norm_(list(tensors.values()), case["max_norm"])
        norms.append(float(norm))
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        for k, t in tensors.items():
            out[f"param{step}__{k}"] = t.detach().numpy().copy()
    for k, t in tensors.items():
        out[f"exp_avg__{k}"] = opt.state[t]["exp_avg"].numpy().copy()
        out[f"exp_avg_sq__{k}"] = opt.state[t]["exp_avg_sq"].numpy().copy()
    out["lr"] = np.array(lrs)
    out["norm"] = np.array(norms)
    print(f"{name}: norms {[round(n, 3) for n in norms]} (max_norm {case['max_norm']})")
    return {f"{name}__{k}": v for k, v in out.items()}


def main() -> None:
    torch.manual_seed(0)
    arrays: dict[str, np.ndarray] = {}
    for seed, (name, case) in enumerate(CASES.items()):
        arrays.update(run_case(name, case, seed))
    arrays["schedule__settings"] = np.array([SCHEDULE[k] for k in SCHEDULE], dtype=np.float64)
    arrays["schedule__steps"] = np.array(SCHEDULE_STEPS, dtype=np.float64)
    arrays["schedule__lr"] = np.array([get_lr(s, **SCHEDULE) for s in SCHEDULE_STEPS])
    np.savez_compressed(OUT, allow_pickle=False, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, torch {torch.__version__})")


if __name__ == "__main__":
    main()
