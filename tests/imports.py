"""What a module imports, for the tests that hold a page's code to the standard library."""

from __future__ import annotations

import ast


def imported_modules(source: str) -> set[str]:
    """Every module `source` imports: `import a.b` gives a.b, `from a import b` gives a."""
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    return imported
