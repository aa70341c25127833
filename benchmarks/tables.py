"""Markdown tables of a benchmark run, as docs/performance.md shows them.

Usage::

    python benchmarks/tables.py [benchmarks/results/attention.json]
    python benchmarks/tables.py benchmarks/results/minilm.json
    python benchmarks/tables.py RESULTS.json --page docs/performance.md

The last form rewrites that run's tables in the page: those between
``<!-- table: DTYPE KIND -->`` and ``<!-- end table -->`` for a run of
benchmarks/attention.py, ``<!-- table: BENCHMARK KIND -->`` for one of
benchmarks/minilm.py, train_step.py, generate.py, bpe.py, sweep.py,
train_5min.py or equal_time.py (BENCHMARK is
the script's name); the other benchmarks' tables are left as they are.
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
    # three significant figures, trailing zeros kept (14.0, not 14)
    return f"{ms:#.3g}" if ms < 99.95 else f"{ms:.0f}"


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


def train_step_table(run: dict[str, Any]) -> str:
    """One training step, opbyop against GPT2LMHeadModel: fastest round, both ratios."""
    lines = [
        "| workload | opbyop: fastest | PyTorch: fastest | ratio, fastest"
        " | ratio, median of rounds | target |",
        "|:--|--:|--:|--:|--:|:--|",
    ]
    for name, row in run["steps"].items():
        config = run["workloads"][name]
        cells = [f"d_model {config['d_model']}, {config['context']} tokens"]
        cells += [milliseconds(row["opbyop_s"]), milliseconds(row["pytorch_s"])]
        cells += [f"{row['ratio_fastest']:.2f}", f"{row['ratio_median_of_rounds']:.2f}"]
        target = "-"
        if "target" in row:
            verdict = "met" if row["meets_target"] else "missed"
            median = row["ratio_median_of_rounds"]  # to 3 places: 1.001 is not 1.00
            target = f"\N{LESS-THAN OR EQUAL TO} {row['target']:.2f}: {verdict} ({median:.3f})"
        lines.append("| " + " | ".join([*cells, target]) + " |")
    return "\n".join(lines)


def train_step_memory_table(run: dict[str, Any]) -> str:
    """Each side's peak resident memory, and how much the steps added, in MiB."""
    lines = [
        "| workload | opbyop: peak | added by the steps | PyTorch: peak | added by the steps |",
        "|:--|--:|--:|--:|--:|",
    ]
    for name, sides in run["memory"].items():
        cells = [f"`{name}`"]
        for side in ["numpy", "torch"]:
            cells += [f"{sides[side][key] / 2**20:.0f}" for key in ["peak_bytes", "step_bytes"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def train_step_breakdown_table(run: dict[str, Any]) -> str:
    """Where opbyop's step spends its time, held to one core: milliseconds and share."""
    split = run["breakdown"]
    lines = ["| on one core | ms | share |", "|:--|--:|--:|"]
    for part, seconds in [*split["parts"].items(), ("total", split["total"])]:
        lines.append(f"| {part} | {milliseconds(seconds)} | {seconds / split['total']:.0%} |")
    return "\n".join(lines)


def generate_table(run: dict[str, Any]) -> str:
    """Milliseconds per new token: opbyop with and without its cache, and PyTorch."""
    result = run["result"]
    rows = {
        "opbyop, with the KV cache": result["opbyop_ms_per_token_cache"],
        "opbyop, no cache": result["opbyop_ms_per_token_no_cache"],
        "`GPT2LMHeadModel.generate`, with its cache": result.get("torch_ms_per_token"),
    }
    lines = ["| 200 new tokens | ms per token |", "|:--|--:|"]
    for name, ms in rows.items():
        if ms is not None:
            lines.append(f"| {name} | {ms:.2f} |")
    return "\n".join(lines)


def generate_lengths_table(run: dict[str, Any]) -> str:
    """One step's milliseconds as the text grows: a cached step against recomputing it all."""
    lines = [
        "| tokens so far | with the cache | recomputed | recomputed ÷ cached |",
        "|--:|--:|--:|--:|",
    ]
    for n, step in run["result"]["step_ms_by_length"].items():
        cached, recomputed = step["cached"], step["recomputed"]
        lines.append(f"| {n} | {cached:.2f} | {recomputed:.2f} | {recomputed / cached:.1f} |")
    return "\n".join(lines)


def bpe_encode_table(run: dict[str, Any]) -> str:
    """Encoding 1 MB: each tokenizer's fastest cold and warm call, and the ratio."""
    lines = [
        "| tokenizer | cold, s | cold, MB/s | warm, s | warm, MB/s "
        "| median of rounds' ratios to tokenizers |",
        "|:--|--:|--:|--:|--:|--:|",
    ]
    for side in ["opbyop", "tokenizers", "tiktoken"]:
        row = run["encode"].get(side)
        if row is None:
            continue
        ratio = row.get("ratio_to_tokenizers_median_of_rounds")
        cells = [
            f"`{side}`",
            f"{row['cold_s']:.3f}",
            f"{row['cold_mb_per_s']:.2f}",
            f"{row['warm_s']:.3f}",
            f"{row['warm_mb_per_s']:.2f}",
            "-" if ratio is None else f"{ratio:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bpe_train_table(run: dict[str, Any]) -> str:
    """Training on 1 MB of Python: seconds by final vocab_size, beside tokenizers' trainer."""
    train = run["train"]
    lines = ["| vocab_size | merges | opbyop, s | tokenizers, s | ratio |", "|--:|--:|--:|--:|--:|"]
    for size, ours in train["opbyop"].items():
        theirs = train.get("tokenizers", {}).get(size)
        cells = [f"{int(size):,}", str(int(size) - 256), f"{ours:.2f}"]
        cells += ["-", "-"] if theirs is None else [f"{theirs:.2f}", f"{ours / theirs:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sweep_table(run: dict[str, Any], phase: str) -> str:
    lines = [
        "| run | parameters | steps | bits per byte | load before, after |",
        "|:--|--:|--:|--:|:--|",
    ]
    rows = [r for r in run["runs"] if r["phase"] == phase]
    for row in sorted(rows, key=lambda r: r["validation_bits_per_byte"]):
        cells = [row["name"], f"{row['parameters'] / 1e6:.2f} M", f"{row['steps']:,}"]
        cells += [f"{row['validation_bits_per_byte']:.3f}"]
        cells += [f"{row['load_before'][0]:.2f}, {row['load_after'][0]:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_screen_table(run: dict[str, Any]) -> str:
    """The 1-minute screens, best first: one setting changed from the default each."""
    return _sweep_table(run, "screen")


def sweep_confirm_table(run: dict[str, Any]) -> str:
    """The 5-minute runs of the best screens, best first."""
    return _sweep_table(run, "confirm")


def _equal_time_table(run: dict[str, Any], comparison: str) -> str:
    lines = [
        "| run | parameters | step time | steps | bits per byte, seeds 0, 1 | mean |",
        "|:--|--:|--:|--:|--:|--:|",
    ]
    ratios = run["step_times"][comparison]["ratios"]
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in run["runs"]:
        if row["comparison"] == comparison:
            rows.setdefault(row["name"], []).append(row)
    for name, seeds in rows.items():
        seeds.sort(key=lambda r: r["seed"])
        bits = [r["validation_bits_per_byte"] for r in seeds]
        cells = [name, f"{seeds[0]['parameters'] / 1e6:.3f} M", f"{ratios[name]:.2f}{BY}"]
        cells += [f"{seeds[0]['steps']:,}", ", ".join(f"{b:.3f}" for b in bits)]
        cells += [f"{sum(bits) / len(bits):.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def equal_time_vocabulary_table(run: dict[str, Any]) -> str:
    """Episode 12's comparison: bytes, 512 and 1,024 tokens, at equal training time."""
    return _equal_time_table(run, "vocabulary")


def equal_time_modern_table(run: dict[str, Any]) -> str:
    """Episode 13's comparison: each of Llama's swaps alone, and all three."""
    return _equal_time_table(run, "modern")


def train_5min_table(run: dict[str, Any]) -> str:
    """The recorded 5-minute run of the default recipe, against its target."""
    final, spent, config = run["final"], run["spent"], run["config"]
    bits = final["validation_bits_per_byte"]
    verdict = "met" if bits <= 2.0 else "missed"
    size = f"{config['n_layers']} layers \N{MULTIPLICATION SIGN} {config['d_model']}"
    overhead = (spent["sampling"] + spent["logging"]) / spent["step"]
    lines = [
        "| model | steps in 5 minutes | bits per byte | batches and logging |",
        "|:--|--:|:--|--:|",
        f"| {size}, context {config['context']}, {run['parameters'] / 1e6:.2f} M "
        f"| {final['step']:,} | {bits:.3f} (\N{LESS-THAN OR EQUAL TO} 2.0: {verdict}) "
        f"| {overhead:.1%} of the steps |",
    ]
    return "\n".join(lines)


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
# The tables of every benchmark but attention.py, by the script's name.
BENCHMARK_TABLES = {
    "minilm": MINILM_TABLES,
    "train_step": {
        "steps": train_step_table,
        "memory": train_step_memory_table,
        "breakdown": train_step_breakdown_table,
    },
    "generate": {"tokens": generate_table, "lengths": generate_lengths_table},
    "bpe": {"encode": bpe_encode_table, "train": bpe_train_table},
    "sweep": {"screen": sweep_screen_table, "confirm": sweep_confirm_table},
    "train_5min": {"run": train_5min_table},
    "equal_time": {
        "vocabulary": equal_time_vocabulary_table,
        "modern": equal_time_modern_table,
    },
}
# A marked table, or an empty pair of markers (a table not yet written).
MARKED = re.compile(r"<!-- table: (\w+) (\w+) -->\n(?:[^\n]*\n)*?<!-- end table -->")


def benchmark_of(results: dict[str, Any]) -> str:
    """Which script made `results`: attention, minilm, train_step, generate, bpe, sweep..."""
    if "step_times" in results and "runs" in results:
        return "equal_time"
    if "start" in results and "runs" in results:
        return "sweep"
    if "final" in results and "command" in results:
        return "train_5min"
    if "rows" in results:
        return "attention"
    if "steps" in results:
        return "train_step"
    if "cache_speedup" in results.get("result", {}):
        return "generate"
    if "train" in results:  # bpe.json also has "encode": test it before minilm
        return "bpe"
    if "encode" in results:
        return "minilm"
    raise ValueError(f"results: not a run of any benchmark (keys {sorted(results)})")


def is_minilm(results: dict[str, Any]) -> bool:
    """Whether `results` is a run of benchmarks/minilm.py."""
    return benchmark_of(results) == "minilm"


def update_page(page: Path, results: dict[str, Any]) -> None:
    """Replace each marked table of `results`' benchmark in `page` with the run's."""
    benchmark = benchmark_of(results)

    def table(match: re.Match[str]) -> str:
        source, kind = match.groups()
        # an attention table is marked with its dtype, the others with their script
        if (source in BENCHMARK_TABLES and source != benchmark) or (
            source not in BENCHMARK_TABLES and benchmark != "attention"
        ):
            return match.group(0)  # another benchmark's table
        if source in BENCHMARK_TABLES:
            text = BENCHMARK_TABLES[source][kind](results)
        else:
            text = TABLES[kind](results, source)
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
    benchmark = benchmark_of(results)
    if benchmark != "attention":
        for kind, function in BENCHMARK_TABLES[benchmark].items():
            print(f"{benchmark} {kind}:\n\n{function(results)}\n")
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
