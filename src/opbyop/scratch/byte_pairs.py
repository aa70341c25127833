"""Episode 12, byte pairs: learning merges from text, and encoding with them.

Plain Python, and the ``regex`` package for GPT-2's pattern: the standard
library's ``re`` has no ``\\p{L}`` (letters) or ``\\p{N}`` (numbers).
``opbyop.bpe`` gives the same ids, fast, and reads GPT-2's own files.
"""

# --8<-- [start:setup]
import math
from itertools import pairwise

import regex

Pair = tuple[int, int]

# GPT-2's pattern: contractions, letters, numbers, other symbols, spaces.
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"""
    r"""|\s+(?!\S)|\s+"""
)
# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_text(text: str) -> None:
    """text is a str: bytes or numbers have no pieces."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


# --8<-- [end:checks]


# --8<-- [start:split_pieces]
def split_pieces(text: str) -> list[list[int]]:
    """Cut text with GPT-2's pattern; each piece as its UTF-8 bytes."""
    _check_text(text)
    pieces = GPT2_PATTERN.findall(text)
    return [list(piece.encode("utf-8")) for piece in pieces]


# --8<-- [end:split_pieces]


# --8<-- [start:count_pairs]
def count_pairs(pieces: list[list[int]]) -> dict[Pair, int]:
    """How often each adjacent pair occurs, in order of first occurrence."""
    counts: dict[Pair, int] = {}
    for ids in pieces:
        for pair in pairwise(ids):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


# --8<-- [end:count_pairs]


# --8<-- [start:merge_pair]
def merge_pair(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """Replace each occurrence of pair, left to right, with new_id."""
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


# --8<-- [end:merge_pair]


# --8<-- [start:train_merges]
def train_merges(text: str, vocab_size: int) -> dict[Pair, int]:
    """Merge the most frequent pair, again and again: pair -> new id."""
    if vocab_size < 256:
        raise ValueError(f"vocab_size must be at least 256, got {vocab_size}")
    pieces = split_pieces(text)
    merges: dict[Pair, int] = {}
    for new_id in range(256, vocab_size):
        counts = count_pairs(pieces)
        if not counts:
            break  # every piece is a single token
        # max keeps the first of equal counts: the pair seen first
        best = max(counts, key=lambda pair: counts[pair])
        pieces = [merge_pair(ids, best, new_id) for ids in pieces]
        merges[best] = new_id
    return merges


# --8<-- [end:train_merges]


# --8<-- [start:encode_text]
def encode_text(text: str, merges: dict[Pair, int]) -> list[int]:
    """Merge each piece's bytes, the earliest-learned merge first."""
    encoded = []
    for ids in split_pieces(text):
        while len(ids) > 1:
            pairs = pairwise(ids)
            # the rank of a merge is its id: learned earlier, lower id
            best = min(pairs, key=lambda p: merges.get(p, math.inf))
            if best not in merges:
                break  # no pair of this piece was ever merged
            ids = merge_pair(ids, best, merges[best])
        encoded.extend(ids)
    return encoded


# --8<-- [end:encode_text]


# --8<-- [start:decode_ids]
def decode_ids(ids: list[int], merges: dict[Pair, int]) -> str:
    """Each token's bytes, joined and read as UTF-8."""
    token_bytes = {byte: bytes([byte]) for byte in range(256)}
    for (left, right), new_id in merges.items():
        token_bytes[new_id] = token_bytes[left] + token_bytes[right]
    data = b"".join(token_bytes[i] for i in ids)
    return data.decode("utf-8", errors="replace")  # bad bytes become �


# --8<-- [end:decode_ids]
