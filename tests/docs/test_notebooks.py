"""Guard: each notebook runs top to bottom with the installed library."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_harness import run_notebook
from site_build import ROOT

NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.py"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "docs/notebooks/ holds no notebook"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook: Path) -> None:
    executed = run_notebook(notebook)
    code_cells = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert code_cells, f"{notebook.name} has no code cell"
    assert all(cell.execution_count for cell in code_cells), "a cell did not run"
