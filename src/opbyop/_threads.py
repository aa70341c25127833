"""How many cores to use, and BLAS held to one thread while ours run."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from functools import cache
from typing import TypeVar

from threadpoolctl import ThreadpoolController


def usable_cores() -> int:
    """How many cores this process may use."""
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores we are allowed on
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


T = TypeVar("T")

# Below this many numbers in all, starting threads costs more than it saves.
SHARE_FROM = 2**15


@cache
def pool() -> ThreadPoolExecutor:
    """Threads for the other cores, started once (idle, they cost nothing)."""
    return ThreadPoolExecutor(max(usable_cores() - 1, 1), "opbyop")


def on_every_core(work: Callable[[T], object], items: Sequence[T], sizes: Sequence[int]) -> None:
    """``work(item)`` for every item, the items shared between the cores by size.

    For element-wise NumPy work on many arrays (an optimiser's update): NumPy
    lets go of the GIL while it computes, so the threads run side by side.
    The largest items are dealt first, each to the core with the least so far.
    """
    cores = usable_cores() if sum(sizes) >= SHARE_FROM else 1
    shares: list[list[T]] = [[] for _ in range(cores)]
    loads = [0] * cores
    for size, item in sorted(zip(sizes, items, strict=True), key=lambda pair: -pair[0]):
        least = loads.index(min(loads))
        shares[least].append(item)
        loads[least] += size

    def run(share: list[T]) -> None:
        for item in share:
            work(item)

    helpers = [pool().submit(run, share) for share in shares[1:]]
    run(shares[0])  # this thread works too
    for helper in helpers:
        helper.result()


@cache
def blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded with NumPy; looking them up takes a while, so once."""
    return ThreadpoolController()


def blas_threads(n: int) -> AbstractContextManager[object]:
    """Hold BLAS to `n` threads inside a ``with`` block (process-wide, as BLAS has no other way)."""
    return blas_controller().limit(limits=n, user_api="blas")
