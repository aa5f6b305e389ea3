"""A panel conversation over the API, as an OpenAI client holds one: each
turn resends the history, `bench.seats` names the seats to ask (the same
seats as the reply before, or one of them, with its own answer as the
assistant turn), and every turn's answers are judged and paired as any
ask's. Before `bench.seats` a follow-up was seated afresh by the record,
and no client could ask one chosen seat on."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel, FakeRequest

NAMES = ("alpha", "beta", "gamma")


def said(name: str) -> Any:
    def answer(request: FakeRequest) -> str:
        return f"{name} on turn {sum(m.role == 'user' for m in request.messages)}"

    return answer


def ask(server: Any, messages: list[dict[str, str]], seats: list[str] | None = None) -> dict[str, Any]:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    extra = {"bench": {"seats": seats}} if seats is not None else None
    reply = client.chat.completions.create(model="bench/trio", messages=messages, extra_body=extra)  # type: ignore[arg-type]
    bench: dict[str, Any] = reply.model_extra["bench"]  # type: ignore[index]
    return {"text": reply.choices[0].message.content, **bench}


def test_a_panel_conversation_of_four_turns_over_the_api(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    models = [FakeModel(n, answer=said(n)) for n in NAMES[:2]]
    models.append(FakeModel("gamma", answer=said("gamma"), error=FakeError(503, "overloaded"), fail_first=1))
    with panel_server(models, {"trio": {"members": list(NAMES)}}) as server:
        history = [{"role": "user", "content": "first"}]
        first = ask(server, history)
        statuses = {s["alias"]: s["status"] for s in first["seats"]}
        assert statuses == {"alpha": "ok", "beta": "ok", "gamma": "error"}

        # Turn two: the seats that answered, with the panel's reply as the assistant turn.
        answered = [s["alias"] for s in first["seats"] if s["status"] == "ok"]
        history += [{"role": "assistant", "content": first["text"]}, {"role": "user", "content": "second"}]
        second = ask(server, history, seats=answered)
        assert [s["alias"] for s in second["seats"]] == answered
        assert fake_provider.calls["gamma"] == 1
        for alias in answered:
            asked = fake_provider.last(alias).messages
            assert [m.role for m in asked] == ["user", "assistant", "user"]
            assert "### Seat 1 · alpha" in asked[1].text and asked[2].text == "second"

        # Turn three: beta alone, its own answer carried.
        own = next(s["content"] for s in second["seats"] if s["alias"] == "beta")
        history += [{"role": "assistant", "content": own}, {"role": "user", "content": "third"}]
        third = ask(server, history, seats=["beta"])
        assert [(s["alias"], s["content"]) for s in third["seats"]] == [("beta", "beta on turn 3")]
        assert fake_provider.last("beta").messages[3].text == "beta on turn 2"

        # Turn four: back to the whole panel, gamma answering now.
        history += [
            {"role": "assistant", "content": third["seats"][0]["content"]},
            {"role": "user", "content": "4"},
        ]
        fourth = ask(server, history, seats=list(NAMES))
        assert {s["alias"]: s["content"] for s in fourth["seats"]} == {n: f"{n} on turn 4" for n in NAMES}

        # Each turn's answers are judged and paired as any ask's; a pair across two turns is not one.
        call = {
            (turn, s["alias"]): s["call"]
            for turn, r in enumerate((first, second, third, fourth))
            for s in r["seats"]
        }
        verdict = f"{server.url}/bench/verdict"
        assert (
            httpx.post(verdict, json={"better": call[1, "beta"], "worse": call[1, "alpha"]}).status_code
            == 200
        )
        assert httpx.post(verdict, json={"call": call[2, "beta"], "useful": True}).status_code == 200
        assert httpx.post(verdict, json={"tie": [call[3, "gamma"], call[3, "alpha"]]}).status_code == 200
        across = httpx.post(verdict, json={"better": call[2, "beta"], "worse": call[3, "beta"]})
        assert across.status_code == 400, across.text

        # A seat no longer on the bench is left off, the others answer; none of them on it: a 404.
        fifth = ask(server, [{"role": "user", "content": "5"}], seats=["alpha", "ghost"])
        assert [s["alias"] for s in fifth["seats"]] == ["alpha"]
        assert fifth["leftOff"] == [{"alias": "ghost", "reason": "no longer on the bench"}]
        body = {
            "model": "bench/trio",
            "messages": [{"role": "user", "content": "6"}],
            "bench": {"seats": ["ghost"]},
        }
        missing = httpx.post(f"{server.url}/v1/chat/completions", json=body)
        assert missing.status_code == 404 and "ghost" in missing.json()["error"]["message"]
