"""Choose the training recipe by measurement: short screens, then 5-minute runs.

Each run is ``python -m opbyop.train --minutes M`` on the corpus, with one
setting changed from where the sweep starts (``START``: 4 layers of 128,
a context of 128, and ``opbyop.train.Recipe``'s defaults). Screens take 1
minute each and change one factor at a time: the model's size, the batch
and context, the learning rate. The best few are then run for 5 minutes.
The lowest validation bits per byte (on the whole held-out split) wins and
becomes the default (``opbyop.train.DEFAULT_CONFIG`` and ``Recipe``).

The results go to ``benchmarks/results/sweep.json`` after every run, and a
run already there is skipped, so the sweep resumes where it stopped (move
the committed file aside to run the sweep afresh):

    .venv/bin/python benchmarks/sweep.py --phase screen
    .venv/bin/python benchmarks/sweep.py --phase confirm --only base "batch 4"

Run it on a quiet machine, with OPENBLAS_CORETYPE unset: a busy core makes
every run take fewer steps, which is the very thing the sweep compares.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from opbyop import train

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "sweep.json"
RUNS_DIR = ROOT / "runs" / "sweep"
MINUTES = {"screen": 1.0, "confirm": 5.0}

# Where the sweep starts: nanoGPT's size for a CPU (4 layers, 128 wide, 0.84 M
# parameters) with a context of 128, and the Recipe's defaults. Every run
# passes all four flags, so a run means the same whatever the command's
# defaults are now (the sweep chose them).
START: dict[str, Any] = {"n_layers": 4, "n_heads": 4, "d_model": 128, "context": 128}

# One factor at a time, from the start. Sizes from 0.1 to 2 M parameters.
CANDIDATES: dict[str, dict[str, Any]] = {
    "base": {},
    "size: 2 layers x 64": {"n_layers": 2, "d_model": 64},
    "size: 4 layers x 96": {"d_model": 96},
    "size: 4 layers x 192": {"d_model": 192, "n_heads": 6},
    "size: 6 layers x 128": {"n_layers": 6},
    "batch 4": {"batch": 4},
    "batch 16": {"batch": 16},
    "context 256": {"context": 256},
    "lr 1e-3": {"lr": 1e-3, "min_lr": 1e-4},
    "lr 6e-3": {"lr": 6e-3, "min_lr": 6e-4},
}


def command(settings: dict[str, Any], minutes: float, out: Path) -> list[str]:
    flags = [sys.executable, "-m", "opbyop.train", "--minutes", str(minutes)]
    flags += ["--seed", "0", "--out", str(out)]
    for key, value in {**START, **settings}.items():
        flags += ["--" + key.replace("_", "-"), str(value)]
    return flags


def run_one(name: str, phase: str) -> dict[str, Any]:
    settings = CANDIDATES[name]
    out = RUNS_DIR / f"{phase}-{name.replace(':', '').replace(' ', '-')}"
    shutil.rmtree(out, ignore_errors=True)
    flags = command(settings, MINUTES[phase], out)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    load_before = os.getloadavg()
    subprocess.run(flags, check=True, env=env, stdout=subprocess.DEVNULL)
    load_after = os.getloadavg()
    log = json.loads((out / "log.json").read_text())
    return {
        "name": name,
        "phase": phase,
        "settings": settings,
        "minutes": MINUTES[phase],
        "config": log["config"],
        "recipe": log["recipe"],
        "parameters": log["parameters"],
        "steps": log["final"]["step"],
        "seconds": log["final"]["seconds"],
        "validation_bits_per_byte": log["final"]["validation_bits_per_byte"],
        "validation_curve": log["validation"],
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "command": " ".join(flags[1:]).replace(str(ROOT) + "/", ""),
        "folder": str(out.relative_to(ROOT)),
    }


def machine() -> dict[str, Any]:
    from threadpoolctl import threadpool_info

    return {
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cores": os.cpu_count(),
        "blas": [
            {k: info.get(k) for k in ("internal_api", "version", "num_threads")}
            for info in threadpool_info()
        ],
        "OPENBLAS_CORETYPE": "unset",
        "date": time.strftime("%Y-%m-%d"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=list(MINUTES), required=True)
    parser.add_argument("--only", nargs="*", help="candidate names (default: all)")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": []}
    results["machine"] = machine()
    results["start"] = {
        "config": train.DEFAULT_CONFIG._replace(**START)._asdict(),
        "recipe": dataclasses.asdict(train.Recipe()),
    }
    done = {(r["phase"], r["name"]) for r in results["runs"]}
    for name in args.only or list(CANDIDATES):
        if (args.phase, name) in done:
            print(f"{args.phase} {name}: already recorded")
            continue
        result = run_one(name, args.phase)
        results["runs"].append(result)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        print(
            f"{args.phase} {name}: {result['validation_bits_per_byte']:.3f} bits per byte, "
            f"{result['steps']} steps, load {result['load_before'][0]} -> "
            f"{result['load_after'][0]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
