"""The inbound-format registry: every format is one registration, and what
reads formats (the router, the guard, the error renderer, these tests'
parametrisation) reads them there. Shown with a throwaway sixth format
(`throwaway_format.py`, a Cohere-like `/v2/chat`) that nothing else names:
registered in a test, it is served, guarded and shaped; run as a plugin, the
format-parametrised tests pick it up."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.formats import registry
from benchwarmers.formats.errors import error_body, format_for_path
from benchwarmers.server.guard import is_gateway_path
from benchwarmers.testing.sdk_types import sse_events

from .formats_support import Gateway, start_gateway
from .throwaway_format import COHERE, KEY_HEADER

ROOT = Path(__file__).parents[2]


def shape(value: Any) -> Any:
    """A JSON value's keys and types, not its words: two errors of one format
    have the same shape whatever they say."""
    if isinstance(value, dict):
        return {key: shape(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [shape(inner) for inner in value]
    return type(value).__name__


# ---------------------------------------------------------- registration


def test_a_format_registered_without_an_error_body_is_refused() -> None:
    nameless: Any = None
    with pytest.raises(ValueError, match="without an error body"):
        registry.register(registry.InboundFormat("mute", ("/mute/",), nameless))
    assert "mute" not in {fmt.name for fmt in registry.formats()}


def test_a_path_or_name_another_format_has_is_refused() -> None:
    with pytest.raises(ValueError, match="'anthropic'"):
        registry.register(registry.InboundFormat("copycat", ("/v1/messages",), COHERE.error_body))
    with pytest.raises(ValueError, match="registered already"):
        registry.register(registry.InboundFormat("gemini", ("/v9/",), COHERE.error_body))


def test_a_codec_must_carry_the_name_it_is_registered_under() -> None:
    with pytest.raises(ValueError, match="codec is named 'cohere'"):
        registry.register(registry.InboundFormat("other", ("/v7/",), COHERE.error_body, codec=COHERE.codec))


def test_the_builtin_formats_and_their_paths() -> None:
    names = {fmt.name for fmt in registry.formats()}
    assert {"openai_chat", "responses", "anthropic", "gemini", "ollama", "jsonrpc"} <= names
    for fmt in registry.formats():
        assert format_for_path(fmt.example_path()) == fmt.name
        assert is_gateway_path(fmt.example_path())
    assert not is_gateway_path("/") and not is_gateway_path("/models")


def test_a_registered_format_is_read_everywhere_and_gone_after() -> None:
    assert format_for_path("/v2/chat") == registry.FALLBACK and not is_gateway_path("/v2/chat")
    with registry.registered(COHERE):
        assert format_for_path("/v2/chat") == "cohere"
        assert is_gateway_path("/v2/chat")
        assert KEY_HEADER.encode() in registry.key_headers()
        assert error_body("cohere", 401, "no key") == {"message": "no key"}
    assert format_for_path("/v2/chat") == registry.FALLBACK and not is_gateway_path("/v2/chat")
    assert KEY_HEADER.encode() not in registry.key_headers()


# --------------------------------------------- every format, over the wire


@pytest.mark.parametrize("fmt", registry.formats(), ids=lambda fmt: fmt.name)
def test_every_format_is_guarded_and_answers_in_its_shape(
    exposed_gateway: Gateway, fmt: registry.InboundFormat
) -> None:
    """Keys required: none is a 401, and a body the route refuses a 400,
    each in the format's own error shape; a key sent in any header the
    format names is read."""
    url = exposed_gateway.url + fmt.example_path()
    refused = httpx.post(url, json={}, timeout=30)
    assert refused.status_code == 401, refused.text
    assert shape(refused.json()) == shape(fmt.error_body(401, "no key", False))
    if fmt.codec is None:
        return
    bearer = {"authorization": f"Bearer {exposed_gateway.trio_key}"}
    malformed = httpx.post(url, json={}, headers=bearer, timeout=30)
    assert malformed.status_code == 400, malformed.text  # the route is there, and its parser said why
    assert shape(malformed.json()) == shape(fmt.error_body(400, "bad", False))
    for header in fmt.key_headers:
        keyed = httpx.post(url, json={}, headers={header: exposed_gateway.trio_key}, timeout=30)
        assert keyed.status_code == 400, (header, keyed.text)


# ------------------------------------------------------ the sixth format


@contextmanager
def sixth_format_gateway(home: Path, *, acting_as: str) -> Iterator[Gateway]:
    with registry.registered(COHERE):
        yield from start_gateway(home, acting_as=acting_as)


ASK = {"model": "bench/trio", "messages": [{"role": "user", "content": "Which is bigger, 3 or 4?"}]}


def test_a_sixth_format_is_served_guarded_and_shaped(tmp_path: Path) -> None:
    with sixth_format_gateway(tmp_path / "home", acting_as="0.0.0.0") as gateway:
        url = f"{gateway.url}/v2/chat"
        keyed = {KEY_HEADER: gateway.trio_key}
        whole = httpx.post(url, json=ASK, headers=keyed, timeout=30)
        assert whole.status_code == 200, whole.text
        text = whole.json()["message"]["content"][0]["text"]
        assert all(f"{alias} heard" in text for alias in ("alpha", "beta", "gamma"))
        assert len(whole.json()["bench"]["seats"]) == 3 and "x-bench" in whole.headers

        streamed = httpx.post(url, json={**ASK, "stream": True}, headers=keyed, timeout=30)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event")
        events = list(sse_events(streamed.content))
        assert events[0]["type"] == "message-start" and events[-1]["type"] == "message-end"
        assert len(events[-1]["bench"]["seats"]) == 3

        route = httpx.post(url, json={**ASK, "model": "bench/trio:route"}, headers=keyed, timeout=30)
        assert route.status_code == 200, route.text
        assert "heard" in route.json()["message"]["content"][0]["text"] and route.headers["x-bench-call"]

        no_key = httpx.post(url, json=ASK, timeout=30)
        assert no_key.status_code == 401 and set(no_key.json()) == {"message"}
        bad = httpx.post(url, json={"model": "gpt-4o", "messages": []}, headers=keyed, timeout=30)
        assert bad.status_code == 400 and "is not a collection" in bad.json()["message"]
        not_json = httpx.post(url, content=b"{", headers=keyed, timeout=30)
        assert not_json.status_code == 400 and set(not_json.json()) == {"message"}


def test_the_format_parametrised_tests_pick_up_a_sixth_format() -> None:
    """Run with the throwaway format registered as a plugin, the tests
    parametrised on the registry run (and pass) for it too."""
    parametrised = [
        "tests/formats/test_registry.py::test_every_format_is_guarded_and_answers_in_its_shape",
        "tests/server/test_errors.py::test_every_refusal_in_every_format",
    ]
    plugin = ["-p", "tests.formats.throwaway_format", "-p", "no:cacheprovider"]
    run = subprocess.run(
        # Only the sixth format's cases: the others run in this suite already.
        [sys.executable, "-m", "pytest", *plugin, "-q", "-rA", "-n", "0", "-k", "cohere", *parametrised],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    passed = [line for line in run.stdout.splitlines() if line.startswith("PASSED")]
    for test in parametrised:
        assert any(line.startswith(f"PASSED {test}[") and "cohere" in line for line in passed), run.stdout
