"""`calls/hangup.until_left_here`: a client's hang-up stops work awaited in
the caller's own task, and nothing else (the server-level behaviour is in
tests/server/routes/test_disconnect.py)."""

from __future__ import annotations

import asyncio

import pytest

from benchwarmers.calls.caller import HUNG_UP
from benchwarmers.calls.hangup import until_left_here
from benchwarmers.errors import Left


async def _held(seen: list[BaseException]) -> str:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError as exc:
        seen.append(exc)
        raise
    return "never"


async def test_a_hang_up_cancels_the_wait_with_its_message_and_raises_left() -> None:
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen: list[BaseException] = []
    asyncio.get_running_loop().call_later(0.01, left.set_result, None)
    with pytest.raises(Left, match="bench/x: the client left"):
        await until_left_here(_held(seen), left, "bench/x")
    assert [exc.args for exc in seen] == [(HUNG_UP,)]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the cancellation was taken back


async def test_a_client_gone_before_the_start_starts_nothing() -> None:
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left.set_result(None)
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    with pytest.raises(Left):
        await until_left_here(work(), left, "bench/x")
    assert started == []


async def test_work_that_ends_first_is_its_result_and_a_later_hang_up_cuts_nothing() -> None:
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def work() -> str:
        return "turn"

    assert await until_left_here(work(), left, "bench/x") == "turn"
    left.set_result(None)
    await asyncio.sleep(0.01)  # what follows the wait is not cut
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


@pytest.mark.parametrize("hung_up_too", [False, True])
async def test_another_cancellation_is_raised_as_it_came(hung_up_too: bool) -> None:
    """A server's shutdown cancelling the task is not a hang-up, even when
    the client goes at the same moment: the cancellation is not taken back."""
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    seen: list[BaseException] = []

    async def asks() -> str:
        return await until_left_here(_held(seen), left, "bench/x")

    task = asyncio.create_task(asks())
    await asyncio.sleep(0.01)
    if hung_up_too:
        left.set_result(None)  # both land before the task runs again
    task.cancel("shutting down")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen) == 1
