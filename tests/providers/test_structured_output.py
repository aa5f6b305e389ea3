"""Structured output leaves in each provider API's own form: OpenAI's
`response_format`, Anthropic's `output_config.format` (plain JSON, which it
has no mode for, in the system prompt), Gemini's `responseMimeType` and
`responseJsonSchema`, Ollama's `format`; checked on the body the fake
provider received over HTTP, and read back by it (`FakeRequest.output`);
the `response_format` and the prompt's words spelt once
(`providers/structured_output.py`)."""

from __future__ import annotations

import json

import pytest

from benchwarmers.providers.base import gather
from benchwarmers.providers.structured_output import openai_response_format, output_instruction
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.types import API_KINDS, OutputFormat, Request, user

from .conftest import Call
from .test_adapters import replay

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
AS_SCHEMA = OutputFormat("json_schema", SCHEMA, name="verdict", strict=True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", API_KINDS)
async def test_a_schema_goes_out_in_each_apis_own_form(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", answer='{"answer": 4}'))
    request = Request((user("3 or 4?"),), system="Be brief.", output=AS_SCHEMA)
    reply = await gather(replay(await call(api, request, stream=stream)))
    assert json.loads(reply.text) == {"answer": 4}
    asked = fake_provider.last("m1")
    body = asked.body
    if api == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
        }
    elif api == "anthropic":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
        assert body["system"] == "Be brief."
    elif api == "gemini":
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == SCHEMA
    else:
        assert body["format"] == SCHEMA
    assert asked.output == {"kind": "json_schema", "schema": SCHEMA}


@pytest.mark.parametrize("api", API_KINDS)
async def test_plain_json_goes_out_in_each_apis_own_form(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", answer="{}"))
    await call(api, Request((user("hi"),), output=OutputFormat("json_object")), stream=False)
    asked = fake_provider.last("m1")
    body = asked.body
    if api == "openai":
        assert body["response_format"] == {"type": "json_object"}
    elif api == "anthropic":  # no JSON mode of its own: asked in words
        assert "output_config" not in body
        assert "one JSON object only" in body["system"]
    elif api == "gemini":
        assert body["generationConfig"] == {"responseMimeType": "application/json"}
    else:
        assert body["format"] == "json"
    assert asked.output == (None if api == "anthropic" else {"kind": "json_object", "schema": None})


@pytest.mark.parametrize("api", API_KINDS)
async def test_no_output_asked_sends_no_setting(call: Call, fake_provider: FakeProvider, api: str) -> None:
    fake_provider.add(FakeModel("m1"))
    await call(api, Request((user("hi"),)), stream=False)
    body = fake_provider.last("m1").body
    assert not {"response_format", "output_config", "format"} & set(body)
    assert "responseMimeType" not in body.get("generationConfig", {})
    assert fake_provider.last("m1").output is None


def test_the_shared_spellings() -> None:
    assert openai_response_format(OutputFormat("json_object")) == {"type": "json_object"}
    assert openai_response_format(OutputFormat("json_schema", SCHEMA)) == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA},
    }
    assert "one JSON object only" in output_instruction(OutputFormat("json_object"))
    words = output_instruction(OutputFormat("json_schema", SCHEMA, name="count"))
    assert 'named "count"' in words
    assert words.endswith(json.dumps(SCHEMA, separators=(",", ":")))


def test_a_name_openai_would_refuse_goes_out_as_one_it_takes() -> None:
    """`^[a-zA-Z0-9_-]{1,64}$` is OpenAI's rule; a caller's `Page[Item]` or
    `my verdict` failed every OpenAI-compatible seat with a 400."""
    sent = openai_response_format(OutputFormat("json_schema", SCHEMA, name="Page[Item] é"))
    assert sent["json_schema"]["name"] == "Page_Item___"
    long = openai_response_format(OutputFormat("json_schema", SCHEMA, name="n" * 100))
    assert long["json_schema"]["name"] == "n" * 64
    kept = openai_response_format(OutputFormat("json_schema", SCHEMA, name="verdict-2_b"))
    assert kept["json_schema"]["name"] == "verdict-2_b"
