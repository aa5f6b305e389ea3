"""The call log read back, and a finished call's task said after it: each
waits for the calls it names to be in the log first (`log.settled`), so
this process reads every call it told a client of.
"""

from __future__ import annotations

from sqlalchemy import select, update

from benchwarmers.calls.log import settled
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call


async def set_call_task(store: Store, call_id: str, task: str) -> None:
    """Say what a finished call was for, when only its reply could tell
    (route mode names the tools a turn called): after the row, once it is
    in (`settled`). Like the task `submit_call` writes, `task` names things,
    never prompt or reply text."""
    await settled(store, [call_id])
    async with store.write() as session:
        await session.execute(update(Call).where(Call.id == call_id).values(task=task))


async def get_call(store: Store, call_id: str) -> Call | None:
    await settled(store, [call_id])
    async with store.read() as session:
        return await session.get(Call, call_id)


async def calls_of_ask(store: Store, ask_id: str) -> list[Call]:
    """Every call of one gateway ask, oldest first (seats, then the merge)."""
    async with store.read() as session:
        rows = await session.scalars(select(Call).where(Call.ask_id == ask_id).order_by(Call.at))
        return list(rows)
