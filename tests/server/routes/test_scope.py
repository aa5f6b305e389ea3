"""A key limited to some collections stays inside them: it cannot seat
other models through `bench.with`, and cannot tell an alias that exists
from one that does not by the answer it gets."""

from __future__ import annotations

import httpx
import pytest

from .hardening_support import Bench, ask_body


def _ask(client: httpx.Client, key: str, extras: list[str]) -> httpx.Response:
    body = ask_body("trio", bench={"with": extras})
    return client.post("/v1/chat/completions", json=body, headers={"authorization": f"Bearer {key}"})


@pytest.mark.parametrize("extras", [["slow"], ["trickle", "alpha"], ["no-such-model"]])
def test_a_scoped_key_cannot_seat_models_outside_its_collections(
    bench: Bench, client: httpx.Client, extras: list[str]
) -> None:
    before = bench.fake.calls.copy()
    reply = _ask(client, bench.trio_key, extras)
    assert reply.status_code == 403, reply.text
    assert "may seat only the members of its collections" in reply.json()["error"]["message"]
    assert bench.fake.calls == before  # nothing went out


def test_an_alias_that_exists_and_one_that_does_not_get_the_same_answer(
    bench: Bench, client: httpx.Client
) -> None:
    there = _ask(client, bench.trio_key, ["slow"])
    absent = _ask(client, bench.trio_key, ["nope"])
    assert there.status_code == absent.status_code == 403
    assert there.json()["error"]["message"].replace("'slow'", "X") == absent.json()["error"][
        "message"
    ].replace("'nope'", "X")


def test_a_scoped_key_asks_only_its_collections_members_as_the_seats_of_a_follow_up(
    bench: Bench, client: httpx.Client
) -> None:
    before = bench.fake.calls.copy()
    body = ask_body("trio", bench={"seats": ["alpha", "slow"]})
    reply = client.post(
        "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {bench.trio_key}"}
    )
    assert reply.status_code == 403, reply.text
    assert "'slow' is not one" in reply.json()["error"]["message"]
    assert bench.fake.calls == before


def test_a_scoped_key_may_seat_a_member_of_its_collection_and_the_owner_anyone(
    bench: Bench, client: httpx.Client
) -> None:
    assert _ask(client, bench.trio_key, ["alpha"]).status_code == 200
    owner = client.post("/v1/chat/completions", json=ask_body("trio", bench={"with": ["slow"]}))
    assert owner.status_code == 200, owner.text
