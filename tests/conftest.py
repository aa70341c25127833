from __future__ import annotations

from pathlib import Path

import pytest
from site_build import build_site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole site, built once per test run with ``mkdocs build --strict``."""
    site_dir = tmp_path_factory.mktemp("site")
    result = build_site(site_dir)
    if result.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}")
    return site_dir
