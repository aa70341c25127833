"""Regenerate tests/data/generate_reference/: greedy tokens from PyTorch.

A random ``transformers.GPT2LMHeadModel`` (float32; weights ten times
GPT-2's initial scale, so the scores are far apart), saved by
``save_pretrained`` into the folder (``config.json``,
``model.safetensors``), and ``tokens.json``: for a batch of prompts, the
tokens ``GPT2LMHeadModel.generate(do_sample=False)`` gives with its cache,
without and with a repetition penalty. Nothing stops it early (no end
token), and ``top_k=None`` so that no filter is set.

``tokens.json`` also holds, for each run, the smallest gap between the top
two scores over every step (``output_scores``): where two scores are within
float32's rounding, two correct implementations may pick differently, so
the script refuses to write a reference with a gap under 1e-3.

Run it with a Python that has PyTorch and transformers (any venv with
torch==2.13.0 and transformers==5.24.0)::

    /path/to/torch-venv/bin/python tools/make_generate_reference.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
import transformers

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "generate_reference"
MIN_GAP = 1e-3
MAX_NEW_TOKENS = 26
PENALTIES = (1.0, 1.3)


def random_model() -> transformers.GPT2LMHeadModel:
    config = transformers.GPT2Config(
        vocab_size=64,
        n_positions=32,
        n_embd=16,
        n_layer=2,
        n_head=2,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        initializer_range=0.2,  # GPT-2's 0.02 gives near-ties everywhere
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).eval()


def greedy(
    model: transformers.GPT2LMHeadModel, prompts: torch.Tensor, penalty: float
) -> tuple[list[list[int]], float]:
    """The generated rows, and the smallest top-two gap of any step."""
    with torch.no_grad():
        out = model.generate(
            prompts,
            attention_mask=torch.ones_like(prompts),
            max_new_tokens=MAX_NEW_TOKENS,
            min_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            top_k=None,
            top_p=None,
            temperature=None,
            repetition_penalty=penalty,
            eos_token_id=None,
            pad_token_id=0,  # never used: every row has the same length
            use_cache=True,
            output_scores=True,
            return_dict_in_generate=True,
        )
    scores = torch.stack(out.scores)  # [steps, batch, vocab], processed
    top_two = scores.topk(2, dim=-1).values
    gap = float((top_two[..., 0] - top_two[..., 1]).min())
    return out.sequences.tolist(), gap


def main() -> None:
    model = random_model()
    generator = torch.Generator().manual_seed(1)
    prompts = torch.randint(0, 64, (3, 6), generator=generator)
    runs: list[dict[str, Any]] = []
    for penalty in PENALTIES:
        tokens, gap = greedy(model, prompts, penalty)
        if gap < MIN_GAP:
            raise SystemExit(f"a near-tie ({gap:.2e}) at penalty {penalty}")
        assert all(len(row) == 6 + MAX_NEW_TOKENS for row in tokens)
        runs.append({"repetition_penalty": penalty, "tokens": tokens, "min_gap": gap})
    shutil.rmtree(OUT, ignore_errors=True)
    model.save_pretrained(OUT)
    for extra in OUT.iterdir():  # keep the model's two files only
        if extra.name not in ("config.json", "model.safetensors"):
            extra.unlink()
    reference = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "prompts": prompts.tolist(),
        "max_new_tokens": MAX_NEW_TOKENS,
        "runs": runs,
    }
    (OUT / "tokens.json").write_text(json.dumps(reference, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: gaps {[run['min_gap'] for run in runs]}")


if __name__ == "__main__":
    main()
