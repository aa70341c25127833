"""Work shared between the cores (opbyop._threads): every item once, errors raised."""

from __future__ import annotations

import threading

import pytest

from opbyop import _threads


def test_every_item_is_worked_once_and_the_cores_share_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)
    done: list[int] = []
    threads: set[str] = set()

    def work(item: int) -> None:
        done.append(item)
        threads.add(threading.current_thread().name)

    items = list(range(10))
    _threads.on_every_core(work, items, [_threads.SHARE_FROM] * 10)
    assert sorted(done) == items
    assert len(threads) == 2  # this thread and one of the pool's


def test_small_work_stays_on_this_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)
    threads: set[str] = set()
    _threads.on_every_core(
        lambda _: threads.add(threading.current_thread().name), [1, 2, 3], [10, 10, 10]
    )
    assert threads == {threading.current_thread().name}


def test_an_error_in_a_helper_thread_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)

    def work(item: int) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise ValueError(f"item {item} failed")

    with pytest.raises(ValueError, match="failed"):
        _threads.on_every_core(work, [1, 2], [_threads.SHARE_FROM] * 2)
