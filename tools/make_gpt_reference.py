"""Regenerate tests/data/gpt_reference.npz: small GPT-2s as PyTorch runs them.

``transformers.GPT2LMHeadModel`` in float64 with dropout off, at a few small
shapes, with random weights (not GPT-2's small initial ones, so every part of
every gradient matters). For each shape the archive holds:

- ``{shape}/config``: vocab_size, context, n_layers, n_heads, d_model;
- ``{shape}/ids``, ``{shape}/targets``: a batch of token ids and the token
  each position should predict (random, independent);
- ``{shape}/param/{name}``: every parameter under its Hugging Face name and
  layout (``transformer.h.0.attn.c_attn.weight`` is Conv1D, [d_in, 3 d_in]);
- ``{shape}/logits``, ``{shape}/loss``: the model's logits for the ids, and
  the mean cross-entropy of the targets (``F.cross_entropy``);
- ``{shape}/grad/{name}``: the loss's gradient for every parameter, from
  autograd (the token table's sums its two uses, the model ties them).

Also:

- ``adamw/...``: five steps of ``torch.optim.AdamW`` (decay on parameters of
  2 or more dimensions only, nanoGPT's groups) on the first shape, each after
  ``torch.nn.utils.clip_grad_norm_`` with a limit the gradients exceed: the
  loss before each step and after the last (``losses``, 6), the norms before
  clipping (``norms``, 5), and the hyper-parameters;
- ``saved/...``: a model from ``opbyop.gpt.init`` (float64, seed 0), written
  by ``opbyop.gpt.save`` and read back by ``GPT2LMHeadModel.from_pretrained``:
  its logits for ``saved/ids``. The script checks they equal opbyop's own
  (and does the same in float32) before it writes anything.

Run it with a Python that has PyTorch and transformers (any venv with
torch==2.13.0 and transformers==5.24.0)::

    /path/to/torch-venv/bin/python tools/make_gpt_reference.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from torch.nn import functional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # opbyop from this checkout

from opbyop import gpt  # noqa: E402

OUT = ROOT / "tests" / "data" / "gpt_reference.npz"
Array = np.ndarray[Any, Any]

# name: (vocab_size, context, n_layers, n_heads, d_model), (batch, n)
SHAPES = {
    "two_heads": (gpt.Config(50, 16, 2, 2, 8), (2, 7)),
    "one_head": (gpt.Config(37, 12, 1, 1, 12), (3, 12)),  # the full context
    "four_heads": (gpt.Config(64, 20, 3, 4, 16), (2, 9)),
}
ADAMW = {"lr": 1e-2, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}
SAVED = gpt.Config(64, 32, 2, 4, 16)


def hf_model(config: gpt.Config, dtype: torch.dtype) -> transformers.GPT2LMHeadModel:
    hf_config = transformers.GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.context,
        n_layer=config.n_layers,
        n_head=config.n_heads,
        n_embd=config.d_model,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=None,
    )
    return transformers.GPT2LMHeadModel(hf_config).to(dtype).eval()


def randomise(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Weights of a size that makes every term of every gradient count."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            if "ln_" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(0.3 * noise)


def loss_of(model: torch.nn.Module, ids: torch.Tensor, targets: torch.Tensor) -> Any:
    logits = model(ids, use_cache=False).logits
    return logits, functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    )


def reference(name: str, generator: torch.Generator) -> dict[str, Array]:
    config, (batch, n) = SHAPES[name]
    model = hf_model(config, torch.float64)
    randomise(model, generator)
    ids = torch.randint(0, config.vocab_size, (batch, n), generator=generator)
    targets = torch.randint(0, config.vocab_size, (batch, n), generator=generator)
    logits, loss = loss_of(model, ids, targets)
    loss.backward()
    out = {
        f"{name}/config": np.array(config),
        f"{name}/ids": ids.numpy(),
        f"{name}/targets": targets.numpy(),
        f"{name}/logits": logits.detach().numpy(),
        f"{name}/loss": np.array(loss.item()),
    }
    names = set()
    for param_name, p in model.named_parameters():
        assert p.grad is not None, param_name
        out[f"{name}/param/{param_name}"] = p.detach().numpy().copy()
        out[f"{name}/grad/{param_name}"] = p.grad.numpy().copy()
        names.add(param_name)
    assert "lm_head.weight" not in names  # tied: only the token table
    return out


def adamw_steps(generator: torch.Generator) -> dict[str, Array]:
    """Five clipped AdamW steps on the first shape's model and batch."""
    config, (batch, n) = SHAPES["two_heads"]
    model = hf_model(config, torch.float64)
    randomise(model, generator)
    ids = torch.randint(0, config.vocab_size, (batch, n), generator=generator)
    targets = torch.randint(0, config.vocab_size, (batch, n), generator=generator)
    start = {k: p.detach().numpy().copy() for k, p in model.named_parameters()}
    params = list(model.parameters())
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": ADAMW["weight_decay"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=ADAMW["lr"],
        betas=ADAMW["betas"],
        eps=ADAMW["eps"],
    )
    _, loss = loss_of(model, ids, targets)
    loss.backward()
    max_norm = 0.5 * float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    optimizer.zero_grad()
    losses, norms = [], []
    for _ in range(5):
        optimizer.zero_grad()
        _, loss = loss_of(model, ids, targets)
        loss.backward()
        losses.append(loss.item())
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, max_norm)))
        optimizer.step()
    with torch.no_grad():
        losses.append(loss_of(model, ids, targets)[1].item())
    assert min(norms) > max_norm, "every step must clip"
    out = {
        "adamw/ids": ids.numpy(),
        "adamw/targets": targets.numpy(),
        "adamw/losses": np.array(losses),
        "adamw/norms": np.array(norms),
        "adamw/max_norm": np.array(max_norm),
        "adamw/lr": np.array(ADAMW["lr"]),
        "adamw/betas": np.array(ADAMW["betas"]),
        "adamw/eps": np.array(ADAMW["eps"]),
        "adamw/weight_decay": np.array(ADAMW["weight_decay"]),
    }
    out |= {f"adamw/param/{k}": v for k, v in start.items()}
    for k, p in model.named_parameters():
        out[f"adamw/final/{k}"] = p.detach().numpy().copy()
    return out


def saved_model(generator: torch.Generator) -> dict[str, Array]:
    """opbyop.gpt.save's folder, read by from_pretrained, gives our logits."""
    ids = torch.randint(0, SAVED.vocab_size, (2, SAVED.context), generator=generator)
    out = {"saved/config": np.array(SAVED), "saved/ids": ids.numpy()}
    for dtype, torch_dtype, tolerance in (
        (np.float64, torch.float64, 1e-12),
        (np.float32, torch.float32, 1e-5),
    ):
        params = gpt.init(SAVED, seed=0, dtype=dtype)
        ours = gpt.forward(params, ids.numpy())
        with tempfile.TemporaryDirectory() as folder:
            gpt.save(params, folder)
            model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
            assert next(model.parameters()).dtype == torch_dtype
            with torch.no_grad():
                theirs = model(ids, use_cache=False).logits.numpy()
        error = float(np.abs(ours - theirs).max())
        print(f"save -> from_pretrained, {np.dtype(dtype)}: max |difference| {error:.2e}")
        assert error < tolerance * float(np.abs(theirs).max()), error
        if dtype == np.float64:
            out["saved/logits"] = theirs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(23)
    data: dict[str, Array] = {}
    for name in SHAPES:
        data |= reference(name, generator)
    data |= adamw_steps(generator)
    data |= saved_model(generator)
    np.savez_compressed(args.out, allow_pickle=False, **data)
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {len(data)} arrays, {size / 1024:.0f} KiB")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
