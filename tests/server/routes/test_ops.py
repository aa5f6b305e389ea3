"""`/bench/ops/*` (onboarding queue, discover, alerts, probes, retire,
restore, role, scheduler) under random bodies, path parameters and query
strings: never a 5xx, every 4xx in the OpenAI error shape; and a refused
change changes nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .hardening_support import FUZZ, Bench, as_bytes, check_reply, json_values, odd_text, perturbed, rows

OPS = "/bench/ops"
GETS = ("/queue", "/discover", "/alerts", "/scheduler")
# Aliases that exist are left out: probing or retiring them would change the bench under other tests.
aliases = odd_text.filter(lambda a: a.strip() not in {"alpha", "beta", "gamma", "delta", "slow"})


def segment(text: str) -> str:
    return quote(text, safe="") or "%20"


@FUZZ
@given(
    path=st.sampled_from(GETS),
    query=st.lists(st.tuples(st.sampled_from(["all", "free", "limit", "x"]), odd_text), max_size=3),
)
def test_listings_with_any_query(client: httpx.Client, path: str, query: list[tuple[str, str]]) -> None:
    url = f"{OPS}{path}?{urlencode(query)}"
    check_reply(client.get(url), url)


@FUZZ
@given(
    body=perturbed(
        {
            "endpoint": "fake-openai",
            "models": ["m", {"served": "m", "alias": "a", "role": "general"}],
            "mode": "full",
        }
    )
)
def test_onboard_bodies(bench: Bench, client: httpx.Client, body: Any) -> None:
    # The endpoint named may not exist: enqueueing onto it must still be a 4xx, not a 5xx.
    if isinstance(body, dict) and body.get("endpoint") == "fake-openai":
        body["endpoint"] = "no-such-endpoint"
    reply = client.post(f"{OPS}/onboard", content=as_bytes(body))
    check_reply(reply, f"{OPS}/onboard", body)


@FUZZ
@given(
    alias=aliases,
    action=st.sampled_from(["probe", "probes", "retire", "restore", "role"]),
    body=json_values | perturbed({"role": "coder", "reason": "r"}),
    limit=odd_text,
)
def test_model_actions_on_any_alias(
    client: httpx.Client, alias: str, action: str, body: Any, limit: str
) -> None:
    url = f"{OPS}/models/{segment(alias)}/{action}"
    if action == "probes":
        url += f"?limit={quote(limit)}"
        reply = client.get(url)
    else:
        reply = client.post(url, content=as_bytes(body))
    check_reply(reply, url, (alias, body))


@FUZZ
@given(role=json_values | odd_text, reason=json_values)
def test_role_and_retire_bodies_on_a_real_model(
    bench: Bench, client: httpx.Client, role: Any, reason: Any
) -> None:
    """A bad role or reason is refused and the model stays as it was; a
    text role is taken (then put back)."""
    before = rows(bench.home, "SELECT role, status FROM models WHERE alias = 'delta'")
    reply = client.post(f"{OPS}/models/delta/role", content=as_bytes({"role": role}))
    check_reply(reply, f"{OPS}/models/delta/role", role)
    if reply.status_code >= 400:
        assert rows(bench.home, "SELECT role, status FROM models WHERE alias = 'delta'") == before
    else:
        client.post(f"{OPS}/models/delta/role", json={"role": before[0]["role"]}).raise_for_status()
    reply = client.post(f"{OPS}/models/delta/retire", content=as_bytes({"reason": reason}))
    check_reply(reply, f"{OPS}/models/delta/retire", reason)
    client.post(f"{OPS}/models/delta/restore").raise_for_status()
    assert rows(bench.home, "SELECT role, status FROM models WHERE alias = 'delta'") == before


@FUZZ
@given(alert=odd_text | st.integers().map(str), body=st.binary(max_size=20))
def test_dismiss_any_alert_id(client: httpx.Client, alert: str, body: bytes) -> None:
    url = f"{OPS}/alerts/{segment(alert)}/dismiss"
    check_reply(client.post(url, content=body), url, alert)


@FUZZ
@given(body=perturbed({"enabled": False}), job=odd_text)
def test_scheduler_switch_and_jobs(bench: Bench, client: httpx.Client, body: Any, job: str) -> None:
    reply = client.post(f"{OPS}/scheduler", content=as_bytes(body))
    check_reply(reply, f"{OPS}/scheduler", body)
    if reply.status_code == 200 and reply.json()["enabled"]:
        client.post(f"{OPS}/scheduler", json={"enabled": False}).raise_for_status()
    url = f"{OPS}/scheduler/run/{segment(job)}"
    check_reply(client.post(url), url, job)


@FUZZ
@given(
    path=st.sampled_from(["/onboard", "/scheduler", "/models/delta/role", "/models/delta/retire"]),
    content=st.binary(max_size=60),
)
def test_bytes_that_are_not_json(client: httpx.Client, path: str, content: bytes) -> None:
    reply = client.post(OPS + path, content=content, headers={"content-type": "application/json"})
    check_reply(reply, OPS + path, content)
    client.post(f"{OPS}/models/delta/restore").raise_for_status()


# Percent-encodings that decode to no text: invalid UTF-8, an encoded
# surrogate, an overlong slash, a NUL, an encoded slash.
RAW_SEGMENTS = ["%FF", "%ED%A0%80", "%C0%AF", "%00", "a%2Fb", "%25", "."]


@pytest.mark.parametrize("segment_text", RAW_SEGMENTS)
def test_path_parameters_that_are_no_text(client: httpx.Client, segment_text: str) -> None:
    for method, url in [
        ("POST", f"{OPS}/models/{segment_text}/probe"),
        ("GET", f"{OPS}/models/{segment_text}/probes"),
        ("POST", f"{OPS}/models/{segment_text}/retire"),
        ("POST", f"{OPS}/models/{segment_text}/role"),
        ("POST", f"{OPS}/scheduler/run/{segment_text}"),
        ("POST", f"{OPS}/alerts/{segment_text}/dismiss"),
        ("GET", f"/bench/record?collection={segment_text}&task={segment_text}"),
        ("GET", f"/bench/decisions?collection=bench/{segment_text}&shape={segment_text}"),
    ]:
        check_reply(client.request(method, url, content=b'{"role": "x"}'), url)
