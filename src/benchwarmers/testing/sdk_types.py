"""Our replies checked against each official SDK's own types, strictly.

Parsing a reply with a client proves little: the SDKs build their models
leniently (`construct`), so a missing required field or a number sent as a
string goes unnoticed until a user's code touches it. Here every body and
every stream event is run through pydantic's `model_validate` on the SDK's
type, in strict mode (no coercion), so a field that the SDK declares and we
leave out, or send as the wrong type, fails the test that produced it.

    check("responses", body)                  # a whole reply
    for event in sse_events(raw): check("responses_event", event)

The kinds: `chat` and `chat_chunk` (openai `ChatCompletion`,
`ChatCompletionChunk`), `responses` and `responses_event` (openai
`Response`, every `ResponseStreamEvent`), `anthropic` and
`anthropic_event` (anthropic `Message`, `RawMessageStreamEvent`),
`gemini` (google-genai `GenerateContentResponse`), `ollama_chat` and
`ollama_generate` (ollama `ChatResponse`, `GenerateResponse`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter


@cache
def _adapters() -> dict[str, TypeAdapter[Any]]:
    import ollama
    from anthropic.types import Message, RawMessageStreamEvent
    from google.genai.types import GenerateContentResponse
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    return {
        "chat": TypeAdapter(ChatCompletion),
        "chat_chunk": TypeAdapter(ChatCompletionChunk),
        "responses": TypeAdapter(Response),
        "responses_event": TypeAdapter(ResponseStreamEvent),
        "anthropic": TypeAdapter(Message),
        "anthropic_event": TypeAdapter(RawMessageStreamEvent),
        "gemini": TypeAdapter(GenerateContentResponse),
        "ollama_chat": TypeAdapter(ollama.ChatResponse),
        "ollama_generate": TypeAdapter(ollama.GenerateResponse),
    }


@cache
def _events_by_type(kind: str) -> dict[str, type[BaseModel]]:
    """An event union's members by their `type` literal, so a bad event is
    checked against the one type it names (a union's error lists hundreds)."""
    from typing import get_args

    union = _adapters()[kind]._type  # type: ignore[attr-defined]
    while get_args(union) and not isinstance(get_args(union)[0], type):
        union = get_args(union)[0]  # Annotated[Union[...], ...]
    found = {}
    for member in get_args(union):
        for literal in get_args(member.model_fields["type"].annotation):
            found[literal] = member
    return found


def check(kind: str, body: Any) -> Any:
    """The body as the SDK's type; raises pydantic's `ValidationError` naming
    the field when the body does not fit it (or `AssertionError` for an
    event type the SDK does not know). Strict (no coercion) where JSON can
    carry the SDK's type: google-genai declares enums and datetimes, which
    JSON sends as strings, so Gemini is read in lax mode (extra keys are
    still forbidden)."""
    if kind == "gemini":
        # The one key of ours: google-genai's client reads only the fields
        # it knows into this type, so it never meets `bench`.
        body = {k: v for k, v in body.items() if k != "bench"}
    if kind == "anthropic_event" and body.get("type") == "ping":
        # Anthropic's keep-alive; its SDK skips it before typing events.
        assert body == {"type": "ping"}, body
        return body
    if kind.endswith("_event"):
        model = _events_by_type(kind).get(body.get("type"))
        assert model is not None, f"{body.get('type')!r} is not a {kind} type the SDK knows"
        return model.model_validate(body, strict=True)
    return _adapters()[kind].validate_python(body, strict=kind != "gemini")


def sse_events(raw: bytes | str) -> Iterator[Any]:
    """The JSON data of each SSE event (`[DONE]` and comments skipped)."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    for frame in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in frame.split("\n") if line.startswith("data:")]
        if data and data != ["[DONE]"]:
            yield json.loads("\n".join(data))


def ndjson_lines(raw: bytes | str) -> Iterator[Any]:
    text = raw.decode() if isinstance(raw, bytes) else raw
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def check_all(kind: str, bodies: Iterable[Any]) -> list[Any]:
    """Every body of a stream through `check`; at least one must come."""
    checked = [check(kind, body) for body in bodies]
    assert checked, f"the stream held no {kind} events"
    return checked
