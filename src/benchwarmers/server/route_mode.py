"""Route mode's HTTP glue, shared by the chat completions and Messages routes.

The route has already read the body into an `Ask` (mode `route`). Here
`core.RouteMode` checks the collection and the identity's key, then picks
the member and waits for its first byte, failing over as needed, *before*
the response starts: so a turn whose every member failed is a plain error
reply in the caller's format (429 when all were rate limited, 502 else),
and a response that starts can already name its call id in the
`x-bench-call` header (and the member in `x-bench-member`).

Streamed turns pass the member's pieces through as they arrive; whole ones
gather them first (and so can replace even a member that failed
mid-reply). A client that hangs up before a whole one, or before a
stream's first byte, stops its member's call, as a panel's client stops
its seats (`client_left`); once a stream has started, the server's
disconnect listener does (`server/streaming.py`). The
conversation key may come as the `x-bench-conversation` header, ahead of
anything in the body; an agent's own session header
(`x-claude-code-session-id`, Codex's `session_id`) comes next, ahead of a
session id in the body (`route/conversation.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from fastapi import Request
from fastapi.responses import Response

from benchwarmers.core import AGENT_SESSION_HEADERS, CONVERSATION_HEADER, RouteTurn
from benchwarmers.formats.bench_json import route_json
from benchwarmers.formats.registry import RouteRenderer
from benchwarmers.server.deps import headers_of, route_mode_of
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.streaming import stream_response
from benchwarmers.types import Ask

CALL_HEADER = "x-bench-call"
MEMBER_HEADER = "x-bench-member"
_HEADERS = (CONVERSATION_HEADER, *AGENT_SESSION_HEADERS)


async def route_response(
    request: Request, ask: Ask, fmt: RouteRenderer, *, stream_headers: Mapping[str, str]
) -> Response:
    route = route_mode_of(request)
    headers = headers_of(request, _HEADERS)
    conversation = headers.get(CONVERSATION_HEADER, "")
    session = next(filter(None, map(headers.get, AGENT_SESSION_HEADERS)), "")
    if session:  # the agent's own session id: the client's key, ahead of any in the body
        ask = dataclasses.replace(ask, conversation=session)
    if ask.stream:
        turn = await route.start(ask, conversation=conversation, left=client_left(request.scope))
        bench = route_json(turn.bench())

        def costed() -> None:  # the turn ended: the events written after it carry its cost
            bench.update(route_json(turn.bench()))

        return stream_response(
            fmt.render_route_stream(turn.chunks(costed), ask, bench),
            fmt.MEDIA_TYPE_STREAM,
            {**stream_headers, **_call_headers(turn)},
        )
    turn, reply = await route.answer(ask, conversation=conversation, left=client_left(request.scope))
    bench = route_json(turn.bench())
    return JSONResponse(fmt.render_route_reply(reply, ask, bench), headers=_call_headers(turn))


def _call_headers(turn: RouteTurn) -> dict[str, str]:
    return {CALL_HEADER: turn.call, MEMBER_HEADER: turn.alias}
