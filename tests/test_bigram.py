"""opbyop.bigram: the counting bigram model in NumPy.

Checked against counts made another way (``collections.Counter`` and
``np.add.at``), probabilities worked out by hand in float64, the
plain-Python version (opbyop.scratch.next_token), temperature as
opbyop.sampling computes it (checked against Hugging Face), and sampled
frequencies.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from imports import imported_modules

from opbyop import bigram, corpus, sampling, softmax
from opbyop.scratch import next_token

TEXT = "def add(a, b):\n    return a + b\n\nclass Café:\n    pass\n"


def test_counts_match_a_counter_of_the_pairs() -> None:
    data = TEXT.encode("utf-8")
    expected = Counter(pairwise(data))
    counts = bigram.counts(TEXT)
    assert counts.shape == (256, 256)
    assert counts.dtype == np.int64
    assert counts.sum() == len(data) - 1
    for (a, b), n in expected.items():
        assert counts[a, b] == n
    assert int((counts > 0).sum()) == len(expected)


def test_counts_read_a_str_as_its_utf8_bytes() -> None:
    assert (bigram.counts("é") == bigram.counts("é".encode())).all()
    assert bigram.counts("é")[0xC3, 0xA9] == 1


def test_probabilities_add_one_to_every_count_by_hand() -> None:
    counts = np.zeros((256, 256), np.int64)
    counts[1, 2], counts[1, 3] = 3, 1
    table = bigram.probabilities(counts)
    assert table.dtype == np.float64
    assert table[1, 2] == (3 + 1) / (4 + 256)
    assert table[1, 3] == (1 + 1) / (4 + 256)
    assert table[1, 9] == 1 / (4 + 256)
    assert table[0, 0] == 1 / 256  # a row with no counts: uniform
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-12)


def test_probabilities_without_smoothing_leave_unseen_pairs_at_zero() -> None:
    counts = np.zeros((256, 256))
    counts[5, 6] = 2.0
    table = bigram.probabilities(counts, add=0)
    assert table[5, 6] == 1.0
    assert table[5, 7] == 0.0
    assert (table[0] == 0).all()  # nothing counted, nothing to divide
    assert bigram.bits_per_byte(table, bytes([5, 7])) == math.inf


def test_bits_per_byte_by_hand_in_float64() -> None:
    table = bigram.probabilities(bigram.counts(TEXT))
    text = b"def"
    p_e = (TEXT.count("de") + 1) / (TEXT.count("d") + 256)
    p_f = (TEXT.count("ef") + 1) / (TEXT.count("e") + 256)
    expected = (-math.log2(p_e) - math.log2(p_f)) / 3
    assert bigram.bits_per_byte(table, text) == pytest.approx(expected, rel=1e-12)


def test_uniform_guesses_cost_eight_bits_for_every_byte_but_the_first() -> None:
    uniform = np.full((256, 256), 1 / 256)
    assert bigram.bits_per_byte(uniform, bytes(range(100))) == pytest.approx(8 * 99 / 100)


def test_the_numpy_model_matches_the_plain_python_one() -> None:
    train, validation = corpus.load()
    seen = train.encode("utf-8")[:20_000]
    held = validation.encode("utf-8")[:5_000]
    scratch_table = next_token.add_one(next_token.count_next_bytes(seen))
    table = bigram.probabilities(bigram.counts(seen))
    assert (bigram.counts(seen) == np.array(next_token.count_next_bytes(seen))).all()
    np.testing.assert_allclose(table, np.array(scratch_table), rtol=1e-14)
    assert bigram.bits_per_byte(table, held) == pytest.approx(
        next_token.bits_per_byte(scratch_table, held), rel=1e-12
    )


def test_the_held_out_split_costs_about_3_42_bits_per_byte() -> None:
    train, validation = corpus.load()
    seen = np.frombuffer(train.encode(), np.uint8)
    held = np.frombuffer(validation.encode(), np.uint8)
    counts = np.ones((256, 256))  # a second count, with np.add.at
    np.add.at(counts, (seen[:-1], seen[1:]), 1)
    probs = counts / counts.sum(axis=1, keepdims=True)
    expected = -np.log2(probs[held[:-1], held[1:]]).sum() / len(held)
    table = bigram.probabilities(bigram.counts(train))
    got = bigram.bits_per_byte(table, validation)
    assert got == pytest.approx(float(expected), rel=1e-12)
    assert round(got, 2) == 3.42


@pytest.mark.parametrize("t", [0.5, 1.0, 2.0])
def test_temperature_divides_the_scores_as_sampling_does(t: float) -> None:
    rng = np.random.default_rng(0)
    row = rng.random(256) + 0.01
    row /= row.sum()
    expected = softmax(sampling.temperature(np.log(row), t))
    scratch = next_token.with_temperature(row.tolist(), t)
    np.testing.assert_allclose(scratch, expected, rtol=1e-12)
    table = np.tile(row, (256, 1))
    np.testing.assert_allclose(bigram._with_temperature(table, t)[7], expected, rtol=1e-12)


def test_samples_follow_the_row_of_the_byte_before() -> None:
    table = np.zeros((256, 256))
    table[:, 1] = 1.0  # after anything, 1
    table[1, :] = 0.0
    table[1, 2], table[1, 3] = 0.75, 0.25  # after 1: 2 or 3
    out = bigram.sample(table, 0, 20_000, seed=0)
    assert out[0] == 1
    after_one = [b for a, b in pairwise(out) if a == 1]
    assert set(after_one) <= {2, 3}
    share = after_one.count(2) / len(after_one)
    assert abs(share - 0.75) < 0.02  # 10,000 draws: 4 standard deviations
    sharp = bigram.sample(table, 1, 20_000, temperature=0.5, seed=0)
    after = [b for a, b in pairwise(b"\x01" + sharp) if a == 1]
    assert abs(after.count(2) / len(after) - 0.9) < 0.02  # 0.75² / (0.75² + 0.25²)


def test_scratch_samples_follow_the_rows_too() -> None:
    table = [[0.0] * 256 for _ in range(256)]
    for row in table:
        row[65] = 1.0
    table[65] = [0.0] * 256
    table[65][66], table[65][67] = 0.5, 0.5
    out = next_token.sample_bytes(table, 0, 4_000, seed=0)
    assert out[0] == 65
    after = [b for a, b in pairwise(out) if a == 65]
    assert set(after) <= {66, 67}
    assert abs(after.count(66) / len(after) - 0.5) < 0.05


def test_the_same_seed_gives_the_same_bytes() -> None:
    table = bigram.probabilities(bigram.counts(TEXT))
    assert bigram.sample(table, 100, 50, seed=3) == bigram.sample(table, 100, 50, seed=3)
    assert bigram.sample(table, 100, 50, seed=3) != bigram.sample(table, 100, 50, seed=4)
    assert len(bigram.sample(table, 100, 0, seed=3)) == 0
    rows = next_token.add_one(next_token.count_next_bytes(TEXT.encode()))
    once = next_token.sample_bytes(rows, 100, 50, seed=3)
    assert once == next_token.sample_bytes(rows, 100, 50, seed=3)
    assert len(once) == 50


GOOD = np.full((256, 256), 1 / 256)
NOT_TEXT: Any = ["a", "b"]  # neither str nor bytes
HALF: Any = 1.5


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: bigram.counts(NOT_TEXT), TypeError, "text must be a str or bytes"),
        (lambda: bigram.counts("a"), ValueError, "at least 2 bytes"),
        (lambda: bigram.probabilities(np.ones((3, 3))), ValueError, r"\[256, 256\]"),
        (lambda: bigram.probabilities(-GOOD), ValueError, "must not be negative"),
        (lambda: bigram.probabilities(GOOD, add=-1), ValueError, "add must be"),
        (lambda: bigram.bits_per_byte(GOOD, NOT_TEXT), TypeError, "text must be"),
        (lambda: bigram.bits_per_byte(GOOD[:2], "ab"), ValueError, "table must be"),
        (lambda: bigram.sample(GOOD, 256, 3), ValueError, "first must be a byte"),
        (lambda: bigram.sample(GOOD, HALF, 3), TypeError, "first must be an int"),
        (lambda: bigram.sample(GOOD, 0, -1), ValueError, "n must be"),
        (lambda: bigram.sample(GOOD, 0, 3, temperature=0), ValueError, "temperature"),
        (lambda: bigram.sample(np.zeros((256, 256)), 0, 3), ValueError, "row 0 holds no"),
    ],
)
def test_bad_input_is_refused_by_name(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: next_token.count_next_bytes(NOT_TEXT), TypeError, "data must be bytes, got list"),
        (lambda: next_token.count_next_bytes(b"a"), ValueError, "at least 2 bytes"),
        (lambda: next_token.with_temperature([1.0], 0), ValueError, "temperature"),
        (lambda: next_token.sample_bytes([], 300, 1, seed=0), ValueError, "first < 256"),
    ],
)
def test_scratch_refuses_bad_input_by_name(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_the_scratch_module_imports_only_the_standard_library() -> None:
    source = Path(next_token.__file__).read_text(encoding="utf-8")
    imported = imported_modules(source)
    assert imported == {"itertools", "math", "random"}
