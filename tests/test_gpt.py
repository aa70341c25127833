"""opbyop.gpt against transformers' GPT2LMHeadModel, finite differences and itself.

tests/data/gpt_reference.npz was made with PyTorch by
tools/make_gpt_reference.py: small GPT-2s in float64 with random weights,
their logits, loss and every parameter's gradient (autograd), and the logits
of a model that ``gpt.save`` wrote and ``GPT2LMHeadModel.from_pretrained``
read. No PyTorch here.

Tolerances:

- float64: logits and loss within 1e-10; every gradient within 1e-9 of its
  own largest entry (some entries are exactly 0: the key bias gets no
  gradient, as softmax ignores what is added to every score of a row). The
  measured differences are about 1e-15.
- float32 (the weights rounded to float32, against the same float64
  values): within 1e-5 of the largest entry, logits, loss and gradients.
  float32 rounds every step to 6e-8; through a few layers of sums the
  measured differences reach 8e-7, so 1e-5 leaves a margin of ten.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors.numpy
from numpy.testing import assert_allclose, assert_array_equal
from site_build import ROOT

from opbyop import gpt, optim
from opbyop._threads import blas_controller, blas_threads

Array = np.ndarray[Any, Any]
REF = dict(np.load(ROOT / "tests" / "data" / "gpt_reference.npz"))
SHAPES = ["two_heads", "one_head", "four_heads"]
SMALL = gpt.Config(vocab_size=11, context=8, n_layers=2, n_heads=2, d_model=8)


def config_of(name: str) -> gpt.Config:
    return gpt.Config(*REF[f"{name}/config"].tolist())


def reference_tensors(name: str, part: str = "param") -> dict[str, Array]:
    prefix = f"{name}/{part}/"
    return {k.removeprefix(prefix): v for k, v in REF.items() if k.startswith(prefix)}


def reference_params(name: str, dtype: type = np.float64) -> gpt.Params:
    tensors: dict[str, Array] = {k: v.astype(dtype) for k, v in reference_tensors(name).items()}
    return gpt.from_state_dict(tensors, config_of(name))


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Array]]:
    """Every array of a Params, with a path naming it (the config skipped)."""
    if isinstance(tree, np.ndarray):
        yield path, tree
    elif isinstance(tree, gpt.Config):
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
    """The loss written out in float64, independently of opbyop.ops."""
    rows = logits.reshape(-1, logits.shape[-1])
    top = rows.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
    picked = rows[np.arange(rows.shape[0]), targets.reshape(-1)]
    return float((log_sum - picked).mean())


# ---------------------------------------------------------------- against PyTorch


@pytest.mark.parametrize("name", SHAPES)
def test_float64_logits_and_loss_match_transformers(name: str) -> None:
    params = reference_params(name)
    ids, targets = REF[f"{name}/ids"], REF[f"{name}/targets"]
    logits = gpt.forward(params, ids)
    assert logits.dtype == np.float64
    assert_allclose(logits, REF[f"{name}/logits"], rtol=0, atol=1e-10)
    loss, _ = gpt.loss_and_grads(params, ids, targets)
    assert abs(loss - float(REF[f"{name}/loss"])) <= 1e-10


@pytest.mark.parametrize("name", SHAPES)
def test_float64_gradients_match_autograd(name: str) -> None:
    params = reference_params(name)
    _, grads = gpt.loss_and_grads(params, REF[f"{name}/ids"], REF[f"{name}/targets"])
    ours, theirs = gpt.state_dict(grads), reference_tensors(name, "grad")
    assert ours.keys() == theirs.keys()
    for key, want in theirs.items():
        error = np.abs(ours[key] - want).max()
        assert error <= 1e-9 * np.abs(want).max(), f"{key}: {error:.2e}"


@pytest.mark.parametrize("name", SHAPES)
def test_float32_matches_the_float64_reference_to_float32_rounding(name: str) -> None:
    params = reference_params(name, np.float32)
    ids, targets = REF[f"{name}/ids"], REF[f"{name}/targets"]
    logits = gpt.forward(params, ids)
    assert logits.dtype == np.float32
    want = REF[f"{name}/logits"]
    assert np.abs(logits - want).max() <= 1e-5 * np.abs(want).max()
    loss, grads = gpt.loss_and_grads(params, ids, targets)
    assert abs(loss - float(REF[f"{name}/loss"])) <= 1e-5
    ours = gpt.state_dict(grads)
    for key, want in reference_tensors(name, "grad").items():
        assert ours[key].dtype == np.float32, key  # nothing promoted
        error = np.abs(ours[key] - want).max()
        assert error <= 1e-5 * np.abs(want).max(), f"{key}: {error:.2e}"


def test_a_folder_save_wrote_gives_transformers_logits() -> None:
    # The tools script saved this very model with gpt.save and ran it with
    # GPT2LMHeadModel.from_pretrained: same initial weights, same logits.
    config = gpt.Config(*REF["saved/config"].tolist())
    params = gpt.init(config, seed=0, dtype=np.float64)
    logits = gpt.forward(params, REF["saved/ids"])
    assert_allclose(logits, REF["saved/logits"], rtol=0, atol=1e-10)


# ---------------------------------------------------------------- finite differences


# One block of 12 numbers per token, 2 heads: 2,136 parameters, each moved
# up and down (two forward passes each). The whole chain of several blocks
# is checked against PyTorch above.
CHECKED = gpt.Config(vocab_size=11, context=8, n_layers=1, n_heads=2, d_model=12)


def test_every_gradient_matches_central_differences() -> None:
    params = random_params(CHECKED)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, CHECKED.vocab_size, (2, 5))
    targets = rng.integers(0, CHECKED.vocab_size, (2, 5))
    _, grads = gpt.loss_and_grads(params, ids, targets)

    def loss() -> float:
        return mean_cross_entropy(gpt.forward(params, ids), targets)

    h = 1e-5
    count = 0
    for (path, array), (_, grad) in zip(leaves(params), leaves(grads), strict=True):
        numeric = np.empty_like(array)
        for i in np.ndindex(array.shape):
            keep = array[i]
            array[i] = keep + h
            up = loss()
            array[i] = keep - h
            down = loss()
            array[i] = keep
            numeric[i] = (up - down) / (2 * h)
        count += array.size
        assert_allclose(grad, numeric, rtol=0, atol=1e-8, err_msg=path)
    assert count == 2136  # every parameter of the model was checked


# ---------------------------------------------------------------- properties


def test_no_position_sees_a_later_token() -> None:
    params = random_params(SMALL)
    ids = np.array([1, 2, 3, 4, 5, 6])
    before = gpt.forward(params, ids)
    for j in range(len(ids)):
        changed = ids.copy()
        changed[j] = (ids[j] + 1) % SMALL.vocab_size
        after = gpt.forward(params, changed)
        # Only rounding: attention's softmax subtracts the largest score of
        # the whole row, hidden keys' included, before it drops them.
        assert_allclose(after[:j], before[:j], rtol=0, atol=1e-13)
        assert np.abs(after[j:] - before[j:]).max(axis=-1).min() > 1e-3


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_batch_gives_each_row_what_it_gets_alone(dtype: type) -> None:
    params = gpt.init(SMALL, seed=3, dtype=dtype)
    ids = np.random.default_rng(0).integers(0, SMALL.vocab_size, (5, 8))
    batch = gpt.forward(params, ids)
    alone = np.stack([gpt.forward(params, row) for row in ids])
    # Not always bit for bit: `linear` multiplies 2 to 32 rows in another
    # order than more rows (it is quicker), which moves the last bit.
    atol = 1e-14 if dtype == np.float64 else 1e-6
    assert_allclose(batch, alone, rtol=0, atol=atol)
    other = ids.copy()
    other[1:] = (other[1:] + 1) % SMALL.vocab_size  # change the other rows
    assert_allclose(gpt.forward(params, other)[0], batch[0], rtol=0, atol=atol)


def test_one_row_without_a_batch_dimension() -> None:
    params = gpt.init(SMALL)
    ids = np.array([3, 1, 4])
    assert_array_equal(gpt.forward(params, ids), gpt.forward(params, ids[None])[0])
    loss, grads = gpt.loss_and_grads(params, ids, ids)
    loss_2d, grads_2d = gpt.loss_and_grads(params, ids[None], ids[None])
    assert loss == loss_2d
    for (_, a), (_, b) in zip(leaves(grads), leaves(grads_2d), strict=True):
        assert_array_equal(a, b)


def test_the_loss_is_the_cross_entropy_of_the_logits() -> None:
    params = random_params(SMALL)
    ids = np.array([[1, 2, 3, 4], [4, 3, 2, 1]])
    targets = np.array([[2, 3, 4, 5], [0, 0, 0, 0]])
    loss, _ = gpt.loss_and_grads(params, ids, targets)
    assert loss == pytest.approx(mean_cross_entropy(gpt.forward(params, ids), targets), abs=1e-12)


def test_grads_have_the_structure_and_dtype_of_params() -> None:
    params = gpt.init(SMALL, dtype=np.float32)
    _, grads = gpt.loss_and_grads(params, [[1, 2]], [[2, 3]])
    assert grads.config == params.config
    got = [(path, a.shape, a.dtype) for path, a in leaves(grads)]
    assert got == [(path, a.shape, a.dtype) for path, a in leaves(params)]
    assert len(gpt.state_dict(grads)) == len(gpt.state_dict(params))


def test_a_token_never_read_still_gets_a_gradient_from_the_output_layer() -> None:
    # The token table is also the output layer: every token's logit is
    # pushed down, read or not. Positions past n get nothing.
    params = random_params(SMALL)
    ids, targets = np.array([[1, 2, 1]]), np.array([[2, 1, 2]])
    _, grads = gpt.loss_and_grads(params, ids, targets)
    unused = 7
    assert np.abs(grads.token_embedding[unused]).max() > 0
    d_positions = grads.position_embedding
    assert np.abs(d_positions[3:]).max() == 0  # positions past n are not used


# ---------------------------------------------------------------- init


def test_init_draws_as_gpt2_does() -> None:
    config = gpt.Config(vocab_size=512, context=128, n_layers=8, n_heads=4, d_model=64)
    params = gpt.init(config, seed=1)
    block = params.blocks[0]
    assert params.token_embedding.std() == pytest.approx(0.02, rel=0.02)
    assert block.attention.qkv.weight.std() == pytest.approx(0.02, rel=0.02)
    residual = 0.02 / math.sqrt(2 * config.n_layers)
    assert block.attention.output.weight.std() == pytest.approx(residual, rel=0.05)
    assert block.mlp.narrow.weight.std() == pytest.approx(residual, rel=0.03)
    assert (block.norm_1.weight == 1).all()
    assert block.norm_1.bias is not None
    assert (block.norm_1.bias == 0).all()
    assert block.mlp.widen.bias is not None
    assert (block.mlp.widen.bias == 0).all()
    assert len(params.blocks) == 8


def test_init_float32_is_the_float64_model_rounded() -> None:
    single = gpt.init(SMALL, seed=4, dtype=np.float32)
    double = gpt.init(SMALL, seed=4, dtype=np.float64)
    for (path, a), (_, b) in zip(leaves(single), leaves(double), strict=True):
        assert a.dtype == np.float32
        assert b.dtype == np.float64
        assert_array_equal(a, b.astype(np.float32), err_msg=path)
    other = gpt.init(SMALL, seed=5)
    assert not np.array_equal(other.token_embedding, single.token_embedding)


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        (gpt.Config(10, 8, 1, 3, 8), ValueError, "d_model = 8 does not divide"),
        (gpt.Config(10, 0, 1, 2, 8), ValueError, "config.context must be at least 1"),
        (gpt.Config(10, 8, 1.0, 2, 8), TypeError, "config.n_layers must be an integer"),  # type: ignore[arg-type]
        ((10, 8, 1), TypeError, "config must be a gpt.Config"),
    ],
)
def test_init_refuses_a_bad_config(config: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        gpt.init(config)


def test_init_refuses_other_dtypes() -> None:
    with pytest.raises(ValueError, match=r"dtype must be numpy\.float32 or numpy\.float64"):
        gpt.init(SMALL, dtype=np.float16)


# ---------------------------------------------------------------- bad ids


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        ([[1, 2, 11]], ValueError, r"ids must be between 0 and 10 .*got 1 to 11"),
        ([[-1, 2]], ValueError, "ids must be between 0 and 10"),
        (np.array([[1.0, 2.0]]), TypeError, "ids must be integer token ids, got dtype float64"),
        (np.array([[True, False]]), TypeError, "ids must be integer token ids, got dtype bool"),
        (np.zeros((1, 9), dtype=int), ValueError, "9 tokens per row, more than .* context of 8"),
        (np.zeros((1, 0), dtype=int), ValueError, "ids is empty"),
        (np.zeros((0, 3), dtype=int), ValueError, "ids is empty"),
        (np.zeros((1, 2, 3), dtype=int), ValueError, "got 3 dimensions"),
        (np.array(3), ValueError, "got 0 dimensions"),
        ([[1, 2], [3]], ValueError, "ids has rows of different lengths"),
        ("abc", TypeError, "ids must be integer token ids"),
    ],
)
def test_forward_refuses_bad_ids(ids: Any, error: type[Exception], match: str) -> None:
    params = gpt.init(SMALL)
    with pytest.raises(error, match=match):
        gpt.forward(params, ids)
    with pytest.raises(error, match=match):
        gpt.loss_and_grads(params, ids, ids)


def test_loss_and_grads_refuses_bad_targets() -> None:
    params = gpt.init(SMALL)
    with pytest.raises(ValueError, match=r"targets needs the shape of ids \(1, 3\)"):
        gpt.loss_and_grads(params, [[1, 2, 3]], [[1, 2]])
    with pytest.raises(ValueError, match="targets must be between 0 and 10"):
        gpt.loss_and_grads(params, [[1, 2, 3]], [[1, 2, 30]])
    with pytest.raises(TypeError, match="targets must be integer"):
        gpt.loss_and_grads(params, [[1, 2, 3]], [[1.0, 2.0, 3.0]])


def test_forward_refuses_what_is_not_params() -> None:
    with pytest.raises(TypeError, match=r"params must be a gpt\.Params"):
        gpt.forward({"wte": np.zeros((3, 2))}, [1])  # type: ignore[arg-type]


# ---------------------------------------------------------------- state_dict


def test_state_dict_has_gpt2_names_and_layouts() -> None:
    params = gpt.init(SMALL)
    tensors = gpt.state_dict(params)
    assert len(tensors) == 2 + 12 * SMALL.n_layers + 2
    d = SMALL.d_model
    assert tensors["transformer.h.1.attn.c_attn.weight"].shape == (d, 3 * d)
    assert tensors["transformer.h.1.mlp.c_fc.weight"].shape == (d, 4 * d)
    assert "lm_head.weight" not in tensors
    qkv = params.blocks[1].attention.qkv.weight  # ours: [3 d, d]
    assert_array_equal(tensors["transformer.h.1.attn.c_attn.weight"], qkv.T)
    # q, k, v side by side: k's columns are the second third
    assert_array_equal(
        tensors["transformer.h.1.attn.c_attn.weight"][:, d : 2 * d], qkv[d : 2 * d].T
    )


def test_state_dict_names_are_transformers_names() -> None:
    # The reference holds every parameter of a GPT2LMHeadModel with 2 layers.
    config = config_of("two_heads")
    assert gpt.state_dict(gpt.init(config)).keys() == reference_tensors("two_heads").keys()


def test_from_state_dict_round_trips_exactly_and_copies() -> None:
    params = random_params(SMALL)
    tensors = gpt.state_dict(params)
    again = gpt.from_state_dict(tensors, SMALL)
    for (path, a), (_, b) in zip(leaves(params), leaves(again), strict=True):
        assert_array_equal(a, b, err_msg=path)
        assert b.flags.c_contiguous
        assert b.flags.writeable
    tensors["transformer.wte.weight"][0, 0] += 1  # the copies are separate
    assert again.token_embedding[0, 0] == params.token_embedding[0, 0]
    params.token_embedding[0, 0] += 1
    assert gpt.state_dict(again)["transformer.wte.weight"][0, 0] != params.token_embedding[0, 0]


def test_from_state_dict_refuses_missing_extra_and_misshapen_tensors() -> None:
    tensors = gpt.state_dict(gpt.init(SMALL))
    missing = dict(tensors)
    del missing["transformer.h.1.mlp.c_proj.bias"]
    with pytest.raises(ValueError, match=r"missing tensor transformer\.h\.1\.mlp\.c_proj\.bias"):
        gpt.from_state_dict(missing, SMALL)
    extra = dict(tensors, **{"lm_head.weight": tensors["transformer.wte.weight"]})
    with pytest.raises(ValueError, match=r"unexpected tensor lm_head\.weight"):
        gpt.from_state_dict(extra, SMALL)
    wrong = dict(tensors)
    wrong["transformer.h.0.attn.c_attn.weight"] = np.zeros((24, 8), np.float32)
    with pytest.raises(
        ValueError,
        match=r"tensor transformer\.h\.0\.attn\.c_attn\.weight has shape \(24, 8\), "
        r"expected \(8, 24\)",
    ):
        gpt.from_state_dict(wrong, SMALL)
    ints = dict(tensors, **{"transformer.ln_f.bias": np.zeros(8, dtype=int)})
    with pytest.raises(ValueError, match=r"tensor transformer\.ln_f\.bias is int64"):
        gpt.from_state_dict(ints, SMALL)
    mixed = dict(tensors, **{"transformer.ln_f.bias": np.zeros(8)})
    with pytest.raises(ValueError, match="mix dtypes"):
        gpt.from_state_dict(mixed, SMALL)


# ---------------------------------------------------------------- save and load


def test_save_writes_what_transformers_reads(tmp_path: Path) -> None:
    params = gpt.init(SMALL)
    folder = gpt.save(params, tmp_path / "model")
    config = json.loads((folder / "config.json").read_text("utf-8"))
    want = {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "activation_function": "gelu_new",
        "vocab_size": 11,
        "n_positions": 8,
        "n_layer": 2,
        "n_head": 2,
        "n_embd": 8,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": True,
        "bos_token_id": None,
        "eos_token_id": None,
    }
    assert {key: config.get(key) for key in want} == want
    tensors = safetensors.numpy.load_file(folder / "model.safetensors")
    assert tensors.keys() == gpt.state_dict(params).keys()
    with open(folder / "model.safetensors", "rb") as file:
        header = json.loads(file.read(int.from_bytes(file.read(8), "little")))
    assert header["__metadata__"] == {"format": "pt"}  # transformers needs it


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_load_reads_back_what_save_wrote(tmp_path: Path, dtype: type) -> None:
    params = random_params(SMALL)
    params = gpt.from_state_dict(
        {k: v.astype(dtype) for k, v in gpt.state_dict(params).items()}, SMALL
    )
    model = gpt.load(gpt.save(params, tmp_path))
    assert model.config == SMALL
    assert model.tokenizer is None
    assert model.folder == tmp_path
    for (path, a), (_, b) in zip(leaves(params), leaves(model.params), strict=True):
        assert b.dtype == dtype
        assert_array_equal(a, b, err_msg=path)


def write_checkpoint(folder: Path, tensors: dict[str, Array], config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    safetensors.numpy.save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def gpt2_style(params: gpt.Params) -> dict[str, Array]:
    """The tensors as OpenAI's GPT-2 on the Hub stores them: no prefix, mask buffers."""
    tensors = {k.removeprefix("transformer."): v for k, v in gpt.state_dict(params).items()}
    n = params.config.context
    for i in range(params.config.n_layers):
        tensors[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, n, n), np.float32))
        tensors[f"h.{i}.attn.masked_bias"] = np.array(-1e4, np.float32)
    return tensors


GPT2_CONFIG = {  # the keys of the gpt2 checkpoint's config.json that matter
    "model_type": "gpt2",
    "activation_function": "gelu_new",
    "n_ctx": 8,
    "n_positions": 8,
    "n_embd": 8,
    "n_head": 2,
    "n_layer": 2,
    "vocab_size": 11,
    "layer_norm_epsilon": 1e-05,
    "attn_pdrop": 0.1,
    "resid_pdrop": 0.1,
    "embd_pdrop": 0.1,
}


def test_load_reads_a_checkpoint_named_as_gpt2s_files(tmp_path: Path) -> None:
    params = random_params(SMALL)
    params = gpt.from_state_dict(
        {k: v.astype(np.float32) for k, v in gpt.state_dict(params).items()}, SMALL
    )
    tensors = gpt2_style(params)
    tensors["lm_head.weight"] = params.token_embedding  # tied, stored anyway
    model = gpt.load(write_checkpoint(tmp_path, tensors, GPT2_CONFIG))
    ids = np.array([[1, 2, 3]])
    assert_array_equal(gpt.forward(model.params, ids), gpt.forward(params, ids))


def test_load_refuses_an_untied_output_layer(tmp_path: Path) -> None:
    params = gpt.init(SMALL)
    tensors = gpt2_style(params)
    tensors["lm_head.weight"] = params.token_embedding + 1
    with pytest.raises(ValueError, match=r"lm_head\.weight differs from the token table"):
        gpt.load(write_checkpoint(tmp_path, tensors, GPT2_CONFIG))


def test_load_checks_shapes_against_config_json(tmp_path: Path) -> None:
    tensors = gpt2_style(gpt.init(SMALL))
    config = dict(GPT2_CONFIG, n_embd=16)
    with pytest.raises(
        ValueError,
        match=r"tensor transformer\.wte\.weight has shape \(11, 8\), expected \(11, 16\)",
    ):
        gpt.load(write_checkpoint(tmp_path, tensors, config))
    del tensors["h.1.ln_2.bias"]
    with pytest.raises(ValueError, match=r"missing tensor transformer\.h\.1\.ln_2\.bias"):
        gpt.load(write_checkpoint(tmp_path, tensors, GPT2_CONFIG))


def test_load_refuses_a_truncated_or_malformed_file(tmp_path: Path) -> None:
    folder = gpt.save(gpt.init(SMALL), tmp_path)
    file = folder / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) - 100])
    with pytest.raises(ValueError, match=r"model\.safetensors is not a readable safetensors file"):
        gpt.load(folder)
    file.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(ValueError, match=r"model\.safetensors is not a readable safetensors file"):
        gpt.load(folder)
    file.write_bytes(data)
    (folder / "config.json").write_text("{", "utf-8")
    with pytest.raises(ValueError, match=r"config\.json is not valid JSON"):
        gpt.load(folder)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"model_type": "bert"}, "model_type is 'bert', expected 'gpt2'"),
        ({"activation_function": "relu"}, "activation_function is 'relu'"),
        ({"layer_norm_epsilon": 1e-12}, "layer_norm_epsilon is 1e-12"),
        ({"n_inner": 7}, "n_inner is 7"),
        ({"tie_word_embeddings": False}, "tie_word_embeddings is False"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
        ({"n_head": 3}, "does not divide into n_heads = 3"),
        ({"n_layer": "2"}, "n_layer is '2', expected an integer"),
    ],
)
def test_load_refuses_another_architecture(
    tmp_path: Path, change: dict[str, Any], match: str
) -> None:
    folder = write_checkpoint(tmp_path, gpt2_style(gpt.init(SMALL)), GPT2_CONFIG | change)
    with pytest.raises(ValueError, match=match):
        gpt.load(folder)


def test_load_refuses_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no folder at"):
        gpt.load(tmp_path / "nothing")
    (tmp_path / "config.json").write_text("{}", "utf-8")
    with pytest.raises(FileNotFoundError, match=r"has no model\.safetensors"):
        gpt.load(tmp_path)
    with pytest.raises(TypeError, match="folder must be a str or Path"):
        gpt.load(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- training


def test_five_clipped_adamw_steps_follow_pytorch() -> None:
    # torch.optim.AdamW after clip_grad_norm_, five steps on one batch: the
    # losses before each step and after the last, and the final weights.
    config = config_of("two_heads")
    params = gpt.from_state_dict(reference_tensors("adamw"), config)
    ids, targets = REF["adamw/ids"], REF["adamw/targets"]
    optimizer = optim.AdamW(
        params,
        lr=float(REF["adamw/lr"]),
        betas=tuple(REF["adamw/betas"].tolist()),
        eps=float(REF["adamw/eps"]),
        weight_decay=float(REF["adamw/weight_decay"]),
    )
    losses, norms = [], []
    for _ in range(5):
        loss, grads = gpt.loss_and_grads(params, ids, targets)
        losses.append(loss)
        norms.append(optim.clip_grad_norm(grads, float(REF["adamw/max_norm"])))
        optimizer.step(grads)
    losses.append(gpt.loss_and_grads(params, ids, targets)[0])
    assert_allclose(losses, REF["adamw/losses"], rtol=0, atol=1e-10)
    assert_allclose(norms, REF["adamw/norms"], rtol=1e-10)
    assert losses[-1] < losses[0]  # it learned
    final = gpt.state_dict(params)
    for key, want in reference_tensors("adamw", "final").items():
        assert_allclose(final[key], want, rtol=0, atol=1e-10, err_msg=key)


def test_a_batch_shared_between_cores_gives_the_same_gradients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three shares of a batch of 3 rows, whatever the machine's cores.
    monkeypatch.setattr(gpt, "_SHARE_FROM", 0)
    monkeypatch.setattr(gpt, "usable_cores", lambda: 3)
    name = "one_head"
    params = reference_params(name)
    ids, targets = REF[f"{name}/ids"], REF[f"{name}/targets"]
    assert len(gpt._shares(ids.shape[0], ids.size)) == 3
    loss, grads = gpt.loss_and_grads(params, ids, targets)
    assert abs(loss - float(REF[f"{name}/loss"])) <= 1e-10
    ours = gpt.state_dict(grads)
    for key, want in reference_tensors(name, "grad").items():
        error = np.abs(ours[key] - want).max()
        assert error <= 1e-9 * np.abs(want).max(), f"{key}: {error:.2e}"
    single = gpt.forward_backward(params, ids, targets)[1]
    for (path, a), (_, b) in zip(leaves(grads), leaves(single), strict=True):
        assert a.dtype == b.dtype
        assert_allclose(a, b, rtol=0, atol=1e-12 * max(np.abs(b).max(), 1), err_msg=path)


def test_a_small_batch_runs_with_blas_on_one_thread_and_gives_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # BLAS's own threads cost more than they save on products this small.
    def threads() -> list[int]:
        return [lib["num_threads"] for lib in blas_controller().info()]

    during: list[list[int]] = []
    single = gpt.forward_backward

    def watched(*args: Any) -> Any:
        during.append(threads())
        return single(*args)

    monkeypatch.setattr(gpt, "forward_backward", watched)
    name = "one_head"
    params = reference_params(name)
    ids, targets = REF[f"{name}/ids"], REF[f"{name}/targets"]
    # From two threads, so the check holds under a one-thread test runner too.
    with blas_threads(2):
        before = threads()
        loss, _ = gpt.loss_and_grads(params, ids, targets)
        assert len(during) == 1
        assert set(during[0]) <= {1}
        assert threads() == before
    assert abs(loss - float(REF[f"{name}/loss"])) <= 1e-10


def test_shares_cut_the_rows_evenly() -> None:
    cores = gpt.usable_cores()
    assert gpt._shares(8, 1) == [slice(0, 8)]  # small: one share
    shares = gpt._shares(7, 2**20)
    assert len(shares) == min(cores, 7)
    assert [i for s in shares for i in range(s.start, s.stop)] == list(range(7))
