"""Stickiness and failover: a conversation stays with its member across
turns and a restart; a member that fails before its first byte (500, 429,
no first byte in time) is replaced for the turn and for the turns after."""

from __future__ import annotations

import threading
from typing import Any

import openai
import pytest
from sqlalchemy import event

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel, RateLimit

from .route_support import call_row, rows

AGENTS = {"agents": {"members": ["alpha", "beta"]}}


def two_members() -> list[tuple[Any, FakeModel]]:
    return [
        ("openai", FakeModel("alpha", answer="alpha answers")),
        ("anthropic", FakeModel("beta", answer="beta answers")),
    ]


def client(server: Any, conversation: str | None = None) -> openai.OpenAI:
    headers = {"x-bench-conversation": conversation} if conversation else None
    return openai.OpenAI(
        base_url=f"{server.url}/v1", api_key="gateway-key", max_retries=0, default_headers=headers
    )


def ask(agent: openai.OpenAI, messages: list[dict[str, Any]]) -> Any:
    return agent.chat.completions.create(model="bench/agents:route", messages=messages)  # type: ignore[arg-type]


@pytest.mark.parametrize("fault", ["500", "429"])
def test_a_failing_member_is_replaced_and_keeps_being_replaced(
    route_server: Any, fake_provider: FakeProvider, fault: str
) -> None:
    with route_server(two_members(), AGENTS) as server:
        agent = client(server, conversation="ticket-7")
        assert ask(agent, [{"role": "user", "content": "one"}]).model_extra["bench"]["alias"] == "alpha"

        alpha = fake_provider.models["alpha"]
        if fault == "500":
            alpha.error = FakeError(500, "alpha broke")
        else:
            alpha.rate_limit = RateLimit("retry-after", retry=30)
        second = ask(agent, [{"role": "user", "content": "two"}])
        assert second.choices[0].message.content == "beta answers"
        bench = second.model_extra["bench"]
        assert bench["alias"] == "beta"
        (failed,) = bench["failover"]
        assert failed["alias"] == "alpha"
        assert failed["status"] == ("error" if fault == "500" else "rate_limited")
        failed_row, answered_row = call_row(server.home, failed["call"]), call_row(server.home, bench["call"])
        assert (failed_row["kind"], failed_row["status"]) == ("route", failed["status"])
        assert failed_row["ask_id"] == answered_row["ask_id"]  # one turn, two attempts

        alpha.error, alpha.rate_limit = None, None  # alpha is well again: beta keeps the conversation
        assert ask(agent, [{"role": "user", "content": "three"}]).model_extra["bench"]["alias"] == "beta"
        assert fake_provider.calls["alpha"] == 2 and fake_provider.calls["beta"] == 2

        (conversation,) = rows(server.home, "SELECT key, alias FROM conversations")
        turns = rows(
            server.home,
            "SELECT count(*) AS n FROM calls WHERE kind = 'route' AND status = 'ok' AND conversation = ?",
            conversation["key"],
        )
        assert (conversation["alias"], turns[0]["n"]) == ("beta", 3)


def test_a_turn_that_keeps_its_member_reads_no_stickiness_from_the_store(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    with route_server(two_members(), AGENTS) as server:
        agent = client(server, conversation="ticket-9")
        assert ask(agent, [{"role": "user", "content": "one"}]).model_extra["bench"]["alias"] == "alpha"
        sent: list[str] = []

        def note(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            sent.append(statement)

        engine = server.runtime.store.engine.sync_engine
        event.listen(engine, "before_cursor_execute", note)
        try:
            for turn in ("two", "three"):
                reply = ask(agent, [{"role": "user", "content": turn}])
                assert reply.model_extra["bench"]["alias"] == "alpha"
        finally:
            event.remove(engine, "before_cursor_execute", note)
        assert not [s for s in sent if "conversations" in s]
        (conversation,) = rows(server.home, "SELECT alias FROM conversations")
        assert conversation["alias"] == "alpha"


def test_the_conversation_sticks_across_a_restart(route_server: Any, fake_provider: FakeProvider) -> None:
    """No header, no client id: the conversation is known by its opening
    (system prompt and first user message), which an agent resends."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "fix the bug"},
    ]
    with route_server(two_members(), AGENTS) as server:
        alpha = fake_provider.models["alpha"]
        alpha.error = FakeError(500, "alpha broke")
        first = ask(client(server), history)
        assert first.model_extra["bench"]["alias"] == "beta"
        alpha.error = None

        history += [{"role": "assistant", "content": first.choices[0].message.content}]
        history += [{"role": "user", "content": "and now?"}]
        server.restart()
        second = ask(client(server), history)
        assert second.model_extra["bench"]["alias"] == "beta"
        assert second.model_extra["bench"]["conversation"].startswith("prompt:")
        # A different conversation starts with the best member again.
        other = ask(client(server), [{"role": "user", "content": "something else"}])
        assert other.model_extra["bench"]["alias"] == "alpha"


def test_no_first_byte_in_time_fails_over(route_server: Any, fake_provider: FakeProvider) -> None:
    # Alpha's first byte never comes (held until the test ends); beta's comes at once, well
    # inside the 1.5 s budget each member has, however loaded the machine.
    never = threading.Event()
    members = [
        ("openai", FakeModel("alpha", answer="too late", hold=never)),
        ("ollama", FakeModel("beta", answer="in time")),
    ]
    try:
        with route_server(members, {"agents": {"members": ["alpha", "beta"], "seat_timeout": 1.5}}) as server:
            reply = ask(client(server), [{"role": "user", "content": "quick"}])
            assert reply.choices[0].message.content == "in time"
            (failed,) = reply.model_extra["bench"]["failover"]
            assert (failed["alias"], failed["status"]) == ("alpha", "timeout")
            assert "no first byte within 1.5 s" in failed["error"]
            # The abandoned call is in the log too, as a failed route call of this turn.
            abandoned = call_row(server.home, failed["call"])
            assert (abandoned["kind"], abandoned["alias"]) == ("route", "alpha")
            assert (abandoned["status"], abandoned["error"]) == ("timeout", "no first byte within 1.5 s")
            assert abandoned["ask_id"] and abandoned["first_byte_seconds"] is None
    finally:
        never.set()


def failed_with_502(server: Any) -> str:
    """The message of the 502 a turn answers with."""
    with pytest.raises(openai.APIStatusError) as raised:
        ask(client(server), [{"role": "user", "content": "hello"}])
    assert raised.value.status_code == 502
    return str(raised.value.body["message"])  # type: ignore[index]


def test_every_member_failing_is_one_error_in_the_agents_format(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    members = [
        ("openai", FakeModel("alpha", error=FakeError(500, "alpha broke"))),
        ("gemini", FakeModel("beta", error=FakeError(503, "beta broke"))),
    ]
    with route_server(members, AGENTS) as server:
        message = failed_with_502(server)
        # Each member's provider failed: said so, but not as an `HTTP 502` of its own (ours).
        assert message.startswith("the model's provider failed: every member of bench/agents failed"), message
        assert "HTTP 502" not in message
        assert "alpha broke" in message and "beta broke" in message


def test_every_member_too_slow_is_a_502_that_blames_no_provider(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    """Our own first-byte wait stopped each member: no provider failed, so
    none is said to have, nor an `HTTP 504` that no one sent."""
    never = threading.Event()
    members = [
        ("openai", FakeModel("alpha", answer="too late", hold=never)),
        ("anthropic", FakeModel("beta", answer="too late", hold=never)),
    ]
    collection = {"agents": {"members": ["alpha", "beta"], "seat_timeout": 1.0}}
    try:
        with route_server(members, collection) as server:
            message = failed_with_502(server)
            assert message.startswith("every member of bench/agents failed this turn ("), message
            assert message.count("no first byte within 1 s") == 2 and "HTTP 50" not in message
    finally:
        never.set()


def test_every_member_rate_limited_is_a_429(route_server: Any, fake_provider: FakeProvider) -> None:
    members = [
        ("openai", FakeModel("alpha", rate_limit=RateLimit("retry-after", retry=30))),
        ("openai", FakeModel("beta", rate_limit=RateLimit("retry-after", retry=30))),
    ]
    with route_server(members, AGENTS) as server:
        with pytest.raises(openai.RateLimitError) as raised:
            ask(client(server), [{"role": "user", "content": "hello"}])
        assert int(raised.value.response.headers["retry-after"]) > 0


def test_unknown_collections_and_members_without_tools_are_4xx(route_server: Any) -> None:
    collections = {"agents": {"members": ["alpha"]}}
    with route_server(two_members(), collections, facts={"alpha": {"tools": False}}) as server:
        with pytest.raises(openai.NotFoundError):
            client(server).chat.completions.create(
                model="bench/nobody:route", messages=[{"role": "user", "content": "x"}]
            )
        tools = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]
        with pytest.raises(openai.UnprocessableEntityError) as raised:
            client(server).chat.completions.create(
                model="bench/agents:route",
                messages=[{"role": "user", "content": "x"}],
                tools=tools,  # type: ignore[arg-type]
            )
        assert "alpha: does not take tools" in raised.value.message
        # Without tools, the same member may answer.
        assert ask(client(server), [{"role": "user", "content": "x"}]).choices[0].message.content


def test_a_whole_reply_replaces_even_a_member_that_fails_mid_reply(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    """Nothing reaches a client that did not stream before the reply is
    whole, so a member cut off mid-reply is replaced too."""
    members = [
        ("openai", FakeModel("alpha", answer="one two three four", cut_after=1, cut_mode="abort")),
        ("gemini", FakeModel("beta", answer="beta answers whole")),
    ]
    with route_server(members, AGENTS) as server:
        agent = client(server, conversation="ticket-9")
        reply = ask(agent, [{"role": "user", "content": "count"}])
        assert reply.choices[0].message.content == "beta answers whole"
        bench = reply.model_extra["bench"]
        (failed,) = bench["failover"]
        assert (failed["alias"], failed["status"]) == ("alpha", "error")
        assert (
            call_row(server.home, failed["call"])["ask_id"] == call_row(server.home, bench["call"])["ask_id"]
        )
        assert ask(agent, [{"role": "user", "content": "again"}]).model_extra["bench"]["alias"] == "beta"
