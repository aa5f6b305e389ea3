"""Which API format a path speaks, and an error in that format's own shape.

A client that speaks one API only understands that API's errors: the
official OpenAI client reads `error.message`, the Anthropic client reads
`error.type` and `error.message` under `"type": "error"`, google-genai reads
`error.status`, Ollama's client reads a bare `error` string. So every refusal
and every 4xx the server sends (the guard's, a parser's, a route's) is
rendered here, by the format of the path it answers, and nowhere else.

The path decides the format, not a header, because the guard must answer
before any body is read and clients do not announce themselves reliably.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Literal, TypeAlias

from benchwarmers import jsontext

FormatName: TypeAlias = Literal["openai_chat", "responses", "anthropic", "gemini", "ollama", "jsonrpc"]

# Path prefixes, most specific first. Anything else (other /v1/*, /bench/*,
# the dashboard, /healthz) answers in OpenAI's shape, the most widely read.
_PREFIXES: tuple[tuple[str, FormatName], ...] = (
    ("/v1/messages", "anthropic"),
    ("/v1/responses", "responses"),
    ("/v1/mcp", "jsonrpc"),
    ("/mcp", "jsonrpc"),
    ("/v1beta/", "gemini"),
    ("/api/", "ollama"),
)

_GEMINI_METHODS = frozenset({"generateContent", "streamGenerateContent", "countTokens", "embedContent"})

_OPENAI_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    409: ("invalid_request_error", "conflict"),
    413: ("invalid_request_error", "request_too_large"),
    421: ("permission_error", "misdirected_request"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}
_ANTHROPIC_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    421: "permission_error",
    429: "rate_limit_error",
    503: "overloaded_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    409: "ALREADY_EXISTS",
    413: "INVALID_ARGUMENT",
    421: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# JSON-RPC 2.0 codes: -32700 parse error, -32600 invalid request, -32603
# internal error; -32000..-32099 are the server's own (used for refusals).
_JSONRPC_PARSE_ERROR = -32700


def is_unversioned_gemini(path: str) -> bool:
    """Gemini generation under `/v1/models/...` (google-genai's default API
    version given a base URL) or `/models/...` (LiteLLM's `gemini/` with an
    api_base): told from other paths there by the method after the colon."""
    return path.startswith(("/v1/models/", "/models/")) and path.rpartition(":")[2] in _GEMINI_METHODS


def format_for_path(path: str) -> FormatName:
    """The API format a request path speaks (`/v1/messages` -> "anthropic")."""
    if is_unversioned_gemini(path):
        return "gemini"
    for prefix, name in _PREFIXES:
        stem = prefix.rstrip("/")
        if path == stem or path.startswith(stem + "/"):
            return name
    return "openai_chat"


def error_body(fmt: str, status: int, message: str, *, malformed: bool = False) -> dict[str, Any]:
    """The error reply body for `status` in format `fmt`. `malformed` marks a
    body that was not JSON at all, which JSON-RPC names with its own code."""
    if fmt == "anthropic":
        kind = _ANTHROPIC_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if fmt == "gemini":
        state = _GEMINI_STATUS.get(status, "FAILED_PRECONDITION" if status < 500 else "INTERNAL")
        return {"error": {"code": status, "message": message, "status": state}}
    if fmt == "ollama":
        return {"error": message}
    if fmt == "jsonrpc":
        code = _JSONRPC_PARSE_ERROR if malformed else (-32600 if status < 500 else -32603)
        if status in (401, 403, 413, 421, 429):
            code = -32000 - (status % 100)
        return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    kind, code_name = _OPENAI_TYPES.get(
        status, ("invalid_request_error" if status < 500 else "server_error", "")
    )
    return {"error": {"message": message, "type": kind, "code": code_name or _status_slug(status)}}


def error_bytes(fmt: str, status: int, message: str, *, malformed: bool = False) -> bytes:
    """`error_body` as compact UTF-8 JSON, for code that writes raw ASGI."""
    body = error_body(fmt, status, message, malformed=malformed)
    return jsontext.dumps(body)


def _status_slug(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"
