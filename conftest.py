"""Every Python block in the docs and README, and every docstring example, is a test.

The wiring lives in tests/docs_harness.py so the guard tests can use it too.
"""

from docs_harness import docs_sybil, docstring_sybil

pytest_collect_file = (docs_sybil() + docstring_sybil()).pytest()
