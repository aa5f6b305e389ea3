"""Route mode over the Gemini API (function calling through google-genai)
and Ollama's `/api/chat` (`tools` through the ollama client), with members
on other APIs: a tool loop in each, the replies strictly typed, and the
ids that these APIs may leave out paired so that OpenAI and Anthropic
members get matching calls and results."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pytest
from google import genai
from google.genai import types as genai_types

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeToolCall
from benchwarmers.testing.sdk_types import check, check_all, ndjson_lines, sse_events
from benchwarmers.types import ApiKind

AGENTS = {"agents": {"members": ["alpha"]}}
ROUTE = "bench/agents:route"


def member() -> FakeModel:
    return FakeModel(
        "alpha", answer="the notes say hello", tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})]
    )


READ_FILE = genai_types.FunctionDeclaration(
    name="read_file",
    description="Read a file.",
    parameters=genai_types.Schema(
        type=genai_types.Type.OBJECT,
        properties={"path": genai_types.Schema(type=genai_types.Type.STRING)},
        required=["path"],
    ),
)


def gemini_client(server: Any) -> genai.Client:
    options = genai_types.HttpOptions(base_url=server.url, api_version="v1beta")
    return genai.Client(api_key="gateway-key", http_options=options)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_gemini_function_calling_through_route_mode(
    route_server: Any, fake_provider: FakeProvider, kind: ApiKind
) -> None:
    config = genai_types.GenerateContentConfig(
        system_instruction="You read files.",
        tools=[genai_types.Tool(function_declarations=[READ_FILE])],
        tool_config=genai_types.ToolConfig(
            function_calling_config=genai_types.FunctionCallingConfig(
                mode=genai_types.FunctionCallingConfigMode.AUTO
            )
        ),
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
    )
    with route_server([(kind, member())], AGENTS) as server:
        client = gemini_client(server)
        first = client.models.generate_content(model=ROUTE, contents="read the notes", config=config)
        (call,) = first.function_calls
        assert (call.name, call.args) == ("read_file", {"path": "notes.txt"})
        asked = fake_provider.last("alpha")
        assert asked.tools == ["read_file"] and asked.system == "You read files."
        schema = next(t for t in asked.body.get("tools", []) if "read_file" in json.dumps(t))
        assert '"string"' in json.dumps(schema) and '"STRING"' not in json.dumps(schema)

        history = [
            genai_types.Content(role="user", parts=[genai_types.Part(text="read the notes")]),
            first.candidates[0].content,
            genai_types.Content(
                role="user",
                parts=[
                    genai_types.Part.from_function_response(name="read_file", response={"result": "hello"})
                ],
            ),
        ]
        chunks = list(client.models.generate_content_stream(model=ROUTE, contents=history, config=config))
        assert "".join(c.text or "" for c in chunks) == "the notes say hello"
        assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.STOP
        asked = fake_provider.last("alpha")
        (sent,) = asked.messages[-2].tool_calls
        (result,) = asked.messages[-1].tool_results
        assert sent["name"] == "read_file" and result["id"] == sent["id"] and result["content"] == "hello"


def test_gemini_route_replies_fit_the_sdk_type(route_server: Any) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "read the notes"}]}],
        "tools": [{"functionDeclarations": [{"name": "read_file", "parameters": {"type": "OBJECT"}}]}],
    }
    with route_server([("openai", member())], AGENTS) as server:
        base = f"{server.url}/v1beta/models/{ROUTE}"
        whole = httpx.post(f"{base}:generateContent", json=body, timeout=30)
        assert whole.status_code == 200, whole.text
        check("gemini", whole.json())
        assert whole.json()["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] == {
            "path": "notes.txt"
        }
        for params in ({"alt": "sse"}, {}):
            stream = httpx.post(f"{base}:streamGenerateContent", params=params, json=body, timeout=30)
            chunks = list(sse_events(stream.content)) if params else json.loads(stream.content)
            check_all("gemini", chunks)
            assert chunks[-1]["bench"]["alias"] == "alpha"
        hosted = httpx.post(f"{base}:generateContent", json={**body, "tools": [{"googleSearch": {}}]})
        assert hosted.status_code == 400 and "Google runs that tool" in hosted.json()["error"]["message"]


OLLAMA_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_ollama_tools_through_route_mode(
    route_server: Any, fake_provider: FakeProvider, kind: ApiKind
) -> None:
    with route_server([(kind, member())], AGENTS) as server:
        client = ollama.Client(host=server.url)
        messages: list[Any] = [{"role": "user", "content": "read the notes"}]
        first = client.chat(model=ROUTE, messages=messages, tools=OLLAMA_TOOLS, stream=False)
        (call,) = first.message.tool_calls
        assert (call.function.name, dict(call.function.arguments)) == ("read_file", {"path": "notes.txt"})

        messages += [first.message, {"role": "tool", "content": "hello", "tool_name": "read_file"}]
        pieces = list(client.chat(model=ROUTE, messages=messages, tools=OLLAMA_TOOLS, stream=True))
        assert "".join(p.message.content or "" for p in pieces) == "the notes say hello"
        assert pieces[-1].done and pieces[-1].done_reason == "stop"
        asked = fake_provider.last("alpha")
        (sent,) = asked.messages[-2].tool_calls
        (result,) = asked.messages[-1].tool_results
        assert sent["name"] == "read_file" and result["id"] == sent["id"] and "hello" in result["content"]


def test_ollama_route_replies_fit_the_sdk_type(route_server: Any) -> None:
    body = {"model": ROUTE, "messages": [{"role": "user", "content": "read"}], "tools": OLLAMA_TOOLS}
    with route_server([("anthropic", member())], AGENTS) as server:
        whole = httpx.post(f"{server.url}/api/chat", json={**body, "stream": False}, timeout=30)
        assert whole.status_code == 200, whole.text
        check("ollama_chat", whole.json())
        stream = httpx.post(f"{server.url}/api/chat", json=body, timeout=30)
        lines = check_all("ollama_chat", ndjson_lines(stream.content))
        assert [c.function.name for line in lines for c in (line.message.tool_calls or [])] == ["read_file"]
        refused = httpx.post(f"{server.url}/api/generate", json={"model": ROUTE, "prompt": "hi"})
        assert refused.status_code == 400 and "/api/chat" in refused.json()["error"]


def test_ollama_show_answers_route_mode(route_server: Any) -> None:
    """Ollama clients (Open WebUI, `ollama.show`) look a model up before they
    chat: a route-mode name is shown as a panel's is, saying `tools`, while
    `/api/generate` still refuses it."""
    with route_server([("openai", member())], AGENTS) as server:
        client = ollama.Client(host=server.url)
        panel, route = client.show("bench/agents"), client.show(ROUTE)
        assert set(route.model_dump(exclude_none=True)) == set(panel.model_dump(exclude_none=True))
        assert route.capabilities == ["completion", "vision", "tools"]
        assert panel.capabilities == ["completion", "vision"]
        assert ROUTE in (route.modelfile or "") and "route mode" in (route.modelfile or "")
        assert client.show(f"{ROUTE}:latest").capabilities == route.capabilities
        first = client.chat(model=ROUTE, messages=[{"role": "user", "content": "hi"}], stream=False)
        assert first.done
        with pytest.raises(ollama.ResponseError) as refused:
            client.generate(model=ROUTE, prompt="hi")
        assert refused.value.status_code == 400 and "/api/chat" in refused.value.error
        with pytest.raises(ollama.ResponseError) as missing:
            client.show("bench/nope:route")
        assert missing.value.status_code == 404
