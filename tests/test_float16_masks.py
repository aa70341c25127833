"""-1e9 as a mask in float16: NumPy computed here, PyTorch from its record.

tests/data/float16_masks.json is written by tools/make_float16_masks.py with
PyTorch; episode 4 states both libraries' behaviour, and these tests hold the
page to it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from opbyop import softmax

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "tests" / "data" / "float16_masks.json").read_text("utf-8"))
PAGE = " ".join((ROOT / "docs" / "episodes" / "04-no-peeking.md").read_text("utf-8").split())


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0", reason="NEP 50 is NumPy 2's")
def test_numpy_casts_minus_a_billion_to_float16_first() -> None:
    scores = np.array(RECORD["scores"], dtype=np.float16)
    keep = np.array(RECORD["keep"], dtype=np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        penalty = (1 - keep) * -1e9  # NEP 50: -1e9 becomes float16 first
    assert penalty.dtype == np.float16
    assert np.isnan(penalty[:2]).all()
    assert penalty[2] == -np.inf
    assert np.isnan(scores + penalty)[:2].all()


def test_pytorch_rounds_only_the_product() -> None:
    additive = RECORD["additive"]
    assert additive["dtype"] == "torch.float16"
    assert additive["penalty"][:2] == [0.0, 0.0]  # -0.0: no nan
    assert additive["penalty"][2] == -math.inf
    assert additive["scores"] == [2.0, 1.0, -math.inf]
    kept = softmax(np.array(RECORD["scores"][:2]))
    np.testing.assert_allclose(additive["softmax"][:2], kept, atol=1e-3)
    assert additive["softmax"][2] == 0.0


def test_pytorch_masked_fill_refuses_minus_a_billion() -> None:
    error = RECORD["masked_fill"]["error"]
    assert error == "value cannot be converted to type c10::Half without overflow"


def test_finfo_min_hides_the_key_in_pytorch() -> None:
    finfo = RECORD["finfo_min"]
    assert finfo["value"] == float(np.finfo(np.float16).min) == -65504.0
    np.testing.assert_allclose(finfo["softmax"], RECORD["additive"]["softmax"])


def test_pytorch_row_with_every_key_hidden_is_nan() -> None:
    every = RECORD["all_hidden"]
    assert every["scores"] == [-math.inf] * 3  # -1e9 rounds to -inf
    assert all(math.isnan(w) for w in every["softmax"])
    assert every["multihead_attention_nan"] is True


def test_bfloat16_holds_minus_a_billion() -> None:
    bf16 = RECORD["bfloat16"]
    assert math.isfinite(bf16["minus_a_billion"])
    assert abs(bf16["minus_a_billion"] + 1e9) < 0.01 * 1e9
    assert bf16["max"] > 1e38


def test_episode_4_states_each_library() -> None:
    assert f"PyTorch {RECORD['torch_version']}" in PAGE
    assert RECORD["masked_fill"]["error"] in PAGE
    assert "torch.finfo(dtype).min" in PAGE
    assert "np.finfo(dtype).min" not in PAGE
