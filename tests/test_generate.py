"""gpt.generate, the KV cache and Model.write.

The references: ``GPT2LMHeadModel.generate``'s greedy tokens, committed by
``tools/make_generate_reference.py``; recomputing the whole text at every
step (`gpt.forward`, no cache); and for the sampler, softmax of the scores
with a bound on how far counts of correct draws may stray.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opbyop import bpe, gpt

REFERENCE = Path(__file__).parent / "data" / "generate_reference"
NEAR_TIE = 1e-4  # float32: cache and no cache may differ below this gap
Array = np.ndarray[Any, Any]


def random_params(config: gpt.Config, dtype: type = np.float64, seed: int = 0) -> gpt.Params:
    """Weights far from GPT-2's small initial ones: scores far apart."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, Array] = {
        name: (
            1 + rng.normal(0, 0.2, t.shape)
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight"))
            else rng.normal(0, 0.3, t.shape)
        ).astype(dtype)
        for name, t in gpt.state_dict(gpt.init(config)).items()
    }
    return gpt.from_state_dict(tensors, config)


SMALL = gpt.Config(vocab_size=24, context=16, n_layers=2, n_heads=2, d_model=8)


# ------------------------------------------------ cache against no cache
@pytest.mark.parametrize("n", range(1, SMALL.context))
def test_the_cache_gives_the_tokens_of_recomputing_in_float64(n: int) -> None:
    params = random_params(SMALL)
    prompts = np.random.default_rng(n).integers(0, SMALL.vocab_size, (3, n))
    new = SMALL.context - n
    samplers: list[dict[str, Any]] = [
        {},
        {"do_sample": True, "seed": n, "top_k": 10},
    ]
    for settings in samplers:
        cached = gpt.generate(params, prompts, new, **settings)
        again = gpt.generate(params, prompts, new, use_cache=False, **settings)
        np.testing.assert_array_equal(cached, again)
        assert cached.shape == (3, SMALL.context)
        np.testing.assert_array_equal(cached[:, :n], prompts)


def test_each_row_of_a_batch_gets_what_it_would_alone() -> None:
    params = random_params(SMALL)
    prompts = np.random.default_rng(5).integers(0, SMALL.vocab_size, (4, 5))
    together = gpt.generate(params, prompts, 11)
    for row, prompt in zip(together, prompts, strict=True):
        np.testing.assert_array_equal(gpt.generate(params, prompt, 11), row)
    assert len({tuple(row[5:]) for row in together}) > 1  # not one answer


@pytest.mark.parametrize("n", [1, 2, 7, 15])
def test_in_float32_the_cache_agrees_except_at_near_ties(n: int) -> None:
    """Each cached token is the argmax of the whole text's recomputed scores.

    Recomputed on the cached tokens (teacher forcing), so a near-tie does
    not change the history of the steps after it.
    """
    params = random_params(SMALL, np.float32)
    prompts = np.random.default_rng(n).integers(0, SMALL.vocab_size, (3, n))
    cached = gpt.generate(params, prompts, SMALL.context - n)
    logits = gpt.forward(params, cached[:, :-1])[:, n - 1 :]  # each new one's
    best = logits.argmax(axis=-1)
    top_two = np.sort(logits, axis=-1)[..., -2:]
    clear = top_two[..., 1] - top_two[..., 0] > NEAR_TIE
    assert clear.mean() > 0.9  # the comparison covers most steps
    np.testing.assert_array_equal(best[clear], cached[:, n:][clear])


def test_forward_with_cache_gives_forwards_logits_in_chunks() -> None:
    """A prefill, a chunk of 3 (the mask aligned bottom-right), then one."""
    params = random_params(SMALL)
    ids = np.random.default_rng(0).integers(0, SMALL.vocab_size, (2, 9))
    whole = gpt.forward(params, ids)
    first, cache = gpt.forward_with_cache(params, ids[:, :5])
    middle, cache = gpt.forward_with_cache(params, ids[:, 5:8], cache)
    last, cache = gpt.forward_with_cache(params, ids[:, 8:], cache)
    steps = np.concatenate([first, middle, last], axis=1)
    np.testing.assert_allclose(steps, whole, rtol=0, atol=1e-12)
    assert cache.length == 9
    assert len(cache.keys) == len(cache.values) == SMALL.n_layers
    assert cache.keys[0].shape == (2, SMALL.n_heads, 9, 4)


def test_forward_with_cache_refuses_what_does_not_fit() -> None:
    params = random_params(SMALL)
    _, cache = gpt.forward_with_cache(params, np.zeros((2, 15), int))
    with pytest.raises(ValueError, match="context of 16"):
        gpt.forward_with_cache(params, np.zeros((2, 2), int), cache)
    with pytest.raises(ValueError, match="batch shape"):
        gpt.forward_with_cache(params, np.zeros((3, 1), int), cache)
    with pytest.raises(TypeError, match="cache must be a gpt"):
        gpt.forward_with_cache(params, [[1]], cache=(1, 2))  # type: ignore


# ------------------------------------------------ Hugging Face's tokens
@pytest.mark.parametrize("run", [0, 1])
def test_greedy_tokens_are_hugging_faces(run: int) -> None:
    reference = json.loads((REFERENCE / "tokens.json").read_text("utf-8"))
    case = reference["runs"][run]
    model = gpt.load(REFERENCE)  # saved by transformers' save_pretrained
    assert model.params.token_embedding.dtype == np.float32
    assert case["min_gap"] > 10 * NEAR_TIE  # no near-tie to hide behind
    for use_cache in (True, False):
        tokens = gpt.generate(
            model.params,
            reference["prompts"],
            reference["max_new_tokens"],
            repetition_penalty=case["repetition_penalty"],
            use_cache=use_cache,
        )
        np.testing.assert_array_equal(tokens, case["tokens"])


def test_the_repetition_penalty_changes_greedy_tokens() -> None:
    reference = json.loads((REFERENCE / "tokens.json").read_text("utf-8"))
    plain, penalised = (run["tokens"] for run in reference["runs"])
    assert plain != penalised  # so the test above checks the penalty


# ------------------------------------------------ the sampler
DRAWS = 40_000
FAILURE = 1e-9  # the chance a correct sampler fails one check below


def bernstein_bound(p: Array, draws: int, failure: float) -> Array:
    """How far each token's count may be from ``draws * p``.

    Bernstein's inequality for a sum of ``draws`` independent 0/1 values
    of mean ``p`` (each within 1 of it): ``P(|count - draws p| >= t) <=
    2 exp(-t^2 / (2 (draws p (1 - p) + t / 3)))``. With the failure
    probability split evenly over the tokens (a union bound), solving for
    ``t`` gives the bound below: a correct sampler exceeds it for some token
    with probability at most `failure`.
    """
    log_term = math.log(2 * p.size / failure)
    variance = draws * p * (1 - p)
    return log_term / 3 + np.sqrt(log_term**2 / 9 + 2 * log_term * variance)


def one_token_counts(params: gpt.Params, prompt: Array, **settings: Any) -> Array:
    """Counts of `DRAWS` seeded draws of the token after `prompt`."""
    rows = np.tile(prompt, (DRAWS, 1))  # each row draws once, independently
    tokens = gpt.generate(params, rows, 1, do_sample=True, seed=3, **settings)
    return np.bincount(tokens[:, -1], minlength=params.config.vocab_size)


def expected(logits: Array, keep: Array | None = None) -> Array:
    """softmax in float64, over the kept tokens only."""
    weights = np.exp(logits - logits.max())
    if keep is not None:
        weights = np.where(keep, weights, 0.0)
    return weights / weights.sum()


def test_draws_follow_the_softmax_of_the_scores() -> None:
    params = random_params(SMALL, seed=1)
    prompt = np.array([3])
    logits = gpt.forward(params, prompt)[-1]
    p = expected(logits)
    counts = one_token_counts(params, prompt)
    bound = bernstein_bound(p, DRAWS, FAILURE)
    assert np.all(np.abs(counts - DRAWS * p) <= bound)
    # The check can fail: a temperature of 1.25 would be caught.
    wrong = expected(logits / 1.25)
    assert np.any(np.abs(counts - DRAWS * wrong) > bound)


def test_with_top_k_5_no_token_outside_the_top_5_appears() -> None:
    params = random_params(SMALL, seed=2)
    prompt = np.array([7])
    logits = gpt.forward(params, prompt)[-1]
    top_5 = np.argsort(logits)[-5:]
    keep = np.isin(np.arange(SMALL.vocab_size), top_5)
    counts = one_token_counts(params, prompt, top_k=5, temperature=0.8)
    assert counts[~keep].sum() == 0
    p = expected(logits / 0.8, keep)
    assert np.all(np.abs(counts - DRAWS * p) <= bernstein_bound(p, DRAWS, FAILURE))


def test_the_same_seed_gives_the_same_tokens() -> None:
    params = random_params(SMALL)
    settings: dict[str, Any] = {"do_sample": True, "top_p": 0.9, "min_p": 0.05}
    first = gpt.generate(params, [[1, 2], [3, 4]], 12, seed=7, **settings)
    again = gpt.generate(params, [[1, 2], [3, 4]], 12, seed=7, **settings)
    other = gpt.generate(params, [[1, 2], [3, 4]], 12, seed=8, **settings)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_draw_never_picks_a_token_of_probability_0() -> None:
    probabilities = np.array([[0.0, 0.5, 0.0, 0.5, 0.0]] * 5_000)
    tokens = gpt.draw(probabilities, np.random.default_rng(0))
    assert set(tokens.tolist()) == {1, 3}


# ------------------------------------------------ errors
PARAMS = random_params(SMALL)


@pytest.mark.parametrize(
    ("settings", "error", "name"),
    [
        ({"max_new_tokens": 0}, ValueError, "max_new_tokens"),
        ({"max_new_tokens": 14}, ValueError, "max_new_tokens"),  # 3 + 14 > 16
        ({"max_new_tokens": 2.0}, TypeError, "max_new_tokens"),
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"temperature": float("inf")}, ValueError, "temperature"),
        ({"top_k": 0}, ValueError, "top_k"),
        ({"top_k": 2.5}, TypeError, "top_k"),
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"min_p": -0.1}, ValueError, "min_p"),
        ({"min_p": 1.1}, ValueError, "min_p"),
        ({"repetition_penalty": 0.0}, ValueError, "repetition_penalty"),
        ({"repetition_penalty": "2"}, TypeError, "repetition_penalty"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 1.5}, ValueError, "seed"),
        ({"do_sample": "yes"}, TypeError, "do_sample"),
        ({"use_cache": 1}, TypeError, "use_cache"),
        ({"ids": [[1, 2], [3]]}, ValueError, "ids"),
        ({"ids": [[1.0, 2.0]]}, TypeError, "ids"),
        ({"ids": [[1, 99]]}, ValueError, "ids"),
    ],
)
def test_bad_arguments_are_refused_by_name(
    settings: dict[str, Any], error: type[Exception], name: str
) -> None:
    arguments: dict[str, Any] = {"ids": [[1, 2, 3]], "max_new_tokens": 4}
    arguments |= settings
    ids, steps = arguments.pop("ids"), arguments.pop("max_new_tokens")
    with pytest.raises(error, match=name):
        gpt.generate(PARAMS, ids, steps, **arguments)


def test_the_whole_context_can_be_filled() -> None:
    tokens = gpt.generate(PARAMS, [1, 2, 3], SMALL.context - 3)
    assert tokens.shape == (SMALL.context,)


# ------------------------------------------------ Model.write
BYTES = gpt.Config(vocab_size=256, context=48, n_layers=1, n_heads=2, d_model=8)


def test_save_and_load_carry_the_tokenizer(tmp_path: Path) -> None:
    tokenizer = bpe.BytePairs.train("the cat sat on the mat " * 20, 256 + 8)
    config = BYTES._replace(vocab_size=tokenizer.vocab_size)
    gpt.save(random_params(config), tmp_path, tokenizer=tokenizer)
    assert {p.name for p in tmp_path.iterdir()} >= {"vocab.json", "merges.txt"}
    model = gpt.load(tmp_path)
    assert isinstance(model.tokenizer, bpe.BytePairs)
    assert model.tokenizer.merges == tokenizer.merges
    assert model.tokenizer.encode("the mat") == tokenizer.encode("the mat")


def test_write_is_encode_generate_decode(tmp_path: Path) -> None:
    tokenizer = bpe.BytePairs.train("", 256)  # bytes only
    params = random_params(BYTES)
    model = gpt.load(gpt.save(params, tmp_path, tokenizer=tokenizer))
    pieces: list[str] = []
    settings: dict[str, Any] = {"do_sample": True, "seed": 4, "temperature": 1.5}
    text = model.write("Hello", 30, on_token=pieces.append, **settings)
    ids = gpt.generate(params, list(b"Hello"), 30, **settings)
    assert text == bytes(ids[5:].tolist()).decode("utf-8", "replace")
    assert "".join(pieces) == text
    assert len(pieces) > 1  # it streamed


def test_a_character_split_between_tokens_comes_once_it_is_whole() -> None:
    tokenizer = bpe.BytePairs.train("", 256)  # bytes only
    ids = [*"hé".encode(), 0xFF, 0x20, *"€".encode()]
    pieces = list(gpt._text_pieces(tokenizer, ids))
    assert pieces == ["h", "é", "\ufffd ", "€"]  # 0xFF is never valid
    assert "".join(pieces) == tokenizer.decode(ids)


def test_write_refuses_without_a_tokenizer_and_bad_arguments(
    tmp_path: Path,
) -> None:
    model = gpt.load(gpt.save(random_params(BYTES), tmp_path))
    assert model.tokenizer is None
    with pytest.raises(ValueError, match="no tokenizer"):
        model.write("Hi", 3)
    model.tokenizer = bpe.BytePairs.train("", 256)
    with pytest.raises(ValueError, match="prompt is empty"):
        model.write("", 3)
    with pytest.raises(TypeError, match="prompt must be a str"):
        model.write(b"Hi", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.write("Hi", 47)
    with pytest.raises(TypeError, match="unknown argument 'top_n'"):
        model.write("Hi", 3, top_n=3)


def test_a_tokenizer_larger_than_the_vocabulary_is_refused(
    tmp_path: Path,
) -> None:
    tokenizer = bpe.BytePairs.train("aaaa bbbb", 258)
    with pytest.raises(ValueError, match="more than the model's vocab_size"):
        gpt.save(random_params(BYTES), tmp_path, tokenizer=tokenizer)
    with pytest.raises(TypeError, match="tokenizer must be"):
        gpt.save(random_params(BYTES), tmp_path, tokenizer="gpt2")  # type: ignore[arg-type]
