"""Regenerate tests/data/float16_masks.json: PyTorch's float16 masking.

Episode 4 says what -1e9 does to float16 scores in NumPy (the page computes
it) and in PyTorch (the page cannot: it needs no PyTorch). This script
records PyTorch's side, and ``tests/test_float16_masks.py`` checks both the
record and that the page states it. In a virtual environment with PyTorch::

    /path/to/torch-venv/bin/python tools/make_float16_masks.py

It records, for scores ``[2, 1, 3]`` in float16 with the last key hidden:

- ``additive``: ``scores + (1 - keep) * -1e9`` and its softmax;
- ``masked_fill``: the error ``masked_fill(hidden, -1e9)`` raises;
- ``finfo_min``: ``torch.finfo(torch.float16).min``, and the softmax of
  ``masked_fill(hidden, finfo_min)``;
- ``all_hidden``: the softmax of ``scores + -1e9`` with every key hidden,
  and whether ``nn.MultiheadAttention`` (default path) gives nan when
  ``key_padding_mask`` hides every key;
- ``bfloat16``: -1e9 stored as bfloat16, and that type's largest number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "float16_masks.json"


def as_list(tensor: torch.Tensor) -> list[float]:
    """A tensor's numbers as Python floats (json writes -inf as -Infinity)."""
    return [float(x) for x in tensor.tolist()]


def record() -> dict[str, Any]:
    scores = torch.tensor([2.0, 1.0, 3.0], dtype=torch.float16)
    keep = torch.tensor([1.0, 1.0, 0.0], dtype=torch.float16)
    hidden = keep == 0
    penalty = (1 - keep) * -1e9
    added = scores + penalty
    try:
        scores.masked_fill(hidden, -1e9)
        error = ""
    except RuntimeError as exc:
        error = str(exc)
    lowest = torch.finfo(torch.float16).min
    filled = scores.masked_fill(hidden, lowest)
    every_key_hidden = scores + torch.ones_like(keep) * -1e9
    torch.manual_seed(0)
    heads = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, 3, 8)
    hide_all = torch.ones(1, 3, dtype=torch.bool)  # True: hide the key
    with torch.no_grad():
        mha_out, _ = heads(x, x, x, key_padding_mask=hide_all)
    return {
        "torch_version": torch.__version__.split("+")[0],
        "scores": as_list(scores),
        "keep": as_list(keep),
        "additive": {
            "dtype": str(added.dtype),
            "penalty": as_list(penalty),
            "scores": as_list(added),
            "softmax": as_list(torch.softmax(added, dim=-1)),
        },
        "masked_fill": {"error": error},
        "finfo_min": {
            "value": lowest,
            "softmax": as_list(torch.softmax(filled, dim=-1)),
        },
        "all_hidden": {
            "scores": as_list(every_key_hidden),
            "softmax": as_list(torch.softmax(every_key_hidden, dim=-1)),
            "multihead_attention_nan": bool(mha_out.isnan().all()),
        },
        "bfloat16": {
            "minus_a_billion": float(torch.tensor(-1e9, dtype=torch.bfloat16)),
            "max": torch.finfo(torch.bfloat16).max,
        },
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(record(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
