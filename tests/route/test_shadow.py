"""Shadow seats: other members answer the agent's turn in the background,
recorded as calls of kind `shadow` with the tools they would have called,
never delaying or changing the agent's reply."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import anthropic
import httpx

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeToolCall
from tests.waiting import wait_for

from .route_support import call_row, rows

TOOLS: list[dict[str, Any]] = [
    {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
]


def members() -> list[tuple[Any, FakeModel]]:
    return [
        ("openai", FakeModel("driver", tool_calls=[FakeToolCall("Bash", {"command": "make test"})])),
        (
            "gemini",
            FakeModel("shadow", tool_calls=[FakeToolCall("Read", {"file_path": "a"})]),
        ),
        ("ollama", FakeModel("bystander", answer="not asked")),
    ]


def turn(server: Any, session: str) -> tuple[Any, Any]:
    client = anthropic.Anthropic(base_url=server.url, auth_token="gateway-key", max_retries=0)
    with client.messages.stream(
        model="bench/agents:route",
        max_tokens=4096,
        tools=TOOLS,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "run the tests"}],
        metadata={"user_id": session},
    ) as stream:
        return stream.get_final_message(), stream.response.headers


def shadow_rows(server: Any) -> list[dict[str, Any]]:
    return rows(server.home, "SELECT * FROM calls WHERE kind = 'shadow'")


def test_shadow_seats_are_recorded_and_cost_the_agent_nothing(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    collections = {"agents": {"members": ["driver", "shadow", "bystander"], "shadow_seats": 1}}
    with route_server(members(), collections) as server:
        turn(server, "warm-up")  # first-use costs of a fresh server out of the way
        assert wait_for(lambda: len(shadow_rows(server)) == 1)
        # From now on the shadow answers only when the test lets it: whatever
        # the machine's load, the turn can only end first if it did not wait.
        hold = fake_provider.models["shadow"].hold = threading.Event()

        message, headers = turn(server, "session-1")
        recorded_by_then = len(shadow_rows(server))
        hold.set()

        # The agent got the driver's reply, whole, while its shadow was still answering.
        assert recorded_by_then == 1  # the warm-up's shadow only: this turn's is still answering
        assert message.stop_reason == "tool_use"
        assert [(b.type, getattr(b, "name", "")) for b in message.content] == [("tool_use", "Bash")]
        assert headers["x-bench-member"] == "driver"

        route = call_row(server.home, headers["x-bench-call"])
        shadows = wait_for(
            lambda: [r for r in shadow_rows(server) if r["ask_id"] == route["ask_id"] and "Read" in r["task"]]
        )
        (shadow,) = shadows
        assert (shadow["alias"], shadow["status"], shadow["seat"]) == ("shadow", "ok", "shadow")
        assert shadow["conversation"] == route["conversation"]
        assert shadow["task"] == "shadow seat; tool calls: Read (bench/agents, short)"
        # Asked the same turn with the same tools; the bystander beyond the shadow seats never was.
        assert fake_provider.last("shadow").tools == ["Bash", "Read"]
        assert fake_provider.calls["bystander"] == 0
        # The shadow's tool call went nowhere: the conversation is still the driver's.
        (conversation,) = rows(
            server.home, "SELECT alias FROM conversations WHERE key = ?", route["conversation"]
        )
        assert conversation["alias"] == "driver"


def test_shadow_seats_are_off_by_default(route_server: Any, fake_provider: FakeProvider) -> None:
    with route_server(members(), {"agents": {"members": ["driver", "shadow"]}}) as server:
        client = anthropic.Anthropic(base_url=server.url, auth_token="gateway-key", max_retries=0)
        reply = client.messages.with_raw_response.create(
            model="bench/agents:route",
            max_tokens=4096,
            tools=TOOLS,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "run the tests"}],
            metadata={"user_id": "session-2"},
        )
        bench = reply.http_response.json()["bench"]
        assert bench["alias"] == "driver"
        # Shadow seats are chosen and started before the reply is written, and the
        # reply names them: none were, so none can be on their way.
        assert bench["shadows"] == []
        route = call_row(server.home, bench["call"])
        assert route["status"] == "ok"
        assert fake_provider.calls["shadow"] == 0 and shadow_rows(server) == []


def test_a_whole_turn_hung_up_leaves_its_shadow_seats_running(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    """A client that hangs up before a whole turn stops its driver's call
    (`cancelled`), not the shadow seats: they run on, for the record."""
    collections = {"agents": {"members": ["driver", "shadow", "bystander"], "shadow_seats": 1}}
    # A driver that writes text: held after its first piece, past the first byte.
    talker = ("openai", FakeModel("driver", answer="the tests pass, all of them"))
    with route_server([talker, *members()[1:]], collections) as server:
        driver = fake_provider.models["driver"]
        shadow = fake_provider.models["shadow"]
        driver.hold, driver.hold_after = threading.Event(), 1  # the shadow starts at its first byte
        shadow.hold = threading.Event()
        try:
            body = json.dumps(
                {"model": "bench/agents:route", "messages": [{"role": "user", "content": "run the tests"}]}
            ).encode()
            port = httpx.URL(server.url).port
            with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
                raw.sendall(
                    f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                assert wait_for(lambda: fake_provider.calls["shadow"] == 1)
            route = wait_for(
                lambda: rows(server.home, "SELECT * FROM calls WHERE kind = 'route'"), timeout=10
            )
            assert [(r["alias"], r["status"]) for r in route] == [("driver", "cancelled")], route
            assert shadow_rows(server) == []  # still answering, held
            shadow.hold.set()
            (seat,) = wait_for(lambda: shadow_rows(server))
            assert (seat["alias"], seat["status"], seat["ask_id"]) == ("shadow", "ok", route[0]["ask_id"])
        finally:
            driver.hold.set()
            shadow.hold.set()
            driver.hold = driver.hold_after = shadow.hold = None
