"""The guards can fail: each breakage below, made in a throwaway copy of the
project's docs setup, is caught by the check that is meant to catch it.

A baseline test shows the same throwaway tree passes every check unbroken, so
each failure is caused by its breakage and nothing else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_harness import run_notebook, unchecked_outputs, uncollected_fences, unpasteable_blocks
from site_build import ROOT, build_site

pytestmark = pytest.mark.slow

SNIPPET = """\
# --8<-- [start:double]
def double(x):
    return 2 * x
# --8<-- [end:double]
"""

PAGE = """\
# Page

## A section

Some math: $\\frac{1}{\\sqrt{d}}$.

```python
--8<-- "snippets/demo.py:double"
```

```python
assert double(21) == 42
```

```python
print(double(2), double(3))
```

```output
4 6
```
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project with this repository's mkdocs.yml, hooks and Sybil wiring."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"^nav:\n(?:[ \t]+.*\n)+", "", config, flags=re.MULTILINE)
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    for name in ["conftest.py", "pyproject.toml"]:
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ["hooks", "overrides"]:  # the hooks and theme overrides mkdocs.yml names
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, tmp_path / folder)
    # Its pages show no figure, and drawing the site's takes seconds a build.
    (tmp_path / "hooks" / "figures.py").write_text(
        "def on_files(files, config):  # no figures here\n    return files\n",
        encoding="utf-8",
    )
    (tmp_path / "tests").mkdir()
    for name in ["docs_harness.py", "site_build.py"]:
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "demo.py").write_text(SNIPPET, encoding="utf-8")
    (tmp_path / "src").mkdir()
    shutil.copytree(ROOT / "docs" / "assets", tmp_path / "docs" / "assets")
    (tmp_path / "docs" / "index.md").write_text(
        "# Home\n\nSee [the section](page.md#a-section).\n", encoding="utf-8"
    )
    (tmp_path / "docs" / "page.md").write_text(PAGE, encoding="utf-8")
    return tmp_path


def run_docs_tests(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "docs", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_the_unbroken_project_passes_every_check(project: Path) -> None:
    build = build_site(project / "site", root=project)
    assert build.returncode == 0, build.stderr
    tests = run_docs_tests(project)
    assert tests.returncode == 0, tests.stdout
    assert "3 passed" in tests.stdout
    assert uncollected_fences(project / "docs" / "page.md") == []
    assert unchecked_outputs(project / "docs" / "page.md") == []
    assert unpasteable_blocks(project / "docs" / "page.md") == []


def test_a_code_block_that_raises_fails_the_tests(project: Path) -> None:
    edit(project / "docs" / "page.md", "== 42", "== 43")
    tests = run_docs_tests(project)
    assert tests.returncode != 0
    assert "AssertionError" in tests.stdout
    # The failure names the line as written in the page, not in the expanded text.
    line = PAGE.split("\n").index("assert double(21) == 42") + 1
    assert f"page.md:{line}: AssertionError" in tests.stdout


def test_a_broken_anchor_fails_the_build(project: Path) -> None:
    edit(project / "docs" / "index.md", "#a-section", "#no-such-section")
    build = build_site(project / "site", root=project)
    assert build.returncode != 0
    assert "no-such-section" in build.stdout + build.stderr


def test_a_missing_snippet_section_fails_the_build_and_the_tests(project: Path) -> None:
    edit(project / "docs" / "page.md", "demo.py:double", "demo.py:triple")
    build = build_site(project / "site", root=project)
    assert build.returncode != 0
    assert "triple" in build.stdout + build.stderr
    tests = run_docs_tests(project)
    assert tests.returncode != 0
    assert "triple" in tests.stdout


def test_a_failing_notebook_cell_fails_the_build_and_the_notebook_check(project: Path) -> None:
    notebook = project / "docs" / "notebooks" / "01_broken.py"
    notebook.parent.mkdir()
    notebook.write_text("# %%\nprint('fine')\n\n# %%\n1 / 0\n", encoding="utf-8")
    build = build_site(project / "site", root=project)
    assert build.returncode != 0
    assert "ZeroDivisionError" in build.stdout + build.stderr
    with pytest.raises(Exception, match="ZeroDivisionError"):
        run_notebook(notebook)


def test_a_titled_python_fence_is_flagged(project: Path) -> None:
    edit(project / "docs" / "page.md", "```python\nassert", '```python title="check.py"\nassert')
    missed = uncollected_fences(project / "docs" / "page.md")
    assert len(missed) == 1
    assert 'title="check.py"' in missed[0]


def test_a_formula_that_does_not_convert_fails_the_build(project: Path) -> None:
    edit(project / "docs" / "page.md", "\\frac{1}", "\\notacommand{1}")
    build = build_site(project / "site", root=project)
    assert build.returncode != 0
    assert "cannot convert" in build.stdout + build.stderr


def test_a_wrong_shown_output_fails_the_tests(project: Path) -> None:
    edit(project / "docs" / "page.md", "```output\n4 6\n", "```output\n4 7\n")
    tests = run_docs_tests(project)
    assert tests.returncode != 0
    assert "the shown output differs from what the block prints" in tests.stdout
    assert "-4 7" in tests.stdout
    assert "+4 6" in tests.stdout


def test_a_block_that_prints_without_shown_output_fails_the_tests(project: Path) -> None:
    edit(project / "docs" / "page.md", "```output\n4 6\n```\n", "")
    tests = run_docs_tests(project)
    assert tests.returncode != 0
    assert "this block prints, but the page shows no output" in tests.stdout


def test_a_numpy_repr_in_the_output_fails_the_tests(project: Path) -> None:
    edit(project / "docs" / "page.md", "print(double(2), double(3))", "print(repr(np.arange(2)))")
    edit(project / "docs" / "page.md", "```python\nprint", "```python\nimport numpy as np\nprint")
    edit(project / "docs" / "page.md", "```output\n4 6\n", "```output\narray([0, 1])\n")
    tests = run_docs_tests(project)
    assert tests.returncode != 0
    assert "NumPy 1.25 and 2.x print differently" in tests.stdout


def test_an_output_after_no_block_is_flagged(project: Path) -> None:
    edit(project / "docs" / "page.md", "## A section\n", "## A section\n\n```output\nhello\n```\n")
    assert len(unchecked_outputs(project / "docs" / "page.md")) == 1


def test_a_block_that_goes_on_right_after_a_loop_is_flagged(project: Path) -> None:
    # It runs as a test, but Python's classic prompt rejects it when pasted.
    edit(
        project / "docs" / "page.md",
        "assert double(21) == 42\n",
        "for n in [21]:\n    assert double(n) == 42\nassert double(0) == 0\n",
    )
    flagged = unpasteable_blocks(project / "docs" / "page.md")
    assert len(flagged) == 1
    assert "'assert double(0) == 0': invalid syntax" in flagged[0]
    assert run_docs_tests(project).returncode == 0  # only the paste check sees it
