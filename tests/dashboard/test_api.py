"""The dashboard's JSON routes over plain HTTP: what the pages do without a
browser (the browser test walks the main path; this checks the rest)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from benchwarmers.dashboard import auth
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.kept_asks import kept_ask
from benchwarmers.testing.live_server import live_server
from benchwarmers.types import Request, user
from tests.waiting import wait_for

from .conftest import sign_in


@pytest.fixture
def dashboard(home: Path) -> Iterator[httpx.Client]:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        yield client


@pytest.fixture
def owner_dashboard(home: Path, dashboard: httpx.Client) -> httpx.Client:
    """The dashboard with a login set and signed in: it makes keys and changes settings only so."""
    sign_in(dashboard, home)
    return dashboard


def server_url(client: httpx.Client) -> str:
    return str(client.base_url).rstrip("/")


def test_a_local_ollama_is_offered_until_an_endpoint_points_at_it(
    dashboard: httpx.Client, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake_provider.url)
    offered = dashboard.get("/ui/api/endpoints").json()["ollama"]
    assert offered is not None and offered["base_url"] == fake_provider.url
    assert "A local Ollama" in dashboard.get("/endpoints").text
    added = dashboard.post(
        "/ui/api/endpoints", json={"name": "ollama", "api": "ollama", "base_url": fake_provider.url}
    )
    assert added.status_code == 200, added.text
    assert added.json()["endpoint"]["key"] == "not needed"
    assert dashboard.get("/ui/api/endpoints").json()["ollama"] is None
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")  # nothing listens there
    assert dashboard.get("/ui/api/endpoints").json()["ollama"] is None


def test_testing_an_endpoint_lists_its_models_or_says_why_not(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    fake_provider.key = "sk-right"
    fake_provider.add(FakeModel("m1"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "key": "sk-wrong"}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    failed = dashboard.get("/ui/api/endpoints/fake/models").json()
    assert failed["ok"] is False and failed["error"] and failed["models"] == []
    assert dashboard.post("/ui/api/endpoints/fake/key", json={"key": "sk-right"}).status_code == 200
    listed = dashboard.get("/ui/api/endpoints/fake/models").json()
    assert listed == {"endpoint": "fake", "ok": True, "error": "", "models": [{"served": "m1", "alias": ""}]}
    assert "sk-right" not in dashboard.get("/endpoints").text
    # On or off is true or false: "false" is refused, never read as yes (remove its models, need no key).
    wrong = dashboard.post("/ui/api/endpoints/fake/remove", json={"with_models": "false"})
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "with_models"
    keyless = {"name": "other", "api": "openai", "base_url": fake_provider.openai_base, "keyless": "false"}
    refused = dashboard.post("/ui/api/endpoints", json=keyless)
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "keyless"
    assert dashboard.post("/ui/api/endpoints/fake/remove").json() == {"ok": True}
    assert dashboard.get("/ui/api/endpoints").json()["endpoints"] == []
    assert dashboard.get("/ui/api/endpoints/fake/models").status_code == 404


def test_a_gateway_key_is_shown_once_and_revoked_keys_are_refused(owner_dashboard: httpx.Client) -> None:
    dashboard = owner_dashboard
    made = dashboard.post("/ui/api/keys", json={"name": "laptop", "rate": "30"}).json()
    secret = made["secret"]
    assert made["key"]["rate"] == 30 and made["key"]["active"] is True
    page = dashboard.get("/settings").text
    listed = dashboard.get("/ui/api/settings").json()["keys"]
    assert secret not in page and secret not in str(listed)
    assert [k["name"] for k in listed] == ["laptop"]
    models = httpx.get(f"{server_url(dashboard)}/v1/models", headers={"authorization": f"Bearer {secret}"})
    assert models.status_code == 200
    assert dashboard.post("/ui/api/keys/laptop/revoke").json()["key"]["active"] is False
    refused = httpx.get(f"{server_url(dashboard)}/v1/models", headers={"authorization": f"Bearer {secret}"})
    assert refused.status_code == 401


def test_a_key_expiry_is_set_and_a_rotation_keeps_the_old_secret_for_its_grace(
    owner_dashboard: httpx.Client,
) -> None:
    dashboard = owner_dashboard
    for body, says in [
        ({"name": "ci", "expires": "2001-01-01"}, "is in the past"),
        ({"name": "ci", "expires": "2030-13-01"}, "is not a date"),
        ({"name": "ci", "expires": 30}, "must be text"),
    ]:
        refused = dashboard.post("/ui/api/keys", json=body)
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "expires"
        assert says in refused.json()["error"]["message"]
    assert dashboard.get("/ui/api/settings").json()["keys"] == []  # nothing saved
    made = dashboard.post("/ui/api/keys", json={"name": "ci", "expires": "30d"}).json()
    assert made["key"]["expires_at"] and made["key"]["state"].startswith("active, expires ")
    changed = dashboard.post("/ui/api/keys/ci/expiry", json={"expires": "2099-01-31"})
    assert changed.json()["key"]["expires_at"].startswith("2099-01-31T00:00:00")
    past = dashboard.post("/ui/api/keys/ci/expiry", json={"expires": "2001-01-01"})
    assert past.status_code == 400 and past.json()["error"]["field"] == "expires"
    negative = dashboard.post("/ui/api/keys/ci/rotate", json={"grace": "-1h"})
    assert negative.status_code == 400 and "is negative" in negative.json()["error"]["message"]
    (listed,) = dashboard.get("/ui/api/settings").json()["keys"]
    assert listed["expires_at"].startswith("2099-01-31") and listed["prefix"] == made["key"]["prefix"]
    assert dashboard.post("/ui/api/keys/nobody/rotate", json={"grace": "1h"}).status_code == 404
    rotated = dashboard.post("/ui/api/keys/ci/rotate", json={"grace": "1h"}).json()
    assert rotated["secret"] != made["secret"] and rotated["old"]["state"].startswith(
        "rotated out, works until"
    )
    assert rotated["key"]["expires_at"].startswith("2099-01-31")
    url = f"{server_url(dashboard)}/v1/models"
    for secret in (made["secret"], rotated["secret"]):
        assert httpx.get(url, headers={"authorization": f"Bearer {secret}"}).status_code == 200
    now = dashboard.post("/ui/api/keys/ci/rotate", json={"grace": "0"}).json()
    refused = httpx.get(url, headers={"authorization": f"Bearer {rotated['secret']}"})
    assert refused.status_code == 401 and "was rotated on" in refused.json()["error"]["message"]
    assert httpx.get(url, headers={"authorization": f"Bearer {now['secret']}"}).status_code == 200


def test_limits_are_set_cleared_forgotten_and_scoped_from_the_dashboard(
    home: Path, dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """Item 14: what `limit set|clear` and `endpoint scope` do, and clearing
    what a provider taught, over the dashboard's routes; bad input a 4xx on
    its field, nothing saved."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from benchwarmers.runtime import Runtime
    from benchwarmers.store.schema import LearnedLimit

    body = {"name": "hub", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    for wrong, field in [
        ({"endpoint": "hub", "kind": "rpm", "amount": -3}, "amount"),
        ({"endpoint": "hub", "kind": "rpm", "amount": "many"}, "amount"),
        ({"endpoint": "hub", "kind": "rpw", "amount": 3}, "kind"),
        ({"endpoint": "nowhere", "kind": "rpm", "amount": 3}, "endpoint"),
    ]:
        refused = dashboard.post("/ui/api/limits", json=wrong)
        assert 400 <= refused.status_code < 500 and refused.json()["error"]["field"] == field, refused.text
    assert "set" not in [q["source"] for q in _quotas(dashboard)]  # nothing saved
    made = dashboard.post(
        "/ui/api/limits", json={"endpoint": "hub", "model": "m1", "kind": "rpd", "amount": 50}
    )
    assert made.json()["limit"] == {"endpoint": "hub", "model": "m1", "kind": "rpd", "amount": 50}
    (mine,) = [q for q in _quotas(dashboard) if q["source"] == "set"]
    assert (mine["model"], mine["limit"], mine["window"]) == ("m1", 50, "day")
    cleared = dashboard.post("/ui/api/limits/clear", json={"endpoint": "hub", "model": "m1", "kind": "rpd"})
    assert cleared.json() == {"removed": 1} and not [q for q in _quotas(dashboard) if q["source"] == "set"]

    async def learned() -> None:
        async with Runtime.open(home) as runtime, runtime.store.write() as session:
            session.add(
                LearnedLimit(
                    endpoint="hub",
                    served="",
                    unit="requests",
                    window="day",
                    limit=100,
                    remaining=0,
                    resets_at=datetime.now(UTC) + timedelta(hours=5),
                    source="429 body",
                    seen_at=datetime.now(UTC),
                )
            )

    asyncio.run(learned())
    assert [q["source"] for q in _quotas(dashboard)] == ["429 body"]
    forget = {"endpoint": "hub", "model": "", "unit": "requests", "window": "day"}
    assert dashboard.post("/ui/api/limits/learned/clear", json=forget).json() == {"removed": 1}
    assert _quotas(dashboard) == []
    assert dashboard.post("/ui/api/limits/learned/clear", json=forget).status_code == 404
    scoped = dashboard.post("/ui/api/endpoints/hub/scope", json={"scope": "model"})
    assert scoped.json() == {"endpoint": "hub", "scope": "model"}
    bogus = dashboard.post("/ui/api/endpoints/hub/scope", json={"scope": "team"})
    assert bogus.status_code == 400 and bogus.json()["error"]["field"] == "scope"
    assert "limits count per" in dashboard.get("/quotas").text


def _quotas(dashboard: httpx.Client) -> list[dict[str, object]]:
    return dashboard.get("/ui/api/quotas").json()["quotas"]


def test_discover_entries_are_dismissed_and_shown_again(dashboard: httpx.Client) -> None:
    entries = dashboard.get("/ui/api/discover").json()
    first = entries["models"][0]["id"]
    assert dashboard.post("/ui/api/discover/dismiss", json={"id": first}).json()["dismissed"] == [first]
    after = dashboard.get("/ui/api/discover").json()
    assert first not in [m["id"] for m in after["models"]]
    assert [m["id"] for m in after["dismissed"]] == [first]
    assert dashboard.post("/ui/api/discover/restore", json={"id": first}).json()["dismissed"] == []
    assert dashboard.post("/ui/api/discover/dismiss", json={}).status_code == 400


def test_settings_and_the_scheduler_from_the_dashboard(owner_dashboard: httpx.Client) -> None:
    dashboard = owner_dashboard
    hosts = dashboard.post("/ui/api/settings", json={"name": "allowed_hosts", "value": "bench.example, a.b"})
    assert hosts.json()["settings"]["allowed_hosts"] == ["bench.example", "a.b"]
    assert httpx.get(f"{server_url(dashboard)}/healthz", headers={"host": "bench.example"}).status_code == 200
    refused = dashboard.post("/ui/api/settings", json={"name": "max_body_mb", "value": 1})
    assert refused.status_code == 400
    on = dashboard.post("/ui/api/scheduler", json={"enabled": True}).json()
    assert on["enabled"] is True and all(job["next_run_at"] for job in on["jobs"])
    assert "Switch off" in dashboard.get("/settings").text
    assert dashboard.post("/ui/api/scheduler", json={"enabled": False}).json()["enabled"] is False
    assert dashboard.post("/ui/api/scheduler", json={"enabled": "yes"}).json()["error"]["field"] == "enabled"


def test_head_and_unknown_files(dashboard: httpx.Client) -> None:
    assert dashboard.head("/").status_code == 200
    missing = dashboard.get("/ui/static/nothing.js")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/json")
    page = dashboard.get("/endpoints")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_the_playground_streams_seats_then_the_merge(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    for served in ("m1", "m2"):
        fake_provider.add(FakeModel(served, answer=f"{served} says yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2"))
    made = dashboard.post(
        "/ui/api/collections", json={"name": "duo", "members": ["m1", "m2"], "merger": "m1"}
    )
    assert made.status_code == 200, made.text
    with dashboard.stream(
        "POST", "/ui/api/ask", json={"collection": "duo", "prompt": "yes?", "merged": True}
    ) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-ndjson"
        events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
    kinds = [e["event"] for e in events if e["event"] not in ("seat_text", "merge_text")]
    assert kinds == ["started", "seat", "seat", "merged", "done"]
    # The merger's answer as it is written, after the seats and before its whole.
    merging = [i for i, e in enumerate(events) if e["event"] == "merge_text"]
    at = {e["event"]: i for i, e in enumerate(events)}
    assert merging and max(i for i, e in enumerate(events) if e["event"] == "seat") < merging[0]
    assert merging[-1] < at["merged"]
    assert "".join(events[i]["text"] for i in merging) == events[at["merged"]]["merged"]["content"]
    written = {e["alias"] for e in events if e["event"] == "seat_text"}
    assert written == {"m1", "m2"}  # each seat's text as it is written, before its seat event
    assert events[0]["merged"] is True and [s["alias"] for s in events[0]["seats"]] == ["m1", "m2"]
    seats = [e for e in events if e["event"] == "seat"]
    assert {e["seat"]["content"] for e in seats} == {"m1 says yes", "m2 says yes"}
    assert next(e for e in events if e["event"] == "merged")["merged"]["alias"] == "m1"
    refused = dashboard.post("/ui/api/ask", json={"collection": "nope", "prompt": "x"})
    assert refused.status_code == 404 and refused.json()["error"]["field"] == "collection"
    empty = dashboard.post("/ui/api/ask", json={"collection": "duo", "prompt": " "})
    assert empty.status_code == 400 and empty.json()["error"]["field"] == "prompt"
    asks = dashboard.get("/ui/api/asks").json()["asks"]
    # The merge's two calls: its answer, and its report beside it.
    assert [s["kind"] for s in asks[0]["seats"]] == ["seat", "seat", "merge", "merge"]
    assert sorted(s["seat"] for s in asks[0]["seats"][2:]) == ["merged", "report"]
    # m1 sat and merged: its page tells the note on its merge from the note on its seat.
    merge_call = next(e for e in events if e["event"] == "merged")["merged"]["call"]
    seat_call = next(e["seat"]["call"] for e in seats if e["seat"]["alias"] == "m1")
    for call, note in ((merge_call, "merged well"), (seat_call, "answered well")):
        judged = dashboard.post("/ui/api/verdict", json={"call": call, "useful": True, "note": note})
        assert judged.status_code == 200, judged.text
    notes = {n["note"]: n["answer"] for n in dashboard.get("/ui/api/models/m1").json()["notes"]}
    assert notes == {"merged well": "merge", "answered well": "seat"}
    page = dashboard.get("/models/m1").text
    tagged = r"merged answer</span>\s*<span class=\"status s-ok\">useful</span>\s*<q>"
    assert re.search(tagged + "merged well", page) and not re.search(tagged + "answered", page)


def test_a_follow_up_s_threads_are_refused_as_a_field_before_anything_is_asked(
    dashboard: httpx.Client,
) -> None:
    """`threads` (each seat's own history) naming a seat not asked is a 400
    naming the field, in the shape every field's refusal has."""
    body = {
        "collection": "duo",
        "prompt": "Second?",
        "messages": [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "a"}],
        "seats": ["m1"],
        "threads": {"m2": [{"role": "user", "content": "First?"}]},
    }
    refused = dashboard.post("/ui/api/ask", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == {
        "message": "threads name seats not asked: m2 (the seats asked are m1)",
        "field": "threads",
    }


def _register(dashboard: httpx.Client, fake: FakeProvider, served: tuple[str, ...]) -> None:
    """Onboard (Quick + ad hoc: probes only) and wait for the queue to finish."""
    queued = dashboard.post(
        "/ui/api/onboard", json={"endpoint": "fake", "models": list(served), "mode": "quick_ad_hoc"}
    )
    assert queued.status_code == 200, queued.text
    wait_for(lambda: not (q := dashboard.get("/ui/api/queue").json())["running"] and not q["queued"])
    states = {i["alias"]: i["state"] for i in dashboard.get("/ui/api/queue").json()["items"]}
    assert states == {s: "done" for s in served}, states


def test_a_model_whose_alias_has_slashes_has_its_page_its_buttons_and_its_ops_routes(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """An alias may hold `/` and `:`, as a user names a model after its id
    (`openrouter/meta-llama/llama-3.1-8b-instruct:free`). The routes took one
    path segment: the Leaderboard's link to its page was a 405, and the Bench
    page's buttons and the ops API a 404."""
    alias = "openrouter/meta-llama/llama-3.1-8b-instruct:free"
    fake_provider.add(FakeModel(alias, answer="yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    onboard = {"endpoint": "fake", "models": [{"served": alias, "alias": alias}], "mode": "quick_ad_hoc"}
    assert dashboard.post("/ui/api/onboard", json=onboard).status_code == 200
    wait_for(lambda: not (q := dashboard.get("/ui/api/queue").json())["running"] and not q["queued"])
    made = dashboard.post("/ui/api/collections", json={"name": "solo", "members": [alias]})
    assert made.status_code == 200, made.text
    board = dashboard.get("/leaderboard", params={"collection": "solo"}).text
    link = re.search(r'<a href="(/models/[^"]+)">' + re.escape(alias) + "<", board)
    assert link, board
    page = dashboard.get(link.group(1))
    assert page.status_code == 200 and f"<h1>{alias}" in page.text
    assert dashboard.get(f"/ui/api/models/{alias}").json()["model"]["alias"] == alias
    role = dashboard.post(f"/ui/api/models/{alias}/role", json={"role": "code"})
    assert role.status_code == 200 and role.json()["model"]["role"] == "code"
    assert dashboard.post(f"/ui/api/models/{alias}/retire").json()["model"]["status"] == "retired"
    assert dashboard.post(f"/bench/ops/models/{alias}/restore").status_code == 200
    probes = dashboard.get(f"/bench/ops/models/{alias}/probes")
    assert probes.status_code == 200 and probes.json()


def test_several_tags_of_one_ollama_model_are_onboarded_each_under_its_own_alias(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """An Ollama user benches a family's sizes side by side. Each tag's alias
    was the family's (`llama3.2`) or, taken, the family and the endpoint: a
    third tag found that taken too, and its onboarding failed."""
    served = ["llama3.2:1b", "llama3.2:3b", "llama3.2:latest", "llama3.2"]
    for name in served:
        fake_provider.add(FakeModel(name, answer="yes"))
    body = {"name": "ollama", "api": "ollama", "base_url": fake_provider.url, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    onboard = {"endpoint": "ollama", "models": served, "mode": "quick_ad_hoc"}
    assert dashboard.post("/ui/api/onboard", json=onboard).status_code == 200
    wait_for(lambda: not (q := dashboard.get("/ui/api/queue").json())["running"] and not q["queued"])
    items = dashboard.get("/ui/api/queue").json()["items"]
    assert [(i["served"], i["state"], i["alias"]) for i in items] == [
        ("llama3.2:1b", "done", "llama3.2"),
        ("llama3.2:3b", "done", "llama3.2-3b"),
        ("llama3.2:latest", "done", "llama3.2-latest"),
        ("llama3.2", "done", "llama3.2-ollama"),
    ]


def test_a_model_is_queued_once_and_a_queued_or_running_item_is_cancelled(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """Item 18: POSTing a model already queued (or running) is a 409 naming
    its item, nothing queued; Cancel ends it; then it may be queued again."""
    fake_provider.add(FakeModel("slow", answer="ok", latency=1.0))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    ask = {"endpoint": "fake", "models": ["slow"], "mode": "quick"}
    [item] = dashboard.post("/ui/api/onboard", json=ask).json()["queued"]
    twice = dashboard.post("/ui/api/onboard", json=ask)
    assert twice.status_code == 409 and twice.json()["error"]["field"] == "models"
    assert f"already in the onboarding queue (item {item}" in twice.json()["error"]["message"]
    assert [i["id"] for i in dashboard.get("/ui/api/queue").json()["items"]] == [item]
    cancelled = dashboard.post(f"/ui/api/queue/{item}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["item"]["outcome"] == "cancelled"
    assert dashboard.post(f"/ui/api/queue/{item}/cancel").status_code == 409
    assert dashboard.post("/ui/api/queue/99999/cancel").status_code == 404
    queue = dashboard.get("/ui/api/queue").json()
    assert not queue["running"] and queue["queued"] == 0
    assert dashboard.post("/ui/api/onboard", json=ask).status_code == 200  # free to queue again


def test_a_blind_collection_and_the_leaderboard_of_its_pairs(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1", answer="m1 says yes"))
    fake_provider.add(FakeModel("m2", answer="m2 says yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2"))
    made = dashboard.post("/ui/api/collections", json={"name": "duo", "members": ["m1", "m2"], "blind": True})
    assert made.json()["collection"]["blind"] is True
    assert made.json()["collection"]["output_fallback"] == "leave_off"
    # Asked for JSON, a member that cannot: left off (the default) or prompted; else a 4xx.
    guessed = dashboard.post(
        "/ui/api/collections/duo", json={"members": ["m1", "m2"], "output_fallback": "guess"}
    )
    assert guessed.status_code == 400 and guessed.json()["error"]["field"] == "output_fallback"
    prompted = dashboard.post(
        "/ui/api/collections/duo", json={"members": ["m1", "m2"], "blind": True, "output_fallback": "prompt"}
    )
    assert prompted.json()["collection"]["output_fallback"] == "prompt"
    # Unticked for this ask (the page's toggle), the stream names each seat's model.
    unblind = {"collection": "duo", "prompt": "yes?", "blind": False}
    with dashboard.stream("POST", "/ui/api/ask", json=unblind) as reply:
        events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
    calls = {e["seat"]["alias"]: e["seat"]["call"] for e in events if e["event"] == "seat"}
    pair = dashboard.post("/ui/api/verdict", json={"better": calls["m2"], "worse": calls["m1"], "note": "m2"})
    assert pair.status_code == 200, pair.text
    board = dashboard.get("/ui/api/leaderboard", params={"collection": "bench/duo"}).json()
    assert board["collection"] == "bench/duo" and board["shape"] in board["shapes"]
    by_alias = {m["alias"]: m for m in board["models"]}
    assert by_alias["m2"]["pairs"] == {"wins": 1, "losses": 0, "ties": 0, "bothBad": 0}
    assert by_alias["m1"]["pairs"]["losses"] == 1
    assert board["matrix"] == {
        "m2": {"m1": {"wins": 1, "losses": 0, "ties": 0}},
        "m1": {"m2": {"wins": 0, "losses": 1, "ties": 0}},
    }
    for model in board["models"]:
        assert 0 <= model["low"] <= model["score"] <= model["high"] <= 1 and model["settled"] is False
        assert model["member"] is True and [p["day"] for p in model["trend"]]
    assert sorted(board["nextPanel"]["seats"]) == ["m1", "m2"] and board["nextPanel"]["reasons"]
    # The model's page and the Bench page read the board's figure (its pairs in it), and one
    # judgement is "we don't know yet", not a sure-looking percentage.
    useful = dashboard.post("/ui/api/verdict", json={"call": calls["m2"], "useful": True})
    assert useful.status_code == 200, useful.text
    board = dashboard.get("/ui/api/leaderboard", params={"collection": "bench/duo"}).json()
    for model in board["models"]:
        (record,) = dashboard.get(f"/ui/api/models/{model['alias']}").json()["record"]
        assert (record["mean"], record["interval"]) == (model["score"], [model["low"], model["high"]])
        assert record["settled"] is False
    listed = {m["alias"]: m["record"] for m in dashboard.get("/ui/api/models").json()["models"]}
    assert listed["m2"]["mean"] == next(m["score"] for m in board["models"] if m["alias"] == "m2")
    assert "we don't know yet" in dashboard.get("/models").text
    assert "we don't know yet" in dashboard.get("/models/m2").text
    # Bad input: a clear 4xx beside the field it is about.
    unknown = dashboard.get("/ui/api/leaderboard", params={"collection": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "collection"
    shape = dashboard.get("/ui/api/leaderboard", params={"collection": "duo", "shape": "poetry"})
    assert shape.status_code == 400 and "poetry" in shape.json()["error"]["message"]
    assert shape.json()["error"]["field"] == "shape"  # the shape refused, not the collection
    assert dashboard.get("/ui/api/leaderboard").status_code == 400
    assert "m1" in dashboard.get("/leaderboard", params={"collection": "duo"}).text
    # The page says so with the JSON's status, not a 200 reading "Not found".
    page = dashboard.get("/leaderboard", params={"collection": "nope"})
    assert page.status_code == 404 and "no collection named" in page.text
    page = dashboard.get("/leaderboard", params={"collection": "duo", "shape": "poetry"})
    assert page.status_code == 400 and "poetry" in page.text
    page = dashboard.get("/models/nope")
    assert page.status_code == 404 and "nope" in page.text
    # Unticked on the form, the collection is blind no more.
    edited = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], "blind": False})
    assert edited.json()["collection"]["blind"] is False


def test_the_leaderboard_keeps_a_model_that_left_and_says_it_left_and_every_shape_is_reached(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """A member taken off the collection keeps its record on the board, read
    as what it is: not a member (it was tagged "explorer", which it never
    was). A board opened on a kind of question not asked yet still links to
    the kinds that were, and the page and the JSON rank alike."""
    for alias in ("m1", "m2", "m3"):
        fake_provider.add(FakeModel(alias, answer=f"{alias} says yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2", "m3"))
    made = dashboard.post("/ui/api/collections", json={"name": "trio", "members": ["m1", "m2", "m3"]})
    assert made.status_code == 200, made.text
    with dashboard.stream("POST", "/ui/api/ask", json={"collection": "trio", "prompt": "yes?"}) as reply:
        events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
    calls = {e["seat"]["alias"]: e["seat"]["call"] for e in events if e["event"] == "seat"}
    assert dashboard.post("/ui/api/verdict", json={"best": calls["m3"]}).status_code == 200
    left = dashboard.post("/ui/api/collections/trio", json={"members": ["m1", "m2"]})
    assert left.status_code == 200, left.text
    board = dashboard.get("/ui/api/leaderboard", params={"collection": "trio"}).json()
    m3 = next(m for m in board["models"] if m["alias"] == "m3")
    assert m3["member"] is False and m3["pairs"]["wins"] == 2 and "m3" not in board["nextPanel"]["explorers"]
    page = dashboard.get("/leaderboard", params={"collection": "bench/trio"}).text
    row = re.search(r'<tr data-alias="m3".*?</tr>', page, re.S)
    assert row and "not a member" in row.group() and "explorer" not in row.group()
    for model in board["models"]:  # the page's rank is the JSON's
        alias, rank = model["alias"], model["rank"]
        assert re.search(rf'<tr data-alias="{alias}"[^>]*>\s*<td class="rank"[^>]*>{rank}<', page)
    # Only short was asked; the code board still offers the way back to it.
    code = dashboard.get("/leaderboard", params={"collection": "trio", "shape": "code"}).text
    assert 'href="/leaderboard?collection=trio&amp;shape=short"' in code
    assert 'href="/leaderboard?collection=trio&amp;shape=code" aria-current="page"' in code


def test_a_collection_left_with_no_members_says_so_on_its_board(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """Its only member removed from the bench, a collection has no one to
    rank: its board said "No model of this collection is judged yet: ask on
    the Ask page", an ask that cannot seat anyone."""
    fake_provider.add(FakeModel("m1", answer="yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1",))
    assert dashboard.post("/ui/api/collections", json={"name": "solo", "members": ["m1"]}).status_code == 200
    assert dashboard.post("/ui/api/models/m1/remove").status_code == 200
    board = dashboard.get("/ui/api/leaderboard", params={"collection": "solo"})
    assert board.status_code == 200 and board.json()["models"] == [], board.text
    page = dashboard.get("/leaderboard", params={"collection": "solo"}).text
    assert "judged yet" not in page and "bench/solo has no members" in page, page
    assert 'href="/collections"' in page


def test_a_board_asked_for_a_gone_collection_or_an_odd_shape_keeps_the_picker(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """A bookmark of a collection since removed, or a shape mistyped in the
    address, answers its 404 or 400 on the Leaderboard itself: the message,
    and the collections to pick from. It was a page headed "Not found" (for
    a bad shape too) whose one link went to the Bench."""
    fake_provider.add(FakeModel("m1", answer="yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1",))
    assert dashboard.post("/ui/api/collections", json={"name": "solo", "members": ["m1"]}).status_code == 200
    for params, status, said in (
        ({"collection": "gone"}, 404, "no collection named"),
        ({"collection": "solo", "shape": "poetry<b>"}, 400, "shape &#39;poetry&lt;b&gt;&#39; is not known"),
    ):
        page = dashboard.get("/leaderboard", params=params)
        assert page.status_code == status, page.text
        assert "<h1>Leaderboard</h1>" in page.text and "Not found" not in page.text
        assert re.search(r'<p class="notice warn" role="alert">[^<]*' + said, page.text), page.text
        assert '<option value="solo"' in page.text  # the picker, to choose one that is there


def test_onboarding_a_model_the_endpoint_does_not_serve_is_refused(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """Issue 40, item 19: as the CLI does, naming the close ids it serves."""
    fake_provider.add(FakeModel("vendor/model-one", answer="ready"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    refused = dashboard.post(
        "/ui/api/onboard", json={"endpoint": "fake", "models": ["vendor/model-on"], "mode": "quick"}
    )
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "models"
    assert "does not serve 'vendor/model-on'" in refused.json()["error"]["message"]
    assert "vendor/model-one" in refused.json()["error"]["message"]
    assert dashboard.get("/ui/api/queue").json()["items"] == []


def test_judge_verdicts_are_set_on_the_collection_form(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1", answer="yes"))
    fake_provider.add(FakeModel("m2", answer="no"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2"))
    made = dashboard.post(
        "/ui/api/collections", json={"name": "duo", "members": ["m1", "m2"], "judge_verdicts": True}
    )
    assert made.json()["collection"]["judge_verdicts"] is True
    page = dashboard.get("/collections").text
    assert re.search(r'id="f-judge-duo" name="judge_verdicts" type="checkbox" checked', page)
    assert 'id="f-judge-new" name="judge_verdicts" type="checkbox" aria' in page  # a new one: off
    board = dashboard.get("/ui/api/leaderboard", params={"collection": "bench/duo"}).json()
    assert board["judge"]["on"] is True and board["judge"]["compared"] == 0
    edited = dashboard.post(
        "/ui/api/collections/duo", json={"members": ["m1", "m2"], "judge_verdicts": False}
    )
    assert edited.json()["collection"]["judge_verdicts"] is False
    assert [c["judge_verdicts"] for c in dashboard.get("/ui/api/collections").json()["collections"]] == [
        False
    ]
    # A deadline over a day is refused on its own field (the form marks the box at fault).
    late = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], "deadline": 1e12})
    assert late.status_code == 400 and late.json()["error"]["field"] == "deadline"
    assert "at most 86400 seconds" in late.json()["error"]["message"]
    for key, wrong in (("keep_days", 5000), ("seats", -1), ("explorer_seats", -2)):
        refused = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], key: wrong})
        assert refused.status_code == 400 and refused.json()["error"]["field"] == key, refused.text
    # Numbers past a float's range or SQLite's integer are a 400, not a 500.
    for key, value in (("quorum", 1e300), ("quorum", "1e300"), ("seats", 1e300), ("deadline", 10**400)):
        huge = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], key: value})
        assert huge.status_code == 400, (key, value, huge.text)
        assert len(huge.json()["error"]["message"]) < 120
    # A switch is true or false: "false" (a string) is refused, not read as on; left out, it stays.
    for key in ("judge_verdicts", "blind", "keep_text"):
        for wrong in ("false", 1, None):
            refused = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], key: wrong})
            assert refused.status_code == 400 and refused.json()["error"]["field"] == key, (key, wrong)
    on = {"members": ["m1", "m2"], "blind": True, "judge_verdicts": True}
    assert dashboard.post("/ui/api/collections/duo", json=on).status_code == 200
    wrong = dashboard.post("/ui/api/ask", json={"collection": "duo", "prompt": "x", "merged": "false"})
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "merged"
    kept = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], "purpose": "checks"})
    assert (kept.json()["collection"]["blind"], kept.json()["collection"]["judge_verdicts"]) == (True, True)


def test_accepting_the_price_of_a_model_that_went_paid(home: Path, dashboard: httpx.Client) -> None:
    """The Bench page offers "Accept price" only for a model that went paid;
    accepting it clears the mark (free-only collections seat it again)."""

    async def went_paid() -> None:
        async with Runtime.open(home) as runtime:
            await add_endpoint(runtime.store, "hub", "http://127.0.0.1:9/v1", needs_key=False)
            await add_model(runtime.store, "llama", "hub", "llama", price_in=0.1, price_out=0.3)
            async with runtime.store.write() as session:
                await session.execute(update(schema.Model).values(went_paid_at=datetime.now(UTC)))

    asyncio.run(went_paid())
    shown = dashboard.get("/ui/api/models/llama").json()["model"]
    assert shown["went_paid_at"] and "/ui/api/models/llama/paid-ok" in dashboard.get("/models").text
    accepted = dashboard.post("/ui/api/models/llama/paid-ok")
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["model"]["went_paid_at"] is None
    assert "/ui/api/models/llama/paid-ok" not in dashboard.get("/models").text
    assert dashboard.post("/ui/api/models/nobody/paid-ok").status_code == 404


def test_recent_asks_page_back_through_every_ask_once_and_refuse_a_bad_cursor(
    home: Path, dashboard: httpx.Client
) -> None:
    """More than a page of asks, their calls interleaved and some ending at the same instant:
    paging with `next` sees each once, in order, and ends; a bad cursor or size is a 400 naming it."""
    start = datetime(2026, 1, 1, tzinfo=UTC)

    async def log() -> None:
        async with Runtime.open(home) as runtime, runtime.store.write() as session:
            for n in range(47):
                collection = "duo" if n % 5 else "solo"
                # Each ask's first seat starts before the ask before ends; asks 3k and 3k+1 end together.
                base = start + timedelta(seconds=_base(n))
                for k, (kind, seat) in enumerate((("seat", "s1"), ("seat", "s2"), ("merge", "merged"))):
                    session.add(
                        schema.Call(
                            id=f"c{n:02d}-{k}",
                            at=base + timedelta(seconds=k * 1.5 if kind == "merge" else k),
                            kind=kind,
                            alias="m1",
                            collection=collection,
                            shape="chat",
                            seat=seat,
                            ask_id=f"a{n:02d}",
                            status="ok",
                        )
                    )

    asyncio.run(log())
    newest_first = sorted(
        (f"a{n:02d}" for n in range(47)),
        key=lambda a: (_base(int(a[1:])) + 3, a),
        reverse=True,
    )
    for limit, filter_, expected in (
        ("20", "", newest_first),
        ("3", "", newest_first),
        ("4", "bench/duo", [a for a in newest_first if int(a[1:]) % 5]),
    ):
        seen: list[str] = []
        cursor: str | None = ""
        while cursor is not None:
            page = dashboard.get(
                "/ui/api/asks", params={"limit": limit, "before": cursor, "collection": filter_}
            ).json()
            assert 0 < len(page["asks"]) <= int(limit)
            seen += [a["ask"] for a in page["asks"]]
            cursor = page["next"]
            assert len(seen) < 60
        assert seen == expected  # no duplicates, no gaps, newest first
    first = dashboard.get("/ui/api/asks").json()
    assert len(first["asks"]) == 20 and first["next"] == newest_first[19]
    assert [s["kind"] for s in first["asks"][0]["seats"]] == ["seat", "seat", "merge"]
    for params, name in (
        ({"before": "no-such-ask"}, "before"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "\u00b2"}, "limit"),  # a digit to str.isdigit, not to int(): was a 500
    ):
        refused = dashboard.get("/ui/api/asks", params=params)
        assert refused.status_code == 400, (params, refused.text)
        assert refused.json()["error"]["field"] == name


def _base(n: int) -> int:
    return 2 * (n - (n % 3 == 1))


def test_recent_asks_polled_with_its_etag_is_a_304_until_something_on_it_changes(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """The page's poll (every 3 s) of a first page that can hold megabytes of
    kept answers: sent back its `ETag`, an unchanged page is a 304 with no
    body; a verdict or a pair given elsewhere (the API, the CLI, another
    tab), a new ask, changes it."""
    for served in ("m1", "m2"):
        fake_provider.add(FakeModel(served, answer=f"{served} says " + "words " * 2000))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2"))
    made = {"name": "duo", "members": ["m1", "m2"], "keep_text": True, "keep_days": 7}
    assert dashboard.post("/ui/api/collections", json=made).status_code == 200

    def ask() -> None:
        with dashboard.stream("POST", "/ui/api/ask", json={"collection": "duo", "prompt": "yes?"}) as reply:
            assert reply.status_code == 200
            reply.read()

    def poll(tag: str) -> httpx.Response:
        return dashboard.get("/ui/api/asks", headers={"if-none-match": tag})

    ask()
    first = wait_for(
        lambda: (r := dashboard.get("/ui/api/asks")).json()["asks"][0]["seats"][0].get("content") and r
    )
    tag = first.headers["etag"]
    assert tag.startswith('"') and first.headers["cache-control"] == "no-cache"
    assert len(first.content) > 20_000  # the kept answers
    unchanged = poll(tag)
    assert (unchanged.status_code, unchanged.content, unchanged.headers["etag"]) == (304, b"", tag)
    seats = first.json()["asks"][0]["seats"]
    steps = (
        {"call": seats[0]["call"], "useful": True},
        {"call": seats[0]["call"], "useful": True, "note": "a note later"},  # the note alone changed
        {"better": seats[1]["call"], "worse": seats[0]["call"]},
    )
    for verdict in steps:
        assert dashboard.post("/bench/verdict", json=verdict).status_code == 200
        changed = poll(tag)
        assert changed.status_code == 200 and changed.headers["etag"] != tag, verdict
        tag = changed.headers["etag"]
        assert poll(tag).status_code == 304
    page = changed.json()["asks"][0]
    assert page["seats"][0]["verdict"]["note"] == "a note later" and len(page["pairs"]) == 1
    ask()
    newer = poll(tag)
    assert newer.status_code == 200 and len(newer.json()["asks"]) == 2


def test_recent_asks_tag_changes_when_a_collection_is_made_blind(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """The same asks show hidden once their collection is blind: a poller
    holding the page's tag from before gets the hidden page, not a 304."""
    for served in ("m1", "m2"):
        fake_provider.add(FakeModel(served, answer=f"{served} says hello"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    _register(dashboard, fake_provider, ("m1", "m2"))
    assert (
        dashboard.post("/ui/api/collections", json={"name": "duo", "members": ["m1", "m2"]}).status_code
        == 200
    )
    with dashboard.stream("POST", "/ui/api/ask", json={"collection": "duo", "prompt": "yes?"}) as reply:
        reply.read()
    first = wait_for(lambda: (r := dashboard.get("/ui/api/asks")).json()["asks"] and r)
    assert not first.json()["asks"][0].get("hidden")
    tag = first.headers["etag"]
    made_blind = dashboard.post("/ui/api/collections/duo", json={"members": ["m1", "m2"], "blind": True})
    assert made_blind.status_code == 200
    after = dashboard.get("/ui/api/asks", headers={"if-none-match": tag})
    assert after.status_code == 200 and after.json()["asks"][0]["hidden"] is True
    assert {s["alias"] for s in after.json()["asks"][0]["seats"]}.isdisjoint({"m1", "m2"})
    assert dashboard.get("/ui/api/asks", headers={"if-none-match": after.headers["etag"]}).status_code == 304


def test_an_alias_typed_on_onboard_that_would_change_an_address_is_a_400_saying_the_rule(
    dashboard: httpx.Client, fake_provider: FakeProvider
) -> None:
    """The Onboard page's alias (a model added by hand): `/..`, a space, `?` or `#` would land in
    the Bench page's addresses, so it is refused on the form's field, the rule said once."""
    fake_provider.add(FakeModel("m1", answer="yes"))
    body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
    assert dashboard.post("/ui/api/endpoints", json=body).status_code == 200
    for alias in ("m1/../../settings", "m 1", "m1?probe", "m1#x", "m1/"):
        onboard = {"endpoint": "fake", "models": [{"served": "m1", "alias": alias}], "mode": "quick_ad_hoc"}
        refused = dashboard.post("/ui/api/onboard", json=onboard)
        assert refused.status_code == 400, (alias, refused.text)
        error = refused.json()["error"]
        assert error["field"] == "models" and "not empty, . or .." in error["message"], error
    assert dashboard.get("/ui/api/queue").json()["items"] == []


def test_recent_asks_cut_to_their_head_and_an_ask_read_whole(home: Path, dashboard: httpx.Client) -> None:
    """`head` cuts each kept text (answers, the question) to that many characters, its whole
    length said (`content_chars`): the list of asks with megabytes of answers is small. An ask
    opened is read whole (`/ui/api/asks/<ask>`), as the list has it otherwise; the whole list
    (no `head`) is as it always was."""
    long = "word " * 200_000  # a million characters

    async def log() -> None:
        async with Runtime.open(home) as runtime:
            await add_endpoint(runtime.store, "hub", "http://127.0.0.1:9/v1", needs_key=False)
            await add_model(runtime.store, "m1", "hub", "m1")
            await add_model(runtime.store, "m2", "hub", "m2")
            await add_collection(runtime.store, "duo", ["m1", "m2"], keep_text=True)
            question = Request(messages=(user("why? " + long),), system="be brief")
            answers = {"c0": ("m1", long), "c1": ("m2", "short")}
            await kept_ask(runtime.store, "duo", "a1", answers, question, datetime.now(UTC))

    asyncio.run(log())
    whole = dashboard.get("/ui/api/asks")
    assert len(whole.content) > 2_000_000
    (listed,) = whole.json()["asks"]
    assert [s["content"] for s in listed["seats"]] == [long, "short"]
    assert all("content_chars" not in s for s in listed["seats"])
    cut = dashboard.get("/ui/api/asks", params={"head": "100"})
    assert len(cut.content) < 5_000 and cut.headers["etag"] != whole.headers["etag"]
    (head,) = cut.json()["asks"]
    seats = [(s["content"], s["content_chars"]) for s in head["seats"]]
    assert seats == [(long[:100], len(long)), ("short", 5)]
    (message,) = head["question"]["messages"]
    assert (message["content"], message["content_chars"]) == (("why? " + long)[:100], len(long) + 5)
    assert (head["question"]["system"], head["question"]["system_chars"]) == ("be brief", 8)
    assert {k: v for k, v in head.items() if k not in ("seats", "question")} == {
        k: v for k, v in listed.items() if k not in ("seats", "question")
    }
    unchanged = dashboard.get(
        "/ui/api/asks", params={"head": "100"}, headers={"if-none-match": cut.headers["etag"]}
    )
    assert unchanged.status_code == 304
    opened = dashboard.get("/ui/api/asks/a1")
    assert opened.status_code == 200 and opened.json()["ask"] == listed
    missing = dashboard.get("/ui/api/asks/nope")
    assert missing.status_code == 404 and missing.json()["error"]["field"] == "ask"
    for wrong in ("-1", "x", "1.5"):
        refused = dashboard.get("/ui/api/asks", params={"head": wrong})
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "head"
