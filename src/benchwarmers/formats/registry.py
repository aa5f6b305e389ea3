"""The inbound formats, one object each, and every list derived from them.

A format is more than its translator module: the paths it answers, the
headers its clients carry a key in, the error body its clients read, its
parser and renderers, its route-mode renderer. Kept in hand-made lists
beside the code that reads them (the guard's gateway paths, the error
renderer's path prefixes), a new format that missed one list answered
without a key or with OpenAI-shaped errors. So each format is one
`InboundFormat`, registered here (`register`), and the readers ask this
module:

- `format_for_path(path)`: which format a path speaks (errors, metrics);
- `error_body(name, status, message)`: an error in that format's shape;
- `is_format_path(path)`: a path some format answers (the guard asks
  those for a gateway key);
- `key_headers()`, `key_query_names()`: where a request may carry its key;
- `formats()`: every format (the server mounts a route for each that
  declares `ask_path` and no router of its own; the tests parametrise on it).

The built-in formats are registered in `formats/builtin.py` (one line
each), loaded on the first read; a sixth is one module plus one `register`
call. A format registered without an error body, with a path another
format owns, or under a name another has, is refused here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchwarmers.types import Ask, Chunk, PanelEvent, PanelReply, Reply

# A path no format owns (other /v1/*, /bench/*, the dashboard, /healthz)
# answers errors in this format's shape: OpenAI's, the most widely read.
FALLBACK = "openai_chat"

ErrorRenderer = Callable[[int, str, bool], dict[str, Any]]
"""`(status, message, malformed) -> body`; `malformed` marks a body that
was not JSON at all (JSON-RPC names that with a code of its own)."""


class Codec(Protocol):
    """A format module's panel side (`formats/base.py` documents it)."""

    NAME: str
    MEDIA_TYPE_STREAM: str

    def parse_ask(self, body: object, *, model: str | None = None) -> Ask: ...

    def render_reply(self, reply: PanelReply, ask: Ask) -> dict[str, Any]: ...

    def render_stream(self, events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]: ...


class RouteRenderer(Protocol):
    """What a format offers route mode (`formats/*_route.py`). `bench` is the
    turn's `bench` object, written once by `bench_json.route_json` from the
    engine's typed `RouteBench`, for the format to place."""

    MEDIA_TYPE_STREAM: str

    def render_route_reply(self, reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]: ...

    def render_route_stream(
        self, chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
    ) -> AsyncIterator[bytes]: ...


RouteFactory = Callable[[Mapping[str, Any], Mapping[str, str]], RouteRenderer]
"""`(body, query parameters) -> renderer`: some renderers are made per
request (Responses reads how the client declared its tools, Gemini its
stream framing from `?alt=sse`)."""


@dataclass(frozen=True, slots=True)
class InboundFormat:
    """One inbound API format.

    `prefixes`: the paths it owns; one ending in "/" owns what starts with
    it, one without owns itself and what is under it. `owns` is a further
    test for paths shared with another format (Gemini generation under
    `/v1/models/...`). `ask_path`: where a panel ask is posted (`{model}`
    stands for the model's name where it travels in the path); the server
    builds the route there unless the format `has_router` (a hand-written
    one in `server/routes/`, for formats with more to them than an ask).
    `key_headers`: headers (lower case) this API's clients send a key in,
    beside `Authorization: Bearer`, which every format reads; `key_query`:
    query parameters that may carry one. `codec`: the parser and renderers
    (None for a format that only shapes errors, JSON-RPC); `route`: makes
    the route-mode renderer (None: route mode is not offered)."""

    name: str
    prefixes: tuple[str, ...]
    error_body: ErrorRenderer
    codec: Codec | None = None
    route: RouteFactory | None = None
    ask_path: str | None = None
    has_router: bool = False
    key_headers: tuple[str, ...] = ()
    key_query: tuple[str, ...] = ()
    owns: Callable[[str], bool] | None = field(default=None, compare=False)

    def example_path(self, model: str = "bench/trio") -> str:
        """A path of this format's: its ask path (naming `model` where the
        model travels in it), else its first prefix (docs and tests)."""
        return self.prefixes[0] if self.ask_path is None else self.ask_path.replace("{model}", model)


@dataclass(frozen=True, slots=True)
class _Index:
    """The lists derived from the registered formats, made once per change."""

    formats: tuple[InboundFormat, ...]
    by_name: Mapping[str, InboundFormat]
    stems: tuple[tuple[str, str], ...]  # (path stem, format name), longest first
    owners: tuple[tuple[Callable[[str], bool], str], ...]
    starts: tuple[str, ...]  # what an owned path starts with: prefixes ending in "/", and "<p>/"...
    exact: frozenset[str]  # ...for a prefix without, which owns itself too
    key_headers: tuple[bytes, ...]
    key_query: frozenset[str]


_REGISTERED: dict[str, InboundFormat] = {}
_index: _Index | None = None
_builtins_loaded = False


def register(fmt: InboundFormat) -> InboundFormat:
    """Add a format; every list above is derived anew on the next read."""
    global _index
    _load_builtins()
    problem = _problem(fmt)
    if problem:
        raise ValueError(f"inbound format {fmt.name!r}: {problem}")
    _REGISTERED[fmt.name] = fmt
    _index = None
    return fmt


def unregister(name: str) -> None:
    global _index
    _REGISTERED.pop(name, None)
    _index = None


@contextmanager
def registered(fmt: InboundFormat) -> Iterator[InboundFormat]:
    """`fmt` registered for the block (tests: a throwaway format)."""
    register(fmt)
    try:
        yield fmt
    finally:
        unregister(fmt.name)


def formats() -> tuple[InboundFormat, ...]:
    return _current().formats


def named(name: str) -> InboundFormat:
    """The format registered under `name`; an unknown name is a bug of ours."""
    try:
        return _current().by_name[name]
    except KeyError:
        raise KeyError(f"no inbound format is registered as {name!r}") from None


def format_for_path(path: str) -> str:
    """The name of the format a request path speaks (`/v1/messages` ->
    "anthropic"), `FALLBACK` for a path no format owns."""
    index = _current()
    for owns, name in index.owners:
        if owns(path):
            return name
    for stem, name in index.stems:
        if path == stem or path.startswith(stem + "/"):
            return name
    return FALLBACK


def is_format_path(path: str) -> bool:
    """Whether some format owns `path` (by prefix, or its own test)."""
    index = _index or _current()  # on every request the guard sees: kept short
    if path.startswith(index.starts) or path in index.exact:
        return True
    return any(owns(path) for owns, _name in index.owners)


def error_body(name: str, status: int, message: str, *, malformed: bool = False) -> dict[str, Any]:
    return named(name).error_body(status, message, malformed)


def key_headers() -> tuple[bytes, ...]:
    """Every header a registered format's clients carry a key in (Bearer aside)."""
    return (_index or _current()).key_headers


def key_query_names() -> frozenset[str]:
    return (_index or _current()).key_query


# ----------------------------------------------------------------- pieces


def _problem(fmt: InboundFormat) -> str:
    """Why `fmt` cannot be registered beside those already are, or ""."""
    if not callable(fmt.error_body):
        return "registered without an error body: its clients would read another API's errors"
    if fmt.name in _REGISTERED:
        return "the name is registered already"
    if fmt.codec is not None and getattr(fmt.codec, "NAME", fmt.name) != fmt.name:
        return f"its codec is named {fmt.codec.NAME!r}"
    if fmt.ask_path is not None and fmt.codec is None:
        return "an ask path needs a codec to parse and render the ask"
    if not fmt.prefixes or not all(p.startswith("/") for p in fmt.prefixes):
        return "its prefixes must be paths (starting with '/')"
    taken = {p.rstrip("/"): other.name for other in _REGISTERED.values() for p in other.prefixes}
    for prefix in fmt.prefixes:
        if prefix.rstrip("/") in taken:
            return f"the path {prefix!r} is {taken[prefix.rstrip('/')]!r}'s"
    return ""


def _load_builtins() -> None:
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        from benchwarmers.formats import builtin  # noqa: F401  (registers them, one line each)


def _current() -> _Index:
    global _index
    _load_builtins()
    index = _index
    if index is None:
        index = _index = _derive(tuple(_REGISTERED.values()))
    return index


def _derive(registered: tuple[InboundFormat, ...]) -> _Index:
    stems = sorted(
        ((p.rstrip("/"), f.name) for f in registered for p in f.prefixes), key=lambda s: -len(s[0])
    )
    prefixes = [p for f in registered for p in f.prefixes]
    headers = dict.fromkeys(h.lower().encode("latin-1") for f in registered for h in f.key_headers)
    return _Index(
        formats=registered,
        by_name={f.name: f for f in registered},
        stems=tuple(stems),
        owners=tuple((f.owns, f.name) for f in registered if f.owns is not None),
        starts=tuple(p if p.endswith("/") else p + "/" for p in prefixes),
        exact=frozenset(p for p in prefixes if not p.endswith("/")),
        key_headers=tuple(headers),
        key_query=frozenset(q for f in registered for q in f.key_query),
    )
