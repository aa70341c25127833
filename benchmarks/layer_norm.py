"""Time opbyop.layer_norm against its version before issue 21, at MiniLM's shapes.

The version before is read from git (``--before``, a revision). The two are
timed in interleaved rounds in one process: each round times a
batch of calls of one, then of the other (the order alternating from round
to round), so a machine that gets busier or quieter slows both alike. The
table gives, per shape, the fastest round of each and their ratio, and the
median of the per-round ratios with its interquartile range.

    .venv/bin/python benchmarks/layer_norm.py            # about 30 seconds
    .venv/bin/python benchmarks/layer_norm.py --rounds 5000

Many short rounds (two calls each, by default) catch the moments a shared
machine leaves the process alone: the fastest round is then the time of the
code, not of the machine.

The load average (``os.getloadavg``) is printed before and after: on a busy
machine the ratios spread, and only a quiet run should be recorded.

The shapes are all-MiniLM-L6-v2's: a batch of 32 sentences of 11 tokens
(352 rows) and one sentence of 12 tokens, 384 numbers per token, float32,
eps 1e-12, with a weight and a bias.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from opbyop import layer_norm

SHAPES = [(352, 384), (12, 384)]
BEFORE = "de8cd0b"  # the last commit before issue 21's fixes
Array = NDArray[Any]


def load_before(revision: str) -> Callable[..., Array]:
    """layer_norm exactly as `revision` of src/opbyop/layers.py has it (read with git).

    Before issue 21 the shared checks lived in ops.py as ``_real_array``,
    ``_cast`` and ``_check_dtypes``; they are the same functions as
    today's in ``opbyop._checks``, so the old module gets those under its names.
    """
    source = subprocess.run(
        ["git", "show", f"{revision}:src/opbyop/layers.py"],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    old_import = "from opbyop.ops import _cast, _check_dtypes, _real_array"
    new_import = (
        "from opbyop._checks import cast as _cast, check_dtypes as _check_dtypes,"
        " real_array as _real_array"
    )
    if old_import in source:
        source = source.replace(old_import, new_import)
    module = types.ModuleType("layers_before")
    exec(compile(source, f"layers.py@{revision}", "exec"), module.__dict__)
    function: Callable[..., Array] = module.layer_norm
    return function


def time_calls(function: Callable[[], object], calls: int) -> float:
    """Seconds per call, over `calls` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls


def compare(
    layer_norm_before: Callable[..., Array], shape: tuple[int, int], rounds: int, calls: int
) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    weight = (1 + 0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
    bias = (0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
    np.testing.assert_allclose(
        layer_norm(x, weight, bias, eps=1e-12),
        layer_norm_before(x, weight, bias, eps=1e-12),
        rtol=1e-5,
        atol=1e-5,
    )

    def before() -> object:
        return layer_norm_before(x, weight, bias, eps=1e-12)

    def today() -> object:
        return layer_norm(x, weight, bias, eps=1e-12)

    for function in (before, today):  # warm up
        time_calls(function, calls)
    old, new = [], []
    for r in range(rounds):
        if r % 2:
            new.append(time_calls(today, calls))
            old.append(time_calls(before, calls))
        else:
            old.append(time_calls(before, calls))
            new.append(time_calls(today, calls))
    ratios = sorted(n / o for n, o in zip(new, old, strict=True))
    quartiles = statistics.quantiles(ratios, n=4)
    return {
        "before_us": min(old) * 1e6,
        "today_us": min(new) * 1e6,
        "fastest_ratio": min(new) / min(old),
        "median_ratio": statistics.median(ratios),
        "q1": quartiles[0],
        "q3": quartiles[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=2, help="calls per round and side")
    parser.add_argument(
        "--before", default=BEFORE, help=f"the git revision to compare with (default {BEFORE})"
    )
    args = parser.parse_args()
    layer_norm_before = load_before(args.before)
    print(f"{platform.processor() or platform.machine()}, NumPy {np.__version__}")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(
        f"{'shape':>11} {'before us':>10} {'today us':>9} {'fastest ratio':>14}"
        f" {'median ratio':>13} {'IQR':>13}"
    )
    for shape in SHAPES:
        r = compare(layer_norm_before, shape, args.rounds, args.calls)
        print(
            f"{shape!s:>11} {r['before_us']:10.1f} {r['today_us']:9.1f}"
            f" {r['fastest_ratio']:14.3f} {r['median_ratio']:13.3f}"
            f"  {r['q1']:.3f}-{r['q3']:.3f}"
        )
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
