"""Shadow seats: other members answer an agent's turn in the background.

Route mode gives one member the whole conversation, so the others would
never collect a record on the work agents actually do. A collection with
`shadow_seats = N` lets the next N members (in failover order) answer the
same request as the driver, with the same tools, for the record: each is a
call-log row of kind `shadow` that a verdict can name, whose task lists
the tools it would have called. Their replies go nowhere: nothing they ask
for is executed, and the agent never sees them.

They start once the driver has sent its first byte (so a failover never
races a shadow for the same member) and run as tasks of their own: the
agent's turn neither waits for them nor is slowed by them, and a client
that hangs up does not cancel them.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchwarmers.calls.caller import CallContext, Caller
from benchwarmers.calls.reads import set_call_task
from benchwarmers.route.members import Candidate
from benchwarmers.route.record import spawn, turn_task

SHADOW_SEAT = "shadow"


def start_shadows(
    caller: Caller,
    candidates: Sequence[Candidate],
    *,
    collection: str,
    shape: str,
    context: CallContext,
    timeout: float,
) -> tuple[str, ...]:
    """Start one background call per candidate; the aliases started."""
    for candidate in candidates:
        spawn(
            _shadow(caller, candidate, collection=collection, shape=shape, context=context, timeout=timeout),
            name=f"shadow seat {candidate.alias}",
        )
    return tuple(candidate.alias for candidate in candidates)


async def _shadow(
    caller: Caller,
    candidate: Candidate,
    *,
    collection: str,
    shape: str,
    context: CallContext,
    timeout: float,
) -> None:
    shadow_context = CallContext(
        task=turn_task(collection, shape, "shadow seat"),
        collection=context.collection,
        shape=context.shape,
        seat=SHADOW_SEAT,
        ask_id=context.ask_id,
        conversation=context.conversation,
        key=context.key,
    )
    result = await caller.call(
        candidate.model,
        candidate.request,
        kind="shadow",
        timeout=timeout,
        context=shadow_context,
        stream=True,
    )
    if result.reply.tool_calls:
        await set_call_task(
            caller.runtime.store, result.call, turn_task(collection, shape, "shadow seat", result.reply)
        )
