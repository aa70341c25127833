"""opbyop.train: bits per byte, the loop, resuming, and the command.

The references: cross-entropy computed position by position in float64
from `gpt.forward` on each position's whole past (for `evaluate`); a run
that was never stopped (for `resume`); and a counting bigram model, with
add-one smoothing, on the same held-out text (for the command).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opbyop import bpe, corpus, gpt, train

TINY = gpt.Config(vocab_size=256, context=16, n_layers=1, n_heads=2, d_model=16)
TEXT = "def add(a, b):\n    return a + b\n\n" * 40
HELD_OUT = "class Point:\n    def __init__(self, x):\n        self.x = x\n" * 8


def reference_bits_per_byte(params: gpt.Params, text: str, context: int) -> float:
    """Each byte's cross-entropy from up to `context` bytes before it, in float64."""
    tokens = list(text.encode("utf-8"))
    nats = 0.0
    for position in range(1, len(tokens)):
        past = tokens[max(0, position - context) : position]
        logits = gpt.forward(params, past)[-1].astype(np.float64)
        nats -= (
            logits[tokens[position]] - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
        )
    return nats / math.log(2) / len(tokens)


def float64_params(config: gpt.Config, seed: int = 0) -> gpt.Params:
    rng = np.random.default_rng(seed)
    tensors = {
        name: rng.normal(0, 0.3, t.shape) for name, t in gpt.state_dict(gpt.init(config)).items()
    }
    return gpt.from_state_dict(tensors, config)


# ------------------------------------------------------------- evaluate
def test_evaluate_with_stride_one_gives_each_byte_its_whole_context() -> None:
    params = float64_params(gpt.Config(256, 8, 1, 2, 8))
    text = "héllo, wörld\n" * 3  # two-byte characters: bytes, not characters
    expected = reference_bits_per_byte(params, text, 8)
    assert train.evaluate(params, None, text, stride=1) == pytest.approx(expected, rel=1e-12)


def test_evaluate_with_windows_side_by_side_restarts_the_context() -> None:
    params = float64_params(gpt.Config(256, 8, 1, 2, 8))
    text = "abcdefghijklmnopqrstuvwxy"  # 25 bytes: windows of 8, and a short last one
    nats = 0.0
    for start in range(0, 24, 8):
        window = list(text.encode())[start : start + 9]
        logits = gpt.forward(params, window[:-1]).astype(np.float64)
        log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        nats -= log_probs[np.arange(len(window) - 1), window[1:]].sum()
    assert train.evaluate(params, None, text) == pytest.approx(nats / math.log(2) / 25, rel=1e-12)


@pytest.mark.parametrize("stride", [1, 3, 5, 8])
def test_evaluate_predicts_every_token_once_for_any_stride(stride: int) -> None:
    # A model that ignores its input gives every token the same probabilities,
    # so the total depends only on which tokens are predicted, and how often.
    params = float64_params(gpt.Config(256, 8, 1, 2, 8))
    params = params._replace(position_embedding=np.zeros_like(params.position_embedding))
    params = params._replace(token_embedding=np.tile(params.token_embedding[:1], (256, 1)))
    text = "the same text, again and again. " * 3
    logits = gpt.forward(params, [0])[0]
    log_probs = logits - np.log(np.exp(logits).sum())
    expected = -log_probs[list(text.encode())[1:]].sum() / math.log(2) / len(text)
    assert train.evaluate(params, None, text, stride=stride) == pytest.approx(expected)


def test_evaluate_divides_bits_by_bytes_for_a_tokenizer_with_merges() -> None:
    tokenizer = bpe.BytePairs.train(TEXT, 270)
    params = float64_params(gpt.Config(270, 8, 1, 2, 8))
    ids = tokenizer.encode(HELD_OUT)
    nats = 0.0
    for start in range(0, len(ids) - 1, 8):
        window = ids[start : start + 9]
        logits = gpt.forward(params, window[:-1])
        log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        nats -= log_probs[np.arange(len(window) - 1), window[1:]].sum()
    expected = nats / math.log(2) / len(HELD_OUT.encode())
    assert train.evaluate(params, tokenizer, HELD_OUT) == pytest.approx(expected, rel=1e-12)


def test_an_untrained_byte_model_scores_about_eight_bits_per_byte() -> None:
    bits = train.evaluate(gpt.init(TINY), None, HELD_OUT)
    assert 7.7 < bits < 8.1  # log2(256) = 8: near-uniform guesses


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"stride": 0}, ValueError, "stride must be in"),
        ({"stride": 17}, ValueError, "stride must be in"),
        ({"stride": 2.0}, TypeError, "stride must be an int"),
    ],
)
def test_evaluate_refuses_a_bad_stride(kwargs: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        train.evaluate(gpt.init(TINY), None, HELD_OUT, **kwargs)


def test_evaluate_refuses_a_text_too_short_to_predict() -> None:
    with pytest.raises(ValueError, match="at least two tokens"):
        train.evaluate(gpt.init(TINY), None, "x")


# ---------------------------------------------------------------- data
def test_a_batch_is_random_windows_and_their_next_tokens() -> None:
    tokens = np.arange(100)
    ids, targets = train.batch_of_windows(tokens, 4, 10, np.random.default_rng(0))
    assert ids.shape == targets.shape == (4, 10)
    np.testing.assert_array_equal(targets, ids + 1)  # each target is the next token
    np.testing.assert_array_equal(np.diff(ids, axis=1), 1)  # contiguous windows
    assert ids.min() >= 0
    assert targets.max() <= 99


def test_the_validation_sample_is_fixed_whole_lines_from_across_the_text() -> None:
    _, validation = corpus.load()
    sample = train.validation_sample(validation)
    assert sample == train.validation_sample(validation)
    assert 8 * 1024 <= len(sample) < 16 * 1024
    lines = sample.splitlines()
    assert all(line in validation for line in lines)
    assert "# Lib/_py_abc.py" not in lines  # the first piece starts after line 1
    assert validation.find(sample[:300]) < len(validation) / 8  # from the start...
    assert validation.rfind(sample[-300:]) > len(validation) * 7 / 8  # ...to the end


# ---------------------------------------------------------------- loop
def test_training_lowers_the_loss_and_logs_it() -> None:
    seen, held_out = (text[:20_000] for text in corpus.load())
    params, log = train.fit(TINY, seen, held_out, steps=150, progress=False, lr=1e-2)
    assert log["status"] == "finished"
    assert log["final"]["step"] == 150
    first, last = log["validation"][0][2], log["validation"][-1][2]
    assert first > 7.5, first
    assert last < first - 2, (first, last)
    marks = [math.ceil(k * 150 / train.VALIDATIONS) for k in range(1, train.VALIDATIONS + 1)]
    assert [row[0] for row in log["validation"]] == [0, *marks]
    assert log["final"]["validation_bits_per_byte"] == pytest.approx(
        train.evaluate(params, None, held_out), abs=1e-5
    )
    assert {s["prompt"] for s in log["samples"][-3:]} == {"def ", "class ", "import "}


def test_the_same_seed_and_steps_give_the_same_weights() -> None:
    first, _ = train.fit(TINY, TEXT, HELD_OUT, steps=12, seed=3, progress=False)
    again, _ = train.fit(TINY, TEXT, HELD_OUT, steps=12, seed=3, progress=False)
    other, _ = train.fit(TINY, TEXT, HELD_OUT, steps=12, seed=4, progress=False)
    for name, value in gpt.state_dict(first).items():
        np.testing.assert_array_equal(value, gpt.state_dict(again)[name], err_msg=name)
    assert not np.array_equal(first.token_embedding, other.token_embedding)


def test_a_run_stopped_by_ctrl_c_resumes_to_the_same_weights(tmp_path: Path) -> None:
    whole, whole_log = train.fit(TINY, TEXT, HELD_OUT, steps=200, progress=False)

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()  # Ctrl-C, mid-run
    _, stopped = train.fit(TINY, TEXT, HELD_OUT, steps=200, progress=False, out=tmp_path)
    timer.join()
    assert stopped["status"] == "stopped", "the run ended before the Ctrl-C came"
    assert 0 < stopped["step"] < 200
    assert json.loads((tmp_path / "log.json").read_text())["step"] == stopped["step"]

    resumed, log = train.resume(tmp_path, TEXT, HELD_OUT, progress=False)
    for name, value in gpt.state_dict(whole).items():
        np.testing.assert_array_equal(value, gpt.state_dict(resumed)[name], err_msg=name)
    assert log["status"] == "finished"
    assert log["final"]["step"] == 200
    steps = [row[0] for row in log["validation"]]
    assert steps == sorted(set(steps)) == [row[0] for row in whole_log["validation"]]


# NumPy warns of the overflow on the way; the loop's message is what counts.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_learning_rate_far_too_high_stops_with_the_step_and_the_norm() -> None:
    with pytest.raises(train.TrainingDiverged, match=r"step \d+: the loss is (nan|inf)") as info:
        train.fit(TINY, TEXT, HELD_OUT, steps=50, progress=False, lr=1e6, min_lr=1e6, clip=1e30)
    assert "gradient norm" in str(info.value)
    assert "--lr" in str(info.value)


def test_a_run_on_the_clock_ends_once_its_time_is_up() -> None:
    # No bound on speed: on a busy machine a second holds few steps.
    _, log = train.fit(TINY, TEXT, HELD_OUT, minutes=0.02, progress=False)
    assert log["status"] == "finished"
    assert log["final"]["seconds"] >= 1.2
    assert log["final"]["step"] >= 1
    assert len(log["validation"]) >= 2  # at the start, and at least one mark


def test_the_checkpoint_is_a_model_folder_with_its_log(tmp_path: Path) -> None:
    params, _ = train.fit(TINY, TEXT, HELD_OUT, steps=6, progress=False, out=tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"config.json", "model.safetensors", "vocab.json", "merges.txt"} <= names
    assert {"log.json", "optimizer.npz"} <= names
    model = gpt.load(tmp_path)
    assert model.tokenizer is not None
    assert model.tokenizer.vocab_size == 256
    np.testing.assert_array_equal(model.params.token_embedding, params.token_embedding)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ValueError, "exactly one of steps and minutes"),
        ({"steps": 5, "minutes": 1}, ValueError, "exactly one of steps and minutes"),
        ({"steps": 0}, ValueError, "steps must be at least 1"),
        ({"steps": 2.5}, TypeError, "steps must be an int"),
        ({"minutes": -1}, ValueError, "minutes must be more than 0"),
        ({"steps": 5, "batch_size": 4}, TypeError, "the recipe's fields are batch"),
        ({"steps": 5, "lr": -1.0}, ValueError, "lr"),
        ({"steps": 5, "tokenizer": "bytes"}, TypeError, "tokenizer must be a BytePairs"),
    ],
)
def test_fit_refuses_bad_arguments_by_name(
    kwargs: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        train.fit(TINY, TEXT, HELD_OUT, progress=False, **kwargs)


def test_fit_refuses_a_tokenizer_of_another_size() -> None:
    with pytest.raises(ValueError, match="the tokenizer has 270 tokens"):
        train.fit(TINY, TEXT, HELD_OUT, steps=1, tokenizer=bpe.BytePairs.train(TEXT, 270))


def test_fit_refuses_a_text_shorter_than_the_context() -> None:
    with pytest.raises(ValueError, match="train_text has 5 tokens"):
        train.fit(TINY, "short", HELD_OUT, steps=1, progress=False)


def test_resume_refuses_a_run_that_has_finished(tmp_path: Path) -> None:
    train.fit(TINY, TEXT, HELD_OUT, steps=3, progress=False, out=tmp_path)
    with pytest.raises(ValueError, match="has already finished"):
        train.resume(tmp_path, TEXT, HELD_OUT)


def test_the_log_says_where_the_time_went() -> None:
    _, log = train.fit(TINY, TEXT, HELD_OUT, steps=30, progress=False)
    assert set(log["spent"]) == {"sampling", "step", "logging", "validation"}
    assert log["spent"]["step"] > log["spent"]["sampling"] > 0
    assert sum(log["spent"].values()) <= log["final"]["seconds"]


def test_resume_refuses_a_folder_without_a_log(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no log\.json"):
        train.resume(tmp_path, TEXT, HELD_OUT)


# ------------------------------------------------------------- command
def counting_bigram_bits_per_byte(train_text: str, validation_text: str) -> float:
    """How often each byte follows each other byte, plus one: the baseline to beat."""
    seen = np.frombuffer(train_text.encode(), np.uint8)
    held = np.frombuffer(validation_text.encode(), np.uint8)
    counts = np.ones((256, 256))
    np.add.at(counts, (seen[:-1], seen[1:]), 1)
    probs = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.log2(probs[held[:-1], held[1:]]).sum() / len(held))


SMALL_RUN = [
    "--steps", "600", "--context", "64", "--n-layers", "1", "--n-heads", "2",
    "--d-model", "32", "--lr", "0.01", "--min-lr", "0.001", "--warmup", "60",
]  # fmt: skip


def command(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "opbyop.train", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_the_command_trains_past_the_bigram_stops_on_ctrl_c_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = command(*SMALL_RUN, "--out", str(out))
    assert first.stderr is not None
    shown = ""
    while "step" not in shown or not (out / "log.json").is_file():
        shown = first.stderr.read(80)  # the progress bar, as it draws
        assert shown or first.poll() is None, "the command ended before training"
    first.send_signal(signal.SIGINT)
    stdout, _ = first.communicate(timeout=60)
    assert first.returncode == 130, stdout
    assert f"--resume {out}" in stdout
    stopped = json.loads((out / "log.json").read_text())
    assert stopped["status"] == "stopped"
    assert 0 < stopped["step"] < 600

    again = command("--resume", str(out))
    stdout, stderr = again.communicate(timeout=600)  # a hang, not a slow machine
    assert again.returncode == 0, stderr
    assert "step/s" in stderr or "s/step" in stderr  # tqdm's bar
    log = json.loads((out / "log.json").read_text())
    assert log["status"] == "finished"
    assert log["final"]["step"] == 600
    train_text, validation_text = corpus.load()
    bigram = counting_bigram_bits_per_byte(train_text, validation_text)
    assert 3.3 < bigram < 3.5  # the baseline episode 8 shows
    assert log["final"]["validation_bits_per_byte"] < bigram
    assert f"{log['final']['validation_bits_per_byte']:.3f} bits per byte" in stdout
    assert gpt.load(out).tokenizer is not None


def test_the_command_refuses_other_settings_with_resume(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "opbyop.train", "--resume", str(tmp_path), "--lr", "1"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "give it alone (not with --lr)" in result.stderr


def test_the_help_shows_the_default_model_and_recipe() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "opbyop.train", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    shown = " ".join(result.stdout.split())
    assert " ".join(f"default: {train.DEFAULT_CONFIG}".split()) in shown
    assert " ".join(f"default: {train.Recipe()}".split()) in shown


def test_the_command_swaps_the_pieces_episode_13_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(corpus, "load", lambda: (TEXT, HELD_OUT))  # seconds, not minutes
    out = tmp_path / "modern"
    pieces = ["--norm", "rms", "--mlp", "swiglu", "--positions", "rotary"]
    sizes = ["--context", "16", "--n-layers", "1", "--n-heads", "2", "--d-model", "16"]
    assert train.main(["--steps", "3", "--out", str(out), *pieces, *sizes]) == 0
    config = gpt.load(out).config
    assert config == gpt.Config(256, 16, 1, 2, 16, norm="rms", mlp="swiglu", positions="rotary")
    shown = capsys.readouterr().out
    assert "gpt.load reads it; transformers refuses its model type" in shown
    assert "transformers loads it too" not in shown

    assert train.main(["--steps", "3", "--out", str(tmp_path / "gpt2"), *sizes]) == 0
    assert not gpt.is_variant(gpt.load(tmp_path / "gpt2").config)
    assert "transformers loads it too" in capsys.readouterr().out


def test_the_command_refuses_a_piece_it_does_not_know() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "opbyop.train", "--norm", "batch"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "--norm: invalid choice: 'batch' (choose from" in result.stderr
