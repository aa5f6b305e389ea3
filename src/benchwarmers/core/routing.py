"""Route mode, for one identity: one member drives each turn of an agent's
conversation (`bench/<collection>:route`).

    route = RouteMode(runtime, identity)     # server: deps.route_mode_of(request)
    turn = await route.start(ask, conversation=header)    # a member's first byte is in
    async for chunk in turn.chunks(): ...
    turn, reply = await route.answer(ask)                  # a whole turn

Its rule is the panels' rule: the collection must exist and the identity's
key must cover it (`Panels.collection`), checked before any member is
asked; the view so checked is the one the engine routes over. Who answers,
stickiness and failover are the route engine's (`route/engine.py`); the
HTTP glue (headers, the response) is the server's (`server/route_mode.py`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from benchwarmers.core.panels import Panels
from benchwarmers.identity.scope import OWNER, Identity
from benchwarmers.route.conversation import AGENT_SESSION_HEADERS, CONVERSATION_HEADER
from benchwarmers.route.engine import RouteEngine, RouteTurn
from benchwarmers.store import space
from benchwarmers.types import Ask, Reply

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

__all__ = ["AGENT_SESSION_HEADERS", "CONVERSATION_HEADER", "RouteMode", "RouteTurn"]


class RouteMode:
    """One identity's route-mode turns, over one open runtime."""

    def __init__(self, runtime: Runtime, identity: Identity = OWNER) -> None:
        self.runtime = runtime
        self.identity = identity

    async def start(
        self, ask: Ask, *, conversation: str = "", left: asyncio.Future[None] | None = None
    ) -> RouteTurn:
        """A turn whose member has sent its first byte (failing over until
        one does); `conversation` is the client's `x-bench-conversation`.
        `left`: done when the client has gone before that byte: the member's
        call is cancelled, logged `cancelled`, and this raises `errors.Left` (499)."""
        panels = Panels(self.runtime, self.identity)
        collection = await panels.collection(ask.collection)
        panels.pay()
        space.ensure_room(self.runtime.store)
        return await RouteEngine(self.runtime).start(
            ask, header=conversation, collection=collection, gateway_key=panels.key, left=left
        )

    async def answer(
        self, ask: Ask, *, conversation: str = "", left: asyncio.Future[None] | None = None
    ) -> tuple[RouteTurn, Reply]:
        """A whole turn, for a client that did not stream (a member failing
        mid-reply is replaced too). `left`: done when the client has gone
        (hung up) before the reply: the member's call is cancelled, logged
        `cancelled`, and this raises `errors.Left` (499)."""
        panels = Panels(self.runtime, self.identity)
        collection = await panels.collection(ask.collection)
        panels.pay()
        space.ensure_room(self.runtime.store)
        return await RouteEngine(self.runtime).answer(
            ask, header=conversation, collection=collection, gateway_key=panels.key, left=left
        )
