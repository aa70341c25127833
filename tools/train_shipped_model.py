"""Train the model the package ships (``gpt.load()``), with opbyop's own command.

It runs ``python -m opbyop.train`` by steps and seed, so anyone can rebuild
it, then copies the Hugging Face folder it wrote (config, weights, the
byte-level tokenizer's files, and ``log.json``, without the optimiser's
state) into ``src/opbyop/data/model/`` and prints the weights' SHA-256 for
``opbyop.gpt``. On 2 quiet cores it trains about 3.4 steps a second; the
log records the machine. Run it on a quiet machine, with OPENBLAS_CORETYPE
unset::

    env -u OPENBLAS_CORETYPE .venv/bin/python tools/train_shipped_model.py

A stopped run goes on where it stopped (``--resume``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "runs" / "shipped"
SHIPPED = ROOT / "src" / "opbyop" / "data" / "model"
FILES = ("config.json", "model.safetensors", "vocab.json", "merges.txt")

# The default Recipe, on the size the sweep started from (4 layers of 128,
# 0.84 M parameters: larger than the 5-minute default, which must take many
# steps in little time), with a context of 256 so that the model can write
# 200 tokens after a prompt, trained for 10,000 steps.
SETTINGS = [
    "--steps", "10000", "--seed", "0", "--context", "256",
    "--n-layers", "4", "--n-heads", "4", "--d-model", "128",
]  # fmt: skip


def main() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    command = [sys.executable, "-m", "opbyop.train"]
    log_file = RUN / "log.json"
    if log_file.exists() and json.loads(log_file.read_text())["status"] != "finished":
        command += ["--resume", str(RUN)]
    elif not log_file.exists():
        command += [*SETTINGS, "--out", str(RUN)]
    if len(command) > 3:
        subprocess.run(command, check=True, env=env)
    SHIPPED.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(RUN / name, SHIPPED / name)
    log = json.loads(log_file.read_text())
    log.pop("resume", None)  # the random state, for resuming: not needed
    log["command"] = "python -m opbyop.train " + " ".join(SETTINGS)
    (SHIPPED / "log.json").write_text(json.dumps(log, indent=1) + "\n")
    digest = hashlib.sha256((SHIPPED / "model.safetensors").read_bytes()).hexdigest()
    final = log["final"]
    print(
        f"{final['step']} steps, {final['seconds'] / 60:.1f} minutes: "
        f"{final['validation_bits_per_byte']:.4f} bits per byte\n"
        f"model.safetensors SHA-256: {digest}"
    )


if __name__ == "__main__":
    main()
