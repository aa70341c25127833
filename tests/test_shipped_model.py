"""The model the package ships (``gpt.load()``), and Hugging Face running our folders.

The references: the figures the training run logged (``log.json``, shipped
beside the weights), recomputed here; and the text
``transformers.pipeline("text-generation", ...)`` wrote from the same
folders, committed by ``tools/make_pipeline_reference.py``.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from opbyop import corpus, gpt, train

DATA = Path(__file__).parent / "data"
REFERENCE = json.loads((DATA / "pipeline_reference.json").read_text(encoding="utf-8"))
FOLDERS = {
    "shipped": Path(str(files("opbyop") / "data" / "model")),
    "tiny": DATA / "pipeline_tiny",
}


@pytest.fixture(scope="module")
def shipped() -> gpt.Model:
    return gpt.load()


@pytest.fixture(scope="module")
def log(shipped: gpt.Model) -> Any:
    assert shipped.folder is not None
    return json.loads((shipped.folder / "log.json").read_text(encoding="utf-8"))


def test_the_shipped_model_is_a_byte_level_gpt_that_can_write_200_tokens(
    shipped: gpt.Model, log: Any
) -> None:
    assert shipped.folder == FOLDERS["shipped"]
    assert shipped.config.vocab_size == 256
    assert shipped.config.context >= 256
    # The log of a run before the options (norm, mlp, positions) holds the
    # five sizes: GPT-2's pieces.
    assert shipped.config._replace(**log["config"]) == shipped.config
    assert not gpt.is_variant(shipped.config)
    assert shipped.tokenizer is not None
    assert shipped.tokenizer.vocab_size == 256


def test_the_shipped_model_meets_its_target_on_the_held_out_files(log: Any) -> None:
    assert log["status"] == "finished"
    assert log["final"]["validation_bits_per_byte"] <= 1.9
    assert log["final"]["validation_bytes"] == len(corpus.load()[1].encode("utf-8"))


def test_the_logged_figure_is_the_shipped_weights_own(shipped: gpt.Model, log: Any) -> None:
    sample = train.validation_sample(corpus.load()[1])
    bits = train.evaluate(shipped.params, shipped.tokenizer, sample)
    assert bits == pytest.approx(log["final"]["validation_sample_bits_per_byte"], abs=1e-4)


def test_damaged_shipped_weights_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpt, "_SHIPPED_SHA256", "0" * 64)
    with pytest.raises(ValueError, match=r"model\.safetensors is damaged"):
        gpt.load()


@pytest.mark.parametrize(
    "run",
    REFERENCE["runs"],
    ids=[f"{r['folder']}-{r['prompt'].strip()}" for r in REFERENCE["runs"]],
)
def test_we_write_what_hugging_faces_pipeline_writes(run: dict[str, Any]) -> None:
    model = gpt.load(FOLDERS[run["folder"]])
    assert model.write(run["prompt"], run["max_new_tokens"]) == run["written"]
