"""How fast does opbyop.gpt train? One training step against GPT2LMHeadModel.

A training step is: the forward pass and the loss, the backward pass,
clipping the gradients to norm 1, and one AdamW step. opbyop's is
``gpt.loss_and_grads``, ``optim.clip_grad_norm`` and ``optim.AdamW.step``;
PyTorch's is ``GPT2LMHeadModel`` in eager mode (not compiled, its default
attention, ``use_cache=False``), ``F.cross_entropy``, ``backward``,
``clip_grad_norm_`` and ``torch.optim.AdamW``. Both run in float32 on the
same weights (a folder ``gpt.save`` wrote, which ``from_pretrained`` reads),
and the script checks their first losses agree.

Workloads (batch 8, vocabulary 256, 4 layers, 4 heads):

- ``d128_n64``: d_model 128, 64 tokens per row: the target, at most 1.0x
  PyTorch's time;
- ``d256_n64``: d_model 256;
- ``d128_n128`` and ``d128_n256``: longer rows, how the step grows with n.

Each side runs in its own process (NumPy and PyTorch on the same cores in
one process slow each other down), with the machine's threads for both; the
parent runs them in turns, round after round, and compares each round's
fastest step of the two sides (the ratio is the median of the rounds'
ratios). It also reports each side's peak memory (the process's peak
resident set, and how much of it the steps added to the loaded model) and
where opbyop's step spends its time (each operation's calls timed inside
the step, held to one core: the shares of the work the cores split).

Usage::

    python benchmarks/train_step.py --torch-python /path/to/python
    python benchmarks/train_step.py --quick          # 2 rounds, few steps
    python benchmarks/train_step.py --out benchmarks/results/train_step.json

PyTorch's side needs a Python with torch and transformers
(``--torch-python``, default this one); without, only opbyop's side runs.
For a run to record, unset ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``;
``OPENBLAS_THREAD_TIMEOUT=4`` keeps OpenBLAS's idle threads, in opbyop's
process, from spinning on the cores its own threads and element-wise passes
then need (the JSON keeps the environment and BLAS kernels). As
``attention.py`` does, the run waits up to three minutes for the 1-minute
load average to be below 0.5, and afterwards for its own load to fade; if
either fails, nothing is written (``--allow-busy`` keeps it anyway;
``--quick`` implies it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BATCH, VOCAB, LAYERS, HEADS = 8, 256, 4, 4
WORKLOADS = {  # name: (d_model, tokens per row)
    "d128_n64": (128, 64),
    "d256_n64": (256, 64),
    "d128_n128": (128, 128),
    "d128_n256": (128, 256),
}
TARGETS = {"d128_n64": 1.0}  # largest allowed time ratio, opbyop / PyTorch
MAX_NORM = 1.0
CATEGORIES = [
    "matrix products",
    "attention",
    "GELU",
    "layer norm",
    "cross-entropy",
    "embedding",
    "clipping",
    "AdamW",
]


def config_of(name: str) -> dict[str, Any]:
    d_model, n = WORKLOADS[name]
    return {
        "vocab_size": VOCAB,
        "context": n,
        "n_layers": LAYERS,
        "n_heads": HEADS,
        "d_model": d_model,
    }


def batch_of(name: str) -> tuple[list[list[int]], list[list[int]]]:
    """The same ids and targets for both sides: a fixed random batch."""
    import numpy as np

    n = WORKLOADS[name][1]
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, (BATCH, n + 1))
    return tokens[:, :-1].tolist(), tokens[:, 1:].tolist()


def resident_bytes() -> int:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_bytes() -> int:
    """This process's peak resident memory so far (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timings(step: Callable[[], float], reps: int, warmup: int = 3) -> list[float]:
    """Seconds per step, `reps` steps after `warmup` untimed ones."""
    for _ in range(warmup):
        step()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        out.append(time.perf_counter() - start)
    return out


# ---------------------------------------------------------------- the two sides


def numpy_step(folder: str, name: str) -> tuple[Callable[[], float], Any]:
    """opbyop's training step on the model in `folder`, and its optimiser."""
    import numpy as np

    from opbyop import gpt, optim

    params = gpt.load(folder).params
    ids, targets = (np.array(x) for x in batch_of(name))
    optimizer = optim.AdamW(params, lr=1e-4, weight_decay=0.1)

    def step() -> float:
        loss, grads = gpt.loss_and_grads(params, ids, targets)
        optim.clip_grad_norm(grads, MAX_NORM)
        optimizer.step(grads)
        return loss

    return step, optimizer


def torch_step(folder: str, name: str) -> tuple[Callable[[], float], Any]:
    """The same step in PyTorch: GPT2LMHeadModel, eager, and its AdamW."""
    import torch
    import transformers
    from torch.nn import functional

    model = transformers.GPT2LMHeadModel.from_pretrained(folder).train()
    ids, targets = (torch.tensor(x) for x in batch_of(name))
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ],
        lr=1e-4,
    )

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids, use_cache=False).logits
        loss = functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, MAX_NORM)
        optimizer.step()
        return float(loss)

    return step, optimizer


STEPS: dict[str, Callable[[str, str], tuple[Callable[[], float], Any]]] = {
    "numpy": numpy_step,
    "torch": torch_step,
}


def timing_side(side: str, folders: dict[str, str], reps: int) -> dict[str, Any]:
    """Every workload's step times, and its first loss (fresh weights)."""
    out: dict[str, Any] = {"times": {}, "first_loss": {}}
    for name, folder in folders.items():
        step, _ = STEPS[side](folder, name)
        out["first_loss"][name] = step()
        out["times"][name] = timings(step, reps)
    if side == "torch":
        import torch
        import transformers

        out["versions"] = {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads(),
        }
    return out


def memory_side(side: str, folder: str, name: str) -> dict[str, Any]:
    """One workload alone in a process: its peak memory over a few steps."""
    step, _ = STEPS[side](folder, name)
    loaded = resident_bytes()  # the libraries and the model (and its optimiser, empty)
    for _ in range(3):
        step()
    peak = peak_bytes()
    return {"peak_bytes": peak, "loaded_bytes": loaded, "step_bytes": max(peak - loaded, 0)}


def breakdown_side(folder: str, name: str, reps: int) -> dict[str, Any]:
    """Where opbyop's step spends its time: each operation's calls timed inside it.

    loss_and_grads shares a batch between the cores, so the step is held to
    one core here (one share, BLAS on one thread): the shares are those of
    the work, which the cores then split.
    """
    import threadpoolctl

    import opbyop._threads
    import opbyop.gpt
    from opbyop import optim

    threadpoolctl.threadpool_limits(1, "blas")
    opbyop.gpt.usable_cores = lambda: 1  # one share of the batch
    opbyop._threads.usable_cores = lambda: 1  # AdamW's update on one core too
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
        (opbyop.gpt, "linear", "matrix products"),
        (opbyop.gpt, "linear_backward", "matrix products"),
        (opbyop.gpt, "attention_weights", "attention"),
        (opbyop.gpt, "attention_backward", "attention"),
        (opbyop.gpt, "gelu", "GELU"),
        (opbyop.gpt, "gelu_backward", "GELU"),
        (opbyop.gpt, "layer_norm", "layer norm"),
        (opbyop.gpt, "layer_norm_backward", "layer norm"),
        (opbyop.gpt, "cross_entropy", "cross-entropy"),
        (opbyop.gpt, "cross_entropy_backward", "cross-entropy"),
        (opbyop.gpt, "embed", "embedding"),
        (opbyop.gpt, "embed_backward", "embedding"),
        (optim, "clip_grad_norm", "clipping"),
        (optim.AdamW, "step", "AdamW"),
    ]
    for owner, attribute, category in patches:
        setattr(owner, attribute, timed(category, getattr(owner, attribute)))
    step, _ = numpy_step(folder, name)
    for _ in range(3):
        step()
    calls = []
    for _ in range(reps):
        spent.clear()
        start = time.perf_counter()
        step()
        calls.append({"total": time.perf_counter() - start, **spent})
    # Medians over the steps: a busy machine's noise only ever adds time.
    total = statistics.median(c["total"] for c in calls)
    parts = {c: statistics.median(call.get(c, 0.0) for call in calls) for c in CATEGORIES}
    parts["other"] = max(total - sum(parts.values()), 0.0)
    return {"total": total, "parts": parts}


# ---------------------------------------------------------------- the parent


def run_child(python: str, *args: str) -> dict[str, Any]:
    """One side in a fresh process; its result, read from its standard output."""
    command = [python, __file__, "--child", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def commit() -> str | None:
    """The commit the run timed (``-dirty`` with uncommitted changes), or None outside a clone."""
    command = ["git", "describe", "--always", "--dirty"]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    except OSError:  # no git
        return None
    return done.stdout.strip() or None


def has_torch_side(python: str) -> bool:
    probe = "import torch, transformers"
    return subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode == 0


def save_models(where: Path) -> dict[str, str]:
    """One folder per workload, written by gpt.save from gpt.init (float32, seed 0)."""
    from opbyop import gpt

    folders = {}
    for name in WORKLOADS:
        params = gpt.init(gpt.Config(**config_of(name)), seed=0)
        folders[name] = str(gpt.save(params, where / name))
    return folders


def compare(numpy_rounds: list[dict[str, Any]], torch_rounds: list[dict[str, Any]]) -> Any:
    """Per workload: the fastest step of each side, and the ratios."""
    rows = {}
    for name in WORKLOADS:
        ours = [min(r["times"][name]) for r in numpy_rounds]
        theirs = [min(r["times"][name]) for r in torch_rounds]
        row: dict[str, Any] = {"opbyop_s": min(ours), "opbyop_rounds_s": ours}
        if theirs:
            ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
            row |= {
                "pytorch_s": min(theirs),
                "pytorch_rounds_s": theirs,
                "ratio_fastest": min(ours) / min(theirs),
                "ratio_median_of_rounds": statistics.median(ratios),
                "first_loss_difference": abs(
                    numpy_rounds[0]["first_loss"][name] - torch_rounds[0]["first_loss"][name]
                ),
            }
            if name in TARGETS:
                row["target"] = TARGETS[name]
                row["meets_target"] = row["ratio_median_of_rounds"] <= TARGETS[name]
        rows[name] = row
    return rows


def print_report(result: dict[str, Any]) -> None:
    mib = 2**20
    print(
        f"\none training step, float32, batch {BATCH}, {LAYERS} layers, {HEADS} heads, "
        f"vocabulary {VOCAB}: fastest of {result['rounds']} rounds"
    )
    print(f"{'workload':<11} {'opbyop':>9} {'PyTorch':>9} {'ratio':>6} {'median':>7} {'target':>7}")
    for name, row in result["steps"].items():
        ours = f"{row['opbyop_s'] * 1e3:.1f} ms"
        if "pytorch_s" in row:
            theirs = f"{row['pytorch_s'] * 1e3:.1f} ms"
            target = ""
            if "target" in row:
                target = f"{row['target']:.2f} {'ok' if row['meets_target'] else 'MISSED'}"
            print(
                f"{name:<11} {ours:>9} {theirs:>9} {row['ratio_fastest']:>6.2f} "
                f"{row['ratio_median_of_rounds']:>7.2f} {target:>7}"
            )
        else:
            print(f"{name:<11} {ours:>9} {'-':>9}")
    print("\npeak memory (MiB): whole process, and what the steps added to the loaded model")
    for name, sides in result["memory"].items():
        cells = ", ".join(
            f"{side} {m['peak_bytes'] / mib:.0f} (+{m['step_bytes'] / mib:.0f})"
            for side, m in sides.items()
        )
        print(f"{name:<11} {cells}")
    b = result["breakdown"]
    parts = ", ".join(f"{c} {v * 1e3:.2f} ({v / b['total']:.0%})" for c, v in b["parts"].items())
    print(f"\nwhere opbyop's d128_n64 step goes, on one core: {b['total'] * 1e3:.1f} ms = {parts}")
    load = result["load_average"]
    print(f"\nload average before {load['before']:.2f}, after {load['after']:.2f}")
    print(f"BLAS: {result['machine']['blas']}, env {result['machine']['env'] or 'clean'}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="turns of each side (default 9)")
    parser.add_argument("--reps", type=int, default=10, help="timed steps per round (default 10)")
    parser.add_argument("--quick", action="store_true", help="2 rounds, 3 steps")
    parser.add_argument("--torch-python", default=sys.executable, help="Python with PyTorch")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    parser.add_argument(
        "--allow-busy", action="store_true", help="keep a run made on a busy machine"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.reps = 2, 3
        args.allow_busy = True
    return args


def child(what: list[str]) -> dict[str, Any]:
    kind, *rest = what
    if kind == "timing":
        side, folders, reps = rest
        return timing_side(side, json.loads(folders), int(reps))
    if kind == "memory":
        side, folder, name = rest
        return memory_side(side, folder, name)
    folder, name, reps = rest
    return breakdown_side(folder, name, int(reps))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child:  # one side, in its own process: print the result as one JSON line
        print(json.dumps(child(args.child)))
        return 0
    from attention import LOAD_LIMIT, SETTLE_SECONDS, settle
    from minilm import machine

    if not args.allow_busy:
        print(f"Waiting for the load average to be below {LOAD_LIMIT}...", file=sys.stderr)
        settle(LOAD_LIMIT, SETTLE_SECONDS)
    before = os.getloadavg()[0]
    torch_python = args.torch_python if has_torch_side(args.torch_python) else None
    if torch_python is None:
        print(f"{args.torch_python} has no torch and transformers: timing opbyop alone")
    pythons = {"numpy": sys.executable, "torch": torch_python}
    sides = [side for side, python in pythons.items() if python]
    with tempfile.TemporaryDirectory() as where:
        folders = save_models(Path(where))
        rounds: dict[str, list[dict[str, Any]]] = {side: [] for side in pythons}
        for i in range(args.rounds):
            # alternate which side goes first, so neither always follows the other
            for side in sides if i % 2 == 0 else sides[::-1]:
                python = pythons[side]
                assert python is not None
                rounds[side].append(
                    run_child(python, "timing", side, json.dumps(folders), str(args.reps))
                )
            print(f"round {i + 1} of {args.rounds} done", file=sys.stderr)
        memory = {
            name: {
                side: run_child(python, "memory", side, folders[name], name)
                for side, python in pythons.items()
                if python
            }
            for name in WORKLOADS
        }
        breakdown = run_child(sys.executable, "breakdown", folders["d128_n64"], "d128_n64", "10")
    result: dict[str, Any] = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "commit": commit(),
        "rounds": args.rounds,
        "reps": args.reps,
        "batch": BATCH,
        "vocab_size": VOCAB,
        "n_layers": LAYERS,
        "n_heads": HEADS,
        "workloads": {name: config_of(name) for name in WORKLOADS},
        "steps": compare(rounds["numpy"], rounds["torch"]),
        "memory": memory,
        "breakdown": breakdown,
        "machine": machine(),
    }
    if rounds["torch"]:
        result["versions"] = rounds["torch"][0]["versions"]
        worst = max(row["first_loss_difference"] for row in result["steps"].values())
        if worst > 1e-4:
            raise SystemExit(f"the two sides' first losses differ by {worst:.1e}")
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
