"""A panel no seat answered is an error in the caller's format, naming each
seat's reason (docs/api.md, "A panel no seat answered"): through every
format's official client, streamed and not (issue 40, item 5). A wrong key
on every seat is a 502 saying the provider failed; every seat cut by the
panel's deadline a 502 that says so and not that a provider failed (none
did); every seat rate limited, a 429."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider, RateLimit
from benchwarmers.testing.live_server import live_server

# (collection, the status every client sees, what each seat's reason says)
CASES = [("dead", 502, "invalid API key"), ("late", 502, "cut: deadline 1s passed"), ("full", 429, "")]
# How each message begins: only a provider's failure is said to be one, and
# never as an `HTTP 502` of its own (that status is ours).
OPENING = {
    "dead": "the model's provider failed: no seat of bench/dead answered (",
    "late": "no seat of bench/late answered (",
    "full": "no seat of bench/full answered (",
}
# A deadline of its own shorter than the seats' wait: every seat is cut.
LATE_SECONDS = 3.0


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`dead`: two seats on a provider that refuses the key (none is sent);
    `late`: two seats slower than their collection's deadline (1 s);
    `full`: two seats whose provider answers 429; `torn`: two seats whose
    streams end after their first words."""
    home = tmp_path_factory.mktemp("home")
    with (
        FakeProvider(key="sk-right") as locked,
        FakeProvider() as slow,
        FakeProvider() as busy,
        FakeProvider() as torn,
    ):
        for served in ("one", "two"):
            locked.add(FakeModel(served, answer="never"))
            slow.add(FakeModel(served, answer="too late", ttfb=LATE_SECONDS))
            busy.add(FakeModel(served, answer="never", rate_limit=RateLimit(retry=0)))
            torn.add(FakeModel(served, answer="first words then nothing", cut_after=2))
        bases = {"dead": locked, "late": slow, "full": busy, "torn": torn}
        asyncio.run(_register(home, {collection: fake.openai_base for collection, fake in bases.items()}))
        with live_server(home) as server:
            yield server.url


async def _register(home: Path, bases: dict[str, str]) -> None:
    async with Runtime.open(home) as runtime:
        for collection, base in bases.items():
            await add_endpoint(runtime.store, collection, base, "openai", needs_key=False)
            aliases = [f"{collection}-{served}" for served in ("one", "two")]
            for alias, served in zip(aliases, ("one", "two"), strict=True):
                await add_model(runtime.store, alias, collection, served)
            await add_collection(
                runtime.store, collection, aliases, deadline=1.0 if collection == "late" else 0.0
            )


def refused_as(status_code: int, message: str, collection: str, status: int, reason: str) -> None:
    """The rule, or, once an earlier ask's 429 has rested every member (the
    server is shared by the module's tests), the refusal before any seat: a
    422 naming each member resting as rate limited. Both are errors in the
    caller's format with each model's reason."""
    if status == 429 and status_code == 422:
        for alias in (f"{collection}-one", f"{collection}-two"):
            assert f"{alias}: resting (rate limited)" in message, message
        return
    assert status_code == status, message
    says_each_seat(message, collection, reason)


def says_each_seat(message: str, collection: str, reason: str) -> None:
    ours = re.sub(r"^Error code: \d+ - ", "", message)  # the openai client's own opening
    assert ours.startswith(OPENING[collection]) and "HTTP 502" not in ours, message
    for seat, alias in (("Seat 1", f"{collection}-one"), ("Seat 2", f"{collection}-two")):
        assert f"{seat} ({alias}): " in message, message
    assert message.count(reason) >= 2 if reason else True, message


@pytest.mark.parametrize(("collection", "status", "reason"), CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_and_responses(url: str, collection: str, status: int, reason: str, stream: bool) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
    with pytest.raises(openai.APIStatusError) as chat:
        client.chat.completions.create(
            model=f"bench/{collection}", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    refused_as(chat.value.status_code, chat.value.message, collection, status, reason)
    with pytest.raises(openai.APIStatusError) as responses:
        client.responses.create(model=f"bench/{collection}", input="hi", stream=stream)
    refused_as(responses.value.status_code, responses.value.message, collection, status, reason)


@pytest.mark.parametrize(("collection", "status", "reason"), CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic(url: str, collection: str, status: int, reason: str, stream: bool) -> None:
    client = anthropic.Anthropic(base_url=url, api_key="any", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as failed:
        client.messages.create(
            model=f"bench/{collection}",
            max_tokens=50,
            messages=[{"role": "user", "content": "hi"}],
            stream=stream,
        )
    assert failed.value.body["type"] == "error"
    refused_as(failed.value.status_code, failed.value.body["error"]["message"], collection, status, reason)


@pytest.mark.parametrize(("collection", "status", "reason"), CASES)
def test_gemini(url: str, collection: str, status: int, reason: str) -> None:
    options = genai_types.HttpOptions(base_url=url, api_version="v1beta")
    client = genai.Client(api_key="any", http_options=options)
    with pytest.raises(genai.errors.APIError) as whole:
        client.models.generate_content(model=f"bench/{collection}", contents="hi")
    with pytest.raises(genai.errors.APIError) as streamed:
        list(client.models.generate_content_stream(model=f"bench/{collection}", contents="hi"))
    for failed in (whole.value, streamed.value):
        refused_as(failed.code, failed.message or "", collection, status, reason)


@pytest.mark.parametrize(("collection", "status", "reason"), CASES)
@pytest.mark.parametrize("stream", [False, True])
def test_ollama(url: str, collection: str, status: int, reason: str, stream: bool) -> None:
    client = ollama.Client(host=url)
    with pytest.raises(ollama.ResponseError) as chat:
        list(
            client.chat(
                model=f"bench/{collection}", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        ) if stream else client.chat(
            model=f"bench/{collection}", messages=[{"role": "user", "content": "hi"}]
        )
    refused_as(chat.value.status_code, chat.value.error, collection, status, reason)


def test_a_live_stream_whose_seats_wrote_then_failed_says_so_in_a_200(url: str) -> None:
    """The one exception (docs/api.md): a live stream's first words started
    the reply before anyone knew every seat would fail, so it ends saying
    each seat failed, in its text and `bench`, and the SDK reads it."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="bench/torn", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.count("first words") == 2 and text.count("_(error, ") == 2, text
    bench = chunks[-1].model_extra["bench"] if chunks[-1].model_extra else {}
    assert [seat["status"] for seat in bench["seats"]] == ["error", "error"]
