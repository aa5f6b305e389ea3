"""`/bench/verdict`, `/bench/pending`, `/bench/record`, `/bench/quotas`, `/bench/usage` and
`/bench/decisions` under random and malformed bodies and query strings:
never a 5xx, every 4xx in the OpenAI error shape these paths speak."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .hardening_support import (
    FUZZ,
    Bench,
    as_bytes,
    check_reply,
    json_values,
    odd_text,
    perturbed,
    seat_calls,
)

POSTS = ("/bench/verdict", "/bench/pending")
GETS = ("/bench/record", "/bench/decisions", "/bench/quotas", "/bench/usage")


@pytest.fixture(scope="module")
def call_id(client: httpx.Client) -> str:
    return seat_calls(client)[0]


@FUZZ
@given(body=perturbed({"call": "c_x", "useful": True, "note": "short"}), use_real=st.booleans())
def test_verdict_bodies(client: httpx.Client, call_id: str, body: Any, use_real: bool) -> None:
    if use_real and isinstance(body, dict) and "call" in body:
        body["call"] = call_id
    reply = client.post(
        "/bench/verdict", content=as_bytes(body), headers={"content-type": "application/json"}
    )
    check_reply(reply, "/bench/verdict", body)


@pytest.fixture(scope="module")
def two_asks(client: httpx.Client) -> list[str]:
    """Seats of two asks: pairs within one ask, across two, and a call twice."""
    return seat_calls(client) + seat_calls(client)


# Each pair form, and the near misses of one: a key missing or holding anything, lists grown or cut.
PAIR_BODIES = st.one_of(
    perturbed({"better": "c_x", "worse": "c_y", "note": "n"}),
    perturbed({"tie": ["c_x", "c_y"]}),
    perturbed({"both_bad": ["c_x", "c_y"], "note": "n"}),
    perturbed({"bothBad": ["c_x", "c_y"]}),
    perturbed({"best": "c_x"}),
    st.dictionaries(
        st.sampled_from(["better", "worse", "tie", "both_bad", "bothBad", "best", "note", "call", "useful"]),
        json_values,
        max_size=4,
    ),
)


@FUZZ
@given(body=PAIR_BODIES, picks=st.lists(st.integers(0, 7), min_size=4, max_size=4))
def test_pair_bodies(client: httpx.Client, two_asks: list[str], body: Any, picks: list[int]) -> None:
    """Pair bodies, random or near a form, naming the seats of one ask or two
    (or one seat twice) where the form puts a call id: never a 5xx."""
    real = iter(two_asks[i % len(two_asks)] for i in picks)
    if isinstance(body, dict):
        for key, value in list(body.items()):
            if value == "c_x" or value == "c_y":
                body[key] = next(real, value)
            elif isinstance(value, list):
                body[key] = [next(real, v) if v in ("c_x", "c_y") else v for v in value]
    reply = client.post(
        "/bench/verdict", content=as_bytes(body), headers={"content-type": "application/json"}
    )
    check_reply(reply, "/bench/verdict", body)


@FUZZ
@given(body=perturbed({"calls": ["c_x", "c_y"]}))
def test_pending_bodies(client: httpx.Client, body: Any) -> None:
    reply = client.post(
        "/bench/pending", content=as_bytes(body), headers={"content-type": "application/json"}
    )
    check_reply(reply, "/bench/pending", body)


@FUZZ
@given(path=st.sampled_from(POSTS), content=st.binary(max_size=80))
def test_bytes_that_are_not_json(client: httpx.Client, path: str, content: bytes) -> None:
    reply = client.post(path, content=content, headers={"content-type": "application/json"})
    check_reply(reply, path, content)


QUERY_KEYS = st.sampled_from(["collection", "task", "shape", "all", "free", "limit", "key", "x"])


@FUZZ
@given(
    path=st.sampled_from(GETS),
    query=st.lists(st.tuples(QUERY_KEYS, odd_text), max_size=4),
)
def test_query_strings(client: httpx.Client, path: str, query: list[tuple[str, str]]) -> None:
    url = f"{path}?{urlencode(query)}" if query else path
    check_reply(client.get(url), url)


@FUZZ
@given(path=st.sampled_from(GETS), raw=st.binary(max_size=40))
def test_raw_query_bytes(client: httpx.Client, path: str, raw: bytes) -> None:
    """Query strings that are not even well-formed percent-encoding."""
    query = "".join(chr(b) if 0x21 <= b < 0x7F and chr(b) not in "#" else f"%{b:02X}" for b in raw)
    url = f"{path}?collection={query}&shape={query}&task={query}"
    check_reply(client.get(url), url)


@FUZZ
@given(path=st.sampled_from(POSTS + GETS), method=st.sampled_from(["PUT", "DELETE", "PATCH", "GET", "POST"]))
def test_wrong_methods(
    client: httpx.Client,
    path: str,
    method: str,
) -> None:
    check_reply(client.request(method, path, content=b"{}"), path)


def test_verdict_on_a_real_call_then_junk_keeps_it(bench: Bench, client: httpx.Client, call_id: str) -> None:
    reply = client.post("/bench/verdict", json={"call": call_id, "useful": False, "note": "kept"})
    assert reply.status_code == 200, reply.text
    for junk in ({"call": call_id, "useful": "yes"}, {"call": call_id, "useful": True, "note": 7}):
        check_reply(client.post("/bench/verdict", json=junk), "/bench/verdict", junk)
    record = client.get("/bench/record", params={"collection": "bench/trio"}).json()
    assert sum(a["judged"] for a in record["aliases"].values()) >= 1


@FUZZ
@given(value=json_values)
def test_any_json_to_pending(client: httpx.Client, value: Any) -> None:
    reply = client.post("/bench/pending", content=as_bytes({"calls": value}))
    check_reply(reply, "/bench/pending", value)


def test_the_record_of_an_unknown_collection_is_a_404_in_the_gateway_format(client: httpx.Client) -> None:
    for name in ("nope", "bench/nope"):
        reply = client.get("/bench/record", params={"collection": name})
        assert reply.status_code == 404, reply.text
        check_reply(reply, "/bench/record")
        assert "no collection" in reply.json()["error"]["message"]
    assert client.get("/bench/record", params={"collection": "bench/trio"}).status_code == 200
