"""Each format's own way of sending a key reaches the guard, on a server
that requires keys (it acts as if bound beyond loopback): the official
clients authenticate as they normally do, a missing or wrong key is a 401
and a key's scope a 403, each in the format's own error shape."""

from __future__ import annotations

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from .formats_support import Gateway

GEMINI_BODY = {"contents": [{"parts": [{"text": "keyed"}]}]}


@pytest.mark.parametrize("version", ["/v1beta", ""], ids=["v1beta", "litellm-no-version"])
def test_gemini_key_as_header_or_query(exposed_gateway: Gateway, version: str) -> None:
    url = f"{exposed_gateway.url}{version}/models/bench/trio:generateContent"
    key = exposed_gateway.trio_key
    assert httpx.post(url, json=GEMINI_BODY, headers={"x-goog-api-key": key}).status_code == 200
    assert httpx.post(url, json=GEMINI_BODY, params={"key": key}).status_code == 200
    refused = httpx.post(url, json=GEMINI_BODY)
    assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    other = httpx.post(url.replace("trio", "other"), json=GEMINI_BODY, params={"key": key})
    assert other.status_code == 403 and other.json()["error"]["status"] == "PERMISSION_DENIED"
    listed = httpx.get(f"{exposed_gateway.url}/v1beta/models", params={"key": key}).json()["models"]
    assert {m["name"] for m in listed} == {"models/bench/trio", "models/bench/trio:merged"}


def test_gemini_client_sends_its_key(exposed_gateway: Gateway) -> None:
    options = genai_types.HttpOptions(base_url=exposed_gateway.url, api_version="v1beta")
    client = genai.Client(api_key=exposed_gateway.trio_key, http_options=options)
    assert "heard 'keyed'" in client.models.generate_content(model="bench/trio", contents="keyed").text
    wrong = genai.Client(api_key="bw-wrong", http_options=options)
    with pytest.raises(genai.errors.ClientError) as refused:
        wrong.models.generate_content(model="bench/trio", contents="keyed")
    assert refused.value.code == 401


def test_anthropic_client_sends_x_api_key(exposed_gateway: Gateway) -> None:
    client = anthropic.Anthropic(
        base_url=exposed_gateway.url, api_key=exposed_gateway.trio_key, max_retries=0
    )
    message = client.messages.create(
        model="bench/trio", max_tokens=9, messages=[{"role": "user", "content": "keyed"}]
    )
    assert "heard 'keyed'" in message.content[0].text
    with pytest.raises(anthropic.PermissionDeniedError):
        client.messages.create(model="bench/other", max_tokens=9, messages=[{"role": "user", "content": "x"}])
    wrong = anthropic.Anthropic(base_url=exposed_gateway.url, api_key="bw-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as refused:
        wrong.messages.create(model="bench/trio", max_tokens=9, messages=[{"role": "user", "content": "x"}])
    assert refused.value.body["error"]["type"] == "authentication_error"


def test_openai_responses_client_sends_bearer(exposed_gateway: Gateway) -> None:
    client = openai.OpenAI(
        base_url=f"{exposed_gateway.url}/v1", api_key=exposed_gateway.trio_key, max_retries=0
    )
    assert "heard 'keyed'" in client.responses.create(model="bench/trio", input="keyed").output_text
    wrong = openai.OpenAI(base_url=f"{exposed_gateway.url}/v1", api_key="bw-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.responses.create(model="bench/trio", input="keyed")


def test_ollama_client_with_a_bearer_header(exposed_gateway: Gateway) -> None:
    auth = {"Authorization": f"Bearer {exposed_gateway.trio_key}"}
    client = ollama.Client(host=exposed_gateway.url, headers=auth)
    reply = client.chat(model="bench/trio", messages=[{"role": "user", "content": "keyed"}], stream=False)
    assert "heard 'keyed'" in reply.message.content
    assert {m.model for m in client.list().models} == {"bench/trio", "bench/trio:merged"}
    with pytest.raises(ollama.ResponseError) as refused:
        ollama.Client(host=exposed_gateway.url).list()
    assert refused.value.status_code == 401 and "key" in refused.value.error
