"""RMSNorm, SwiGLU and rotary positions, alone and in a GPT.

The layers are compared with ``transformers``' ``LlamaRMSNorm``, ``LlamaMLP``
and ``apply_rotary_pos_emb`` (tests/data/modern_reference.npz, made by
tools/make_modern_reference.py): to 1e-6 in float32, 1e-12 in float64, and
their backward functions with PyTorch autograd's gradients to 1e-10 relative
and with central differences. A whole GPT with each option is checked by
central differences on every parameter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from opbyop import (
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


def numeric_gradient(loss: Callable[[], float], x: Array, h: float = 1e-6) -> Array:
    """d loss / d x by central differences, changing `x` in place and back."""
    out = np.empty_like(x)
    for i in np.ndindex(x.shape):
        keep = x[i]
        x[i] = keep + h
        up = loss()
        x[i] = keep - h
        down = loss()
        x[i] = keep
        out[i] = (up - down) / (2 * h)
    return out


def check(grad: Array, loss: Callable[[], float], x: Array) -> None:
    assert grad.shape == x.shape
    assert_allclose(grad, numeric_gradient(loss, x), rtol=0, atol=1e-8)


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
