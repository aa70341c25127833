"""Multi-head attention: split_heads, merge_heads and multi_head_attention.

Compared with ``torch.nn.MultiheadAttention`` (values written by
tools/make_reference.py into tests/data/heads_reference.npz) and with a loop
over heads in float64 written here, which slices columns and never calls
split_heads, merge_heads or attention.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from opbyop import linear, merge_heads, multi_head_attention, split_heads

REFERENCE = Path(__file__).parent / "data" / "heads_reference.npz"
PARAMS = ["w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"]
Array = np.ndarray[Any, Any]

# (rtol, atol) per dtype, as in test_reference.py
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-12, 1e-13),
    "float32": (2e-6, 2e-6),
}


def rand(*shape: int, seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def random_params(d_model: int, rng: np.random.Generator) -> list[Array]:
    """Weights (d_model, d_model) and biases (d_model,), scaled as nn.Linear starts them."""
    return [
        rng.standard_normal((d_model, d_model) if name[0] == "w" else d_model) / math.sqrt(d_model)
        for name in PARAMS
    ]


def loop_over_heads(
    x: Array, params: list[Array], n_heads: int, mask: Array | None = None, is_causal: bool = False
) -> Array:
    """Multi-head attention in float64, one head at a time, written out.

    The reference the NumPy version is checked against: column slices in a
    Python loop, a masked softmax with -inf, and zeros for a query with no key.
    """
    x = np.asarray(x, dtype=np.float64)
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = (np.asarray(p, dtype=np.float64) for p in params)
    *batch, n, d_model = x.shape
    d_head = d_model // n_heads
    allowed: Array = np.ones((n, n), dtype=bool)
    if is_causal:
        allowed = np.tril(allowed)
    allowed = np.broadcast_to(allowed if mask is None else mask & allowed, (*batch, n_heads, n, n))
    q, k, v = x @ w_q.T + b_q, x @ w_k.T + b_k, x @ w_v.T + b_v
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        scores = np.einsum("...id,...jd->...ij", q[..., cols], k[..., cols]) / math.sqrt(d_head)
        scores = np.where(allowed[..., h, :, :], scores, -np.inf)
        top = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)
        top = np.where(np.isfinite(top), top, 0.0)  # a query with no key: every score -inf
        exps = np.exp(scores - top)
        total = exps.sum(axis=-1, keepdims=True)
        weights = np.divide(exps, total, out=np.zeros_like(exps), where=total > 0)
        heads.append(weights @ v[..., cols])
    out: Array = np.concatenate(heads, axis=-1) @ w_o.T + b_o
    return out


# ---------------------------------------------------------------- split and merge


def test_split_gives_each_head_its_own_columns() -> None:
    x = rand(2, 5, 12)  # batch 2, 5 tokens, d_model 12
    heads = split_heads(x, n_heads=3)
    assert heads.shape == (2, 3, 5, 4)  # [batch, n_heads, n, d_head]
    for h in range(3):
        np.testing.assert_array_equal(heads[:, h], x[..., 4 * h : 4 * (h + 1)])


def test_split_works_without_a_batch_and_with_several_batch_dimensions() -> None:
    assert split_heads(rand(7, 384), 12).shape == (12, 7, 32)
    assert split_heads(rand(2, 3, 7, 8), 2).shape == (2, 3, 2, 7, 4)
    assert split_heads(rand(7, 8), 1).shape == (1, 7, 8)
    assert split_heads(rand(7, 8), 8).shape == (8, 7, 1)


def test_split_of_an_array_is_a_view() -> None:
    x = rand(4, 6)
    assert np.shares_memory(split_heads(x, 2), x)


def test_merge_undoes_split_and_split_undoes_merge() -> None:
    x = rand(3, 5, 12)
    np.testing.assert_array_equal(merge_heads(split_heads(x, 4)), x)
    heads = rand(3, 4, 5, 2)
    np.testing.assert_array_equal(split_heads(merge_heads(heads), 4), heads)


def test_merge_puts_the_heads_side_by_side() -> None:
    heads = rand(2, 3, 5, 4)  # batch 2, 3 heads, 5 tokens, d_head 4
    np.testing.assert_array_equal(
        merge_heads(heads), np.concatenate(list(heads.swapaxes(0, 1)), -1)
    )


def test_split_and_merge_take_lists_and_keep_the_dtype() -> None:
    assert split_heads([[1, 2], [3, 4]], 2).tolist() == [[[1], [3]], [[2], [4]]]
    assert merge_heads(np.zeros((2, 3, 4), dtype=np.float32)).dtype == np.float32


def test_a_reshape_without_the_transpose_has_the_right_shape_and_wrong_heads() -> None:
    # The classic bug: reshape [n, d_model] straight to [n_heads, n, d_head].
    x = np.arange(24.0).reshape(4, 6)  # 4 tokens, 2 heads of 3
    wrong = x.reshape(2, 4, 3)
    right = split_heads(x, 2)
    assert wrong.shape == right.shape
    assert right[0].tolist() == [[0, 1, 2], [6, 7, 8], [12, 13, 14], [18, 19, 20]]
    # head 0 of the wrong one holds tokens 0 and 1 whole: no column slice at all
    assert wrong[0].tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]


def test_multi_head_attention_with_the_classic_bug_is_wrong() -> None:
    rng = np.random.default_rng(1)
    x, params, n_heads = rng.standard_normal((5, 12)), random_params(12, rng), 3
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = params
    n, d_head = 5, 4

    def buggy_split(y: Array) -> Array:
        return y.reshape(n_heads, n, d_head)  # no transpose

    q, k, v = (buggy_split(linear(x, w, b)) for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(d_head)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    buggy = linear((weights @ v).reshape(n, n_heads * d_head), w_o, b_o)  # its inverse: no error

    want = loop_over_heads(x, params, n_heads)
    np.testing.assert_allclose(multi_head_attention(x, *params, n_heads=n_heads), want, rtol=1e-12)
    assert buggy.shape == want.shape
    assert np.abs(buggy - want).max() > 0.1 * np.abs(want).max()


# ---------------------------------------------------------------- against a loop over heads


@pytest.mark.parametrize("seed", range(12))
def test_matches_a_loop_over_heads(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = tuple(int(b) for b in rng.integers(1, 4, size=rng.integers(0, 3)))
    n, n_heads, d_head = (int(i) for i in rng.integers(1, 7, size=3))
    x = rng.standard_normal((*batch, n, n_heads * d_head))
    params = random_params(n_heads * d_head, rng)
    want = loop_over_heads(x, params, n_heads)
    got = multi_head_attention(x, *params, n_heads=n_heads)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    got32 = multi_head_attention(
        x.astype(np.float32), *(p.astype(np.float32) for p in params), n_heads=n_heads
    )
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=1e-4, atol=1e-5)


def test_permuting_the_tokens_permutes_the_outputs() -> None:
    # Self-attention without a mask has no idea of order: positions come from elsewhere.
    rng = np.random.default_rng(12)
    x, params = rng.standard_normal((2, 6, 8)), random_params(8, rng)
    order = rng.permutation(6)
    np.testing.assert_allclose(
        multi_head_attention(x[:, order], *params, n_heads=2),
        multi_head_attention(x, *params, n_heads=2)[:, order],
        rtol=1e-12,
        atol=1e-13,
    )


def test_twelve_heads_of_32_like_all_minilm_l6_v2() -> None:
    rng = np.random.default_rng(2)
    x, params = rng.standard_normal((2, 9, 384)), random_params(384, rng)
    got = multi_head_attention(x, *params, n_heads=12)
    np.testing.assert_allclose(got, loop_over_heads(x, params, 12), rtol=1e-11, atol=1e-12)


def test_each_head_is_scaled_by_the_square_root_of_its_own_size() -> None:
    rng = np.random.default_rng(3)
    x, params = rng.standard_normal((6, 16)), random_params(16, rng)
    got = multi_head_attention(x, *params, n_heads=4)
    np.testing.assert_allclose(got, loop_over_heads(x, params, 4), rtol=1e-12, atol=1e-13)
    # Scaling by sqrt(d_model) instead is the same as queries half as big (sqrt(4 / 16)).
    w_q, b_q, *rest = params
    too_small = multi_head_attention(x, w_q / 2, b_q / 2, *rest, n_heads=4)
    assert np.abs(too_small - got).max() > 1e-2


def test_one_head_is_plain_attention_between_projections() -> None:
    rng = np.random.default_rng(4)
    x, params = rng.standard_normal((3, 5, 8)), random_params(8, rng)
    np.testing.assert_allclose(
        multi_head_attention(x, *params, n_heads=1), loop_over_heads(x, params, 1), rtol=1e-12
    )


def test_biases_may_be_none() -> None:
    rng = np.random.default_rng(5)
    x, params = rng.standard_normal((2, 4, 6)), random_params(6, rng)
    zeros = [np.zeros(6) if name[0] == "b" else p for name, p in zip(PARAMS, params, strict=True)]
    nones: list[Any] = [
        None if name[0] == "b" else p for name, p in zip(PARAMS, params, strict=True)
    ]
    np.testing.assert_allclose(
        multi_head_attention(x, *nones, n_heads=3), loop_over_heads(x, zeros, 3), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("given", "returned"),
    [
        (np.float64, np.float64),
        (np.float32, np.float32),
        (np.float16, np.float16),
        (np.int64, np.float64),
    ],
)
def test_dtypes(given: Any, returned: Any) -> None:
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((2, 3, 4)) * 3).astype(given)
    params = [(p * 3).astype(given) for p in random_params(4, rng)]
    got = multi_head_attention(x, *params, n_heads=2)
    assert got.dtype == returned
    tol = 1e-2 if given == np.float16 else 1e-5
    np.testing.assert_allclose(got, loop_over_heads(x, params, 2), rtol=tol, atol=tol)


def test_mixed_dtypes_are_refused_as_in_pytorch() -> None:
    rng = np.random.default_rng(7)
    x, params = rng.standard_normal((3, 4)).astype(np.float32), random_params(4, rng)
    with pytest.raises(TypeError, match=r"need the same dtype.*got x float32, w_q float64"):
        multi_head_attention(x, *params, n_heads=2)
    as32 = [p.astype(np.float32) for p in params]
    as32[5] = params[5]  # one float64 bias is enough to be refused
    with pytest.raises(TypeError, match=r"b_v float64"):
        multi_head_attention(x, *as32, n_heads=2)


def test_no_tokens_and_empty_batches_give_empty_results() -> None:
    params = random_params(4, np.random.default_rng(8))
    assert multi_head_attention(np.zeros((0, 4)), *params, n_heads=2).shape == (0, 4)
    assert multi_head_attention(np.zeros((0, 3, 4)), *params, n_heads=2).shape == (0, 3, 4)


def padding(lengths: list[int], n: int) -> Array:
    """A padding mask [batch, 1, 1, n]: True at each sentence's first `length` tokens."""
    return (np.arange(n) < np.array(lengths)[:, np.newaxis])[:, np.newaxis, np.newaxis, :]


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(
    "mask_shape",
    [None, "padding", (6, 6), (3, 6, 6), (2, 3, 6, 6), (2, 1, 6, 6), (1, 6), (2, 1, 1, 6)],
)
def test_masks_match_a_loop_over_heads(mask_shape: Any, is_causal: bool) -> None:
    rng = np.random.default_rng(9)
    x, params = rng.standard_normal((2, 6, 12)), random_params(12, rng)
    if mask_shape is None:
        mask = None
    elif mask_shape == "padding":
        mask = padding([6, 2], 6)
    else:
        mask = rng.random(mask_shape) < 0.5  # some queries see no key at all
    want = loop_over_heads(x, params, 3, mask, is_causal)
    got = multi_head_attention(x, *params, n_heads=3, mask=mask, is_causal=is_causal)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_padding_changes_nothing_for_the_real_tokens() -> None:
    # A sentence padded with junk tokens, with the padding masked, gives the
    # same outputs for its real tokens as the sentence alone.
    rng = np.random.default_rng(10)
    x, params = rng.standard_normal((1, 4, 8)), random_params(8, rng)
    padded = np.concatenate([x, rng.standard_normal((1, 3, 8))], axis=1)
    got = multi_head_attention(padded, *params, n_heads=2, mask=padding([4], 7))
    np.testing.assert_allclose(got[:, :4], multi_head_attention(x, *params, n_heads=2), rtol=1e-12)


def test_a_query_that_sees_no_key_gets_the_output_bias() -> None:
    rng = np.random.default_rng(11)
    x, params = rng.standard_normal((3, 4)), random_params(4, rng)
    mask = np.ones((2, 3, 3), dtype=bool)  # [n_heads, n, n]
    mask[:, 1, :] = False  # query 1 sees nothing in either head
    got = multi_head_attention(x, *params, n_heads=2, mask=mask)
    np.testing.assert_array_equal(got[1], params[-1])  # zeros from attention, then + b_o
    assert np.isfinite(got).all()


# ---------------------------------------------------------------- against PyTorch


def _load() -> dict[str, dict[str, Array]]:
    cases: dict[str, dict[str, Array]] = {}
    with np.load(REFERENCE, allow_pickle=False) as data:
        for key in data.files:
            case, name = key.split("__")
            cases.setdefault(case, {})[name] = data[key]
    return cases


CASES = _load()


def _run(case: dict[str, Array]) -> Array:
    params: list[Any] = [case.get(name) for name in PARAMS]  # no b_* keys: no biases
    return multi_head_attention(
        case["x"],
        *params,
        n_heads=int(case["n_heads"]),
        mask=case.get("mask"),
        is_causal=bool(case["is_causal"]),
    )


def test_the_reference_file_has_the_cases_it_should() -> None:
    assert len(CASES) >= 14
    assert {case["out"].dtype.name for case in CASES.values()} == set(TOLERANCES)
    masks = [case["mask"].shape for case in CASES.values() if "mask" in case]
    assert any(shape[1:3] == (1, 1) for shape in masks)  # a padding mask [batch, 1, 1, n]
    assert any(len(shape) == 2 for shape in masks)  # one (n, n) mask for all
    assert any(len(shape) == 4 and shape[1] > 1 for shape in masks)  # one per head
    assert any(bool(case["is_causal"]) for case in CASES.values())
    assert any("b_q" not in case for case in CASES.values())
    assert any(case["x"].ndim == 2 for case in CASES.values())
    assert REFERENCE.stat().st_size < 400_000


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name: str) -> None:
    case = CASES[name]
    got = _run(case)
    want = case["out"]
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    rtol, atol = TOLERANCES[want.dtype.name]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loop_over_heads_matches_pytorch_too(name: str) -> None:
    # The reference in this file is itself checked against PyTorch.
    case = CASES[name]
    d_model = case["x"].shape[-1]
    params = [case.get(p, np.zeros(d_model)) for p in PARAMS]
    got = loop_over_heads(
        case["x"], params, int(case["n_heads"]), case.get("mask"), bool(case["is_causal"])
    )
    np.testing.assert_allclose(got, case["out"], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- bad input

X = np.zeros((2, 3, 4))
P4 = random_params(4, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: split_heads(X, 3), ValueError, r"d_model = 4 .*shape \(2, 3, 4\).* n_heads = 3"),
        (lambda: split_heads(X, 0), ValueError, r"n_heads must be at least 1, got 0"),
        (lambda: split_heads(X, -2), ValueError, r"n_heads must be at least 1, got -2"),
        (lambda: split_heads(X, cast(Any, 2.0)), TypeError, r"n_heads must be an integer, got 2.0"),
        (lambda: split_heads(X, True), TypeError, r"n_heads must be an integer, got True"),
        (lambda: split_heads(np.zeros(4), 2), ValueError, r"x needs at least 2 dim.*\(4,\)"),
        (lambda: split_heads([["a", "b"]], 2), TypeError, r"x must hold real numbers"),
        (lambda: split_heads([[1.0], [2.0, 3.0]], 1), ValueError, r"x has ragged rows"),
        (lambda: merge_heads(np.zeros((3, 4))), ValueError, r"x needs at least 3 dim.*\(3, 4\)"),
        (lambda: merge_heads([[["a"]]]), TypeError, r"x must hold real numbers"),
    ],
)
def test_split_and_merge_errors(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def _with(name: str, value: Any) -> list[Any]:
    return [value if n == name else p for n, p in zip(PARAMS, P4, strict=True)]


@pytest.mark.parametrize(
    ("x", "params", "kwargs", "error", "match"),
    [
        (X, P4, {"n_heads": 3}, ValueError, r"d_model = 4 .* n_heads = 3"),
        (np.zeros(4), P4, {"n_heads": 2}, ValueError, r"x needs at least 2 dim"),
        (
            X,
            _with("w_k", np.zeros((4, 3))),
            {"n_heads": 2},
            ValueError,
            r"w_k needs shape \(4, 4\)",
        ),
        (
            X,
            _with("w_o", np.zeros((5, 4))),
            {"n_heads": 2},
            ValueError,
            r"w_o needs .*got \(5, 4\)",
        ),
        (X, _with("b_v", np.zeros(3)), {"n_heads": 2}, ValueError, r"b_v needs shape \(4,\)"),
        (X, _with("w_q", None), {"n_heads": 2}, TypeError, r"w_q must be an array .*got None"),
        (X, _with("b_o", [["x"] * 4]), {"n_heads": 2}, TypeError, r"b_o must hold real numbers"),
        (
            X,
            P4,
            {"n_heads": 2, "mask": np.ones((3, 3))},
            TypeError,
            r"mask must be boolean .*float64 with shape \(3, 3\)",
        ),
        (
            X,
            P4,
            {"n_heads": 2, "mask": np.ones((2, 1, 1, 4), dtype=bool)},
            ValueError,
            r"mask of shape \(2, 1, 1, 4\) does not broadcast .*\(2, 2, 3, 3\)",
        ),
        (
            X,
            P4,
            {"n_heads": 2, "mask": np.ones((5, 2, 1, 1, 3), dtype=bool)},
            ValueError,
            r"mask of shape \(5, 2, 1, 1, 3\) does not broadcast",
        ),
        (X, P4, {"n_heads": 2, "is_causal": "yes"}, TypeError, r"is_causal must be True or False"),
        (X, P4, {"n_heads": 2, "mask": [[True], [True, False]]}, ValueError, r"mask has ragged"),
    ],
)
def test_multi_head_attention_errors(
    x: Any, params: list[Any], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        multi_head_attention(x, *params, **kwargs)


def test_n_heads_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        multi_head_attention(X, *P4, 2)  # type: ignore[call-arg]
