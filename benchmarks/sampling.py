"""What each way of choosing tokens does to the text the shipped model writes.

Not a timing: sampling statistics, the same on every machine up to float32
rounding (a sampled token can change only where a random number falls
within rounding of a boundary between two tokens). Episode 11's table reads
the recorded run.

The prompts are the held-out files' top-level one-line function
signatures (``def name(args):`` and a newline) of at most 56 bytes, every
third of them in text order: the model never learned from these files. Each setting writes
``--rows`` samples of 200 bytes after each prompt (greedy writes one, as it
can write nothing else), seeded by the prompt's number. For each sample:

- ``log_probability``: the average log2-probability the model (untouched:
  temperature 1, no filter) gives each byte it wrote, in bits;
- ``distinct_lines``: of its complete, non-blank lines, the share that are
  different (a line written twice counts once). A sample with no complete
  non-blank line (200 spaces, say) has no lines to repeat: it is left out
  of this average and counted apart, in ``no_lines``;
- ``compiles``: whether the prompt and the sample, with the sample's
  unfinished last line dropped, compile as Python (``compile(text,
  "<sample>", "exec")``): episode 10's measure.

Each is averaged over the setting's samples (``distinct_lines`` over those
with lines); ``compiled``, ``no_lines`` and ``repeating`` (samples with a
line written twice) are counts. Record it with::

    .venv/bin/python benchmarks/sampling.py --out benchmarks/results/sampling.json
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from opbyop import corpus, gpt

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "sampling.json"
NEW_TOKENS = 200
SETTINGS: dict[str, dict[str, Any]] = {
    "greedy": {},
    "greedy, repetition penalty 1.3": {"repetition_penalty": 1.3},
    "temperature 1": {"do_sample": True},
    "temperature 0.7": {"do_sample": True, "temperature": 0.7},
    "temperature 1.5": {"do_sample": True, "temperature": 1.5},
    "top-k 10": {"do_sample": True, "top_k": 10},
    "top-p 0.9": {"do_sample": True, "top_p": 0.9},
    "min-p 0.1": {"do_sample": True, "min_p": 0.1},
    "temperature 1.5, min-p 0.1": {
        "do_sample": True,
        "temperature": 1.5,
        "min_p": 0.1,
    },
}


def prompts(context: int = 256) -> list[str]:
    """Every third top-level one-line ``def`` of the held-out files that
    leaves room for 200 new bytes in the context."""
    _, held_out = corpus.load()
    lines = re.findall(r"(?m)^def \w+\(.*\):$", held_out)
    room = context - NEW_TOKENS
    return [line + "\n" for line in lines if len(line) + 1 <= room][::3]


def log_probabilities(params: gpt.Params, rows: np.ndarray, start: int) -> np.ndarray:
    """Each row's average log2-probability of its tokens from `start` on."""
    logits = gpt.forward(params, rows[:, :-1]).astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_p = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))
    chosen = np.take_along_axis(log_p, rows[:, 1:, None], axis=-1)[..., 0]
    return chosen[:, start - 1 :].mean(axis=-1) / np.log(2)


def distinct_lines(written: str) -> float | None:
    """The share of the complete, non-blank lines that are different; None
    when there is no such line."""
    lines = [line for line in written.split("\n")[:-1] if line.strip()]
    return len(set(lines)) / len(lines) if lines else None


def compiles(prompt: str, written: str) -> bool:
    """Episode 10's measure: does it compile without its unfinished last line?"""
    text = (prompt + written).rsplit("\n", 1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like
        try:
            compile(text, "<sample>", "exec")
        except (SyntaxError, ValueError):  # ValueError: a null byte
            return False
    return True


def measure(model: gpt.Model, texts: list[str], rows: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    assert model.tokenizer is not None
    for name, settings in tqdm(SETTINGS.items(), desc="settings"):
        count = rows if settings.get("do_sample") else 1
        scores: dict[str, list[float]] = {
            "log_probability": [],
            "distinct_lines": [],
            "compiles": [],
        }
        no_lines = 0
        for seed, prompt in enumerate(texts):
            ids = np.tile(model.tokenizer.encode(prompt), (count, 1))
            out = gpt.generate(model.params, ids, NEW_TOKENS, seed=seed, **settings)
            scores["log_probability"] += log_probabilities(model.params, out, ids.shape[1]).tolist()
            for row in out:
                written = model.tokenizer.decode(row[ids.shape[1] :].tolist())
                distinct = distinct_lines(written)
                if distinct is None:
                    no_lines += 1
                else:
                    scores["distinct_lines"].append(distinct)
                scores["compiles"].append(float(compiles(prompt, written)))
        results[name] = {
            "settings": settings,
            "samples": len(scores["compiles"]),
            **{key: float(np.mean(values)) for key, values in scores.items()},
            "compiled": int(sum(scores["compiles"])),
            "no_lines": no_lines,
            "repeating": sum(d < 1 for d in scores["distinct_lines"]),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="samples per prompt")
    parser.add_argument(
        "--out", type=Path, help=f"write here (recorded: {RESULTS.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    model = gpt.load()
    texts = prompts()
    results = measure(model, texts, args.rows)
    run = {
        "command": (
            f"python benchmarks/sampling.py --rows {args.rows} "
            "--out benchmarks/results/sampling.json"
        ),
        "model": "the shipped model (gpt.load())",
        "prompts": len(texts),
        "rows_per_prompt": args.rows,
        "new_tokens": NEW_TOKENS,
        "seeds": "the prompt's number, 0 to prompts - 1",
        "results": results,
    }
    if args.out:
        args.out.write_text(json.dumps(run, indent=1) + "\n")
    for name, result in results.items():
        print(
            f"{name:28} {result['samples']:4} samples: log-probability "
            f"{result['log_probability']:6.2f} bits, distinct lines "
            f"{result['distinct_lines']:4.0%} ({result['no_lines']} with none), "
            f"compiles {result['compiled']}"
        )


if __name__ == "__main__":
    main()
