"""opbyop.scratch.embeddings: the input vectors in plain Python, by hand and
against the real model's tables summed in float64."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from imports import imported_modules

import opbyop.scratch.embeddings
from opbyop import minilm
from opbyop.scratch import embed

SOURCE = Path(opbyop.scratch.embeddings.__file__).read_text(encoding="utf-8")
WORDS = {7: [1.0, 2.0], 3: [10.0, 20.0]}
POSITIONS = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
TYPE = [100.0, 200.0]


def test_embed_by_hand() -> None:
    vectors = embed([3, 7, 3], WORDS, POSITIONS, TYPE)
    assert vectors == [
        [10.0 + 0.1 + 100.0, 20.0 + 0.2 + 200.0],
        [1.0 + 0.3 + 100.0, 2.0 + 0.4 + 200.0],
        [10.0 + 0.5 + 100.0, 20.0 + 0.6 + 200.0],
    ]


def test_the_same_id_at_another_position_gets_another_vector() -> None:
    first, _, last = embed([3, 7, 3], WORDS, POSITIONS, TYPE)
    assert first != last
    assert [a - b for a, b in zip(last, first, strict=True)] == pytest.approx([0.4, 0.4])


def test_embed_matches_the_real_tables_summed_in_float64() -> None:
    tables = minilm.load().embeddings
    ids = [101, 1996, 2668, 2924, 102]  # [CLS] the blood bank [SEP]
    words = {i: tables.word[i].tolist() for i in ids}
    positions = tables.position[: len(ids)].tolist()
    got = np.array(embed(ids, words, positions, tables.token_type[0].tolist()))
    want = (
        tables.word[ids].astype(np.float64)
        + tables.position[: len(ids)].astype(np.float64)
        + tables.token_type[0].astype(np.float64)
    )
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_embed_does_not_change_its_arguments() -> None:
    words = {k: list(v) for k, v in WORDS.items()}
    positions = [list(row) for row in POSITIONS]
    embed([3, 7], words, positions, list(TYPE))
    assert words == WORDS
    assert positions == POSITIONS


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (((3, 7), WORDS, POSITIONS, TYPE), None, None),
        (("37", WORDS, POSITIONS, TYPE), TypeError, "token_ids must be a list"),
        (([], WORDS, POSITIONS, TYPE), ValueError, "token_ids is empty"),
        (([3], [[1.0, 2.0]], POSITIONS, TYPE), TypeError, "words must map ids"),
        (([3.0], WORDS, POSITIONS, TYPE), TypeError, "token ids must be integers, got 3.0"),
        (([True], WORDS, POSITIONS, TYPE), TypeError, "token ids must be integers"),
        (([3, 5], WORDS, POSITIONS, TYPE), ValueError, "no row for token id 5"),
        (([3, 3, 3, 3], WORDS, POSITIONS, TYPE), ValueError, "4 tokens need 4 position rows"),
        (([3], {3: [1.0]}, POSITIONS, TYPE), ValueError, "word rows has ragged rows"),
        (([3], {3: [1.0, "x"]}, POSITIONS, TYPE), TypeError, "must be a number"),
        (([3], WORDS, [[0.1]], TYPE), ValueError, "position rows have 1 numbers"),
        (([3], WORDS, [], TYPE), ValueError, "positions is empty"),
        (([3], WORDS, POSITIONS, []), ValueError, "token_type is empty"),
    ],
)
def test_bad_input(args: tuple[Any, ...], error: type[Exception] | None, match: str | None) -> None:
    if error is None:
        assert len(embed(*args)) == 2  # a tuple of ids is fine
        return
    with pytest.raises(error, match=match):
        embed(*args)


def test_embeddings_imports_the_standard_library_and_earlier_episodes_only() -> None:
    imported = imported_modules(SOURCE)
    assert imported == {
        "collections.abc",
        "opbyop.scratch.block",
        "opbyop.scratch.four_ops",
    }


def section(name: str) -> str:
    """The text between the ``--8<--`` markers of section `name`, as the docs include it."""
    match = re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]", SOURCE, re.S)
    assert match, f"no section {name!r} in embeddings.py"
    return match.group(1)


def test_embed_has_a_section_with_a_one_line_docstring_and_shapes() -> None:
    text = section("embed")
    assert re.search(r"^def embed\(", text, re.M)
    signature = text[: text.index('"""')]
    assert re.search(r"-> \w+:  # \[n\] -> \[n, d\]$", signature, re.M), signature
    assert re.search(r'^    """[^\n]+"""$', text, re.M), "a one-line docstring"


def test_the_section_runs_with_the_setup_and_the_checks() -> None:
    namespace: dict[str, Any] = {}
    for part in ["setup", "checks", "embed"]:
        exec(compile(section(part), f"embeddings.py:{part}", "exec"), namespace)
    call = "embed([3, 7], WORDS, POSITIONS, TYPE)"
    scope = {"WORDS": WORDS, "POSITIONS": POSITIONS, "TYPE": TYPE}
    assert eval(call, namespace | scope) == eval(call, vars(opbyop.scratch.embeddings) | scope)
