"""Markdown tables of a benchmark run, as docs/performance.md shows them.

Usage::

    python benchmarks/tables.py [benchmarks/results/attention.json]
    python benchmarks/tables.py RESULTS.json --page docs/performance.md

The second form rewrites the tables between ``<!-- table: DTYPE KIND -->`` and
``<!-- end table -->`` in the page. docs/performance.md checks that it holds
exactly the tables of the committed results, so its numbers are the run's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "attention.json"

BY = "\N{MULTIPLICATION SIGN}"
# Short headings, so that the tables fit the page without scrolling sideways.
COLUMNS = {
    "scratch": "loops",
    "np_sqrt": "np.sqrt",
    "plain": "formula",
    "attention": "attention",
    "torch_sdpa": "SDPA",
    "gemm_only": "products",
}
# Column heading: (numerator, denominator).
RATIOS = {
    "attention ÷ products": ("attention", "gemm_only"),
    "attention ÷ SDPA": ("attention", "torch_sdpa"),
    "formula ÷ attention": ("plain", "attention"),
    "np.sqrt ÷ attention": ("np_sqrt", "attention"),
}


def milliseconds(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 1000:
        return f"{ms / 1000:,.3g} s" if ms < 1e6 else f"{ms / 1000:,.0f} s"
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def time_table(results: dict[str, Any], dtype: str) -> str:
    """Median milliseconds per call; extrapolated loop times marked with a star."""
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    names = [name for name in COLUMNS if name in rows[0]["seconds"]]
    if dtype != "float32":  # the loops use Python floats: the float32 table has them
        names = [name for name in names if name != "scratch"]
    lines = [
        f"| n {BY} d | " + " | ".join(COLUMNS[name] for name in names) + " |",
        "|--:|" + "--:|" * len(names),
    ]
    for row in rows:
        cells = []
        for name in names:
            cell = milliseconds(row["seconds"][name])
            if name == "scratch" and row.get("scratch_extrapolated"):
                cell += "*"
            cells.append(cell)
        lines.append(f"| {row['n']} {BY} {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(results: dict[str, Any], dtype: str) -> str:
    """How opbyop.attention compares, as ratios of median times."""
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    names = [name for name, (a, b) in RATIOS.items() if {a, b} <= set(rows[0]["seconds"])]
    lines = [f"| n {BY} d | " + " | ".join(names) + " |", "|--:|" + "--:|" * len(names)]
    for row in rows:
        s = row["seconds"]
        cells = [f"{s[a] / s[b]:.2f}" for a, b in (RATIOS[name] for name in names)]
        lines.append(f"| {row['n']} {BY} {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


TABLES = {"times": time_table, "ratios": ratio_table}
MARKED = re.compile(r"<!-- table: (\w+) (\w+) -->\n.*?\n<!-- end table -->", re.DOTALL)


def update_page(page: Path, results: dict[str, Any]) -> None:
    """Replace each marked table in `page` with the one from `results`."""

    def table(match: re.Match[str]) -> str:
        dtype, kind = match.groups()
        return f"<!-- table: {dtype} {kind} -->\n{TABLES[kind](results, dtype)}\n<!-- end table -->"

    page.write_text(MARKED.sub(table, page.read_text(encoding="utf-8")), encoding="utf-8")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="?", default=RESULTS)
    parser.add_argument("--page", type=Path, help="rewrite the marked tables in this page")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    if args.page:
        update_page(args.page, results)
        return
    for dtype in ("float32", "float64"):
        if any(row["dtype"] == dtype for row in results["rows"]):
            print(f"{dtype}, milliseconds:\n\n{time_table(results, dtype)}\n")
            print(f"{dtype}, ratios:\n\n{ratio_table(results, dtype)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
