"""The MCP tools' backend for `benchwarmers mcp` (stdio): a running server,
over its HTTP API.

Going through the server rather than opening the data folder here keeps
one process in charge of limits, the guard and the call log, and lets the
stdio transport reach a server on another machine. Every failure becomes
one `UserError` line the tool shows the agent: no server answering, no
answer in time, or the server's own 4xx message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from benchwarmers import client_env
from benchwarmers.client_env import DEFAULT_TIMEOUT, DEFAULT_URL, TIMEOUT_ENV
from benchwarmers.errors import UserError
from benchwarmers.formats.base import model_name
from benchwarmers.mcp.backend import PanelWatch
from benchwarmers.types import Ask

CONNECT_TIMEOUT = 5.0


class HttpBackend:
    # `benchwarmers mcp` runs as the agent's user, on the agent's machine: its own files.
    reads_transcripts = True

    def __init__(self, url: str = DEFAULT_URL, key: str = "", timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout

    @classmethod
    def from_environment(cls) -> HttpBackend:
        """`BENCHWARMERS_URL`, `BENCHWARMERS_KEY`, `BENCHWARMERS_TIMEOUT` (`client_env`)."""
        return cls(
            url=client_env.server_url(), key=client_env.server_key(), timeout=client_env.server_timeout()
        )

    async def collections(self) -> list[dict[str, Any]]:
        async with self._session() as client:
            listing = _json_or_error(await client.get("/v1/models"))
        data: list[dict[str, Any]] = listing.get("data", [])
        return data

    async def ask(self, ask: Ask, watch: PanelWatch) -> dict[str, Any]:
        messages = [{"role": "user", "content": ask.request.last_user_text}]
        if ask.request.system:
            messages.insert(0, {"role": "system", "content": ask.request.system})
        body: dict[str, Any] = {
            "model": model_name(ask.collection, ask.mode),
            "messages": messages,
            "stream": True,
        }
        if ask.extra_aliases:
            body["bench"] = {"with": list(ask.extra_aliases)}
        # The whole panel within the timeout, not only each read: seats stream in slowly.
        async with (
            self._session() as client,
            asyncio.timeout(self.timeout),
            client.stream("POST", "/v1/chat/completions", json=body) as reply,
        ):
            if reply.status_code >= 400:
                await reply.aread()
                _json_or_error(reply)
            async for line in reply.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[len("data: ") :])
                if "bench_seat" in chunk:
                    watch.answered.append(chunk["bench_seat"])
                if "bench" in chunk:
                    bench: dict[str, Any] = chunk["bench"]
                    return bench
        raise UserError(f"the server at {self.url} ended the panel's stream without its seats")

    async def verdict(self, call: str, useful: bool, note: str) -> dict[str, Any]:
        async with self._session() as client:
            body = {"call": call, "useful": useful, "note": note}
            recorded: dict[str, Any] = _json_or_error(await client.post("/bench/verdict", json=body))[
                "recorded"
            ]
        return recorded

    async def pending(self, calls: list[str]) -> list[str]:
        async with self._session() as client:
            found: list[str] = _json_or_error(await client.post("/bench/pending", json={"calls": calls}))[
                "pending"
            ]
        return found

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[httpx.AsyncClient]:
        headers = {"authorization": f"Bearer {self.key}"} if self.key else {}
        timeout = httpx.Timeout(self.timeout, connect=CONNECT_TIMEOUT)
        try:
            async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout) as client:
                yield client
        except httpx.ConnectError:
            raise UserError(client_env.no_server(self.url)) from None
        except (httpx.TimeoutException, TimeoutError):
            raise UserError(
                f"the server at {self.url} did not answer within {self.timeout:g} s ({TIMEOUT_ENV}); "
                "the panel still finishes there and its seats are recorded"
            ) from None
        except httpx.HTTPError as exc:
            raise UserError(f"talking to the server at {self.url} failed: {exc}") from None


def _json_or_error(response: httpx.Response) -> dict[str, Any]:
    """The reply's JSON object, or the server's own error message as a UserError."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        raise UserError(f"the server said {response.status_code}: {_error_message(body, response.text)}")
    if not isinstance(body, dict):
        raise UserError(f"the server at {response.request.url} did not answer with a JSON object")
    return body


def _error_message(body: Any, text: str) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text.strip()[:300] or "no message"
