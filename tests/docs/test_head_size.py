"""Episode 1 must not tie sqrt(768) to GPT-2's or BERT's scaling again.

GPT-2 small and BERT-base hold 768 numbers per word but split them into 12
heads of 64, and each head divides by sqrt(64) = 8 (all-MiniLM-L6-v2: 12 heads
of 32, sqrt(32)). Dividing by the square root of the whole width is a classic
bug. Episode 1 keeps a d = 768 example, framed as one head of 768 numbers;
these checks keep that framing true. The heads episode shows the bug on
purpose, so the check covers only episode 1's page, its notebook and the
scratch code it includes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_build import ROOT

EPISODE_1 = [
    ROOT / "docs" / "episodes" / "01-attention-is-four-operations.md",
    ROOT / "docs" / "notebooks" / "01_attention.py",
    ROOT / "src" / "opbyop" / "scratch" / "four_ops.py",
]

MODEL = re.compile(r"GPT-?2|BERT", re.IGNORECASE)
# The square root of 768, however it is written.
ROOT_768 = re.compile(
    r"(?:√|sqrt\(?|square root of (?:the )?)\s*768"
    r"|\b27\.7\d*|(?:about|≈|~)\s*28\b"
)
SCALING = re.compile(r"divid|scal|square root|sqrt|√", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """Sentences and list items, with line breaks inside them joined."""
    text = re.sub(r"(?m)^\s*(?:#|>|-|\*|\d+\.)\s*", " ", text)  # comment marks, bullets
    parts = re.split(r"(?<=[.!?:;])\s+|\n\s*\n", text)
    return [" ".join(part.split()) for part in parts if part.strip()]


def wrong_head_size(text: str) -> list[str]:
    """Sentences that give GPT-2 or BERT a scaling by sqrt(768), or by the full width."""
    return [
        sentence
        for sentence in sentences(text)
        if MODEL.search(sentence)
        and (
            ROOT_768.search(sentence)
            or (SCALING.search(sentence) and "768" in sentence and "head" not in sentence)
        )
    ]


@pytest.mark.parametrize("path", EPISODE_1, ids=lambda p: p.name)
def test_gpt2_and_bert_scale_by_the_head_size(path: Path) -> None:
    wrong = wrong_head_size(path.read_text(encoding="utf-8"))
    assert not wrong, (
        "GPT-2 small and BERT-base divide by sqrt(64) per head, not sqrt(768):\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "For the 768 numbers of GPT-2 small, the square root is about 28:",
        "Divide every score by the square root of the vector size (768 in GPT-2).",
        "BERT-base divides its scores by √768 ≈ 27.7.",
        "# scale by sqrt(768), as in BERT",
    ],
)
def test_the_old_mistakes_are_caught(sentence: str) -> None:
    assert wrong_head_size(f"Some text.\n\n{sentence}\n\nMore text.") != []


@pytest.mark.parametrize(
    "sentence",
    [
        "GPT-2 small and BERT-base hold 768 numbers per word, but split them into "
        "12 heads of 64, and each head divides by √64 = 8.",
        "Take d = 768, one query and one key of 768 numbers each: the square root is about 27.7.",
        "The model on this page gives each word 384 numbers; BERT-base and GPT-2 small use 768.",
    ],
)
def test_correct_sentences_pass(sentence: str) -> None:
    assert wrong_head_size(sentence) == []


def test_the_episode_states_the_head_sizes() -> None:
    page = EPISODE_1[0].read_text(encoding="utf-8").replace("*", "")  # no emphasis
    text = " ".join(sentences(page))
    assert "12 heads of 64" in text
    assert "√64 = 8" in text
    assert "12 heads of 32" in text
    assert "Episode 3" in text
