"""How fast is opbyop.attention? Times it beside the formulas readers write.

Variants, each ``softmax(q @ k.T / sqrt(d)) @ v`` on q, k, v of shape (n, d):

- ``scratch``: opbyop.scratch, lists and loops (timed at n = 128 only; larger n
  are extrapolated from its n-squared growth, and marked so);
- ``plain``: the formula in NumPy with a stable softmax and ``math.sqrt(d)``;
- ``np_sqrt``: the same with ``np.sqrt(d)``, as many tutorials write it;
- ``attention``: opbyop.attention;
- ``gemm_only``: the two matrix products alone, ``(q @ k.T) @ v``, the floor
  for any attention that is not one fused kernel;
- ``torch_sdpa``: PyTorch's ``scaled_dot_product_attention`` on 4-D inputs
  (1, 1, n, d), two threads, when PyTorch is installed.

Masks are timed apart, in float32 at d = 64 (``mask_rows`` in the results):
``attention`` beside ``attention_causal`` (``is_causal=True``) and
``attention_mask`` (an explicit (n, n) boolean mask, 90% True at random), and
the same three for PyTorch (``torch_sdpa``, ``torch_causal``, ``torch_mask``).

Every variant is called once untimed, then the variants take turns for each
round (interleaved), with a pause before each timing so the BLAS threads of
the previous one have stopped spinning. A busy machine only ever adds time, so
the figure kept for each variant is its fastest round (``seconds``); every
round is kept too (``all_seconds``).

The machine must be quiet: the run waits up to three minutes for the
1-minute load average to be below 0.5 and starts only then, and once it is
done the load must come back below 0.5 within three minutes (the run's own
load takes a minute or two to decay), or nothing is written.
``--allow-busy`` keeps a run anyway, for a quick look on a busy machine. The
load averages, the time the load took to settle, the CPU time other programs
used during the run, the OPENBLAS_* variables and the BLAS kernels
(threadpoolctl) are all recorded. A run to record is made with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: they select older kernels.

Usage::

    python benchmarks/attention.py            # everything: several minutes
    python benchmarks/attention.py --quick    # small sizes, float32, 3 rounds, busy or not
    python benchmarks/attention.py --memory-only

A separate process then runs attention at n = 65536, d = 64 (float32) and
reports its peak resident memory, which must stay under 512 MiB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import threadpoolctl

import opbyop
from opbyop import scratch

RESULTS = Path(__file__).parent / "results"
VARIANTS = ["scratch", "plain", "np_sqrt", "attention", "gemm_only", "torch_sdpa"]
MASK_VARIANTS = [
    "attention",
    "attention_causal",
    "attention_mask",
    "torch_sdpa",
    "torch_causal",
    "torch_mask",
]
MASK_D = 64
MASK_KEPT = 0.9  # the share of True in the explicit mask
SCRATCH_N = 128  # scratch is timed at this n only: about a second at d = 768
MEMORY_LIMIT_MIB = 512
LOAD_LIMIT = 0.5  # a run is kept only if the load average is below this, before and after
SETTLE_SECONDS = 180  # how long to wait, after the run, for its own load to decay

Array = np.ndarray[Any, Any]
Variant = Callable[[], object]


# ---------------------------------------------------------------- the variants


def softmax(x: Array) -> Array:
    """The stable softmax a reader writes: subtract the row max, exp, divide."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def plain(q: Array, k: Array, v: Array) -> Array:
    return softmax(q @ k.T / math.sqrt(q.shape[-1])) @ v


def np_sqrt(q: Array, k: Array, v: Array) -> Array:
    # np.sqrt(64) is a float64 scalar: under NumPy 2 it promotes float32 scores to float64.
    return softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v


def gemm_only(q: Array, k: Array, v: Array) -> Array:
    return (q @ k.T) @ v


def variants(q: Array, k: Array, v: Array, torch: Any) -> dict[str, Variant]:
    """The variants to time on these inputs, as calls with no arguments."""
    calls: dict[str, Variant] = {
        "plain": lambda: plain(q, k, v),
        "np_sqrt": lambda: np_sqrt(q, k, v),
        "attention": lambda: opbyop.attention(q, k, v),
        "gemm_only": lambda: gemm_only(q, k, v),
    }
    if torch is not None:
        # 4-D (batch, heads, n, d): the only shape PyTorch's fused CPU kernel takes.
        tq, tk, tv = (torch.from_numpy(x)[None, None] for x in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def torch_sdpa() -> object:
            with torch.no_grad():
                return sdpa(tq, tk, tv)

        calls["torch_sdpa"] = torch_sdpa
    return calls


def mask_variants(q: Array, k: Array, v: Array, mask: Array, torch: Any) -> dict[str, Variant]:
    """Attention with no mask, with is_causal and with an explicit mask, ours and PyTorch's."""
    calls: dict[str, Variant] = {
        "attention": lambda: opbyop.attention(q, k, v),
        "attention_causal": lambda: opbyop.attention(q, k, v, is_causal=True),
        "attention_mask": lambda: opbyop.attention(q, k, v, mask=mask),
    }
    if torch is not None:
        tq, tk, tv = (torch.from_numpy(x)[None, None] for x in (q, k, v))
        tmask = torch.from_numpy(mask)[None, None]  # True where a query may look, as ours
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def torch_call(**kwargs: Any) -> Variant:
            def call() -> object:
                with torch.no_grad():
                    return sdpa(tq, tk, tv, **kwargs)

            return call

        calls["torch_sdpa"] = torch_call()
        calls["torch_causal"] = torch_call(is_causal=True)
        calls["torch_mask"] = torch_call(attn_mask=tmask)
    return calls


def check_agreement(calls: dict[str, Variant], dtype: Any) -> None:
    """Every variant computes the same attention (np_sqrt in float64, so loosely).

    Each is compared with opbyop's variant of the same kind (masked, causal or
    neither); the products alone compute no attention.
    """
    tolerance = 1e-3 if dtype == np.float32 else 1e-9
    for name, call in calls.items():
        if name == "gemm_only":
            continue
        kind = name.rsplit("_", 1)[-1]
        ours = f"attention_{kind}" if kind in ("causal", "mask") else "attention"
        want = np.asarray(calls[ours](), dtype=np.float64)
        got = np.asarray(call(), dtype=np.float64).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=name)


# ---------------------------------------------------------------- timing


def time_call(call: Variant, number: int, pause: float) -> float:
    """Seconds per call, over `number` calls after a pause."""
    time.sleep(pause)  # let BLAS and OpenMP threads of the last variant stop spinning
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) / number


def calls_per_timing(call: Variant, at_least: float) -> int:
    """Call once (the warm-up) and return how many calls take `at_least` seconds."""
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    return max(1, math.ceil(at_least / max(once, 1e-9)))


def measure(
    calls: dict[str, Variant], reps: int, pause: float, at_least: float
) -> dict[str, list[float]]:
    """Interleaved repetitions: every variant once per round, in a rotating order."""
    numbers = {name: calls_per_timing(call, at_least) for name, call in calls.items()}
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for rep in range(reps):
        shift = rep % len(names)  # no variant always runs right after the same one
        for name in names[shift:] + names[:shift]:
            times[name].append(time_call(calls[name], numbers[name], pause))
    return times


def time_scratch(d: int, reps: int, pause: float) -> float:
    """Fastest seconds of opbyop.scratch.attention at n = SCRATCH_N (float64 lists)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((SCRATCH_N, d)).tolist() for _ in range(3))
    scratch.attention(q, k, v)  # warm up
    return min(time_call(lambda: scratch.attention(q, k, v), 1, pause) for _ in range(reps))


# ---------------------------------------------------------------- the run


def run(args: argparse.Namespace, torch: Any) -> list[dict[str, Any]]:
    rows = []
    scratch_at: dict[int, float] = {}
    for d in args.d:
        if not args.no_scratch:
            scratch_at[d] = time_scratch(d, max(3, args.reps // 2), args.pause)
        for dtype_name in args.dtype:
            dtype = np.dtype(dtype_name).type
            for n in args.n:
                rng = np.random.default_rng(n + d)
                q, k, v = (rng.standard_normal((n, d)).astype(dtype) for _ in range(3))
                calls = variants(q, k, v, torch)
                check_agreement(calls, dtype)
                times = measure(calls, args.reps, args.pause, args.at_least)
                fastest = {name: min(t) for name, t in times.items()}
                row: dict[str, Any] = {"dtype": dtype_name, "n": n, "d": d, "seconds": fastest}
                row["all_seconds"] = times
                if d in scratch_at:
                    # Python floats, whatever the dtype; time grows as n^2 at fixed d.
                    fastest["scratch"] = scratch_at[d] * (n / SCRATCH_N) ** 2
                    row["scratch_extrapolated"] = n != SCRATCH_N
                rows.append(row)
                print_row(row, VARIANTS)
    return rows


def run_masks(args: argparse.Namespace, torch: Any) -> list[dict[str, Any]]:
    """Attention with and without masks, float32 at d = MASK_D, for each n of --mask-n."""
    rows = []
    for n in args.mask_n:
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal((n, MASK_D), dtype=np.float32) for _ in range(3))
        mask = rng.random((n, n)) < MASK_KEPT
        calls = mask_variants(q, k, v, mask, torch)
        check_agreement(calls, np.float32)
        times = measure(calls, args.reps, args.pause, args.at_least)
        row: dict[str, Any] = {"dtype": "float32", "n": n, "d": MASK_D, "kept": MASK_KEPT}
        row |= {"seconds": {name: min(t) for name, t in times.items()}, "all_seconds": times}
        rows.append(row)
        print_row(row, MASK_VARIANTS)
    return rows


def print_row(row: dict[str, Any], variants: list[str]) -> None:
    s = row["seconds"]
    times = "  ".join(f"{name} {s[name] * 1e3:9.3f} ms" for name in variants if name in s)
    print(f"{row['dtype']:>7} n={row['n']:<5} d={row['d']:<4} {times}", flush=True)


def ratios(row: dict[str, Any]) -> dict[str, float]:
    """How attention compares: >1 in the first two means attention is slower."""
    s = row["seconds"]
    out = {
        "attention / gemm_only": s["attention"] / s["gemm_only"],
        "plain / attention": s["plain"] / s["attention"],
        "np_sqrt / attention": s["np_sqrt"] / s["attention"],
    }
    if "torch_sdpa" in s:
        out["attention / torch_sdpa"] = s["attention"] / s["torch_sdpa"]
    if "scratch" in s:
        out["scratch / attention"] = s["scratch"] / s["attention"]
    return out


def mask_ratios(row: dict[str, Any]) -> dict[str, float]:
    """What a mask costs: the time with it over the time without, ours and PyTorch's."""
    s = row["seconds"]
    out = {
        "attention_causal / attention": s["attention_causal"] / s["attention"],
        "attention_mask / attention": s["attention_mask"] / s["attention"],
    }
    if "torch_sdpa" in s:
        out["torch_causal / torch_sdpa"] = s["torch_causal"] / s["torch_sdpa"]
        out["torch_mask / torch_sdpa"] = s["torch_mask"] / s["torch_sdpa"]
        out["attention_causal / torch_causal"] = s["attention_causal"] / s["torch_causal"]
        out["attention_mask / torch_mask"] = s["attention_mask"] / s["torch_mask"]
    return out


def print_tables(rows: list[dict[str, Any]], ratios: Callable[[dict[str, Any]], Any]) -> None:
    for dtype in sorted({row["dtype"] for row in rows}, reverse=True):
        selected = [row for row in rows if row["dtype"] == dtype]
        names = list(ratios(selected[0]))
        width = max(len(name) for name in names)
        print(f"\n{dtype}: ratios of the fastest rounds")
        print(f"{'n':>6} {'d':>5}  " + "  ".join(f"{name:>{width}}" for name in names))
        for row in selected:
            r = ratios(row)
            cells = "  ".join(
                f"{r[name]:>{width}.2f}" if name in r else f"{'-':>{width}}" for name in names
            )
            print(f"{row['n']:>6} {row['d']:>5}  {cells}")


# The targets, float32: (n, d, ratio, at most or at least, bound).
TARGETS = [
    (4096, 64, "attention / torch_sdpa", "<=", 1.6),
    (4096, 64, "attention / gemm_only", "<=", 1.5),
    (4096, 64, "plain / attention", ">=", 2.4),
    (4096, 64, "np_sqrt / attention", ">=", 4.0),
    (2048, 64, "attention / torch_sdpa", "<=", 1.9),
    (2048, 768, "attention / torch_sdpa", "<=", 1.2),
    (2048, 768, "attention / gemm_only", "<=", 1.25),
    (4096, 768, "attention / torch_sdpa", "<=", 1.2),
    (4096, 768, "attention / gemm_only", "<=", 1.25),
    *((n, d, "plain / attention", ">=", 1.0) for n in (128, 512) for d in (64, 768)),
]
MASK_TARGETS = [
    (4096, 64, "attention_causal / attention", "<=", 0.6),
    (4096, 64, "attention_mask / attention", "<=", 1.15),
]


def check_targets(rows: list[dict[str, Any]], mask_rows: list[dict[str, Any]]) -> list[Any]:
    checked = []
    by_size = {(row["n"], row["d"]): ratios(row) for row in rows if row["dtype"] == "float32"}
    for row in mask_rows:
        by_size.setdefault((row["n"], row["d"]), {}).update(mask_ratios(row))
    for n, d, name, sense, bound in TARGETS + MASK_TARGETS:
        value = by_size.get((n, d), {}).get(name)
        if value is None:
            continue  # size not run, or no PyTorch
        met = value <= bound if sense == "<=" else value >= bound
        checked.append(
            {
                "n": n,
                "d": d,
                "ratio": name,
                "value": value,
                "target": f"{sense} {bound}",
                "met": met,
            }
        )
    if checked:
        print("\nTargets (float32):")
        for c in checked:
            mark = "met" if c["met"] else "NOT MET"
            size = f"n={c['n']:<5} d={c['d']:<4}"
            print(f"  {size} {c['ratio']:<28} {c['value']:6.2f}  {c['target']:<7} {mark}")
    return checked


# ---------------------------------------------------------------- memory


def memory_child(n: int, d: int) -> None:
    """Run in a fresh process: attention at size n, then print peak RSS as JSON."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
    before = peak_rss_mib()
    start = time.perf_counter()
    out = opbyop.attention(q, k, v)
    seconds = time.perf_counter() - start
    if out.shape != (n, d) or not np.isfinite(out).all():
        raise RuntimeError(f"attention gave a wrong result: shape {out.shape}")
    result = {"n": n, "d": d, "dtype": "float32", "seconds": seconds}
    result.update(rss_before_mib=before, peak_rss_mib=peak_rss_mib())
    print(json.dumps(result))


def peak_rss_mib() -> float:
    """This process's peak resident memory, in MiB.

    On Linux ``ru_maxrss`` also counts what the parent had resident when it
    started this process (exec keeps the larger), so /proc's VmHWM, which
    exec resets, is read where there is one.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, else KiB


def memory_check(n: int, d: int) -> dict[str, Any]:
    child = [sys.executable, __file__, "--memory-child", str(n), str(d)]
    done = subprocess.run(child, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    result["limit_mib"] = MEMORY_LIMIT_MIB
    result["met"] = result["peak_rss_mib"] < MEMORY_LIMIT_MIB
    scores_gib = n * n * 4 / 2**30
    print(
        f"Memory: attention at n={n}, d={d}, float32 took {result['seconds']:.1f} s;"
        f" peak RSS {result['peak_rss_mib']:.0f} MiB (inputs and output alone:"
        f" {4 * n * d * 4 / 2**20:.0f} MiB; all scores at once would be {scores_gib:.0f} GiB)"
        f" -> {'under' if result['met'] else 'OVER'} {MEMORY_LIMIT_MIB} MiB"
    )
    return result


# ---------------------------------------------------------------- the machine


def cpu_name() -> str:
    """The processor's model name from /proc/cpuinfo (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine(torch: Any) -> dict[str, Any]:
    cpu = cpu_name()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "cores": cores,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "threadpools": [
            {
                key: lib.get(key)
                for key in ("internal_api", "version", "num_threads", "architecture")
            }
            for lib in threadpoolctl.threadpool_info()
        ],
        "torch": torch.__version__ if torch is not None else None,
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "env": {
            key: value
            for key, value in os.environ.items()
            if key.startswith(("OPENBLAS", "OMP", "MKL"))
        },
    }


def blas_line(info: dict[str, Any]) -> str:
    """Which BLAS kernels run, and the OPENBLAS_* variables that choose them."""
    kernels = [
        f"{lib['internal_api']} {lib['version']} ({lib['architecture']} kernels)"
        for lib in info["threadpools"]
        if lib.get("architecture")
    ]
    chosen = [f"{key}={info['env'][key]}" for key in OPENBLAS_CHOICES if key in info["env"]]
    return f"{', '.join(kernels) or 'BLAS kernels unknown'}; " + (
        " ".join(chosen) or "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
    )


# Variables that make OpenBLAS pick other (older) kernels than it would by itself.
OPENBLAS_CHOICES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# ---------------------------------------------------------------- a quiet machine


def load_average() -> float | None:
    """The 1-minute load average, or None where the system has none."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def settle(limit: float, timeout: float) -> tuple[float | None, float]:
    """Wait until the 1-minute load average is below `limit`, for at most `timeout` seconds.

    Right after a run the load average still counts the run itself, and takes a
    minute or two to decay: if the machine is otherwise quiet it falls below
    the limit, if other programs are running it does not. Returns the last load
    read and the seconds waited.
    """
    start = time.monotonic()
    while True:
        load = load_average()
        waited = time.monotonic() - start
        if load is None or load < limit or waited >= timeout:
            return load, waited
        time.sleep(5)


def cpu_busy_seconds() -> float | None:
    """CPU seconds all programs have used since boot (Linux /proc/stat), or None."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds this process and its finished children have used."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_torch(wanted: bool) -> Any:
    if not wanted:
        return None
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: no torch_sdpa column. To include it, install its CPU")
        print("build (the default Linux wheel pulls in several GB of CUDA libraries):")
        print("  pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu\n")
        return None
    torch.set_num_threads(2)
    return torch


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[128, 512, 2048, 4096])
    parser.add_argument("--d", type=int, nargs="+", default=[64, 768])
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    parser.add_argument("--reps", type=int, default=9, help="interleaved repetitions (default 9)")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds before each timing")
    parser.add_argument("--at-least", type=float, default=0.02, help="seconds per timing, at least")
    parser.add_argument(
        "--mask-n", type=int, nargs="*", default=[512, 2048, 4096], help="n for the mask rows"
    )
    parser.add_argument(
        "--quick", action="store_true", help="n 128 512 2048, d 64, float32, 3 reps, busy or not"
    )
    parser.add_argument(
        "--allow-busy",
        action="store_true",
        help=f"keep the run even if the load average is not below {LOAD_LIMIT}",
    )
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    parser.add_argument("--no-scratch", action="store_true", help="leave opbyop.scratch out")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory check")
    parser.add_argument("--memory-only", action="store_true", help="only the memory check")
    parser.add_argument("--memory-n", type=int, default=65536)
    parser.add_argument("--out", type=Path, help="JSON file (default: results/run-<time>.json)")
    parser.add_argument("--memory-child", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.d, args.dtype, args.reps, args.pause = (
            [128, 512, 2048],
            [64],
            ["float32"],
            3,
            0.1,
        )
        args.mask_n, args.allow_busy = [512, 2048], True
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.memory_child:
        memory_child(*args.memory_child)
        return 0
    if not args.allow_busy:
        print(f"Waiting for the load average to be below {LOAD_LIMIT}...", flush=True)
        settle(LOAD_LIMIT, SETTLE_SECONDS)
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None  # before we add to it
    if not args.allow_busy and load_before is not None and load_before[0] >= LOAD_LIMIT:
        print(
            f"The load average is {load_before[0]:.2f}, not below {LOAD_LIMIT}: other programs"
            " are running, and they would take time from the one measured. Run again when"
            " the machine is quiet, or pass --allow-busy to run anyway.",
            file=sys.stderr,
        )
        return 2
    busy_before, own_before, wall_before = cpu_busy_seconds(), own_cpu_seconds(), time.time()
    # The memory check first, while this process (its parent) is still small.
    memory = None if args.no_memory else memory_check(args.memory_n, 64)
    torch = load_torch(not args.no_torch and not args.memory_only)
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", "benchmarks/attention.py", *sys.argv[1:]]),
        "machine": machine(torch),
        "settings": {key: vars(args)[key] for key in ("reps", "pause", "at_least", "allow_busy")},
    }
    report["settings"] |= {"statistic": "fastest round", "load_limit": LOAD_LIMIT}
    info = report["machine"]
    info["load_average"] = load_before
    print(
        f"{info['cpu']}, {info['cores']} cores; NumPy {info['numpy']}; load {info['load_average']}"
        f"\n{blas_line(info)}",
        flush=True,
    )
    ok = True
    if not args.memory_only:
        report["rows"] = run(args, torch)
        print_tables(report["rows"], ratios)
        report["mask_rows"] = run_masks(args, torch)
        if report["mask_rows"]:
            print_tables(report["mask_rows"], mask_ratios)
        report["targets"] = check_targets(report["rows"], report["mask_rows"])
    if memory is not None:
        report["memory"] = memory
        ok = memory["met"]
    busy_after, own_after, wall_after = cpu_busy_seconds(), own_cpu_seconds(), time.time()
    if busy_before is not None and busy_after is not None:
        # CPU time the rest of the machine used while this run took its own.
        others = (busy_after - busy_before) - (own_after - own_before)
        info["others_cpu_seconds"] = max(others, 0.0)
        info["run_seconds"] = wall_after - wall_before
    if args.allow_busy:
        info["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    else:
        print(f"\nWaiting for the load average to fall below {LOAD_LIMIT}...", flush=True)
        settle(LOAD_LIMIT, SETTLE_SECONDS)
        info["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        info["settle_seconds"] = time.time() - wall_after
    after = info["load_average_after"]
    print(
        f"load average before: {load_before}; after: {after};"
        f" CPU seconds other programs used meanwhile: {info.get('others_cpu_seconds')}"
    )
    if not args.allow_busy and after is not None and after[0] >= LOAD_LIMIT:
        print(
            f"Not kept: the load average stayed at {after[0]:.2f} after the run, so other"
            " programs were running. Run again when the machine is quiet.",
            file=sys.stderr,
        )
        return 2
    out = args.out or RESULTS / f"run-{datetime.datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"results in {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
