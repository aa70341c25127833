"""Regenerate tests/data/sampling_reference.npz: Hugging Face's logits processors.

The test suite compares `opbyop.sampling` with these values and needs
neither PyTorch nor transformers. Run with a Python that has torch 2.13.0
and transformers 5.24.0::

    /path/to/torch-venv/bin/python tools/make_sampling_reference.py

Every case runs one processor of ``transformers.generation.logits_process``
on seeded logits ``[rows, vocab]``. For each dtype (float64, float32):

- ``kinds__<dtype>``: the names of the kinds of input (normal, ties...);
- ``input__<dtype>``: the logits, ``[kinds, rows, vocab]``;
- ``ids__<dtype>``: the tokens so far, ``[kinds, rows, n]``, for the
  repetition penalty.

and for each processor, one entry per case (every kind of input with every
argument), under ``<processor>__<dtype>__<name>``:

- ``kind``: the input's index in ``kinds``;
- ``arg``: the processor's argument (t, k, p, min_p or the penalty);
- ``result``: for temperature and the penalty, the output; for top-k, top-p
  and min-p, True where the processor set a score to -inf (it leaves the
  others exactly as they were, which this script checks, so
  ``where(result, -inf, input)`` is its output);
- ``straddles``: one flag per row, True where a tie straddles the cut (some
  tokens of one score kept, others of the same score removed). Which of
  them are kept depends on the sort's order, so the tests compare those
  rows by the scores kept, not by the ids.

The inputs cover ties, -inf entries, huge and tiny values, float32 and
float64, k = 1 and k >= vocab, p = 1 and tiny p, min_p near 1, and
penalties 1.0, 1.3 and 0.7 (below 1: a bonus).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "sampling_reference.npz"
Array = np.ndarray
ROWS, VOCAB = 6, 40


def inputs(rng: np.random.Generator, dtype: str) -> dict[str, Array]:
    """Logits of several kinds, each ``[ROWS, VOCAB]`` in `dtype`."""
    big = 1e300 if dtype == "float64" else 1e37
    normal = 3 * rng.standard_normal((ROWS, VOCAB))
    ties = rng.integers(-3, 4, (ROWS, VOCAB)).astype(float)  # many equal scores
    neg_inf = normal.copy()
    neg_inf[rng.random((ROWS, VOCAB)) < 0.4] = -np.inf
    neg_inf[0, 1:] = -np.inf  # one row with a single finite score
    neg_inf[1, ::2] = -np.inf
    huge = big * rng.standard_normal((ROWS, VOCAB))
    huge[:, :3] = [big, -big, 0.0]
    tiny = 1e-30 * rng.standard_normal((ROWS, VOCAB))  # nearly uniform
    # Scores far apart: the probabilities of most tokens underflow to 0 or
    # to the smallest numbers the dtype has.
    spread = np.linspace(-900, 0, VOCAB) if dtype == "float64" else np.linspace(-120, 0, VOCAB)
    spread = np.stack([rng.permutation(spread) for _ in range(ROWS)])
    peaked = normal.copy()
    peaked[np.arange(ROWS), rng.integers(0, VOCAB, ROWS)] += 12  # one sure token
    kinds = {
        "normal": normal,
        "ties": ties,
        "neg_inf": neg_inf,
        "huge": huge,
        "tiny": tiny,
        "spread": spread,
        "peaked": peaked,
    }
    return {kind: x.astype(dtype) for kind, x in kinds.items()}


def straddles(logits: Array, out: Array) -> Array:
    """Per row: does some score occur both among the kept and the removed?"""
    flags = []
    for row, result in zip(logits, out, strict=True):
        removed = (result == -np.inf) & (row != -np.inf)
        kept = result != -np.inf
        flags.append(bool(set(row[removed].tolist()) & set(row[kept].tolist())))
    return np.array(flags)


def run(processor: Callable[..., torch.Tensor], logits: Array, ids: Array) -> Array:
    scores = torch.from_numpy(logits.copy())
    out = processor(torch.from_numpy(ids), scores)
    assert torch.equal(scores, torch.from_numpy(logits)), "input changed"
    return out.numpy()


def main() -> None:
    rng = np.random.default_rng(25)
    arrays: dict[str, Array] = {}
    makers: dict[str, tuple[Callable[[float], object], list[float]]] = {
        "temperature": (lambda a: TemperatureLogitsWarper(float(a)), [0.5, 1.0, 1.7]),
        "top_k": (lambda a: TopKLogitsWarper(int(a)), [1, 5, VOCAB, VOCAB + 7]),
        "top_p": (lambda a: TopPLogitsWarper(float(a)), [1.0, 0.9, 0.5, 1e-8]),
        "min_p": (lambda a: MinPLogitsWarper(float(a)), [0.0, 0.05, 0.5, 0.999999, 1.0]),
        "repetition_penalty": (
            lambda a: RepetitionPenaltyLogitsProcessor(float(a)),
            [1.0, 1.3, 0.7],
        ),
    }
    for dtype in ("float64", "float32"):
        kinds = inputs(rng, dtype)
        # Repeats, so "penalised once" is tested; ids from the whole vocabulary.
        ids = rng.integers(0, VOCAB, (len(kinds), ROWS, 12))
        ids[..., -3:] = ids[..., :3]
        arrays[f"kinds__{dtype}"] = np.array(list(kinds))
        arrays[f"input__{dtype}"] = np.stack(list(kinds.values()))
        arrays[f"ids__{dtype}"] = ids
        for name, (make, args) in makers.items():
            cases: dict[str, list[Array]] = {"kind": [], "arg": [], "result": [], "straddles": []}
            for k, logits in enumerate(kinds.values()):
                for arg in args:
                    out = run(make(arg), logits, ids[k])  # type: ignore[arg-type]
                    cases["straddles"].append(straddles(logits, out))
                    if name not in ("temperature", "repetition_penalty"):
                        removed = (out == -np.inf) & (logits != -np.inf)
                        assert np.array_equal(out, np.where(removed, -np.inf, logits))
                        out = removed  # the rest of the output is the input
                    cases["kind"].append(np.array(k))
                    cases["arg"].append(np.array(arg, dtype=np.float64))
                    cases["result"].append(out)
            for what, values in cases.items():
                arrays[f"{name}__{dtype}__{what}"] = np.stack(values)
    np.savez_compressed(OUT, allow_pickle=False, **arrays)
    print(
        f"wrote {OUT} ({OUT.stat().st_size} bytes, "
        f"torch {torch.__version__}, transformers {transformers.__version__})"
    )


if __name__ == "__main__":
    main()
