"""Build the site the way `make build` does, for the tests that inspect it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A resource the browser would fetch from elsewhere: a src= or a stylesheet
# link whose address starts with http(s):// or a protocol-relative //.
REMOTE_RESOURCE = re.compile(
    r"""<[^>]+\bsrc=["']?(?:https?:)?//[^"'\s>]+"""
    r"""|<link\b[^>]*\bhref=["']?(?:https?:)?//[^"'\s>]+[^>]*>"""
    r"""|\bimport\(\s*["'](?:https?:)?//[^"']+""",
    re.IGNORECASE,
)


def build_site(site_dir: Path, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``mkdocs build --strict`` for the project at ``root`` into ``site_dir``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def remote_resources(html: str) -> list[str]:
    """Every src= and <link href=...> in ``html`` that points off this site."""
    return [
        match.group(0)
        for match in REMOTE_RESOURCE.finditer(html)
        if not match.group(0).lower().startswith("<link") or _is_loaded_link(match.group(0))
    ]


def _is_loaded_link(tag: str) -> bool:
    """A <link> the browser downloads (stylesheet, preload, icon), not a plain reference."""
    rel = re.search(r"""\brel=["']?([^"'>]+)""", tag, re.IGNORECASE)
    kinds = set(rel.group(1).lower().split()) if rel else set()
    return bool(kinds & {"stylesheet", "preload", "modulepreload", "icon", "prefetch"})
