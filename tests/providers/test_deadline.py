"""`Deadline` keeps `asyncio.timeout_at`'s meaning with one timer per call:
a wait past it is a `TimeoutError`, the work between two waits is never
cancelled by it, a cancellation from outside stays one, and of two nested
deadlines each answers only for its own."""

from __future__ import annotations

import asyncio

import pytest

from benchwarmers.providers.deadline import Deadline

FOREVER = 3600.0
SOON = 0.02


async def test_a_wait_past_the_deadline_is_a_timeout() -> None:
    deadline = Deadline.after(SOON)
    try:
        with pytest.raises(TimeoutError), deadline:
            await asyncio.sleep(FOREVER)
    finally:
        deadline.close()
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_waits_in_time_all_pass_on_one_timer() -> None:
    loop = asyncio.get_running_loop()
    deadline = Deadline.after(FOREVER)
    try:
        for _ in range(3):
            with deadline:
                await asyncio.sleep(0)
        armed = deadline._handle
        assert armed is not None
        with deadline:
            await asyncio.sleep(0)
        assert deadline._handle is armed  # the same timer, not one per wait
    finally:
        deadline.close()
    assert deadline._handle is None and armed.cancelled()
    assert loop.time() < deadline.when  # type: ignore[operator]


async def test_the_work_between_waits_is_never_cancelled() -> None:
    deadline = Deadline.after(SOON)
    try:
        with deadline:
            await asyncio.sleep(0)
        await asyncio.sleep(SOON * 3)  # the consumer's own work, past the deadline: not ours to stop
        with deadline:
            pass  # a wait that does not suspend still passes, as under timeout_at
        with pytest.raises(TimeoutError), deadline:
            await asyncio.sleep(FOREVER)  # the first wait that suspends after it fails
    finally:
        deadline.close()


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    started = asyncio.Event()

    async def waiting() -> None:
        deadline = Deadline.after(FOREVER)
        try:
            with deadline:
                started.set()
                await asyncio.sleep(FOREVER)
        finally:
            deadline.close()

    task = asyncio.ensure_future(waiting())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_from_outside_as_the_deadline_passes_stays_one() -> None:
    async def waiting() -> None:
        deadline = Deadline.after(SOON)
        try:
            with deadline:
                assert deadline.when is not None
                loop.call_at(deadline.when, task.cancel)  # fires right after the deadline's own timer
                await asyncio.sleep(FOREVER)
        finally:
            deadline.close()

    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(waiting())
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_nested_deadlines_each_answer_for_their_own() -> None:
    outer, inner = Deadline.after(SOON), Deadline.after(FOREVER)
    caught: list[str] = []
    try:
        with pytest.raises(TimeoutError), outer:
            try:
                with inner:
                    await asyncio.sleep(FOREVER)
            except asyncio.CancelledError:
                caught.append("inner let the outer's cancellation through")
                raise
    finally:
        outer.close()
        inner.close()
    assert caught == ["inner let the outer's cancellation through"]
    inner, outer = Deadline.after(SOON), Deadline.after(FOREVER)
    try:
        with outer:
            with pytest.raises(TimeoutError), inner:
                await asyncio.sleep(FOREVER)
            await asyncio.sleep(0)  # the outer wait goes on
    finally:
        outer.close()
        inner.close()


async def test_no_deadline_never_times_out() -> None:
    deadline = Deadline(None)
    with deadline:
        await asyncio.sleep(SOON)
    deadline.close()
    assert deadline._handle is None


async def test_one_wait_at_a_time() -> None:
    deadline = Deadline.after(FOREVER)
    try:
        with deadline, pytest.raises(RuntimeError, match="one wait at a time"), deadline:
            pass
    finally:
        deadline.close()
