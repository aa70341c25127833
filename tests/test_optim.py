"""opbyop.optim against PyTorch's AdamW and clip_grad_norm_, and nanoGPT's schedule.

The reference values come from tools/make_optim_reference.py.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from opbyop import optim

DATA = np.load(Path(__file__).parent / "data" / "optim_reference.npz")
CASES = sorted({key.split("__")[0] for key in DATA.files} - {"schedule"})
NAMES = ["wte", "ln_w", "proj", "bias"]
# Measured: float64 agrees to 6e-17, float32 to 1.2e-7 (one float32 step at
# 1). Both sides compute float32 in float32, but PyTorch's kernels round a
# few operations differently (lerp, the norm's summation order), so float32
# gets a few roundings' room: 1e-6 on parameters of size about 1.
TOLERANCE = {"float64": 1e-13, "float32": 1e-6}


def reference(case: str, what: str) -> dict[str, np.ndarray]:
    return {name: DATA[f"{case}__{what}__{name}"] for name in NAMES}


def dtype_of(case: str) -> str:
    return case.split("_")[0]


@pytest.mark.parametrize("case", CASES)
def test_adamw_and_clipping_match_pytorch_step_by_step(case: str) -> None:
    beta1, beta2, eps, weight_decay, max_norm = DATA[f"{case}__settings"].tolist()
    params = {k: v.copy() for k, v in reference(case, "init").items()}
    opt = optim.AdamW(params, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
    tol = TOLERANCE[dtype_of(case)]
    for step, lr in enumerate(DATA[f"{case}__lr"].tolist()):
        grads = {k: v.copy() for k, v in reference(case, f"grad{step}").items()}
        norm = optim.clip_grad_norm(grads, max_norm)
        assert norm == pytest.approx(DATA[f"{case}__norm"][step], rel=tol)
        opt.lr = lr
        opt.step(grads)
        for name, expected in reference(case, f"param{step}").items():
            assert params[name].dtype == expected.dtype  # float32 stays float32
            np.testing.assert_allclose(params[name], expected, rtol=0, atol=tol, err_msg=name)
    for name in NAMES:  # the state, to tol of its largest entry (m mixes signs)
        for state, ours in (("exp_avg", opt.exp_avg), ("exp_avg_sq", opt.exp_avg_sq)):
            expected = DATA[f"{case}__{state}__{name}"]
            scale = tol * np.abs(expected).max()
            np.testing.assert_allclose(ours[name], expected, rtol=0, atol=scale)
    assert opt.steps == len(DATA[f"{case}__lr"])


def test_the_reference_clips_some_steps_and_not_others() -> None:
    """Both branches of min(1, max_norm / norm) are exercised."""
    for case in CASES:
        max_norm = DATA[f"{case}__settings"][-1]
        norms = DATA[f"{case}__norm"]
        assert (norms > max_norm).any()
        assert (norms < max_norm).any()


def test_weight_decay_only_on_matrices() -> None:
    """With a zero gradient, only parameters of 2+ dimensions shrink."""
    params = {"w": np.ones((2, 2)), "b": np.ones(2), "k": np.ones((1, 1, 2))}
    opt = optim.AdamW(params, lr=0.5, weight_decay=0.1)
    opt.step({k: np.zeros_like(v) for k, v in params.items()})
    assert params["w"].tolist() == [[0.95, 0.95], [0.95, 0.95]]
    assert params["k"].tolist() == [[[0.95, 0.95]]]
    assert params["b"].tolist() == [1.0, 1.0]


def test_lr_schedule_matches_nanogpt() -> None:
    max_lr, min_lr, warmup, total = DATA["schedule__settings"].tolist()
    for step, expected in zip(DATA["schedule__steps"], DATA["schedule__lr"], strict=True):
        got = optim.lr_schedule(
            float(step), max_lr=max_lr, min_lr=min_lr, warmup=warmup, total=total
        )
        assert got == pytest.approx(expected, rel=1e-14, abs=0), step


def test_lr_schedule_reference_covers_every_phase() -> None:
    _, _, warmup, total = DATA["schedule__settings"].tolist()
    steps = DATA["schedule__steps"]
    assert (steps < warmup).any()
    assert ((steps > warmup) & (steps < total)).any()
    assert (steps > total).any()
    assert (steps % 1 != 0).any()  # fractional steps


# ------------------------------------------------------- what is walked


class Block(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


@dataclasses.dataclass
class Params:
    config: tuple[int, int]
    blocks: list[Block]
    extra: dict[str, Any]


def params_tree(dtype: type = np.float64) -> Params:
    rng = np.random.default_rng(1)
    blocks = [Block(rng.standard_normal((3, 2)).astype(dtype), np.zeros(3, dtype)) for _ in "ab"]
    return Params(config=(4, 2), blocks=blocks, extra={"ln": np.ones(2, dtype), "name": "x"})


def test_named_arrays_walks_named_tuples_dataclasses_dicts_and_lists() -> None:
    tree = params_tree()
    found = optim.named_arrays(tree)
    assert list(found) == [
        "blocks.0.weight",
        "blocks.0.bias",
        "blocks.1.weight",
        "blocks.1.bias",
        "extra.ln",
    ]
    assert found["blocks.1.bias"] is tree.blocks[1].bias  # the arrays themselves


def test_adamw_on_a_nested_structure_equals_it_on_flat_arrays() -> None:
    """The walk changes nothing about the arithmetic: compare with a flat dict."""
    tree, flat_tree = params_tree(np.float32), params_tree(np.float32)
    flat = optim.named_arrays(flat_tree)
    opt, flat_opt = optim.AdamW(tree, lr=0.1), optim.AdamW(dict(flat), lr=0.1)
    rng = np.random.default_rng(2)
    for _ in range(3):
        grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in flat.items()}
        flat_opt.step(grads)
        nested = Params(
            config=(0, 0),  # non-array leaves need not match
            blocks=[Block(grads[f"blocks.{i}.weight"], grads[f"blocks.{i}.bias"]) for i in (0, 1)],
            extra={"ln": grads["extra.ln"]},
        )
        opt.step(nested)
    for path, array in optim.named_arrays(tree).items():
        assert array.dtype == np.float32
        np.testing.assert_array_equal(array, flat[path])
    assert not np.array_equal(tree.blocks[0].weight, params_tree(np.float32).blocks[0].weight)


def test_clip_grad_norm_scales_to_max_norm_and_leaves_small_gradients() -> None:
    a, b = np.array([3.0, 4.0], dtype=np.float32), np.array([[12.0]])
    norm = optim.clip_grad_norm({"a": a, "b": [b]}, 6.5)
    assert norm == 13.0
    assert a.dtype == np.float32
    assert math.hypot(*a.tolist(), b.item()) == pytest.approx(6.5, rel=1e-6)
    small = {"a": np.array([0.3, 0.4])}
    assert optim.clip_grad_norm(small, 1.0) == pytest.approx(0.5)
    assert small["a"].tolist() == [0.3, 0.4]


def test_clip_grad_norm_leaves_non_finite_gradients_alone() -> None:
    grads = {"a": np.array([np.inf, 1.0])}
    assert optim.clip_grad_norm(grads, 1.0) == math.inf
    assert grads["a"].tolist() == [math.inf, 1.0]


# ------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lr": -1e-3}, ValueError, r"lr must be >= 0"),
        ({"lr": "fast"}, TypeError, r"lr must be a real number"),
        ({"betas": (0.9, 1.0)}, ValueError, r"betas must each be in \[0, 1\)"),
        ({"betas": (-0.1, 0.9)}, ValueError, r"betas must each be in \[0, 1\)"),
        ({"betas": 0.9}, ValueError, r"betas must be two numbers"),
        ({"eps": -1.0}, ValueError, r"eps must be >= 0"),
        ({"weight_decay": float("nan")}, ValueError, r"weight_decay must be >= 0"),
    ],
)
def test_adamw_refuses_bad_settings(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        optim.AdamW({"w": np.zeros(2)}, **kwargs)


def test_adamw_refuses_a_negative_lr_set_later() -> None:
    opt = optim.AdamW({"w": np.zeros(2)})
    with pytest.raises(ValueError, match=r"lr must be >= 0"):
        opt.lr = -0.5
    assert opt.lr == 1e-3


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"n": 3}, ValueError, r"params holds no NumPy arrays"),
        ({"w": np.zeros(2, dtype=int)}, TypeError, r"params w must be a floating-point"),
        ({"w": np.broadcast_to(np.zeros(1), (2,))}, ValueError, r"params w is read-only"),
    ],
)
def test_adamw_refuses_bad_params(params: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        optim.AdamW(params)


def test_adamw_refuses_one_array_twice() -> None:
    tied = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"one array twice, at wte and head"):
        optim.AdamW({"wte": tied, "head": tied})


@pytest.mark.parametrize(
    ("grads", "error", "match"),
    [
        ({"w": np.zeros((2, 2))}, ValueError, r"grads must have the structure of params.*'b'"),
        (
            {"w": np.zeros((2, 2)), "b": np.zeros(2), "x": np.zeros(1)},
            ValueError,
            r"unexpected \['x'\]",
        ),
        ({"w": np.zeros((2, 3)), "b": np.zeros(2)}, ValueError, r"grads w has shape \(2, 3\)"),
        (
            {"w": np.zeros((2, 2), np.float32), "b": np.zeros(2)},
            TypeError,
            r"grads w has dtype float32",
        ),
    ],
)
def test_step_refuses_grads_that_do_not_match(grads: object, error: type, match: str) -> None:
    params = {"w": np.ones((2, 2)), "b": np.ones(2)}
    opt = optim.AdamW(params)
    with pytest.raises(error, match=match):
        opt.step(grads)
    assert params["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]  # nothing moved
    assert opt.steps == 0


def test_clip_grad_norm_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"max_norm must be >= 0"):
        optim.clip_grad_norm({"w": np.ones(2)}, -1.0)
    with pytest.raises(TypeError, match=r"grads w must be a writeable floating-point"):
        optim.clip_grad_norm({"w": np.ones(2, dtype=int)}, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"step": -1}, ValueError, r"step must be >= 0"),
        ({"max_lr": -1.0}, ValueError, r"max_lr must be >= 0"),
        ({"min_lr": 1.0}, ValueError, r"min_lr \(1.0\) must be at most max_lr"),
        ({"warmup": 200}, ValueError, r"total \(100.0\) must be more than warmup"),
        ({"total": True}, TypeError, r"total must be a real number"),
    ],
)
def test_lr_schedule_refuses_bad_arguments(kwargs: dict[str, Any], error: type, match: str) -> None:
    settings: dict[str, Any] = {"step": 5, "max_lr": 0.1, "min_lr": 0.01, "warmup": 10}
    settings["total"] = 100
    settings.update(kwargs)
    with pytest.raises(error, match=match):
        optim.lr_schedule(**settings)
