"""The tiny GPT with one thing changed, at equal training time: episodes 12 and 13.

Each comparison trains ``opbyop.train``'s default model and recipe with one
setting changed (the vocabulary, for episode 12; the norm, the MLP and the
positions, for episode 13), from 2 seeds each, and measures bits per byte
on the whole held-out split.

"Equal time" is measured without trusting a busy clock. The recorded
5-minute run (``benchmarks/results/train_5min.json``) took 7,543 steps. A
variant whose step takes ``r`` times as long gets ``round(7543 / r)`` steps,
and ``r`` is measured here, in one run, in interleaved rounds (the median
of the rounds' ratios), with the default threads. Training then runs by
steps, which repeat exactly, so the runs may share the cores (one BLAS
thread each, ``--jobs`` at a time) without changing what they reach. Only
the step-time ratios need a quiet machine; their load is recorded.

The results go to ``benchmarks/results/equal_time.json`` after every run,
and a run already there is skipped, as is one another comparison made with
the same settings, seed and steps (copied, with ``same_as``). ``--again``
measures the step times afresh and reruns all of a comparison::

    env -u OPENBLAS_CORETYPE .venv/bin/python benchmarks/equal_time.py \\
        --comparison vocabulary --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from opbyop import corpus, gpt, optim, train
from opbyop.bpe import BytePairs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "equal_time.json"
BASE_RUN = ROOT / "benchmarks" / "results" / "train_5min.json"
SEEDS = (0, 1)
ROUNDS = 15  # interleaved rounds of the step-time measurement
STEPS_PER_ROUND = 20

# One setting changed from the default at a time; the first is the default.
# Keys are Config fields; vocab_size > 256 trains that many byte pairs on the
# training split first.
COMPARISONS: dict[str, dict[str, dict[str, Any]]] = {
    "vocabulary": {
        "256": {},
        "512": {"vocab_size": 512},
        "1024": {"vocab_size": 1024},
    },
    "modern": {
        "GPT-2": {},
        "RMSNorm": {"norm": "rms"},
        "SwiGLU": {"mlp": "swiglu"},
        "rotary": {"positions": "rotary"},
        "all three": {"norm": "rms", "mlp": "swiglu", "positions": "rotary"},
    },
}


def tokenizer_for(vocab_size: int, train_text: str) -> BytePairs:
    """Bytes, or byte pairs trained on the training split."""
    return BytePairs.train(train_text if vocab_size > 256 else "", vocab_size)


def setup(settings: dict[str, Any], train_text: str) -> tuple[gpt.Config, BytePairs]:
    config = train.DEFAULT_CONFIG._replace(**settings)
    return config, tokenizer_for(config.vocab_size, train_text)


class Stepper:
    """One variant's training step, exactly as ``train.fit`` takes it."""

    def __init__(self, config: gpt.Config, tokenizer: BytePairs, train_text: str):
        recipe = train.Recipe()
        self.recipe, self.context = recipe, config.context
        self.tokens = train.tokens_of(tokenizer, train_text)
        self.params = gpt.init(config)
        self.optimizer = optim.AdamW(
            self.params,
            lr=recipe.lr,
            betas=(0.9, recipe.beta2),
            weight_decay=recipe.weight_decay,
        )
        self.rng = np.random.default_rng(0)

    def steps(self, n: int) -> float:
        """Seconds for `n` steps."""
        start = time.perf_counter()
        for _ in range(n):
            ids, targets = train.batch_of_windows(
                self.tokens, self.recipe.batch, self.context, self.rng
            )
            _, grads = gpt.loss_and_grads(self.params, ids, targets)
            optim.clip_grad_norm(grads, self.recipe.clip)
            self.optimizer.step(grads)
        return time.perf_counter() - start


def step_ratios(comparison: str, train_text: str) -> dict[str, Any]:
    """Each variant's step time over the first's: medians of interleaved rounds."""
    variants = COMPARISONS[comparison]
    steppers = {name: Stepper(*setup(s, train_text), train_text) for name, s in variants.items()}
    for stepper in steppers.values():
        stepper.steps(3)  # warm up: first calls allocate
    load_before = load()
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, stepper in steppers.items():
            seconds[name].append(stepper.steps(STEPS_PER_ROUND) / STEPS_PER_ROUND)
    first = next(iter(variants))
    ratios = {
        name: statistics.median(t / b for t, b in zip(seconds[name], seconds[first], strict=True))
        for name in variants
    }
    return {
        "ratios": ratios,
        "step_ms": {name: [round(1e3 * t, 3) for t in ts] for name, ts in seconds.items()},
        "rounds": ROUNDS,
        "steps_per_round": STEPS_PER_ROUND,
        "load_before": load_before,
        "load_after": load(),
        "blas_threads": [i.get("num_threads") for i in train._machine()["blas"]],
    }


def run_one(comparison: str, name: str, seed: int, steps: int) -> dict[str, Any]:
    """Train one variant by steps; its figures on the held-out split."""
    train_text, validation_text = corpus.load()
    settings = COMPARISONS[comparison][name]
    config, tokenizer = setup(settings, train_text)
    start = time.perf_counter()
    _, log = train.fit(
        config,
        train_text,
        validation_text,
        steps=steps,
        seed=seed,
        tokenizer=tokenizer,
        progress=False,
    )
    held_out_tokens = len(train.tokens_of(tokenizer, validation_text))
    return {
        "comparison": comparison,
        "name": name,
        "settings": settings,
        "seed": seed,
        "config": log["config"],
        "parameters": log["parameters"],
        "steps": steps,
        "bytes_per_token": round(len(validation_text.encode("utf-8")) / held_out_tokens, 4),
        "validation_bits_per_byte": log["final"]["validation_bits_per_byte"],
        "validation_sample_bits_per_byte": log["final"]["validation_sample_bits_per_byte"],
        "validation_curve": log["validation"],
        "samples": log["samples"][-3:],
        "wall_seconds": round(time.perf_counter() - start, 1),
        "load_after": load(),
    }


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    info = train._machine()
    info.pop("load_before", None)
    info["date"] = time.strftime("%Y-%m-%d")
    return info


def save(results: dict[str, Any]) -> None:
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparison", choices=list(COMPARISONS), required=True)
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, one thread each")
    parser.add_argument("--again", action="store_true", help="start the comparison afresh")
    parser.add_argument("--one", nargs=3, metavar=("NAME", "SEED", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a worker: print one run's figures as JSON
        name, seed, steps = args.one
        print(json.dumps(run_one(args.comparison, name, int(seed), int(steps))))
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": []}
    results.setdefault("step_times", {})
    if args.again:
        results["runs"] = [r for r in results["runs"] if r["comparison"] != args.comparison]
        results["step_times"].pop(args.comparison, None)
    base_steps = json.loads(BASE_RUN.read_text())["final"]["step"]
    results["base"] = {"run": str(BASE_RUN.relative_to(ROOT)), "steps": base_steps}
    if args.comparison not in results["step_times"]:
        print(f"{args.comparison}: measuring the step times", flush=True)
        train_text, _ = corpus.load()
        results["step_times"][args.comparison] = step_ratios(args.comparison, train_text)
        results.setdefault("machine", {})[args.comparison] = machine()
        save(results)
    ratios = results["step_times"][args.comparison]["ratios"]
    done = {(r["comparison"], r["name"], r["seed"]) for r in results["runs"]}
    todo = [
        (name, seed, round(base_steps / ratios[name]))
        for seed in SEEDS
        for name in COMPARISONS[args.comparison]
        if (args.comparison, name, seed) not in done
    ]
    todo = [run for run in todo if not reuse(args.comparison, *run, results)]
    run_all(args.comparison, todo, args.jobs, results)


def reuse(comparison: str, name: str, seed: int, steps: int, results: dict[str, Any]) -> bool:
    """Record a run another comparison already made (the same settings, seed and steps)."""
    settings = COMPARISONS[comparison][name]
    for run in results["runs"]:
        if (run["settings"], run["seed"], run["steps"]) == (settings, seed, steps):
            results["runs"].append(
                {**run, "comparison": comparison, "name": name, "same_as": run["comparison"]}
            )
            save(results)
            print(f"{comparison} {name} seed {seed}: the same run as {run['comparison']}'s")
            return True
    return False


def run_all(
    comparison: str, todo: list[tuple[str, int, int]], jobs: int, results: dict[str, Any]
) -> None:
    """Each run in its own process, `jobs` at a time, recorded as it ends."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["OPENBLAS_NUM_THREADS"] = "1"
    running: list[tuple[subprocess.Popen[str], str]] = []
    while todo or running:
        while todo and len(running) < jobs:
            name, seed, steps = todo.pop(0)
            flags = [sys.executable, __file__, "--comparison", comparison]
            flags += ["--one", name, str(seed), str(steps)]
            running.append(
                (subprocess.Popen(flags, env=env, stdout=subprocess.PIPE, text=True), name)
            )
        process, name = running.pop(0)
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"{comparison} {name}: the run failed ({process.returncode})")
        result = json.loads(out)
        result["command"] = (
            f"python benchmarks/equal_time.py --comparison {comparison} "
            f"--one {name!r} {result['seed']} {result['steps']}"
        )
        results["runs"].append(result)
        save(results)
        print(
            f"{comparison} {name} seed {result['seed']}: "
            f"{result['validation_bits_per_byte']:.3f} bits per byte in "
            f"{result['steps']} steps ({result['bytes_per_token']} bytes a token)",
            flush=True,
        )


if __name__ == "__main__":
    main()
