"""The gateway's JSON replies, written by `jsontext` (orjson): Starlette's
`JSONResponse` writes every reply with the standard library's `json`, a
share of a passthrough's CPU that orjson cuts to a fraction
(`jsontext` says where the two differ and which answer is given).

Every model call's reply is one, so its head is made here directly (the
same headers in the same order as Starlette's `init_headers`: the ones
given, then the length and the type) rather than through `init_headers`'s
lists and checks; a reply that needs those checks (no body allowed, a
length or type given, a background task) takes Starlette's way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.background import BackgroundTask
from starlette.responses import JSONResponse as StarletteJSONResponse

from benchwarmers import jsontext

_TYPE = (b"content-type", b"application/json")
_SET_BY_US = frozenset({"content-length", "content-type"})


class JSONResponse(StarletteJSONResponse):
    def __init__(
        self,
        content: Any,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
        background: BackgroundTask | None = None,
    ) -> None:
        if (
            media_type is not None
            or background is not None
            or status_code < 200
            or status_code in (204, 304)
            or (headers and not _SET_BY_US.isdisjoint(k.lower() for k in headers))
        ):
            super().__init__(content, status_code, headers, media_type, background)
            return
        self.status_code = status_code
        self.background = None
        body = self.body = jsontext.dumps(content)
        length = (b"content-length", str(len(body)).encode("latin-1"))
        if headers:
            given = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
            self.raw_headers = [*given, length, _TYPE]
        else:
            self.raw_headers = [length, _TYPE]

    def render(self, content: Any) -> bytes:
        return jsontext.dumps(content)
