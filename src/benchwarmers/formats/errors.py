"""Which API format a path speaks, and an error in that format's own shape.

A client that speaks one API only understands that API's errors: the
official OpenAI client reads `error.message`, the Anthropic client reads
`error.type` and `error.message` under `"type": "error"`, google-genai reads
`error.status`, Ollama's client reads a bare `error` string. So every refusal
and every 4xx the server sends (the guard's, a parser's, a route's) is
rendered here, by the format of the path it answers, and nowhere else.

The path decides the format, not a header, because the guard must answer
before any body is read and clients do not announce themselves reliably.
Which paths a format owns, and which of the renderers below is its error
body, is its registration (`formats/registry.py`, `formats/builtin.py`);
`format_for_path` and `error_body` read it there.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from benchwarmers import jsontext
from benchwarmers.formats import registry

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


def format_for_path(path: str) -> str:
    """The API format a request path speaks (`/v1/messages` -> "anthropic")."""
    return registry.format_for_path(path)


def error_body(
    fmt: str, status: int, message: str, *, malformed: bool = False, param: str = ""
) -> dict[str, Any]:
    """The error reply body for `status` in format `fmt`. `malformed` marks a
    body that was not JSON at all, which JSON-RPC names with its own code.
    `param`: the request field at fault, when one is (a `UserError`'s
    `field`), which OpenAI's shape names (`error.param`, which the openai
    SDK reads); the other APIs' errors have no place for it."""
    body = registry.error_body(fmt, status, message, malformed=malformed)
    if param and registry.named(fmt).error_body is openai_error:
        body["error"]["param"] = param
    return body


def error_bytes(fmt: str, status: int, message: str, *, malformed: bool = False) -> bytes:
    """`error_body` as compact UTF-8 JSON, for code that writes raw ASGI."""
    body = error_body(fmt, status, message, malformed=malformed)
    return jsontext.dumps(body)


def _status_slug(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


# ------------------------------------------------- each format's error body
# Registered with their formats (`formats/builtin.py`): `(status, message,
# malformed) -> body`.


def openai_error(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    """OpenAI's shape (chat completions and Responses): the official client reads `error.message`."""
    kind, code_name = _OPENAI_TYPES.get(
        status, ("invalid_request_error" if status < 500 else "server_error", "")
    )
    return {"error": {"message": message, "type": kind, "code": code_name or _status_slug(status)}}


def anthropic_error(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    """Anthropic's: `error.type` and `error.message` under `"type": "error"`."""
    kind = _ANTHROPIC_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def gemini_error(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    """Gemini's: google-genai reads `error.status`."""
    state = _GEMINI_STATUS.get(status, "FAILED_PRECONDITION" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message, "status": state}}


def ollama_error(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    """Ollama's: a bare `error` string."""
    return {"error": message}


def jsonrpc_error(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    """JSON-RPC 2.0 (MCP): a code, the request's id unknown."""
    code = _JSONRPC_PARSE_ERROR if malformed else (-32600 if status < 500 else -32603)
    if status in (401, 403, 413, 421, 429):
        code = -32000 - (status % 100)
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
