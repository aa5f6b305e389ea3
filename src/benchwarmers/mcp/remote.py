"""The MCP tools' backend for `benchwarmers mcp` (stdio): a running server,
over its HTTP API.

Going through the server rather than opening the data folder here keeps
one process in charge of limits, the guard and the call log, and lets the
stdio transport reach a server on another machine. It speaks through
`api_client.ApiClient` (the CLI's client too), which reads the panel's
seats and `bench` object back into typed values, so every failure is one
`UserError` line the tool shows the agent: no server answering, no answer
in time, or the server's own 4xx message.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from benchwarmers import client_env
from benchwarmers.api_client import ApiClient
from benchwarmers.client_env import DEFAULT_TIMEOUT, DEFAULT_URL
from benchwarmers.errors import UserError
from benchwarmers.mcp.backend import PanelWatch
from benchwarmers.types import Ask, PanelReply, Seat


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

    def _api(self) -> ApiClient:
        return ApiClient(self.url, self.key, self.timeout)

    async def collections(self) -> list[dict[str, Any]]:
        async with self._api() as api:
            listing = await api.get("/v1/models")
        data: list[dict[str, Any]] = listing.get("data", [])
        return data

    async def ask(self, ask: Ask, watch: PanelWatch) -> PanelReply:
        async with self._api() as api, aclosing(api.panel(ask)) as answers:
            async for answer in answers:
                if isinstance(answer, Seat):
                    watch.seat_done(answer)
                elif isinstance(answer, PanelReply):
                    return answer
        raise UserError(f"the server at {self.url} ended the panel's stream without its seats")

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        async with self._api() as api:
            answer = await api.post("/bench/verdict", body)
        recorded: dict[str, Any] = answer["recorded"]
        return recorded

    async def pending(self, calls: list[str]) -> list[str]:
        async with self._api() as api:
            answer = await api.post("/bench/pending", {"calls": calls})
        found: list[str] = answer["pending"]
        return found
