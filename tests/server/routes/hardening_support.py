"""What the hardening tests share: the bench they run against, the shape of
an error in each API format, and a look into the live server's store.

The bench (`start_bench`): a fake provider behind one endpoint per API kind,
a model on each (`alpha` openai, `beta` anthropic, `gamma` gemini, `delta`
ollama), a `slow` one, and collections `trio` (alpha, beta, gamma), `duo`
(alpha, beta: for route mode) and `lagging` (alpha + slow: a stream whose
first seat is done well before its last), and `only-<api>` with the one
model on that API's endpoint, `only-trickle` (one model streaming
slowly); bodies are limited to 1 MB and
a gateway key is limited to `trio`.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from benchwarmers.formats.errors import format_for_path
from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import SQLITE_FILE
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.settings import MAX_BODY_MB, Settings
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server, settle_logs

FUZZ = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# alias -> API kind of its endpoint.
MEMBERS = {"alpha": "openai", "beta": "anthropic", "gamma": "gemini", "delta": "ollama"}
SLOW_SECONDS = 0.8

# JSON-ish values, NaN and huge numbers included (Python's reader takes them).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(2**64), 2**53 + 1, -1, 0])
    | st.floats()
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
# Text that reaches a path segment or a query value: anything printable and
# then some (slashes, percent signs, NULs, non-ASCII).
odd_text = st.text(max_size=24) | st.sampled_from(
    ["", " ", "..", "%00", "bench/", "bench/trio", "trio", "alpha", "-1", "1e400", "😀", "a" * 300]
)


def perturbed(value: Any) -> st.SearchStrategy[Any]:
    """`value`, or a near miss of it: a key may go missing or hold anything,
    a list may grow, shrink or hold anything."""
    if isinstance(value, dict):
        shaped = st.fixed_dictionaries({}, optional={k: perturbed(v) for k, v in value.items()})
        return st.one_of(shaped, json_values)
    if isinstance(value, list) and value:
        return st.one_of(st.lists(perturbed(value[0]), max_size=3), json_values)
    return st.one_of(st.just(value), json_values)


def as_bytes(value: Any) -> bytes:
    """JSON text as Python writes it (NaN and Infinity included: a client
    built on Python's `json` sends exactly that)."""
    return json.dumps(value).encode()


# ----------------------------------------------------------- error shapes


def shaped_like(fmt: str, status: int, body: Any) -> bool:
    """Whether `body` is an error in format `fmt`, as that API's own client reads it."""
    if not isinstance(body, dict):
        return False
    if fmt == "ollama":
        return isinstance(body.get("error"), str) and bool(body["error"])
    if fmt == "anthropic":
        error = body.get("error") or {}
        return (
            body.get("type") == "error" and isinstance(error.get("type"), str) and bool(error.get("message"))
        )
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("message"), str) or not error["message"]:
        return False
    if fmt == "jsonrpc":
        return body.get("jsonrpc") == "2.0" and isinstance(error.get("code"), int) and "id" in body
    if fmt == "gemini":
        return error.get("code") == status and isinstance(error.get("status"), str)
    return isinstance(error.get("type"), str)


def check_reply(reply: httpx.Response, path: str, sent: Any = None) -> None:
    """Never a 5xx; a 4xx is JSON in the format of `path`."""
    where = (reply.request.method, path, repr(sent)[:300], reply.status_code, reply.text[:300])
    assert reply.status_code < 500, where
    if reply.status_code >= 400:
        assert reply.headers.get("content-type", "").startswith("application/json"), where
        assert shaped_like(format_for_path(path.split("?")[0]), reply.status_code, reply.json()), where


# ------------------------------------------------------------ the store


def rows(home: Path, sql: str, *args: Any) -> list[dict[str, Any]]:
    settle_logs()  # replies do not wait for their calls' commit
    with sqlite3.connect(home / SQLITE_FILE, timeout=10) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(sql, args)]


@dataclass(frozen=True)
class Snapshot:
    """What "loses nothing" compares: every call and every verdict."""

    calls: frozenset[tuple[str, str, str]]  # id, kind, status
    verdicts: frozenset[tuple[str, int, str]]  # call id, useful, note

    @classmethod
    def of(cls, home: Path) -> Snapshot:
        calls = rows(home, "SELECT id, kind, status FROM calls")
        verdicts = rows(home, "SELECT call_id, useful, note FROM verdicts")
        return cls(
            frozenset((c["id"], c["kind"], c["status"]) for c in calls),
            frozenset((v["call_id"], v["useful"], v["note"]) for v in verdicts),
        )


# ------------------------------------------------------------- the bench


@dataclass
class Bench:
    server: LiveServer
    fake: FakeProvider
    trio_key: str  # a gateway key limited to the collection `trio`

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def home(self) -> Path:
        return self.server.home

    @contextmanager
    def slow_held(self, *, started: bool = False) -> Iterator[None]:
        """The `slow` seat answers only after the block (the fake's hold):
        still running for exactly as long as a test needs, whatever the clock.
        `started`: its reply's head is sent first and the hold is inside its
        stream, so the fake sees ("closed", "slow") when its caller hangs up."""
        slow = self.fake.models["slow"]
        slow.hold = threading.Event()
        if started:
            slow.hold_after = 0
        try:
            yield
        finally:
            slow.hold.set()
            slow.hold = None
            slow.hold_after = None


async def _register(home: Path, fake: FakeProvider) -> str:
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await Settings(store).set(MAX_BODY_MB, 1)
        for api in ("openai", "anthropic", "gemini", "ollama"):
            await add_endpoint(store, f"fake-{api}", fake.base_for(api), api, needs_key=False)
        for alias, api in MEMBERS.items():
            fake.add(FakeModel(alias, answer=f"{alias} says four"))
            await add_model(store, alias, f"fake-{api}", alias, vision=True, context_window=100_000)
        fake.add(FakeModel("slow", answer="slow says four", latency=SLOW_SECONDS))
        await add_model(store, "slow", "fake-openai", "slow", context_window=100_000)
        await add_collection(store, "trio", ["alpha", "beta", "gamma"])
        await add_collection(store, "duo", ["alpha", "beta"])
        await add_collection(store, "lagging", ["alpha", "slow"])
        # Streams its 40 words over about a second: a route turn still in flight.
        fake.add(FakeModel("trickle", answer=" ".join(["word"] * 40), tokens_per_second=40))
        await add_model(store, "trickle", "fake-openai", "trickle", context_window=100_000)
        await add_collection(store, "only-trickle", ["trickle"])
        for alias, api in MEMBERS.items():  # one member each: route mode through each API's adapter
            await add_collection(store, f"only-{api}", [alias])
        _info, secret = await create_key(store, "trio-only", collections=("trio",))
    return secret


def start_bench(home: Path, *, acting_as: str = "127.0.0.1") -> Iterator[Bench]:
    """The bench; `acting_as="0.0.0.0"` makes it believe it listens beyond
    loopback (gateway keys required)."""
    with FakeProvider() as fake:
        # Its own loop in its own thread: an async test's loop may be running.
        with ThreadPoolExecutor(1) as pool:
            secret = pool.submit(asyncio.run, _register(home, fake)).result()
        with live_server(home, acting_as=acting_as) as server:
            yield Bench(server, fake, secret)


def ask_body(collection: str = "trio", prompt: str = "what is 2+2?", **extra: Any) -> dict[str, Any]:
    return {"model": f"bench/{collection}", "messages": [{"role": "user", "content": prompt}], **extra}


FORMATS = ("chat", "responses", "messages", "gemini", "ollama")


def format_request(fmt: str, model: str, stream: bool, prompt: str = "hi") -> tuple[str, dict[str, Any]]:
    """(path, body) of one ask for `model` in one of `FORMATS`, as its
    official client would send it."""
    messages = [{"role": "user", "content": prompt}]
    if fmt == "chat":
        return "/v1/chat/completions", {"model": model, "messages": messages, "stream": stream}
    if fmt == "responses":
        return "/v1/responses", {"model": model, "input": prompt, "stream": stream}
    if fmt == "messages":
        return "/v1/messages", {"model": model, "max_tokens": 50, "messages": messages, "stream": stream}
    if fmt == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        contents = [{"role": "user", "parts": [{"text": prompt}]}]
        return f"/v1beta/models/{model}:{method}", {"contents": contents}
    if fmt == "ollama":
        return "/api/chat", {"model": model, "messages": messages, "stream": stream}
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def seat_calls(client: httpx.Client, collection: str = "trio") -> list[str]:
    """Ask a panel (OpenAI format) and return its seats' call ids."""
    reply = client.post("/v1/chat/completions", json=ask_body(collection))
    assert reply.status_code == 200, reply.text
    return [seat["call"] for seat in reply.json()["bench"]["seats"] if seat["call"]]


def raw_http(port: int, head: str, body: bytes = b"", *, timeout: float = 10) -> tuple[int, bytes]:
    """Send a hand-written request (what httpx will not send: a lying
    Content-Length, bytes after the body) and read the first reply's status
    and body. Status 0: the server closed the connection without a reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode("latin-1") + b"\r\n" + body)
        reply = b""
        while True:
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not data:
                break
            reply += data
            top, found, rest = reply.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", top)
            if found and length and len(rest) >= int(length.group(1)):
                reply = top + found + rest[: int(length.group(1))]
                break
    if not reply:
        return 0, b""
    top, _, rest = reply.partition(b"\r\n\r\n")
    return int(top.split(b" ", 2)[1]), rest


# Every POST route of the app with a body it takes (the ops routes' bodies
# change nothing that matters here: an unknown endpoint, the scheduler off).
_RPC = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
_ASK_TOOL = {**_RPC, "params": {"name": "ask", "arguments": {"collection": "trio", "prompt": "hi"}}}
POST_ROUTES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": ask_body(temperature=0.5, max_tokens=20),
    "/v1/responses": {"model": "bench/trio", "input": "hi", "temperature": 0.5, "max_output_tokens": 20},
    "/v1/messages": {
        "model": "bench/trio",
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "/v1/messages/count_tokens": {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]},
    "/v1beta/models/bench/trio:generateContent": {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"temperature": 0.5, "maxOutputTokens": 20},
    },
    "/v1beta/models/bench/trio:countTokens": {"contents": [{"parts": [{"text": "hi"}]}]},
    "/v1/models/bench/trio:generateContent": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    "/api/chat": {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}], "stream": False},
    "/api/generate": {
        "model": "bench/trio",
        "prompt": "hi",
        "stream": False,
        "options": {"temperature": 0.5},
    },
    "/api/show": {"model": "bench/trio"},
    "/bench/verdict": {"call": "c_none", "useful": True, "note": "n"},
    "/bench/pending": {"calls": ["c_none"]},
    "/bench/ops/onboard": {"endpoint": "no-such-endpoint", "models": ["m"], "mode": "full"},
    "/bench/ops/scheduler": {"enabled": False},
    "/bench/ops/models/no-such-model/role": {"role": "coder"},
    "/mcp": _ASK_TOOL,
    "/v1/mcp": {**_RPC, "params": {"name": "verdict", "arguments": {"call": "c_none", "useful": True}}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def headers_for(path: str) -> dict[str, str]:
    extra = MCP_HEADERS if path.endswith("/mcp") else {}
    return {"content-type": "application/json", **extra}
