"""Episode 10 shows what Hugging Face's pipeline wrote, as the tools committed it."""

from __future__ import annotations

import json
import re

from site_build import ROOT

PAGE = ROOT / "docs" / "episodes" / "10-training-a-tiny-gpt.md"
REFERENCE = json.loads(
    (ROOT / "tests" / "data" / "pipeline_reference.json").read_text(encoding="utf-8")
)


def test_the_pipeline_block_shows_the_committed_text() -> None:
    text = PAGE.read_text(encoding="utf-8")
    skipped = re.search(
        r'<!-- skip: next "needs transformers" -->\n```python\n(?P<code>.*?)```\n\n'
        r"```output\n(?P<output>.*?)```",
        text,
        flags=re.S,
    )
    assert skipped, "the page has no skipped pipeline block with its output"
    code = skipped["code"]
    assert 'pipeline("text-generation", model=str(shipped.folder))' in code
    assert 'write("def ", do_sample=False, max_new_tokens=200)' in code
    assert ".splitlines()[:3]" in code
    run = next(
        r
        for r in REFERENCE["runs"]
        if r["folder"] == "shipped" and r["prompt"] == "def " and r["max_new_tokens"] == 200
    )
    expected = "\n".join(("def " + run["written"]).splitlines()[:3])
    assert skipped["output"].rstrip("\n") == expected
