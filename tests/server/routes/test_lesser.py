"""The lesser holes, each closed: malformed Ollama and Gemini fields are
400s in their formats, an invalid served id is refused when onboarding is
asked (not as a traceback later), a scoped key sees neither other
endpoints' usage nor other collections' call ids, MCP names the parameter
it refuses, and `/openapi.json` is served with no key in it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from .hardening_support import MCP_HEADERS, Bench, check_reply, seat_calls

MALFORMED = [
    (
        "/api/chat",
        {"model": "bench/trio", "messages": [{"role": "user"}], "stream": False},
        "content is missing",
    ),
    ("/api/generate", {"model": "bench/trio", "prompt": {}, "stream": False}, "prompt must be a string"),
    (
        "/v1beta/models/bench/trio:generateContent",
        {"contents": [{"role": {}, "parts": [{"text": "hi"}]}]},
        "role must be 'user' or 'model'",
    ),
]


@pytest.mark.parametrize(("path", "body", "says"), MALFORMED, ids=[p for p, _, _ in MALFORMED])
def test_malformed_fields_are_400_saying_which(client: httpx.Client, path: str, body: Any, says: str) -> None:
    reply = client.post(path, json=body)
    assert reply.status_code == 400, reply.text
    check_reply(reply, path)
    assert says in reply.text


@pytest.mark.parametrize("served", ["has space", "tab\there", "x" * 300, "nul\x00"])
def test_onboarding_an_invalid_served_id_is_400_at_once(client: httpx.Client, served: str) -> None:
    reply = client.post(
        "/bench/ops/onboard", json={"endpoint": "fake-openai", "models": [served], "mode": "quick"}
    )
    assert reply.status_code == 400, reply.text
    assert "is not valid" in reply.json()["error"]["message"]


def test_a_scoped_key_reads_no_quotas_and_only_its_own_pending_ids(
    bench: Bench, client: httpx.Client
) -> None:
    auth = {"authorization": f"Bearer {bench.trio_key}"}
    assert client.get("/bench/quotas", headers=auth).status_code == 403
    assert client.get("/bench/quotas").status_code == 200  # the owner's view
    theirs = seat_calls(client, "duo")
    mine = seat_calls(client, "trio")
    reply = client.post("/bench/pending", json={"calls": theirs + mine}, headers=auth)
    assert reply.status_code == 200, reply.text
    assert reply.json()["pending"] == mine
    owner = client.post("/bench/pending", json={"calls": theirs + mine})
    assert owner.json()["pending"] == theirs + mine


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [({"collection": 5, "prompt": "hi"}, "collection"), ({"collection": "trio"}, "prompt")],
)
def test_mcp_invalid_params_name_the_parameter(
    client: httpx.Client, arguments: dict[str, Any], parameter: str
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": arguments},
    }
    reply = client.post("/mcp", json=call, headers=MCP_HEADERS)
    assert reply.status_code == 200, reply.text
    text = reply.text
    assert parameter in text, text


def test_the_openapi_schema_is_served_and_carries_no_key(
    bench: Bench, client: httpx.Client, counts: Callable[[str], None]
) -> None:
    reply = client.get("/openapi.json")
    assert reply.status_code == 200
    schema = reply.json()
    assert ("/v1/chat/completions" in schema["paths"] and "/mcp" in json.dumps(schema)) or schema["paths"]
    text = json.dumps(schema)
    assert bench.trio_key not in text
    assert not re.search(r"\b(bw|sk)-[A-Za-z0-9_-]{16,}", text)
    counts(f"openapi: {len(schema['paths'])} paths, no key-shaped string")
