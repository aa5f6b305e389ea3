"""Quorum and deadline: a panel that answers once enough seats are in.

A person who needs two good answers should not wait for the slowest of
five seats, nor an agent with a budget in seconds for a seat that hangs
until its timeout. An ask (headers `x-bench-quorum` / `x-bench-deadline`, or
its `bench` object) or its collection (`quorum`, `deadline`, `on_cut`) says
when the reply may go without the rest:

* quorum K: once K seats answered `ok` (a failed, empty or refused seat is
  in, but is not an answer: K counts answers a reader can use; asked for
  structured output, an answer not valid against it is not one either); a quorum
  of as many seats as sit, or more, waits for every seat;
* deadline D seconds after the seats were sent: with whatever is in,
  however many that is.

The seats still answering then are cut: cancelled upstream and logged
`cancelled`, their error `cut: ` and why (`on_cut = "cancel"`), or left
to finish in the background and logged with their real outcome
(`"finish"`), the reply saying `cancelled` and `cut: ...` for them either
way (the SPEC's one word for a seat stopped or cut) and naming them in
`bench.cut`. This module waits, says why, and cuts (`cut_running`),
when the engine's wait for a panel's seats ends early.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchwarmers.calls.caller import cut
from benchwarmers.types import Cut, Seat

if TYPE_CHECKING:
    from benchwarmers.panel.hand import Hand
    from benchwarmers.panel.plan import Plan


@dataclass(frozen=True, slots=True)
class Rule:
    """When a panel may answer without its slower seats (0: never by that)."""

    quorum: int = 0
    deadline: float = 0.0
    on_cut: str = "cancel"

    @property
    def active(self) -> bool:
        return self.quorum > 0 or self.deadline > 0


# Wait for every seat (an ask and collection that set neither).
NO_RULE = Rule()


@dataclass(slots=True)
class Waited:
    """What waiting for a quorum left: the seats in, the tasks of those
    still answering, and why the wait ended early (None: every seat came in)."""

    seats: dict[int, Seat]
    running: dict[int, asyncio.Task[Seat]]
    cut: Cut | None
    reason: str = ""
    seconds: float = 0.0  # how long it waited


async def wait(tasks: Mapping[int, asyncio.Task[Seat]], rule: Rule) -> Waited:
    """Wait for the seats' tasks until every one is in, `rule.quorum` of
    them answered ok, or `rule.deadline` seconds passed, whichever is first."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    ends = began + rule.deadline if rule.deadline > 0 else None
    seats: dict[int, Seat] = {}
    running = dict(tasks)
    index_of = {task: i for i, task in running.items()}
    answered = 0
    while running:
        if 0 < rule.quorum <= answered:
            reason = f"quorum {rule.quorum} of {len(tasks)} reached"
            return Waited(seats, running, _cut("quorum", rule), reason, loop.time() - began)
        timeout = None if ends is None else max(ends - loop.time(), 0.0)
        done, _ = await asyncio.wait(running.values(), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            reason = f"deadline {rule.deadline:g}s passed"
            return Waited(seats, running, _cut("deadline", rule), reason, loop.time() - began)
        for task in done:
            i = index_of[task]
            del running[i]
            seats[i] = task.result()
            answered += usable(seats[i])
    return Waited(seats, running, None)


def usable(seat: Seat) -> bool:
    """An answer the quorum counts: ok, and, asked for structured output,
    valid against it (an invalid one is shown, but is no answer to use)."""
    return seat.status == "ok" and (seat.output_check is None or seat.output_check.valid)


def _cut(reason: str, rule: Rule) -> Cut:
    return Cut(
        "quorum" if reason == "quorum" else "deadline",
        quorum=rule.quorum,
        deadline=rule.deadline,
        background=rule.on_cut == "finish",
    )


async def cut_running(
    plan: Plan,
    waited: Waited,
    call_ids: Sequence[str],
    hand: Hand,
    muted: set[str],
    background: list[asyncio.Task[Seat]],
) -> dict[int, Seat]:
    """The seats still answering when the reply may go, each cut with
    the wait's reason: cancelled, each logging its call `cancelled` (error
    `cut: ` and the reason) and handing its own `SeatDone` (`on_cut =
    "cancel"`); or left to finish in the background (`"finish"`), muted,
    with a cancelled seat handed in its place now, its call logged with its
    real outcome later."""
    seats = plan.seating.seats
    out: dict[int, Seat] = {}
    if plan.rule.on_cut == "finish":
        for i, task in waited.running.items():
            planned = seats[i]
            muted.add(planned.label)
            background.append(task)
            out[i] = Seat(
                call_ids[i],
                planned.label,
                planned.model.alias,
                "cancelled",
                waited.seconds,
                error=cut(waited.reason),
                explorer=planned.explorer,
            )
            hand.seat(out[i])
        return out
    for task in waited.running.values():
        task.cancel(cut(waited.reason))
    ended = await asyncio.gather(*waited.running.values(), return_exceptions=True)
    for i, result in zip(waited.running, ended, strict=True):
        if isinstance(result, Seat):
            out[i] = result
            continue
        # Cancelled before its call began: never logged, no id a verdict could name.
        planned = seats[i]
        out[i] = Seat("", planned.label, planned.model.alias, "cancelled", 0.0, error=cut(waited.reason))
        hand.seat(out[i])
    return out
