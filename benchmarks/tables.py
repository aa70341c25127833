"""Markdown tables of a benchmark run, as docs/performance.md shows them.

Usage::

    python benchmarks/tables.py [benchmarks/results/attention.json]

docs/performance.md runs `tables` on the committed results and checks that the
page holds exactly these tables, so its numbers are the recorded run's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "attention.json"

COLUMNS = {
    "scratch": "loops",
    "np_sqrt": "formula, `np.sqrt`",
    "plain": "formula",
    "attention": "`attention`",
    "torch_sdpa": "PyTorch SDPA",
    "gemm_only": "products only",
}
# Column heading: (numerator, denominator).
RATIOS = {
    "`attention` / products only": ("attention", "gemm_only"),
    "`attention` / PyTorch SDPA": ("attention", "torch_sdpa"),
    "formula / `attention`": ("plain", "attention"),
    "formula with `np.sqrt` / `attention`": ("np_sqrt", "attention"),
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
    lines = [
        "| n | d | " + " | ".join(COLUMNS[name] for name in names) + " |",
        "|--:|--:|" + "--:|" * len(names),
    ]
    for row in rows:
        cells = []
        for name in names:
            cell = milliseconds(row["seconds"][name])
            if name == "scratch" and row.get("scratch_extrapolated"):
                cell += "*"
            cells.append(cell)
        lines.append(f"| {row['n']} | {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_table(results: dict[str, Any], dtype: str) -> str:
    """How opbyop.attention compares, as ratios of median times."""
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    names = [name for name, (a, b) in RATIOS.items() if {a, b} <= set(rows[0]["seconds"])]
    lines = ["| n | d | " + " | ".join(names) + " |", "|--:|--:|" + "--:|" * len(names)]
    for row in rows:
        s = row["seconds"]
        cells = [f"{s[a] / s[b]:.2f}" for a, b in (RATIOS[name] for name in names)]
        lines.append(f"| {row['n']} | {row['d']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    results = json.loads(Path(argv[0] if argv else RESULTS).read_text())
    for dtype in ("float32", "float64"):
        if any(row["dtype"] == dtype for row in results["rows"]):
            print(f"{dtype}, milliseconds:\n\n{time_table(results, dtype)}\n")
            print(f"{dtype}, ratios:\n\n{ratio_table(results, dtype)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
