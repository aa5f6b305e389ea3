"""`benchwarmers fake-provider --port P --models FILE`: a scripted provider
speaking the OpenAI, Anthropic, Gemini and Ollama APIs at once, so you can
try everything offline (point an endpoint of any kind at it).

The models file is JSON: `{"models": [...], "key": null}` (or just the
list). `key`, when set, is the key every call must carry in its API's
header. Each model:

    {
      "served": "fake-fast",              the id endpoints call it by (required)
      "answer": "You said: {prompt}",     text; {prompt} {model} {api} {system} are filled in
      "json_answer": "schema-example",    the text when asked for structured output (JSON or
                                          not); "schema-example": a value valid against it
      "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
                                          made when the request offers tools and does not
                                          already carry their results
      "latency": 0.5,                     seconds for the whole reply
      "ttfb": 0.1,                        seconds before the first byte
      "tokens_per_second": 20,            pace of a streamed reply (a token is a word)
      "max_output": 50,                   its own output limit: a longer answer is cut there and
                                          ends for length (so is one past the request's limit)
      "thinking": "Let me see.",          reasoning before the answer, in the API's own field
      "think_tag": "think",               ...or in the text: <think>…</think> ("thinking",
                                          or "/think": no opening tag)
      "stream_always": true,              answer a request that did not ask to stream as a stream
      "error": {"status": 500, "message": "boom"},
      "rate_limit": {"style": "openai", "retry": 20, "limit": 100, "remaining": 0},
                                          styles: openai, anthropic, gemini, gemini-details,
                                          retry-after, retry-after-date, retry-after-ms, body, day
      "headers": {"x-ratelimit-remaining-requests": "99"},   added to every success
      "cut_after": 3, "cut_mode": "close",  a stream stops after 3 pieces ("abort" breaks the
                                          connection, "error" sends an in-stream error)
      "malformed_json": true,             a body (or stream line) that is not JSON
      "never_ending": true,               a stream that never finishes (a reply that never comes)
      "fail_first": 2,                    the faults above hit only the first 2 calls
      "listed": ["openai", "ollama"]      the APIs whose model list shows it (default: all)
    }

Token usage is counted in words. See docs/fake-provider.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchwarmers.cli.context import console
from benchwarmers.errors import UserError
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import models_from_json


def register(app: typer.Typer) -> None:
    app.command("fake-provider")(fake_provider)


def fake_provider(
    models: Annotated[Path, typer.Option("--models", help="JSON file describing the fake models.")],
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8199,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
) -> None:
    """Run a scripted fake provider (OpenAI, Anthropic, Gemini and Ollama APIs) for offline use."""
    try:
        text = models.read_text()
    except OSError as error:
        raise UserError(f"cannot read {models}: {error.strerror or error}") from None
    try:
        scripted, key = models_from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise UserError(f"{models}: not a fake-provider models file: {error}") from None
    provider = FakeProvider(scripted, key=key, host=host)
    sock = provider.listen(port)
    names = ", ".join(provider.models) or "none"
    console.print(f"Fake provider on {provider.url}, simulated models: {names}")
    console.print(f"  openai endpoints: {provider.openai_base}")
    console.print(f"  anthropic, gemini and ollama endpoints: {provider.url}")
    provider.serve_forever(sock)
