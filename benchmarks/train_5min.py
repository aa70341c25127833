"""The recorded 5-minute run: ``python -m opbyop.train --minutes 5`` as a reader runs it.

It trains the default recipe (``opbyop.train.DEFAULT_CONFIG`` and
``Recipe``, chosen by ``benchmarks/sweep.py``) for 5 minutes of wall-clock
time with seed 0, and prints what it reached; with ``--out``, it writes the
run's log, with the command and the load average before and after (the
recorded run: ``--out benchmarks/results/train_5min.json``). The
target: at most 2.0 bits per byte on the whole held-out split. The log's
``spent`` says where the time went (the step, data sampling, logging,
validation): sampling and logging should cost under 5% of the step.

Run it on a quiet machine, with OPENBLAS_CORETYPE unset::

    env -u OPENBLAS_CORETYPE .venv/bin/python benchmarks/train_5min.py \\
        --out benchmarks/results/train_5min.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "train_5min.json"
RUN = ROOT / "runs" / "5min"
TARGET = 2.0  # bits per byte on the held-out split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument(
        "--out", type=Path, help=f"write the log here (recorded: {RESULTS.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    shutil.rmtree(RUN, ignore_errors=True)
    flags = ["-m", "opbyop.train", "--minutes", f"{args.minutes:g}", "--seed", "0"]
    load_before = [round(x, 2) for x in os.getloadavg()]
    subprocess.run([sys.executable, *flags, "--out", str(RUN)], check=True)
    load_after = [round(x, 2) for x in os.getloadavg()]
    log = json.loads((RUN / "log.json").read_text())
    log.pop("resume", None)  # the random state, for resuming: not needed
    log["command"] = "python " + " ".join(flags)
    log["load_before"] = load_before
    log["load_after"] = load_after
    if args.out:
        args.out.write_text(json.dumps(log, indent=1) + "\n")
    final, spent = log["final"], log["spent"]
    overhead = (spent["sampling"] + spent["logging"]) / spent["step"]
    print(
        f"{final['step']} steps in {final['seconds'] / 60:.1f} minutes: "
        f"{final['validation_bits_per_byte']:.3f} bits per byte "
        f"(target {TARGET}); sampling and logging {overhead:.1%} of the step; "
        f"load {load_before[0]} -> {load_after[0]}"
    )


if __name__ == "__main__":
    main()
