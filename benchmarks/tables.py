"""Markdown tables of a benchmark run, as docs/performance.md shows them.

Usage::

    python benchmarks/tables.py [benchmarks/results/attention.json]
    python benchmarks/tables.py benchmarks/results/minilm.json
    python benchmarks/tables.py RESULTS.json --page docs/performance.md

The last form rewrites that run's tables in the page: those between
``<!-- table: DTYPE KIND -->`` and ``<!-- end table -->`` for a run of
benchmarks/attention.py, ``<!-- table: minilm KIND -->`` for one of
benchmarks/minilm.py; the other benchmark's tables are left as they are.
docs/performance.md checks that it holds exactly the tables of the committed
results, so its numbers are the runs'.

Every time is a variant's fastest round: a busy machine only ever adds time,
so the fastest round is the figure it moves least. Ratios are of those times.
A minilm run also has the median of its rounds' ratios, the figure
benchmarks/minilm.py judges its targets on: its tables show both.
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
NO_TARGETS = "*This run checks no targets on float32.*"


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


def target_table(results: dict[str, Any], dtype: str) -> str:
    """The benchmark's targets (its TARGETS and MASK_TARGETS), each with this run's ratio.

    The benchmark checks them on float32 only, on ratios of the fastest rounds.
    """
    if dtype != "float32" or not results.get("targets"):
        return NO_TARGETS
    headings = {pair: heading for heading, pair in {**RATIOS, **MASK_RATIOS}.items()}
    signs = {"<=": "\N{LESS-THAN OR EQUAL TO}", ">=": "\N{GREATER-THAN OR EQUAL TO}"}
    lines = [f"| n {BY} d | ratio | target | this run | verdict |", "|--:|:--|:--|--:|:--|"]
    for t in results["targets"]:
        a, b = t["ratio"].split(" / ")
        sense, bound = t["target"].split()
        cells = [
            f"{t['n']} {BY} {t['d']}",
            headings[a, b],
            f"{signs[sense]} {float(bound):g}",
            f"{t['value']:.2f}",
            "met" if t["met"] else "missed",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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


def minilm_table(run: dict[str, Any]) -> str:
    """encode's fastest call, opbyop against sentence-transformers, and the targets.

    Two ratios: of the two fastest calls, and the median of the rounds' ratios
    (each round's fastest call of opbyop over sentence-transformers'). The
    benchmark judges its targets on the median; the verdict is given on both.
    """
    lines = [
        "| workload | tokens each | opbyop | sentence-transformers "
        "| ratio of fastest calls | median of rounds' ratios | target |",
        "|:--|--:|--:|--:|--:|--:|:--|",
    ]
    for name, row in run["encode"].items():
        cells = [_sentences(run, name), f"{run['tokens'][name]:.1f}", milliseconds(row["opbyop_s"])]
        if "sentence_transformers_s" in row:
            median, fastest = row["ratio_median_of_rounds"], row["ratio_fastest"]
            verdicts = [_verdict(x, row["target"]) for x in (median, fastest)]
            verdict = (
                f"{verdicts[0]} on both"
                if verdicts[0] == verdicts[1]
                else f"{verdicts[0]} on the median; {verdicts[1]} on the fastest"
            )
            cells += [
                milliseconds(row["sentence_transformers_s"]),
                f"{fastest:.2f}",
                f"{median:.2f}",
                f"\N{LESS-THAN OR EQUAL TO} {row['target']:.2f}: {verdict}",
            ]
        else:  # run without sentence-transformers
            cells += ["-"] * 4
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _verdict(ratio: float, target: float) -> str:
    return "met" if ratio <= target else "over"


def minilm_rounds_table(run: dict[str, Any]) -> str:
    """Each round's ratio, opbyop's fastest call over sentence-transformers', and the median."""
    rows = {
        name: [
            a / b
            for a, b in zip(
                row["opbyop_rounds_s"], row["sentence_transformers_rounds_s"], strict=True
            )
        ]
        for name, row in run["encode"].items()
        if "sentence_transformers_rounds_s" in row
    }
    if not rows:
        return "*This run has no sentence-transformers side.*"
    heading = "".join(f" {_sentences(run, name)} |" for name in rows)
    lines = [f"| round |{heading}", "|--:|" + "--:|" * len(rows)]
    for i in range(run["rounds"]):
        lines.append(f"| {i + 1} | " + " | ".join(f"{r[i]:.2f}" for r in rows.values()) + " |")
    medians = [f"{run['encode'][name]['ratio_median_of_rounds']:.2f}" for name in rows]
    lines.append("| median | " + " | ".join(medians) + " |")
    return "\n".join(lines)


def minilm_breakdown_table(run: dict[str, Any]) -> str:
    """Where encode's time goes, held to one core: milliseconds per call and share."""
    names = list(run["breakdown"])
    heading = "".join(f" {_sentences(run, name)}, ms | share |" for name in names)
    lines = [f"| on one core |{heading}", "|:--|" + "--:|--:|" * len(names)]
    parts = run["breakdown"][names[0]]["parts"]
    for part in [*parts, "total"]:
        cells = []
        for name in names:
            split = run["breakdown"][name]
            seconds = split["total"] if part == "total" else split["parts"][part]
            cells += [milliseconds(seconds), f"{seconds / split['total']:.0%}"]
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sentences(run: dict[str, Any], workload: str) -> str:
    count = len(run["workloads"][workload])
    return f"{count} sentence" + ("s" if count > 1 else "")


TABLES = {
    "times": time_table,
    "ratios": ratio_table,
    "mask_times": mask_time_table,
    "mask_ratios": mask_ratio_table,
    "targets": target_table,
}
MINILM_TABLES = {
    "encode": minilm_table,
    "rounds": minilm_rounds_table,
    "breakdown": minilm_breakdown_table,
}
# A marked table, or an empty pair of markers (a table not yet written).
MARKED = re.compile(r"<!-- table: (\w+) (\w+) -->\n(?:[^\n]*\n)*?<!-- end table -->")


def is_minilm(results: dict[str, Any]) -> bool:
    """Whether `results` is a run of benchmarks/minilm.py (else of attention.py)."""
    return "encode" in results


def update_page(page: Path, results: dict[str, Any]) -> None:
    """Replace each marked table of `results`' benchmark in `page` with the run's."""

    def table(match: re.Match[str]) -> str:
        source, kind = match.groups()
        if (source == "minilm") != is_minilm(results):
            return match.group(0)  # the other benchmark's table
        text = MINILM_TABLES[kind](results) if source == "minilm" else TABLES[kind](results, source)
        return f"<!-- table: {source} {kind} -->\n{text}\n<!-- end table -->"

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
    if is_minilm(results):
        print(f"encode, milliseconds:\n\n{minilm_table(results)}\n")
        print(f"each round's ratio:\n\n{minilm_rounds_table(results)}\n")
        print(f"where the time goes:\n\n{minilm_breakdown_table(results)}")
        return
    for dtype in ("float32", "float64"):
        if any(row["dtype"] == dtype for row in results["rows"]):
            print(f"{dtype}, milliseconds:\n\n{time_table(results, dtype)}\n")
            print(f"{dtype}, ratios:\n\n{ratio_table(results, dtype)}\n")
        if any(row["dtype"] == dtype for row in results.get("mask_rows", [])):
            print(f"{dtype} with masks, milliseconds:\n\n{mask_time_table(results, dtype)}\n")
            print(f"{dtype} with masks, ratios:\n\n{mask_ratio_table(results, dtype)}\n")
    print(f"targets:\n\n{target_table(results, 'float32')}")


if __name__ == "__main__":
    main(sys.argv[1:])
