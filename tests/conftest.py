from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from site_build import build_site

try:
    import fcntl
except ImportError:  # Windows: no lock; each worker builds its own site
    fcntl = None  # type: ignore[assignment]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole site, built once per test run with ``mkdocs build --strict``.

    Under pytest-xdist every worker is a session of its own; they share one
    build in the run's common temporary folder, so the first to ask builds
    (about a minute) and the others wait for it or find it done.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") and fcntl is not None:
        shared = shared.parent
    site_dir, done = shared / "site", shared / "site.built"
    with _exclusive(shared / "site.lock"):
        if not done.exists():
            result = build_site(site_dir)
            if result.returncode != 0:
                pytest.fail(f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}")
            done.touch()
    return site_dir


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Hold ``lock`` so one process at a time runs the block (no-op without fcntl)."""
    if fcntl is None:
        yield
        return
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
