"""Draw a benchmark run of benchmarks/attention.py as the figure on docs/performance.md.

Usage::

    python benchmarks/plot.py [benchmarks/results/attention.json] [docs/assets/attention-speed.svg]

The figure has an opaque white background, so it reads the same in the
site's light and dark themes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

ROOT = Path(__file__).parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "attention.json"
FIGURE = ROOT / "docs" / "assets" / "attention-speed.svg"

# Okabe-Ito colours (distinguishable with colour blindness), and a line style each.
STYLES: dict[str, dict[str, Any]] = {
    "np_sqrt": {"label": "formula with np.sqrt(d)", "color": "#D55E00", "marker": "v"},
    "plain": {"label": "formula with math.sqrt(d)", "color": "#E69F00", "marker": "^"},
    "attention": {"label": "opbyop.attention", "color": "#0072B2", "marker": "o"},
    "torch_sdpa": {"label": "PyTorch SDPA", "color": "#009E73", "marker": "s"},
    "gemm_only": {"label": "the two matrix products alone", "color": "#000000", "marker": "D"},
}


def fastest(row: dict[str, Any], name: str) -> float:
    """The variant's fastest round, in seconds (as benchmarks/tables.py shows it)."""
    return float(min(row["all_seconds"][name]))


def plot(results: dict[str, Any], path: Path, dtype: str = "float32") -> None:
    rows = [row for row in results["rows"] if row["dtype"] == dtype]
    dims = sorted({row["d"] for row in rows})
    fig, axes = plt.subplots(1, len(dims), figsize=(5 * len(dims), 4.2), squeeze=False)
    fig.patch.set_facecolor("white")
    for ax, d in zip(axes[0], dims, strict=True):
        ax.set_facecolor("white")
        selected = sorted((row for row in rows if row["d"] == d), key=lambda row: row["n"])
        ns = [row["n"] for row in selected]
        for name, style in STYLES.items():
            if name not in selected[0]["seconds"]:
                continue
            times = [fastest(row, name) / fastest(row, "gemm_only") for row in selected]
            ax.plot(ns, times, linewidth=1.8, **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ticks = [0.5, 1, 2, 4, 8, 16, 32, 64]
        low, high = ax.get_ylim()
        ax.set_yticks(
            [t for t in ticks if low <= t <= high], [f"{t:g}x" for t in ticks if low <= t <= high]
        )
        ax.set_xlabel("n (queries = keys)")
        ax.set_ylabel("time / time of the two products alone")
        ax.set_title(f"d = {d}, {dtype}")
        ax.grid(True, which="major", color="#dddddd")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    machine = results["machine"]
    fig.suptitle(
        f"Attention on {machine['cpu']}, {machine['cores']} cores: fastest time per call,"
        " relative to the two matrix products alone (lower is faster)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, facecolor="white", metadata={"Date": None})
    plt.close(fig)


def main(argv: list[str]) -> None:
    results = Path(argv[0]) if argv else RESULTS
    figure = Path(argv[1]) if len(argv) > 1 else FIGURE
    plot(json.loads(results.read_text()), figure)
    print(f"wrote {figure}")


if __name__ == "__main__":
    main(sys.argv[1:])
