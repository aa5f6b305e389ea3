"""Giving the heap back (`benchwarmers.trim`): once, a moment after the
first ask however many ask meanwhile, and again after a later ask."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from benchwarmers import trim

pytestmark = pytest.mark.unit


async def test_many_asks_give_back_once_and_a_later_ask_again(monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed: list[int] = []
    monkeypatch.setattr(trim, "GIVE_BACK_DELAY", 0.0)
    monkeypatch.setattr(trim, "libc_function", lambda name: trimmed.append if name == "malloc_trim" else None)
    loop = asyncio.get_running_loop()
    for _ in range(100):
        trim.give_back_soon(loop)
    while trim._trim_pending:
        await asyncio.sleep(0)
    assert trimmed == [0]
    trim.give_back_soon(loop)
    while trim._trim_pending:
        await asyncio.sleep(0)
    assert trimmed == [0, 0]


def test_the_c_library_is_found_here() -> None:
    assert trim.libc_function("malloc_trim") is not None  # glibc: the server's platform
    assert trim.libc_function("no_such_function_anywhere") is None


class _Held:
    """An object in a cycle, as a cancelled stream's frames and its task are."""

    def __init__(self) -> None:
        self.cycle = self


async def test_the_give_back_frees_what_cycles_hold_before_it_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    freed_first: list[bool] = []
    held = _Held()
    alive = weakref.ref(held)
    del held
    monkeypatch.setattr(trim, "GIVE_BACK_DELAY", 0.0)
    monkeypatch.setattr(
        trim,
        "libc_function",
        lambda name: (lambda _pad: freed_first.append(alive() is None)) if name == "malloc_trim" else None,
    )
    gc.disable()  # only the give-back's own pass may free it
    try:
        trim.give_back_soon(asyncio.get_running_loop())
        while trim._trim_pending:
            await asyncio.sleep(0)
    finally:
        gc.enable()
    assert freed_first == [True]
