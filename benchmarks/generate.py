"""How fast does opbyop.gpt write? The KV cache, and GPT2LMHeadModel.generate.

The workload: 200 new tokens, greedy, after a 16-token prompt (one row), on
a float32 model of 4 layers, 4 heads, d_model 128, context 256 and
vocabulary 256 (``gpt.init``'s weights, seed 0, in a folder ``gpt.save``
wrote, which ``from_pretrained`` reads). It measures:

- ``gpt.generate`` with ``use_cache=True`` and ``use_cache=False``: the
  target is the cache at least 5x faster;
- ``GPT2LMHeadModel.generate(do_sample=False, use_cache=True)`` on the same
  weights and threads, per token: the target is opbyop at most 1.0x its
  time;
- the time of one step as the text grows: one new token against a cache of
  ``n`` tokens (``gpt.forward_with_cache``), and the whole text of ``n + 1``
  tokens again (``gpt.forward``), at n = 16, 32, 64, 128 and 215. With the
  cache a step's time stays nearly flat; without, it grows with n, so the
  total for N tokens grows with N^2.

Each side runs in its own process (NumPy and PyTorch in one process slow
each other down); the parent runs them in turns, round after round, and
keeps each side's fastest run. It also reports how many of PyTorch's 200
tokens opbyop's match before the first difference (the weights are GPT-2's
small initial ones, so near-ties in float32 can part them).

Usage::

    python benchmarks/generate.py --torch-python /path/to/python
    python benchmarks/generate.py --quick            # 1 round, to try it
    python benchmarks/generate.py --out benchmarks/results/generate.json

PyTorch's side needs a Python with torch and transformers
(``--torch-python``, default this one); without, only opbyop's side runs.
Record on a quiet machine: the JSON keeps the load average before and after.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG: dict[str, Any] = {
    "vocab_size": 256,
    "context": 256,
    "n_layers": 4,
    "n_heads": 4,
    "d_model": 128,
}
PROMPT_LENGTH, NEW_TOKENS = 16, 200
GROWTH = (16, 32, 64, 128, 215)  # tokens already there when a step runs
TARGETS = {"cache_speedup": 5.0, "per_token_vs_torch": 1.0}


def prompt() -> list[int]:
    """The same 16 tokens for both sides."""
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.integers(0, CONFIG["vocab_size"], PROMPT_LENGTH).tolist()


def best_of(run: Any, repeats: int) -> float:
    """The fastest of `repeats` calls of `run`, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------ the two sides
def numpy_side(folder: str, repeats: int) -> dict[str, Any]:
    import numpy as np

    from opbyop import gpt

    params = gpt.load(folder).params
    ids = np.array([prompt()])
    tokens = gpt.generate(params, ids, NEW_TOKENS)  # also a warm-up
    out: dict[str, Any] = {"tokens": tokens[0, PROMPT_LENGTH:].tolist()}
    for use_cache in (True, False):
        out[f"seconds_cache_{use_cache}"] = best_of(
            partial(gpt.generate, params, ids, NEW_TOKENS, use_cache=use_cache),
            repeats,
        )
    rng = np.random.default_rng(1)
    steps = 20  # per timing: one step is short

    def cached_steps(text: Any, cache: Any) -> None:
        for _ in range(steps):
            gpt.forward_with_cache(params, text[:, -1:], cache)

    def whole_steps(text: Any) -> None:
        for _ in range(steps):
            gpt.forward(params, text)

    growth = {}
    for n in GROWTH:
        text = rng.integers(0, CONFIG["vocab_size"], (1, n + 1))
        _, cache = gpt.forward_with_cache(params, text[:, :n])
        growth[n] = {
            "cached": best_of(partial(cached_steps, text, cache), repeats) / steps,
            "recomputed": best_of(partial(whole_steps, text), repeats) / steps,
        }
    out["step_seconds_by_length"] = growth
    return out


def torch_side(folder: str, repeats: int) -> dict[str, Any]:
    import torch
    import transformers

    model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    ids = torch.tensor([prompt()])

    def run() -> torch.Tensor:
        with torch.no_grad():
            return model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=NEW_TOKENS,
                min_new_tokens=NEW_TOKENS,
                do_sample=False,
                top_k=None,
                top_p=None,
                temperature=None,
                eos_token_id=None,
                pad_token_id=0,  # one row: never used
                use_cache=True,
            )

    tokens = run()  # also a warm-up
    return {
        "tokens": tokens[0, PROMPT_LENGTH:].tolist(),
        "seconds": best_of(run, repeats),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads(),
        },
    }


SIDES = {"numpy": numpy_side, "torch": torch_side}


# ------------------------------------------------------------ the parent
def run_side(python: str, side: str, folder: str, repeats: int) -> Any:
    """One side in its own process; its JSON, or None if it cannot run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [python, __file__, "--side", side, folder, "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode:
        print(f"{side} side failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.splitlines()[-1])


def fastest(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each timing's minimum over the rounds (the rest from the first)."""
    out = dict(runs[0])
    for key in runs[0]:
        if key.startswith("seconds"):
            out[key] = min(run[key] for run in runs)
    if "step_seconds_by_length" in out:
        out["step_seconds_by_length"] = {
            n: {
                kind: min(run["step_seconds_by_length"][n][kind] for run in runs)
                for kind in ("cached", "recomputed")
            }
            for n in runs[0]["step_seconds_by_length"]
        }
    return out


def matching_prefix(a: list[int], b: list[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return i
    return len(a)


def summary(mine: dict[str, Any], theirs: dict[str, Any] | None) -> dict[str, Any]:
    cached, recomputed = mine["seconds_cache_True"], mine["seconds_cache_False"]
    out: dict[str, Any] = {
        "opbyop_ms_per_token_cache": 1e3 * cached / NEW_TOKENS,
        "opbyop_ms_per_token_no_cache": 1e3 * recomputed / NEW_TOKENS,
        "cache_speedup": recomputed / cached,
        "step_ms_by_length": {
            n: {kind: 1e3 * s for kind, s in kinds.items()}
            for n, kinds in mine["step_seconds_by_length"].items()
        },
    }
    if theirs is not None:
        out["torch_ms_per_token"] = 1e3 * theirs["seconds"] / NEW_TOKENS
        out["per_token_vs_torch"] = cached / theirs["seconds"]
        out["tokens_equal_to_torch_before_first_difference"] = matching_prefix(
            mine["tokens"], theirs["tokens"]
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--side", nargs=2, metavar=("SIDE", "FOLDER"))
    args = parser.parse_args()
    if args.side:  # a child: time one side, print its JSON
        side, folder = args.side
        print(json.dumps(SIDES[side](folder, args.repeats)))
        return
    rounds, repeats = (1, 1) if args.quick else (args.rounds, args.repeats)
    sys.path.insert(0, str(ROOT / "src"))
    from opbyop import gpt

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        gpt.save(gpt.init(gpt.Config(**CONFIG), seed=0), folder)
        runs: dict[str, list[Any]] = {"numpy": [], "torch": []}
        for _ in range(rounds):
            for side, python in (
                ("numpy", sys.executable),
                ("torch", args.torch_python),
            ):
                result = run_side(python, side, folder, repeats)
                if result is not None:
                    runs[side].append(result)
    if not runs["numpy"]:
        raise SystemExit("opbyop's side failed")
    theirs = fastest(runs["torch"]) if runs["torch"] else None
    result = summary(fastest(runs["numpy"]), theirs)
    for name, limit in TARGETS.items():
        if name in result:
            value = result[name]
            met = value >= limit if name == "cache_speedup" else value <= limit
            print(f"{name}: {value:.2f} (target {limit}: {'met' if met else 'MISSED'})")
    print(json.dumps(result, indent=1))
    if args.out:
        record = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "workload": {
                **CONFIG,
                "prompt": PROMPT_LENGTH,
                "new_tokens": NEW_TOKENS,
                "dtype": "float32",
            },
            "rounds": rounds,
            "repeats": repeats,
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "versions": theirs["versions"] if theirs else None,
            "targets": TARGETS,
            "result": result,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
