"""The one client of our own HTTP API: what `benchwarmers ask`/`verdict`
and `benchwarmers mcp` (stdio) speak to a running server, so they read
its replies, its errors and its streams the same way.

    async with ApiClient.from_environment() as api:     # client_env: URL, key, timeout
        listing = await api.get("/v1/models")
        async for chunk in api.events("/v1/chat/completions", body): ...
        async for answer in api.panel(ask): ...   # the `PanelStarted`, each `Seat`, then the `PanelReply`

Every failure is one `UserError` line: `NoServer` when nothing answers at
the URL (the CLI then runs in-process), no whole answer within the
timeout (`BENCHWARMERS_TIMEOUT`: the stream closed, the server stops the
panel, its seats still answering cancelled, as for any client hanging up),
or the server's own 4xx message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from types import TracebackType
from typing import Any

import httpx

from benchwarmers import client_env
from benchwarmers.config import tunables
from benchwarmers.errors import UserError
from benchwarmers.formats.base import model_name
from benchwarmers.formats.bench_json import read_panel, read_seat, read_started
from benchwarmers.types import Ask, PanelReply, PanelStarted, Seat

CONNECT_TIMEOUT = tunables.CONNECT_TIMEOUT.value


class NoServer(UserError):
    """Nothing answers at the server's URL."""


class ApiClient:
    def __init__(
        self,
        url: str = client_env.DEFAULT_URL,
        key: str = "",
        timeout: float = client_env.DEFAULT_TIMEOUT,
    ) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT)
        )

    @classmethod
    def from_environment(cls) -> ApiClient:
        """`BENCHWARMERS_URL`, `BENCHWARMERS_KEY`, `BENCHWARMERS_TIMEOUT` (`client_env`)."""
        return cls(client_env.server_url(), client_env.server_key(), client_env.server_timeout())

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._http.aclose()

    async def get(self, path: str) -> dict[str, Any]:
        """The JSON object a GET answers."""
        try:
            return json_or_error(await self._http.get(path))
        except (httpx.HTTPError, TimeoutError) as exc:
            raise self._failure(exc) from None

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON object a POST of `body` answers."""
        try:
            return json_or_error(await self._http.post(path, json=body))
        except (httpx.HTTPError, TimeoutError) as exc:
            raise self._failure(exc) from None

    async def events(self, path: str, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """POST `body` and yield each event of the SSE reply (its `data:`
        JSON), the whole stream within the timeout (seats stream in slowly)."""
        try:
            async with (
                asyncio.timeout(self.timeout),
                self._http.stream("POST", path, json=body) as reply,
            ):
                if reply.status_code >= 400:
                    await reply.aread()
                    json_or_error(reply)
                async for event in sse_data(reply.aiter_lines()):
                    yield event
        except (httpx.HTTPError, TimeoutError) as exc:
            raise self._failure(exc) from None

    async def panel(self, ask: Ask) -> AsyncGenerator[PanelStarted | Seat | PanelReply, None]:
        """Ask a panel over `POST /v1/chat/completions`, streamed, read back
        into typed values (`bench_json`, strictly): the seats as planned first
        (the role chunk's `bench_started`; a server older than it sends none),
        a `Seat` as each seat finishes (a chunk's `bench_seat`), the whole
        `PanelReply` last (the last chunk's `bench`). A stream that ends
        without it is a `UserError`."""
        messages = [{"role": "user", "content": ask.request.last_user_text}]
        if ask.request.system:
            messages.insert(0, {"role": "system", "content": ask.request.system})
        body: dict[str, Any] = {
            "model": model_name(ask.collection, ask.mode),
            "messages": messages,
            "stream": True,
        }
        bench: dict[str, Any] = {}
        if ask.extra_aliases:
            bench["with"] = list(ask.extra_aliases)
        if ask.quorum:
            bench["quorum"] = ask.quorum
        if ask.deadline:
            bench["deadline"] = ask.deadline
        if bench:
            body["bench"] = bench
        answered = False
        async with aclosing(self.events("/v1/chat/completions", body)) as chunks:
            async for chunk in chunks:
                if "bench_started" in chunk:
                    yield read_started(chunk["bench_started"])
                if "bench_seat" in chunk:
                    yield read_seat(chunk["bench_seat"])
                if "bench" in chunk:
                    answered = True
                    yield read_panel(chunk["bench"])
        if not answered:
            raise UserError(f"the server at {self.url} ended the panel's stream without its seats")

    def _failure(self, exc: BaseException) -> UserError:
        if isinstance(exc, httpx.ConnectError):
            return NoServer(client_env.no_server(self.url))
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return UserError(
                f"the server at {self.url} did not answer within {self.timeout:g} s "
                f"({client_env.TIMEOUT_ENV}); the panel stopped there: the seats that had answered "
                "are recorded, those still answering cancelled"
            )
        return UserError(f"talking to the server at {self.url} failed: {exc}")


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of an SSE stream's `data:` lines (our streams put one
    JSON object on each; `[DONE]` ends an OpenAI-style stream)."""
    async for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            event = json.loads(line[len("data: ") :])
            if isinstance(event, dict):
                yield event


def json_or_error(response: httpx.Response) -> dict[str, Any]:
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
