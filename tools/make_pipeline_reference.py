"""Regenerate tests/data/pipeline_reference.json: Hugging Face's pipeline runs our models.

For two folders that ``opbyop.train`` wrote, the model the package ships
(``src/opbyop/data/model``) and a small one trained for this reference by
the command itself (``tests/data/pipeline_tiny``), it calls::

    pipe = transformers.pipeline("text-generation", model=folder)
    pipe(prompt, do_sample=False, max_new_tokens=N)

(the pipeline samples unless told not to) and records the text it writes,
with the prompt plus N tokens within the model's context. The test
compares ``gpt.load(folder).write(prompt, N)`` with it, character for
character, without ``transformers``.

The small folder is trained first if it is missing::

    python -m opbyop.train --steps 1500 --seed 0 --context 64 --n-layers 2 \\
        --n-heads 2 --d-model 32 --out tests/data/pipeline_tiny

Run it with a Python that has PyTorch and transformers (any venv with
torch==2.13.0 and transformers==5.24.0), after the shipped model is built::

    /path/to/torch-venv/bin/python tools/make_pipeline_reference.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import transformers

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "pipeline_reference.json"
TINY = ROOT / "tests" / "data" / "pipeline_tiny"
TINY_RUN = [
    "--steps", "1500", "--seed", "0", "--context", "64", "--n-layers", "2",
    "--n-heads", "2", "--d-model", "32",
]  # fmt: skip
FOLDERS = {
    "shipped": (ROOT / "src" / "opbyop" / "data" / "model", 200),
    "tiny": (TINY, 48),
}
PROMPTS = ("def ", "class ", "import ")


def train_tiny() -> None:
    """The small folder, by the project's own command (the venv's Python runs it)."""
    python = ROOT / ".venv" / "bin" / "python"
    run = ROOT / "runs" / "pipeline_tiny"
    shutil.rmtree(run, ignore_errors=True)
    command = [str(python), "-m", "opbyop.train", *TINY_RUN, "--out", str(run)]
    subprocess.run(command, check=True)
    TINY.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors", "vocab.json", "merges.txt"):
        shutil.copyfile(run / name, TINY / name)


def main() -> None:
    if not (TINY / "model.safetensors").exists():
        train_tiny()
    reference: dict[str, object] = {
        "transformers": transformers.__version__,
        "call": "pipeline('text-generation', model=folder)"
        "(prompt, do_sample=False, max_new_tokens=N)",
        "tiny_command": "python -m opbyop.train " + " ".join(TINY_RUN),
        "runs": [],
    }
    runs: list[dict[str, object]] = []
    for name, (folder, new_tokens) in FOLDERS.items():
        pipe = transformers.pipeline("text-generation", model=str(folder))
        for prompt in PROMPTS:
            out = pipe(prompt, do_sample=False, max_new_tokens=new_tokens)
            text = out[0]["generated_text"]
            assert text.startswith(prompt), (prompt, text)
            runs.append(
                {
                    "folder": name,
                    "prompt": prompt,
                    "max_new_tokens": new_tokens,
                    "written": text[len(prompt) :],
                }
            )
            print(f"{name} {prompt!r}: {text[len(prompt) :][:60]!r}...")
    reference["runs"] = runs
    OUT.write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
