"""The floor: the least a Python gateway can do per request, to measure ours against.

A raw Starlette app on uvicorn (uvloop, httptools, as `benchwarmers serve`)
that forwards `POST /v1/chat/completions` to one upstream through one pooled
aiohttp session and hands the reply back, streamed piece by piece when the
client asked to stream. No routing, no keys, no formats, no store, no
limits: what is left is the HTTP server, the outbound client and the event
loop, which any gateway written this way pays too.

    .venv/bin/python benchmarks/floor.py --port 8200 --upstream http://127.0.0.1:8100/v1

`vs_litellm.py` starts it in the same run as ours and LiteLLM's, on the same
instant upstream (`upstream.py`).
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


def make_app(upstream: str) -> Starlette:
    session: aiohttp.ClientSession | None = None

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal session
        connector = aiohttp.TCPConnector(limit=1000, limit_per_host=1000)
        async with aiohttp.ClientSession(connector=connector) as session:
            yield

    async def chat(request: Request) -> Response:
        assert session is not None
        body = await request.body()
        headers = {"content-type": "application/json"}
        upstream_reply = await session.post(f"{upstream}/chat/completions", data=body, headers=headers)
        media_type = upstream_reply.headers.get("content-type", "application/json")
        if media_type.startswith("text/event-stream"):

            async def pieces() -> AsyncIterator[bytes]:
                async with upstream_reply:
                    async for chunk in upstream_reply.content.iter_any():
                        yield chunk

            return StreamingResponse(pieces(), media_type=media_type)
        async with upstream_reply:
            content = await upstream_reply.read()
        return Response(content, status_code=upstream_reply.status, media_type=media_type)

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
