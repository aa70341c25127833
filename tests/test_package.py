"""Readers who only want the library install it without a clone.

Builds the sdist and, from it, the wheel, exactly as a release does
(``python -m build``), checks that both carry the data and the licences,
then installs the wheel into a fresh virtual environment and uses it there,
far from this checkout.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from site_build import ROOT

pytestmark = pytest.mark.slow

NO_REGISTRY = ("No matching distribution", "Could not find a version", "Failed to establish")
LICENCES = [
    "LICENSE",
    "NOTICE",
    "LICENSES/Apache-2.0.txt",
    "LICENSES/Python-2.0.txt",
    "LICENSES/GPT-2-Modified-MIT.txt",
]
USE_IT = """
import numpy as np
from opbyop import attention
from opbyop.words import word_vectors

x = word_vectors("we fished from the river bank")
assert attention(x, x, x).shape == (6, 384)
import opbyop.minilm  # its runtime dependency, safetensors, came with the wheel
from opbyop import corpus
train, validation = corpus.load()  # the shipped text, its SHA-256 checked
assert "def " in train and "class " in validation
from opbyop import bpe  # and regex
assert bpe.BytePairs.train("aaabdaaabac", 259).encode("aaab") == [258]
from opbyop import gpt, train  # and tqdm
model = gpt.load()  # the shipped model, its SHA-256 checked
assert (model.folder / "log.json").is_file()
assert len(model.write("def ", 8)) > 0
print("ok")
"""


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, as ``python -m build`` makes them."""
    out = tmp_path_factory.mktemp("dist")
    built = run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=ROOT)
    if built.returncode != 0 and any(s in built.stdout + built.stderr for s in NO_REGISTRY):
        pytest.skip(
            "python -m build could not fetch its build backend (hatchling) from the "
            "package registry; this check needs the registry"
        )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_wheel_carries_the_data_and_the_licences(dist: Path) -> None:
    [wheel] = dist.glob("opbyop-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "opbyop/data/minilm_words.npz" in names
    assert "opbyop/py.typed" in names
    assert "opbyop/scratch/four_ops.py" in names
    for corpus_file in ["corpus_train.txt.xz", "corpus_validation.txt.xz", "corpus_manifest.tsv"]:
        assert f"opbyop/data/{corpus_file}" in names, corpus_file
    assert "opbyop/scratch/byte_pairs.py" in names
    for model_file in ["config.json", "model.safetensors", "vocab.json", "merges.txt", "log.json"]:
        assert f"opbyop/data/model/{model_file}" in names, model_file
    info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
    for licence in LICENCES:
        assert f"{info}/licenses/{licence}" in names, licence


def test_the_sdist_carries_the_sources_data_and_licences(dist: Path) -> None:
    [sdist] = dist.glob("opbyop-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in [
        *LICENCES,
        "README.md",
        "pyproject.toml",
        "src/opbyop/data/minilm_words.npz",
        "src/opbyop/data/corpus_train.txt.xz",
        "tools/build_corpus.py",
    ]:
        assert needed in names, needed


def test_the_wheel_installs_and_runs_in_a_fresh_venv(dist: Path, tmp_path: Path) -> None:
    [wheel] = dist.glob("opbyop-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = run(python, "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    used = run(python, "-c", USE_IT, cwd=tmp_path)  # not the checkout: no src/ on the path
    assert used.returncode == 0, used.stderr
    assert used.stdout.strip() == "ok"
    where = run(python, "-c", "import opbyop; print(opbyop.__file__)", cwd=tmp_path)
    assert "site-packages" in where.stdout
