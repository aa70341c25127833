"""Episode 8, guess the next token: a model that counts.

Plain Python: how often each byte follows each byte, those counts as
probabilities, the bits per byte a text costs, and text sampled from it.
``opbyop.bigram`` does the same with NumPy, on the whole corpus.
"""

# --8<-- [start:setup]
import math
import random
from itertools import pairwise

Table = list[list[float]]  # 256 rows: row a holds a guess for the next byte
# --8<-- [end:setup]


# --8<-- [start:checks]
def _check_data(data: bytes, name: str = "data") -> None:
    """data is bytes, at least two of them: one to read, one to guess."""
    if not isinstance(data, bytes):
        raise TypeError(f"{name} must be bytes, got {type(data).__name__}")
    if len(data) < 2:
        raise ValueError(f"{name} must hold at least 2 bytes, got {len(data)}")


# --8<-- [end:checks]


# --8<-- [start:count_next_bytes]
def count_next_bytes(data: bytes) -> list[list[int]]:  # -> [256, 256]
    """``counts[a][b]``: how often byte b comes right after byte a."""
    _check_data(data)
    counts = [[0] * 256 for _ in range(256)]
    for a, b in pairwise(data):  # each byte and the one after it
        counts[a][b] += 1
    return counts


# --8<-- [end:count_next_bytes]


# --8<-- [start:add_one]
def add_one(counts: list[list[int]]) -> Table:  # [256, 256] -> [256, 256]
    """Each row as probabilities, with one added to every count first."""
    table = []
    for row in counts:
        total = sum(row) + len(row)
        table.append([(count + 1) / total for count in row])
    return table


# --8<-- [end:add_one]


# --8<-- [start:bits_per_byte]
def bits_per_byte(table: Table, data: bytes) -> float:
    """The bits the table's guesses cost on data, per byte of data."""
    _check_data(data)
    bits = 0.0
    for a, b in pairwise(data):  # each byte and the one after it
        p = table[a][b]  # the probability it gave the byte that came
        if p == 0:
            return math.inf  # a certainty proved wrong, as in NumPy
        bits -= math.log2(p)
    return bits / len(data)


# --8<-- [end:bits_per_byte]


# --8<-- [start:with_temperature]
def _log(p: float) -> float:
    """The natural log, with log(0) = -inf: a byte never to be drawn."""
    return math.log(p) if p > 0 else -math.inf


def with_temperature(row: list[float], temperature: float) -> list[float]:
    """A row of probabilities, sharpened (t < 1) or flattened (t > 1)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    scores = [_log(p) / temperature for p in row]  # divide the scores
    top = max(scores)
    weights = [math.exp(score - top) for score in scores]  # softmax
    total = sum(weights)
    return [weight / total for weight in weights]


# --8<-- [end:with_temperature]


# --8<-- [start:sample_bytes]
def sample_bytes(
    table: Table, first: int, n: int, seed: int, temperature: float = 1.0
) -> bytes:
    """n bytes after first, each drawn from the row of the one before."""
    if first not in range(256) or n < 0:
        raise ValueError(f"need 0 <= first < 256 and n >= 0: {first}, {n}")
    rng = random.Random(seed)  # the same seed gives the same bytes
    rows = [with_temperature(row, temperature) for row in table]
    out = [first]
    for _ in range(n):
        row = rows[out[-1]]
        out.append(rng.choices(range(256), weights=row)[0])
    return bytes(out[1:])


# --8<-- [end:sample_bytes]
