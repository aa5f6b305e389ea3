"""The formats this gateway speaks, registered: one `register` line each.

Loaded by `formats/registry.py` on its first read. Each line is all the
rest of the code learns of a format: its paths (the guard asks them for a
key), where its clients send a key, its error body, its parser and
renderers, its route-mode renderer. These five have routers of their own
(`server/routes/<name>.py`: they answer more than an ask, such as model
lists and token counts); a format that answers only asks leaves
`has_router` off and the server builds its route at `ask_path`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchwarmers.formats import (
    anthropic,
    anthropic_route,
    gemini,
    ollama,
    ollama_route,
    openai_chat,
    openai_route,
    responses,
)
from benchwarmers.formats.errors import (
    anthropic_error,
    gemini_error,
    is_unversioned_gemini,
    jsonrpc_error,
    ollama_error,
    openai_error,
)
from benchwarmers.formats.gemini_route import GeminiRoute
from benchwarmers.formats.registry import InboundFormat, RouteRenderer, register
from benchwarmers.formats.responses_route import ResponsesRoute


def _gemini_route(body: Mapping[str, Any], query: Mapping[str, str]) -> RouteRenderer:
    return GeminiRoute(sse=query.get("alt") == "sse")


def _responses_route(body: Mapping[str, Any], query: Mapping[str, str]) -> RouteRenderer:
    return ResponsesRoute(responses.tool_names(body))


register(
    InboundFormat(
        "openai_chat",
        ("/v1/",),
        openai_error,
        codec=openai_chat,
        route=lambda body, query: openai_route,
        ask_path="/v1/chat/completions",
        has_router=True,
    )
)
register(
    InboundFormat(
        "responses",
        ("/v1/responses",),
        openai_error,
        codec=responses,
        route=_responses_route,
        ask_path="/v1/responses",
        has_router=True,
    )
)
register(
    InboundFormat(
        "anthropic",
        ("/v1/messages",),
        anthropic_error,
        codec=anthropic,
        route=lambda body, query: anthropic_route,
        ask_path="/v1/messages",
        has_router=True,
        key_headers=("x-api-key",),
    )
)
register(
    InboundFormat(
        "gemini",
        ("/v1beta/",),
        gemini_error,
        codec=gemini,
        route=_gemini_route,
        ask_path="/v1beta/models/{model}:generateContent",
        has_router=True,
        key_headers=("x-goog-api-key",),
        key_query=("key",),
        owns=is_unversioned_gemini,
    )
)
register(
    InboundFormat(
        "ollama",
        ("/api/",),
        ollama_error,
        codec=ollama,
        route=lambda body, query: ollama_route,
        ask_path="/api/chat",
        has_router=True,
    )
)
# MCP's JSON-RPC: its own front end (`mcp/`), registered for its paths and error shape.
register(InboundFormat("jsonrpc", ("/mcp", "/v1/mcp"), jsonrpc_error, has_router=True))
