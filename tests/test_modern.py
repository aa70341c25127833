"""RMSNorm, SwiGLU and rotary positions, alone and in a GPT.

The layers are compared with ``transformers``' ``LlamaRMSNorm``, ``LlamaMLP``
and ``apply_rotary_pos_emb`` (tests/data/modern_reference.npz, made by
tools/make_modern_reference.py): to 1e-6 in float32, 1e-12 in float64, and
their backward functions with PyTorch autograd's gradients to 1e-10 relative
and with central differences. A whole GPT with each option is checked by
central differences on every parameter.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from test_backward import check, numeric_gradient

from opbyop import (
    gpt,
    optim,
    rms_norm,
    rms_norm_backward,
    rotary,
    rotary_backward,
    silu,
    silu_backward,
    swiglu,
    swiglu_backward,
)

Array = np.ndarray[Any, Any]
DATA = Path(__file__).parent / "data" / "modern_reference.npz"


def reference(prefix: str) -> Iterator[tuple[str, dict[str, Array]]]:
    """Every case whose name starts with `prefix`: name, then its arrays."""
    with np.load(DATA) as data:
        names = sorted({key.split("__")[0] for key in data.files if "__" in key})
        for name in names:
            if name.startswith(prefix):
                yield (
                    name,
                    {
                        key.split("__")[1]: data[key]
                        for key in data.files
                        if key.startswith(f"{name}__")
                    },
                )


def tolerance(name: str) -> float:
    return 1e-6 if name.endswith("f32") else 1e-12


def test_the_reference_records_its_versions() -> None:
    with np.load(DATA) as data:
        assert "transformers" in str(data["versions"])
        assert len({k.split("__")[0] for k in data.files if "__" in k}) == 14


# ---------------------------------------------------------------- forwards


@pytest.mark.parametrize(("name", "case"), list(reference("rms_norm")))
def test_rms_norm_matches_llama(name: str, case: dict[str, Array]) -> None:
    out = rms_norm(case["x"], case["weight"], eps=float(case["eps"]))
    assert out.dtype == case["x"].dtype
    assert_allclose(out, case["out"], rtol=0, atol=tolerance(name))


def test_llama_rms_norm_in_float64_is_as_accurate_as_float32() -> None:
    # What the docstring says: LlamaRMSNorm converts to float32 and back.
    for _, case in reference("rms_norm_5x8_f64"):
        gap = np.abs(case["llama_out"] - case["out"]).max()
        assert 1e-10 < gap < 1e-6


@pytest.mark.parametrize(("name", "case"), list(reference("mlp")))
def test_swiglu_matches_llama_mlp(name: str, case: dict[str, Array]) -> None:
    out = swiglu(case["x"], case["w_gate"], case["w_up"], case["w_down"])
    assert out.dtype == case["x"].dtype
    scale = max(1.0, float(np.abs(case["out"]).max()))
    assert_allclose(out, case["out"], rtol=0, atol=tolerance(name) * scale)


@pytest.mark.parametrize(("name", "case"), list(reference("silu")))
def test_silu_matches_pytorch(name: str, case: dict[str, Array]) -> None:
    out = silu(case["x"])
    assert out.dtype == case["x"].dtype
    assert_allclose(out, case["out"], rtol=tolerance(name), atol=tolerance(name))


@pytest.mark.parametrize(("name", "case"), list(reference("rotary")))
def test_rotary_matches_apply_rotary_pos_emb(name: str, case: dict[str, Array]) -> None:
    for part in ("q", "k"):
        out = rotary(case[part], case["positions"])
        assert out.dtype == case[part].dtype
        assert_allclose(out, case[f"{part}_out"], rtol=0, atol=tolerance(name))


def test_llama_rotary_angles_agree_with_float64_ones_to_float32() -> None:
    for _, case in reference("rotary_2x1x4x16_f64"):
        assert_allclose(case["llama_cos"], case["cos"], rtol=0, atol=1e-6)


# ---------------------------------------------------------------- backward vs autograd

# The float64 cases, which hold PyTorch autograd's gradients.
GRADIENT_CASES = {
    prefix: [(name, case) for name, case in reference(prefix) if name.endswith("f64")]
    for prefix in ("rms_norm_", "mlp_", "rotary_")
}


@pytest.mark.parametrize(("name", "case"), GRADIENT_CASES["rms_norm_"])
def test_rms_norm_backward_matches_autograd(name: str, case: dict[str, Array]) -> None:
    dx, d_weight = rms_norm_backward(case["dy"], case["x"], case["weight"], eps=1e-6)
    assert_allclose(dx, case["grad_x"], rtol=1e-10, atol=1e-14)
    assert_allclose(d_weight, case["grad_weight"], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(("name", "case"), GRADIENT_CASES["mlp_"])
def test_swiglu_backward_matches_autograd(name: str, case: dict[str, Array]) -> None:
    weights = case["w_gate"], case["w_up"], case["w_down"]
    grads = swiglu_backward(case["dy"], case["x"], *weights)
    for grad, part in zip(grads, ("x", "w_gate", "w_up", "w_down"), strict=True):
        assert_allclose(grad, case[f"grad_{part}"], rtol=1e-10, atol=1e-14, err_msg=part)


@pytest.mark.parametrize(("name", "case"), GRADIENT_CASES["rotary_"])
def test_rotary_backward_matches_autograd(name: str, case: dict[str, Array]) -> None:
    for part in ("q", "k"):
        grad = rotary_backward(case[f"d{part}"], case["positions"])
        assert_allclose(grad, case[f"grad_{part}"], rtol=1e-10, atol=1e-14)


# ---------------------------------------------------------------- backward vs central differences

RNG = np.random.default_rng(32)


def test_rms_norm_backward_by_central_differences() -> None:
    x, weight = RNG.normal(size=(2, 3, 6)) + 0.5, RNG.normal(size=6)
    r = RNG.normal(size=x.shape)

    def loss() -> float:
        return float((rms_norm(x, weight) * r).sum())

    dx, d_weight = rms_norm_backward(r, x, weight)
    check(dx, loss, x)
    check(d_weight, loss, weight)


def test_silu_backward_by_central_differences() -> None:
    x = np.concatenate([RNG.normal(size=20) * 4, [0.0, -30.0, 30.0]])
    r = RNG.normal(size=x.shape)

    def loss() -> float:
        return float((silu(x) * r).sum())

    check(silu_backward(r, x), loss, x)


def test_swiglu_backward_by_central_differences() -> None:
    x = RNG.normal(size=(2, 3, 4))
    w_gate, w_up, w_down = RNG.normal(size=(6, 4)), RNG.normal(size=(6, 4)), RNG.normal(size=(5, 6))
    r = RNG.normal(size=(2, 3, 5))

    def loss() -> float:
        return float((swiglu(x, w_gate, w_up, w_down) * r).sum())

    grads = swiglu_backward(r, x, w_gate, w_up, w_down)
    for grad, array in zip(grads, (x, w_gate, w_up, w_down), strict=True):
        check(grad, loss, array)


def test_rotary_backward_by_central_differences() -> None:
    x, positions = RNG.normal(size=(2, 4, 6)), np.array([0, 3, 1, 9])
    r = RNG.normal(size=x.shape)

    def loss() -> float:
        return float((rotary(x, positions) * r).sum())

    check(rotary_backward(r, positions), loss, x)


# ---------------------------------------------------------------- properties


def test_a_score_depends_only_on_the_distance_between_positions() -> None:
    q, k = RNG.normal(size=(1, 16)), RNG.normal(size=(1, 16))
    scores = [
        (rotary(q, [m + shift]) @ rotary(k, [n + shift]).T).item()
        for m, n in ((5, 2), (3, 0))
        for shift in (0, 1, 40)
    ]
    assert_allclose(scores[:3], scores[0], rtol=1e-12)  # 5 and 2, shifted
    assert_allclose(scores[3:], scores[0], rtol=1e-12)  # 3 and 0: 3 apart too
    far = (rotary(q, [9]) @ rotary(k, [2]).T).item()
    assert abs(far - scores[0]) > 1e-3  # 7 apart: another score


def test_rotary_keeps_each_pair_s_length_and_pairs_first_half_with_second() -> None:
    x = RNG.normal(size=(3, 8))
    out = rotary(x, [0, 1, 2])
    assert_array_equal(out[0], x[0])  # position 0: no turn
    lengths = x[:, :4] ** 2 + x[:, 4:] ** 2
    assert_allclose(out[:, :4] ** 2 + out[:, 4:] ** 2, lengths, rtol=1e-12)
    # Pair 0 (numbers 0 and 4) turns by 1 radian per position.
    turned = np.arctan2(out[1, 4], out[1, 0]) - np.arctan2(x[1, 4], x[1, 0])
    assert math.isclose(math.remainder(turned, 2 * math.pi), 1.0, rel_tol=1e-12)


def test_rms_norm_gives_root_mean_square_one() -> None:
    x = RNG.normal(size=(4, 32)) * 7
    out = rms_norm(x, eps=1e-12)
    assert_allclose(np.sqrt((out**2).mean(axis=-1)), 1.0, rtol=1e-12)
    ratio = out / x  # the same for a whole row: its direction is kept
    assert_allclose(ratio, np.broadcast_to(ratio[:, :1], x.shape), rtol=1e-12)


def test_float16_is_computed_in_float32_and_returned_as_float16() -> None:
    x = RNG.normal(size=(2, 4, 8)).astype(np.float16)
    for out in (rms_norm(x), silu(x), rotary(x, np.arange(4))):
        assert out.dtype == np.float16


def test_silu_far_out_is_x_or_zero_without_warnings() -> None:
    for dtype in (np.float32, np.float64):
        x = np.array([-1e30, -1e4, 1e4, 1e30], dtype=dtype)
        assert_array_equal(silu(x), np.array([0.0, 0.0, 1e4, 1e30], dtype))
        assert_array_equal(silu_backward(np.ones_like(x), x), [0.0, 0.0, 1.0, 1.0])


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: rms_norm(np.ones((2, 3)), eps=0.0), ValueError, "eps must be finite and > 0"),
        (lambda: rms_norm(np.ones((2, 3)), eps=-1e-6), ValueError, "eps must be finite and > 0"),
        (lambda: rms_norm(np.ones((2, 3)), eps="1"), TypeError, "eps must be a number"),  # type: ignore[arg-type]
        (lambda: rms_norm(np.ones((2, 0))), ValueError, "last dimension d >= 1"),
        (lambda: rms_norm(np.ones((2, 3)), np.ones(4)), ValueError, r"weight needs shape \(3,\)"),
        (lambda: rms_norm(np.ones(3, np.float32), np.ones(3)), TypeError, "same dtype"),
        (
            lambda: rms_norm_backward(np.ones((2, 4)), np.ones((2, 3))),
            ValueError,
            "dy needs the shape of x",
        ),
        (lambda: silu(["a"]), TypeError, "x must hold real numbers"),
        (lambda: silu_backward(np.ones(2), np.ones(3)), ValueError, "dy needs the shape"),
        (
            lambda: swiglu(np.ones((2, 3)), np.ones((4, 2)), np.ones((4, 3)), np.ones((3, 4))),
            ValueError,
            r"w_gate needs shape \(h, 3\)",
        ),
        (
            lambda: swiglu(np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 3)), np.ones((3, 4))),
            ValueError,
            "w_up needs the shape of w_gate",
        ),
        (
            lambda: swiglu(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 3)), np.ones((3, 5))),
            ValueError,
            r"w_down needs shape \(d_out, 4\)",
        ),
        (
            lambda: swiglu_backward(
                np.ones((2, 2)), np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 3)), np.ones((3, 4))
            ),
            ValueError,
            "dy needs the shape of swiglu's output",
        ),
        (lambda: rotary(np.ones((2, 3)), [0, 1]), ValueError, "d_head even"),
        (lambda: rotary(np.ones(4), [0]), ValueError, r"shape \(\.\.\., n, d_head\)"),
        (lambda: rotary(np.ones((2, 4)), [0.0, 1.0]), TypeError, "positions must be integers"),
        (lambda: rotary(np.ones((2, 4)), [0, 1, 2]), ValueError, r"positions needs shape \(2,\)"),
        (lambda: rotary(np.ones((2, 4)), [0, 1], base=1.0), ValueError, "base must be"),
        (lambda: rotary_backward(np.ones((2, 4)), [0]), ValueError, "positions needs shape"),
    ],
)
def test_bad_input_is_refused_by_name(call: Callable[[], object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------- a GPT with each option

VARIANTS: dict[str, dict[str, Any]] = {
    "rms": {"norm": "rms"},
    "swiglu": {"mlp": "swiglu"},
    "rotary": {"positions": "rotary"},
    "all three": {"norm": "rms", "mlp": "swiglu", "positions": "rotary"},
}
# One block of 12 numbers per token, 2 heads of 6.
CHECKED = gpt.Config(vocab_size=11, context=8, n_layers=1, n_heads=2, d_model=12)


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Array]]:
    """(path, array) for every array of a Params, None and the config left out."""
    if isinstance(tree, np.ndarray):
        yield path, tree
    elif tree is None or isinstance(tree, gpt.Config):
        return
    elif hasattr(tree, "_fields"):
        for field in tree._fields:
            yield from leaves(getattr(tree, field), f"{path}.{field}".lstrip("."))
    else:
        for i, item in enumerate(tree):
            yield from leaves(item, f"{path}[{i}]")


def random_params(config: gpt.Config, seed: int = 0) -> gpt.Params:
    """float64 weights large enough that every gradient entry matters."""
    params = gpt.init(config, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 1)
    for _, array in leaves(params):
        array += 0.3 * rng.standard_normal(array.shape)
    return params


def mean_cross_entropy(logits: Array, targets: Array) -> float:
    """The loss from the logits alone, in float64 (not the library's)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)
    return float(-picked.mean())


# On 8 numbers per token GPT-2's pieces make 1,040 parameters. Each variant's
# count by hand: an RMS norm has no bias (3 norms of 8), SwiGLU is 3 matrices
# of 32 x 8 (GELU's MLP: 2 of 32 x 8, and 32 + 8 biases), a rotary model has
# no table of 8 positions.
NO_BIASES, SWIGLU, NO_TABLE = -3 * 8, -(32 + 8) + 32 * 8, -8 * 8
SIZES = {
    "rms": 1040 + NO_BIASES,
    "swiglu": 1040 + SWIGLU,
    "rotary": 1040 + NO_TABLE,
    "all three": 1040 + NO_BIASES + SWIGLU + NO_TABLE,
}


@pytest.mark.parametrize("name", VARIANTS)
def test_every_gradient_of_a_variant_matches_central_differences(name: str) -> None:
    config = CHECKED._replace(d_model=8, **VARIANTS[name])
    params = random_params(config)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, config.vocab_size, (2, 4))
    targets = rng.integers(0, config.vocab_size, (2, 4))
    _, grads = gpt.loss_and_grads(params, ids, targets)

    def loss() -> float:
        return mean_cross_entropy(gpt.forward(params, ids), targets)

    h = 1e-5
    count = 0
    for (path, array), (grad_path, grad) in zip(leaves(params), leaves(grads), strict=True):
        assert grad_path == path
        count += array.size
        numeric = numeric_gradient(loss, array, h)
        assert_allclose(grad, numeric, rtol=0, atol=1e-8, err_msg=path)
    assert count == SIZES[name]  # every parameter was checked


def test_the_variant_code_on_gpt2_s_pieces_is_gpt2() -> None:
    # variant_forward_backward runs GPT-2's pieces too: the same numbers as
    # forward_backward, which tests/test_gpt.py checks against transformers.
    params = random_params(CHECKED)
    ids = np.random.default_rng(2).integers(0, 11, (2, 6))
    loss, grads = gpt.forward_backward(params, ids, ids)
    again, variant_grads = gpt.variant_forward_backward(params, ids, ids)
    assert math.isclose(loss, again, rel_tol=1e-13)
    for (path, a), (_, b) in zip(leaves(grads), leaves(variant_grads), strict=True):
        assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=path)


@pytest.mark.parametrize("name", VARIANTS)
def test_no_position_sees_a_later_token(name: str) -> None:
    params = random_params(CHECKED._replace(**VARIANTS[name]))
    ids = np.array([[1, 2, 3, 4, 5, 6]])
    changed = ids.copy()
    changed[0, 4:] = [9, 10]
    before, after = gpt.forward(params, ids), gpt.forward(params, changed)
    # Equal but for rounding: products of other lengths round differently.
    assert_allclose(before[:, :4], after[:, :4], rtol=0, atol=1e-12)
    assert np.abs(before[:, 4:] - after[:, 4:]).max() > 1e-3


def test_a_rotary_model_knows_the_order_without_a_position_table() -> None:
    params = random_params(CHECKED._replace(positions="rotary"))
    assert params.position_embedding.shape == (0, 12)
    # Without positions, attention would see the same set of keys and values
    # for the last token of both: only rotary tells 1 2 3 from 2 1 3.
    swapped = gpt.forward(params, [[1, 2, 3], [2, 1, 3]])
    assert np.abs(swapped[0, -1] - swapped[1, -1]).max() > 1e-3
    # A run of one token gives every position the same keys and values:
    # rotary changes only the weights, so the outputs stay the same.
    same = gpt.forward(params, [3, 3, 3])
    assert_allclose(same[2], same[0], rtol=0, atol=1e-12)


def test_a_rotary_model_refuses_a_text_longer_than_its_training() -> None:
    rotary = random_params(CHECKED._replace(positions="rotary"))
    with pytest.raises(ValueError, match=r"context of 8 \(the longest text it was trained on\)"):
        gpt.forward(rotary, np.zeros(9, dtype=int))
    learned = random_params(CHECKED)
    with pytest.raises(ValueError, match=r"context of 8 \(one position vector each\)"):
        gpt.forward(learned, np.zeros(9, dtype=int))


def test_a_rotary_model_writes_the_same_with_and_without_the_cache() -> None:
    config = gpt.Config(11, 16, 2, 2, 8, norm="rms", mlp="swiglu", positions="rotary")
    params = random_params(config, seed=3)
    prompt = np.array([[1, 2, 3], [4, 5, 6]])
    sampled: dict[str, Any] = {"do_sample": True, "seed": 1, "top_k": 5}
    for settings in ({}, sampled):
        cached = gpt.generate(params, prompt, 10, use_cache=True, **settings)
        whole = gpt.generate(params, prompt, 10, use_cache=False, **settings)
        assert_array_equal(cached, whole)


@pytest.mark.parametrize("name", VARIANTS)
def test_forward_with_cache_in_chunks_gives_forward_s_logits(name: str) -> None:
    params = random_params(gpt.Config(11, 16, 2, 2, 8, **VARIANTS[name]), seed=4)
    ids = np.random.default_rng(0).integers(0, 11, (2, 9))
    whole = gpt.forward(params, ids)
    first, cache = gpt.forward_with_cache(params, ids[:, :4])
    middle, cache = gpt.forward_with_cache(params, ids[:, 4:8], cache)
    last, cache = gpt.forward_with_cache(params, ids[:, 8:], cache)
    assert cache.length == 9
    got = np.concatenate([first, middle, last], axis=1)
    assert_allclose(got, whole, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- config, sizes, files


def test_the_options_are_named_tuple_fields_after_the_sizes() -> None:
    config = gpt.Config(256, 128, 2, 4, 64)
    assert config[5:] == ("layer", "gelu", "learned")
    assert repr(config) == "Config(vocab_size=256, context=128, n_layers=2, n_heads=4, d_model=64)"
    variant = config._replace(norm="rms", positions="rotary")
    assert repr(variant).endswith("d_model=64, norm='rms', positions='rotary')")
    assert not gpt.is_variant(config)
    assert gpt.is_variant(variant)


def test_swiglu_is_8_thirds_wide_rounded_up_to_16() -> None:
    widths = {d: gpt.Config(10, 8, 1, 1, d, mlp="swiglu").d_mlp for d in (48, 64, 96, 128)}
    assert widths == {48: 128, 64: 176, 96: 256, 128: 352}
    assert gpt.Config(10, 8, 1, 1, 64).d_mlp == 256  # GPT-2's: 4 d_model


def test_the_default_config_s_variants_have_about_gpt2_s_size() -> None:
    from opbyop import train

    sizes = {
        name: sum(
            a.size
            for a in optim.named_arrays(gpt.init(train.DEFAULT_CONFIG._replace(**o))).values()
        )
        for name, o in {"gpt2": {}, **VARIANTS}.items()
    }
    d, layers, context = 64, 2, 128
    assert sizes["rms"] == sizes["gpt2"] - (2 * layers + 1) * d
    assert sizes["rotary"] == sizes["gpt2"] - context * d
    # SwiGLU, 176 wide and no biases, against GELU's 256 wide with biases.
    assert sizes["swiglu"] - sizes["gpt2"] == layers * (3 * 176 * d - (2 * 256 * d + 256 + d))


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        (
            gpt.Config(10, 8, 1, 2, 4, norm="batch"),
            ValueError,
            "config.norm must be 'layer' or 'rms'",
        ),
        (
            gpt.Config(10, 8, 1, 2, 4, mlp="relu"),
            ValueError,
            "config.mlp must be 'gelu' or 'swiglu'",
        ),
        (gpt.Config(10, 8, 1, 2, 4, positions=None), ValueError, "config.positions must be"),  # type: ignore[arg-type]
        (gpt.Config(10, 8, 1, 2, 6, positions="rotary"), ValueError, "must be even"),
        ((10, 8, 1, 2, 4, "rms", "gelu", "learned", "x"), TypeError, "config must be a gpt.Config"),
    ],
)
def test_init_refuses_bad_options(config: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        gpt.init(config)


def test_a_variant_s_state_dict_names_and_round_trip() -> None:
    config = gpt.Config(11, 8, 2, 2, 8, norm="rms", mlp="swiglu", positions="rotary")
    params = random_params(config)
    tensors = gpt.state_dict(params)
    assert "transformer.wpe.weight" not in tensors
    assert not [name for name in tensors if name.endswith("bias") and ".ln_" in name]
    h = config.d_mlp
    assert tensors["transformer.h.1.mlp.gate_proj.weight"].shape == (h, 8)
    assert tensors["transformer.h.1.mlp.up_proj.weight"].shape == (h, 8)
    assert tensors["transformer.h.1.mlp.down_proj.weight"].shape == (8, h)
    assert_array_equal(
        tensors["transformer.h.0.mlp.up_proj.weight"], params.blocks[0].mlp.widen.weight[h:]
    )
    again = gpt.from_state_dict(tensors, config)
    for (path, a), (_, b) in zip(leaves(params), leaves(again), strict=True):
        assert_array_equal(a, b, err_msg=path)
    assert again.blocks[0].norm_1.bias is None
    assert again.blocks[0].mlp.narrow.bias is None
    tensors["transformer.h.0.ln_1.bias"] = np.zeros(8)
    with pytest.raises(ValueError, match=r"unexpected tensor transformer\.h\.0\.ln_1\.bias"):
        gpt.from_state_dict(tensors, config)


@pytest.mark.parametrize("name", VARIANTS)
def test_a_saved_variant_loads_back_and_is_not_gpt2(name: str) -> None:
    config = gpt.Config(11, 8, 1, 2, 8, **VARIANTS[name])
    params = random_params(config)
    folder = gpt.save(params, tempfile.mkdtemp())
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert saved["model_type"] == "opbyop-gpt"
    assert "architectures" not in saved
    pieces = {"norm": config.norm, "mlp": config.mlp, "positions": config.positions}
    assert {k: saved[k] for k in pieces} == pieces
    assert saved["n_inner"] == config.d_mlp
    model = gpt.load(folder)
    assert model.config == config
    ids = np.array([[1, 2, 3, 4]])
    assert_array_equal(gpt.forward(model.params, ids), gpt.forward(params, ids))


def test_a_variant_s_config_json_is_checked() -> None:
    config = gpt.Config(11, 8, 1, 2, 8, norm="rms")
    folder = gpt.save(gpt.init(config), tempfile.mkdtemp())
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    for key, value, match in (
        ("norm", "batch", "norm is 'batch'"),
        ("rms_norm_eps", 1e-5, "rms_norm_eps is 1e-05"),
        ("model_type", "llama", "model_type is 'llama'"),
    ):
        (folder / "config.json").write_text(json.dumps(saved | {key: value}), encoding="utf-8")
        with pytest.raises(ValueError, match=match):
            gpt.load(folder)


def test_a_gpt2_checkpoint_is_still_saved_as_gpt2() -> None:
    folder = gpt.save(gpt.init(gpt.Config(11, 8, 1, 2, 8)), tempfile.mkdtemp())
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert saved["model_type"] == "gpt2"
    assert saved["architectures"] == ["GPT2LMHeadModel"]
    assert not {"norm", "mlp", "positions"} & set(saved)


# ---------------------------------------------------------------- training


def test_adamw_and_clipping_train_a_variant() -> None:
    config = gpt.Config(11, 8, 1, 2, 8, norm="rms", mlp="swiglu", positions="rotary")
    params = gpt.init(config)
    optimizer = optim.AdamW(params, lr=1e-2)
    ids = np.tile(np.arange(8) % 11, (4, 1))
    targets = (ids + 1) % 11
    losses = []
    for _ in range(30):
        loss, grads = gpt.loss_and_grads(params, ids, targets)
        losses.append(loss)
        optim.clip_grad_norm(grads, 1.0)
        optimizer.step(grads)
    assert losses[-1] < losses[0] - 1.0
    assert params.blocks[0].norm_1.bias is None  # still no bias to train


def test_fit_trains_a_variant() -> None:
    from opbyop import train

    config = gpt.Config(256, 32, 1, 2, 16, norm="rms", mlp="swiglu", positions="rotary")
    text = "def f(x):\n    return x + 1\n\n" * 40
    params, log = train.fit(config, text, text[:200], steps=4, progress=False)
    assert params.config == config
    assert log["config"] == config._asdict()


def test_a_float32_variant_stays_float32_and_near_float64() -> None:
    config = gpt.Config(256, 16, 2, 2, 16, norm="rms", mlp="swiglu", positions="rotary")
    exact = gpt.init(config, dtype=np.float64)
    rounded = gpt.init(config, dtype=np.float32)
    ids = np.random.default_rng(1).integers(0, 256, (2, 16))
    loss, grads = gpt.loss_and_grads(rounded, ids, ids)
    assert all(a.dtype == np.float32 for _, a in leaves(grads))
    logits = gpt.forward(rounded, ids)
    assert logits.dtype == np.float32
    assert_allclose(logits, gpt.forward(exact, ids), rtol=0, atol=1e-5)
    assert math.isclose(loss, gpt.loss_and_grads(exact, ids, ids)[0], rel_tol=1e-5)
