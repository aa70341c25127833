"""How many cores to use, and BLAS held to one thread while ours run."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from functools import cache

from threadpoolctl import ThreadpoolController


def usable_cores() -> int:
    """How many cores this process may use."""
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores we are allowed on
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@cache
def blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded with NumPy; looking them up takes a while, so once."""
    return ThreadpoolController()


def blas_threads(n: int) -> AbstractContextManager[object]:
    """Hold BLAS to `n` threads inside a ``with`` block (process-wide, as BLAS has no other way)."""
    return blas_controller().limit(limits=n, user_api="blas")
