"""opbyop against PyTorch: values computed by tools/make_reference.py, stored in tests/data.

Also against an independent float64 computation written here, on random shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opbyop import attention, attention_weights, scratch, softmax

REFERENCE = Path(__file__).parent / "data" / "attention_reference.npz"
Array = np.ndarray[Any, Any]

# (rtol, atol) per output dtype. float64 needs a small atol too: an output that
# is a weighted sum cancelling to nearly 0 has a large relative rounding error.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-12, 1e-14),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-2, 1e-2),
}


def _load() -> dict[str, dict[str, Array]]:
    cases: dict[str, dict[str, Array]] = {}
    with np.load(REFERENCE, allow_pickle=False) as data:
        for key in data.files:
            case, name = key.split("__")
            cases.setdefault(case, {})[name] = data[key]
    return cases


CASES = _load()
ATTENTION = sorted(name for name in CASES if name.startswith("attention_"))
SOFTMAX = sorted(name for name in CASES if name.startswith("softmax_"))
MASKED = sorted(name for name in CASES if name.startswith("masked_"))
MATH_PATH = sorted(name for name in CASES if name.startswith("math_path_"))


def assert_matches(got: Array, want: Array) -> None:
    """Same dtype, same shape, same values within the dtype's tolerance (nan where nan)."""
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    rtol, atol = TOLERANCES[want.dtype.name]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def test_the_reference_file_has_enough_cases() -> None:
    assert len(ATTENTION) + len(SOFTMAX) >= 24
    dtypes = {CASES[name]["out"].dtype.name for name in ATTENTION + SOFTMAX}
    assert dtypes == set(TOLERANCES)
    assert REFERENCE.stat().st_size < 1_000_000


@pytest.mark.parametrize("name", ATTENTION)
def test_attention_matches_pytorch(name: str) -> None:
    case = CASES[name]
    scale = float(case["scale"]) if "scale" in case else None
    assert_matches(attention(case["q"], case["k"], case["v"], scale=scale), case["out"])


@pytest.mark.parametrize("name", [name for name in ATTENTION if "_weights_" in name])
def test_attention_weights_match_pytorch(name: str) -> None:
    # v is the identity, so PyTorch's output is the weights themselves
    case = CASES[name]
    assert_matches(attention_weights(case["q"], case["k"]), case["out"])


@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_matches_pytorch(name: str) -> None:
    case = CASES[name]
    assert_matches(softmax(case["x"], axis=int(case["axis"])), case["out"])


# ---------------------------------------------------------------- masks


def test_the_reference_file_has_the_masked_cases() -> None:
    names = {name.removeprefix("masked_").rsplit("_", 1)[0] for name in MASKED}
    wanted = {"random", "causal_fewer_queries", "causal_more_queries", "fully_masked_rows"}
    assert wanted | {"padding", "per_head", "causal_and_mask", "weights"} <= names
    for name in names:  # each in float64 and float32
        assert {f"masked_{name}_f64", f"masked_{name}_f32"} <= set(MASKED)
    fully = CASES["masked_fully_masked_rows_f64"]
    assert not fully["mask"].any(axis=-1).all()  # some query sees no key...
    assert (fully["out"][~fully["mask"].any(axis=-1)] == 0).all()  # ...and PyTorch gives zeros


def masked_arguments(case: dict[str, Array]) -> dict[str, Any]:
    return {"mask": case.get("mask"), "is_causal": bool(case["is_causal"])}


@pytest.mark.parametrize("name", MASKED)
def test_masked_attention_matches_pytorch(name: str) -> None:
    case = CASES[name]
    assert_matches(
        attention(case["q"], case["k"], case["v"], **masked_arguments(case)), case["out"]
    )


@pytest.mark.parametrize("name", [name for name in MASKED if "_weights" in name])
def test_masked_attention_weights_match_pytorch(name: str) -> None:
    # v is the identity, so PyTorch's output is the weights themselves
    case = CASES[name]
    assert_matches(attention_weights(case["q"], case["k"], **masked_arguments(case)), case["out"])


@pytest.mark.parametrize("name", [name for name in MASKED if name.endswith("_f64")])
def test_both_layers_agree_with_pytorch_on_every_masked_matrix(name: str) -> None:
    # Every (query, key) matrix of the case, through the scratch layer and through
    # attention_weights @ v, against PyTorch's output.
    case = CASES[name]
    q, k, v = case["q"], case["k"], case["v"]
    n_q, n_k = q.shape[-2], k.shape[-2]
    mask = case.get("mask", np.ones((n_q, n_k), dtype=bool))
    if case["is_causal"]:
        mask = mask & np.tri(n_q, n_k, dtype=bool)
    out = case["out"]
    batch = out.shape[:-2]
    mask = np.broadcast_to(mask, (*batch, n_q, n_k))
    q, k, v = (np.broadcast_to(x, (*batch, *x.shape[-2:])) for x in (q, k, v))
    weights = attention_weights(q, k, mask=mask)
    np.testing.assert_allclose(weights @ v, out, rtol=1e-12, atol=1e-14)
    for index in np.ndindex(*batch):
        from_scratch = scratch.masked_attention(
            q[index].tolist(), k[index].tolist(), v[index].tolist(), mask[index].tolist()
        )
        np.testing.assert_allclose(from_scratch, out[index], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", MATH_PATH)
def test_scores_overflow_as_on_sdpas_math_path(name: str) -> None:
    case = CASES[name]
    assert_matches(attention(case["q"], case["k"], case["v"]), case["out"])
    if "_weights_" in name:
        assert_matches(attention_weights(case["q"], case["k"]), case["out"])


def _scratch_can_take(case: dict[str, Array]) -> bool:
    """scratch takes one non-empty matrix each, in float64, and the default scale."""
    q, k = case["q"], case["k"]
    plain = q.ndim == 2 and 0 not in q.shape + k.shape and "scale" not in case
    return plain and case["out"].dtype == np.float64


@pytest.mark.parametrize("name", [name for name in ATTENTION if _scratch_can_take(CASES[name])])
def test_scratch_attention_matches_pytorch(name: str) -> None:
    case = CASES[name]
    q, k, v = (case[x].tolist() for x in "qkv")
    np.testing.assert_allclose(scratch.attention(q, k, v), case["out"], rtol=1e-12, atol=1e-14)


def reference_attention(q: Array, k: Array, v: Array) -> Array:
    """Scaled dot-product attention in float64, written out with einsum and log-sum-exp."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    scores = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])
    log_total = np.log(np.sum(np.exp(scores - scores.max(-1, keepdims=True)), -1, keepdims=True))
    weights = np.exp(scores - scores.max(-1, keepdims=True) - log_total)
    out: Array = np.einsum("...ij,...jd->...id", weights, v)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_attention_matches_an_independent_float64_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = tuple(rng.integers(1, 4, size=rng.integers(0, 3)))
    n_q, n_k, d_k, d_v = rng.integers(1, 20, size=4)
    q = rng.standard_normal((*batch, n_q, d_k)) * 3
    k = rng.standard_normal((*batch, n_k, d_k)) * 3
    v = rng.standard_normal((*batch, n_k, d_v))
    want = reference_attention(q, k, v)
    np.testing.assert_allclose(attention(q, k, v), want, rtol=1e-12, atol=1e-14)
    got32 = attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32))
    np.testing.assert_allclose(got32, want, rtol=1e-4, atol=1e-5)
