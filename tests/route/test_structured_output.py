"""Route mode passes structured output through to the member that answers,
in its own API's form; a member known not to answer in JSON is left off
(or, under the collection's `output_fallback = "prompt"`, asked in its
prompt)."""

from __future__ import annotations

import httpx

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel

from .conftest import RouteServer

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
BODY = {
    "model": "bench/agents:route",
    "messages": [{"role": "user", "content": "how many?"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "count", "schema": SCHEMA}},
}


def test_the_member_is_sent_the_format_in_its_own_form(
    route_server: RouteServer, fake_provider: FakeProvider
) -> None:
    members = [("gemini", FakeModel("g", answer='{"n": 4}'))]
    with route_server(members, {"agents": {"members": ["g"]}}) as server:
        reply = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == '{"n": 4}'
    config = fake_provider.last("g").body["generationConfig"]
    assert config == {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA}


def test_a_member_that_cannot_is_left_off_or_prompted(
    route_server: RouteServer, fake_provider: FakeProvider
) -> None:
    members = [
        ("openai", FakeModel("cannot", answer='{"n": 1}')),
        ("ollama", FakeModel("can", answer='{"n": 2}')),
    ]
    collections = {
        "agents": {"members": ["cannot", "can"]},
        "prompted": {"members": ["cannot"], "output_fallback": "prompt"},
    }
    with route_server(members, collections, {"cannot": {"structured_output": False}}) as server:
        reply = httpx.post(f"{server.url}/v1/chat/completions", json=BODY, timeout=30)
        assert reply.json()["choices"][0]["message"]["content"] == '{"n": 2}'
        assert fake_provider.last("can").body["format"] == SCHEMA
        assert fake_provider.calls["cannot"] == 0
        left_off = reply.json()["bench"]["leftOff"]
        assert left_off[0]["alias"] == "cannot" and left_off[0]["reason"].startswith("no structured output:")
        prompted = httpx.post(
            f"{server.url}/v1/chat/completions", json={**BODY, "model": "bench/prompted:route"}, timeout=30
        )
    assert prompted.json()["choices"][0]["message"]["content"] == '{"n": 1}'
    asked = fake_provider.last("cannot")
    assert "response_format" not in asked.body and '"required":["n"]' in asked.system
