"""Markdown tables of a benchmark run, as docs/performance.md shows them.

Usage::

    python benchmarks/tables.py [benchmarks/results/attention.json]
    python benchmarks/tables.py RESULTS.json --page docs/performance.md

The second form rewrites the tables between ``<!-- table: DTYPE KIND -->`` and
``<!-- end table -->`` in the page. docs/performance.md checks that it holds
exactly the tables of the committed results, so its numbers are the run's.

Every time is a variant's fastest round: a busy machine only ever adds time,
so the fastest round is the figure it moves least. Ratios are of those times.
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
# The timings with masks (``mask_rows``): no mask, is_causal=True, an explicit mask.
MASK_COLUMNS = {
    "attention": "none",
    "attention_causal": "causal",
    "attention_mask": "mask",
    "torch_sdpa": "SDPA",
    "torch_causal": "SDPA causal",
    "torch_mask": "SDPA mask",
}
MASK_RATIOS = {
    "causal ÷ none": ("attention_causal", "attention"),
    "mask ÷ none": ("attention_mask", "attention"),
    "SDPA: causal ÷ none": ("torch_causal", "torch_sdpa"),
    "SDPA: mask ÷ none": ("torch_mask", "torch_sdpa"),
}
NO_MASK_ROWS = "*This run has no timings with masks.*"


def fastest(row: dict[str, Any]) -> dict[str, float]:
    """Each variant's fastest round, in seconds.

    The loops (``scratch``), timed apart and extrapolated, keep their own figure.
    """
    rounds = {name: min(times) for name, times in row["all_seconds"].items()}
    return {**row["seconds"], **rounds}


def milliseconds(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 1000:
        return f"{ms / 1000:,.3g} s" if ms < 1e6 else f"{ms / 1000:,.0f} s"
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def time_table(results: dict[str, Any], dtype: str) -> str:
    """Milliseconds per call, fastest round; extrapolated loop times marked with a star."""
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    names = [name for name in COLUMNS if name in rows[0]["seconds"]]
    if dtype != "float32":  # the loops use Python floats: the float32 table has them
        names = [name for name in names if name != "scratch"]
    return _times(rows, {name: COLUMNS[name] for name in names})


def ratio_table(results: dict[str, Any], dtype: str) -> str:
    """How opbyop.attention compares, as ratios of the fastest rounds."""
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    return _ratios(rows, RATIOS)


def mask_time_table(results: dict[str, Any], dtype: str) -> str:
    """Milliseconds per call with no mask, is_causal and an explicit mask, fastest round."""
    rows = [row for row in results.get("mask_rows", []) if row["dtype"] == dtype]
    if not rows:
        return NO_MASK_ROWS
    names = {name: heading for name, heading in MASK_COLUMNS.items() if name in rows[0]["seconds"]}
    return _times(rows, names)


def mask_ratio_table(results: dict[str, Any], dtype: str) -> str:
    """What a mask costs: the time with it over the time without."""
    rows = [row for row in results.get("mask_rows", []) if row["dtype"] == dtype]
    return _ratios(rows, MASK_RATIOS) if rows else NO_MASK_ROWS


def _times(rows: list[dict[str, Any]], names: dict[str, str]) -> str:
    """A table of milliseconds: a row per size, a column per variant, headed `names`."""
    lines = [f"| n {BY} d | " + " | ".join(names.values()) + " |", "|--:|" + "--:|" * len(names)]
    for row in rows:
        s = fastest(row)
        cells = []
        for name in names:
            cell = milliseconds(s[name])
            if name == "scratch" and row.get("scratch_extrapolated"):
                cell += "*"
            cells.append(cell)
        lines.append(f"| {row['n']} {BY} {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ratios(rows: list[dict[str, Any]], ratios: dict[str, tuple[str, str]]) -> str:
    """A table of ratios of the fastest rounds, for the ratios both of whose variants ran."""
    names = [name for name, (a, b) in ratios.items() if {a, b} <= set(rows[0]["seconds"])]
    lines = [f"| n {BY} d | " + " | ".join(names) + " |", "|--:|" + "--:|" * len(names)]
    for row in rows:
        s = fastest(row)
        cells = [f"{s[a] / s[b]:.2f}" for a, b in (ratios[name] for name in names)]
        lines.append(f"| {row['n']} {BY} {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


TABLES = {
    "times": time_table,
    "ratios": ratio_table,
    "mask_times": mask_time_table,
    "mask_ratios": mask_ratio_table,
}
# A marked table, or an empty pair of markers (a table not yet written).
MARKED = re.compile(r"<!-- table: (\w+) (\w+) -->\n(?:[^\n]*\n)*?<!-- end table -->")


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
        if any(row["dtype"] == dtype for row in results.get("mask_rows", [])):
            print(f"{dtype} with masks, milliseconds:\n\n{mask_time_table(results, dtype)}\n")
            print(f"{dtype} with masks, ratios:\n\n{mask_ratio_table(results, dtype)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
