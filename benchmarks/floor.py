"""The floor: the least a gateway on our stack can do per request, to measure ours against.

A raw Starlette app on uvicorn (uvloop, httptools, as `benchwarmers serve`)
that forwards `POST /v1/chat/completions` to one upstream through **our own
outbound client** (`providers/outbound.py` on `providers/wire.py`, the one
way our model calls reach the network) and hands the reply back, streamed
piece by piece when the client asked to stream. It reads the body as JSON
(orjson, `jsontext`) because our client sends a dict, as every gateway that
looks at the model name must. No routing, no keys, no formats, no store, no
limits: what is left is the HTTP server, the outbound client and the event
loop, which ours pays too.

Until issue 37 the floor used aiohttp's client, which costs about four times
ours per call (`wire.py` says why): against that heavier floor our ratio
read 2.2-2.5x; against this one it is what the stack itself allows.

    .venv/bin/python benchmarks/floor.py --port 8200 --upstream http://127.0.0.1:8100/v1

`vs_litellm.py` starts it in the same run as ours and the peers', on the same
instant upstream (`upstream.py`).
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from benchwarmers import jsontext
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.outbound import OutboundClient

TIMEOUT = 30.0


def make_app(upstream: str) -> Starlette:
    client: OutboundClient | None = None
    url = f"{upstream}/chat/completions"

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal client
        async with OutboundClient() as client:
            yield

    async def chat(request: Request) -> Response:
        assert client is not None
        body = jsontext.loads(await request.body())
        deadline = Deadline.after(TIMEOUT)
        try:
            reply = await client.open("POST", url, body, {}, deadline)
        except BaseException:
            deadline.close()
            raise
        media_type = reply.headers.get("content-type", "application/json")
        if media_type.startswith("text/event-stream"):

            async def pieces() -> AsyncIterator[bytes]:
                try:
                    async for piece in reply.body:
                        yield piece
                finally:
                    reply.release()
                    deadline.close()

            return StreamingResponse(pieces(), status_code=reply.status, media_type=media_type)
        try:
            content = b"".join([piece async for piece in reply.body])
        finally:
            reply.release()
            deadline.close()
        return Response(content, status_code=reply.status, media_type=media_type)

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])], lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="base URL ending in /v1")
    args = parser.parse_args()
    uvicorn.run(
        make_app(args.upstream),
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
