"""`GET /metrics` after real panels on the fake provider: one seat answers,
one fails, one gets a 429, and our own limit refuses a seat; the scrape,
parsed with prometheus-client's own parser, counts each of them.

Metrics are per process and tests share processes, so each figure is read
as a difference from the scrape before (and the members' names are this
module's own)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchwarmers.limits.user_limits import set_limits
from benchwarmers.testing.script import FakeError, FakeModel, RateLimit

MEMBERS = ["mx-good", "mx-broken", "mx-429"]
COLLECTIONS = {"mx": {"members": MEMBERS, "seat_timeout": 2.0}}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: Any) -> Samples:
    reply = httpx.get(f"{server.url}/metrics", timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(reply.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def ask(server: Any, content: str) -> dict[str, str]:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(model="bench/mx", messages=[{"role": "user", "content": content}])
    return {s["alias"]: s["status"] for s in reply.model_extra["bench"]["seats"]}


def test_a_scrape_counts_seats_errors_429s_and_refusals(panel_server: Any) -> None:
    models = [
        FakeModel("mx-good", answer="fine"),
        FakeModel("mx-broken", error=FakeError(500, "upstream exploded")),
        FakeModel("mx-429", rate_limit=RateLimit("retry-after", retry=30)),
    ]

    async def one_a_minute(runtime: Any) -> None:
        await set_limits(runtime.store, "fake", "mx-good", {"rpm": 1})

    with panel_server(models, COLLECTIONS, then=one_a_minute) as server:
        before = scrape(server)
        assert ask(server, "first") == {"mx-good": "ok", "mx-broken": "error", "mx-429": "rate_limited"}
        after = scrape(server)

        def delta(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        seat = {"kind": "seat", "collection": "mx"}
        assert delta("benchwarmers_calls_total", **seat, member="mx-good", status="ok") == 1
        assert delta("benchwarmers_calls_total", **seat, member="mx-broken", status="error") == 1
        assert delta("benchwarmers_calls_total", **seat, member="mx-429", status="rate_limited") == 1
        for member in MEMBERS:
            assert delta("benchwarmers_call_seconds_count", collection="mx", member=member) == 1
        assert delta("benchwarmers_upstream_errors_total", endpoint="fake", reason="error") == 1
        assert delta("benchwarmers_upstream_errors_total", endpoint="fake", reason="rate_limited") == 1
        chat = {"route": "/v1/chat/completions", "format": "openai_chat"}
        assert delta("benchwarmers_requests_total", **chat, status="200") == 1
        assert value(after, "benchwarmers_onboarding_queue_depth", state="queued") == 0
        assert ("benchwarmers_panels_in_flight", frozenset()) in after

        # The second ask finds our own limit of one a minute spent: refused before it goes out.
        # No seat answers it, so the panel is an error naming each seat (docs/api.md).
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.APIStatusError) as unanswered:
            client.chat.completions.create(model="bench/mx", messages=[{"role": "user", "content": "second"}])
        assert "(mx-good): the limit of 1 requests a minute" in unanswered.value.message
        again = scrape(server)
        assert value(again, "benchwarmers_calls_total", **seat, member="mx-good", status="limited") == 1
        assert (
            value(again, "benchwarmers_limiter_refusals_total", endpoint="fake")
            - value(after, "benchwarmers_limiter_refusals_total", endpoint="fake")
            >= 1
        )
        # A client's free text never becomes a label: an unknown path is "unmatched".
        httpx.get(f"{server.url}/no/such/path-{id(server)}", timeout=10)
        last = scrape(server)
        assert all("path-" not in dict(labels).get("route", "") for _name, labels in last)
        unmatched = {"route": "unmatched", "format": "openai_chat", "status": "404"}
        assert value(last, "benchwarmers_requests_total", **unmatched) >= 1
