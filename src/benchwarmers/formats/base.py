"""The contract every inbound format follows, and the pieces they all share.

A *format* translates one API's wire shape (OpenAI chat completions, OpenAI
Responses, Anthropic Messages, Gemini, Ollama) into our one internal `Ask`
and translates the panel's answer back. Formats know `types`, `errors` and
this module (plus `formats.panel_text`, `formats.bench_json` and
`formats.errors`); they never import an engine, the store, the server or
httpx. The server route for a
format is the glue: it reads the body, calls the format's parser, runs the
engine, and hands the reply or the event stream back to the format.

A format module exposes, at module level:

``NAME: str``
    The format's short name ("openai_chat", "responses", "anthropic",
    "gemini", "ollama"): the name it is registered under
    (`formats/registry.py` refuses a module registered under another).

``parse_ask(body: object, *, model: str | None = None) -> Ask``
    Read the client's decoded JSON body (any JSON value: check it is an
    object first, with `require_object`) into an `Ask`. `model` is given when
    the model name travels outside the body (Gemini's URL path); otherwise
    it is read from the body. Use `parse_model_name` for the name, the
    `require_*` helpers for types, and raise `UserError` (400) with one line
    that names the field and what was expected; `NotFound` is the route's
    business (it knows the collections), not the parser's. A request that
    carries tools in panel or merged mode is refused here with
    `tools_refused()`. `Ask.stream` says whether the client asked to
    stream; everything else of the request goes in `Ask.request`.

``render_reply(reply: PanelReply, ask: Ask) -> dict``
    The whole non-streamed reply body. The text content is
    `panel_text.reply_text(reply)` (the merger's answer when merged, every
    seat under its heading otherwise); the `bench` object is
    `bench_json.panel_json(reply)`, put in the body where the format has
    room for an extra key, else returned by `bench_json.bench_header(reply)`
    for the route to send as the `x-bench` response header.

``render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]``
    The streamed reply, in the format's own framing (SSE for OpenAI,
    Anthropic and Gemini; NDJSON for Ollama). It must write its opening
    bytes on `PanelStarted` (so the client sees the reply start at once),
    each seat's text as it is written (`SeatText`, when `ask.seat_text`) or
    whole as its `SeatDone` arrives (`panel_text.StreamText` turns events
    into those pieces, identical across formats), and the
    `bench` object in its last chunk after `PanelDone`. It never raises for
    a seat's failure: those are seat statuses inside the text and `bench`.

``MEDIA_TYPE_STREAM: str``
    The stream's content type ("text/event-stream", "application/x-ndjson").

Errors go out through `formats/errors.py` in the format's own error shape
(the renderer its registration names, `formats/builtin.py`); a format
module does not build error bodies itself.

Model names are the same in every format: `bench/<collection>` for the
panel, `bench/<collection>:merged` for one merged answer and
`bench/<collection>:route` for route mode. `parse_model_name` is the one
reader of them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from benchwarmers.errors import UserError
from benchwarmers.types import DEADLINE_MOST, Ask, AskMode, Message, Part, ToolCall, ToolResult

MODEL_PREFIX = "bench/"
MODES: tuple[AskMode, ...] = ("panel", "merged", "route")
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MODEL_FORM = "bench/<collection>, bench/<collection>:merged or bench/<collection>:route"
# How a panel's stream shows the seats' text, per request: "live" (as it is
# written, the default) or "sections" (each seat whole as it finishes).
STREAM_CHOICE_HEADER = "x-bench-stream"
STREAM_CHOICES = ("live", "sections")


def seat_text_wanted(choice: str | None) -> bool:
    """Whether a panel stream shows each seat's text as it is written, from
    the `x-bench-stream` header (absent: yes); a value it does not know is
    a UserError naming the ones it does."""
    value = (choice or "live").strip().lower()
    if value not in STREAM_CHOICES:
        raise UserError(f"{STREAM_CHOICE_HEADER} must be one of {', '.join(STREAM_CHOICES)}, not {choice!r}")
    return value == "live"


# A panel that answers without its slower seats, per ask: once this many seats
# answered, or this many seconds after they were sent (`panel/quorum.py`). Each
# may come as a header or in the body's `bench` object; the header wins.
QUORUM_HEADER = "x-bench-quorum"
DEADLINE_HEADER = "x-bench-deadline"
# The headers `with_header_options` reads.
OPTION_HEADERS = (QUORUM_HEADER, DEADLINE_HEADER)


def quorum_value(value: object, where: str, *, header: bool = False) -> int:
    """A per-ask quorum: a whole number of seats, 1 or more (None: not given,
    0). A header's text is read as a number (a JSON body's string is not
    one); anything else is a UserError."""
    if value is None:
        return 0
    number = _header_number(value) if header and isinstance(value, str) else value
    # `is_integer`, not `number != int(number)`: int() of an infinite or NaN
    # header ("inf", "1e400") raised, a 500 instead of this 400.
    if (
        isinstance(number, bool)
        or not isinstance(number, int | float)
        or (isinstance(number, float) and not number.is_integer())
    ):
        raise UserError(f"{where} must be a whole number of seats, not {_shown(value)}")
    if number < 1:
        raise UserError(f"{where} must be at least 1 seat, not {_shown(value)}")
    return int(number)


def deadline_value(value: object, where: str, *, header: bool = False) -> float:
    """A per-ask deadline: seconds, more than 0 and at most a day
    (`DEADLINE_MOST`; None: not given, 0)."""
    if value is None:
        return 0.0
    number = _header_number(value) if header and isinstance(value, str) else value
    # A float's finiteness only: math.isfinite of a whole number past a float's
    # range (`1` and 400 zeros, in a header or the body) raised, a 500.
    if isinstance(number, bool) or not isinstance(number, int | float) or not _finite(number):
        raise UserError(f"{where} must be a number of seconds, not {_shown(value)}")
    if number <= 0:
        raise UserError(f"{where} must be more than 0 seconds, not {_shown(value)}")
    if number > DEADLINE_MOST:
        raise UserError(f"{where} must be at most {DEADLINE_MOST:g} seconds (a day), not {_shown(value)}")
    return float(number)


def _finite(number: int | float) -> bool:
    """Whether a number is finite (a whole number always is, however long)."""
    return isinstance(number, int) or math.isfinite(number)


def _shown(value: object) -> str:
    """A value as an error repeats it, cut short: a header of thousands of
    digits is not sent back whole."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _header_number(text: str) -> object:
    """A header's number: whole when written whole (a large quorum said as
    sent, not rounded through a float), else a float; else the text."""
    if not text.strip():
        return text
    try:
        return int(text.strip())
    except ValueError:
        pass
    try:
        return float(text.strip())
    except ValueError:
        return text


# The keys a request body's `bench` object may hold (`with`: extra seats, by alias;
# `seats`: exactly these seats, a follow-up to the seats of an earlier turn, or to one of them).
BENCH_OPTIONS = ("quorum", "deadline", "with", "seats")


def with_bench_options(ask: Ask, value: object) -> Ask:
    """The ask with the quorum and deadline of the body's `bench` object
    (`{"quorum": 2, "deadline": 5}`), when it has one; route mode has no seats
    to cut, so its `bench` object is not read for them."""
    if value is None or ask.mode == "route":
        return ask
    bench = require_object(value, "bench")
    unknown = [key for key in bench if key not in BENCH_OPTIONS]
    if unknown:  # a misspelt option would be a silent wait for every seat
        raise UserError(f"bench.{unknown[0]} is not known; bench takes {', '.join(BENCH_OPTIONS)}")
    quorum = quorum_value(bench.get("quorum"), "bench.quorum")
    deadline = deadline_value(bench.get("deadline"), "bench.deadline")
    extras = bench_with(bench)
    only = bench_seats(bench)
    if only and extras:
        raise UserError("bench.seats names every seat of the ask: bench.with cannot add to it")
    if not quorum and not deadline and not extras and not only:
        return ask
    return dataclasses.replace(
        ask,
        quorum=quorum or ask.quorum,
        deadline=deadline or ask.deadline,
        extra_aliases=ask.extra_aliases or extras,
        only_aliases=only or ask.only_aliases,
    )


def bench_with(bench: Mapping[str, Any]) -> tuple[str, ...]:
    """The `bench` object's `with`: aliases seated beside the collection's."""
    return _aliases(bench, "with")


def bench_seats(bench: Mapping[str, Any]) -> tuple[str, ...]:
    """The `bench` object's `seats`: exactly these aliases (a follow-up turn to
    the seats an earlier reply's `bench.seats` named, or to one of them)."""
    aliases = _aliases(bench, "seats")
    if "seats" in bench and not aliases:
        raise UserError("bench.seats must name at least one model alias (leave it out for the panel)")
    return aliases


def _aliases(bench: Mapping[str, Any], key: str) -> tuple[str, ...]:
    aliases = bench.get(key) or []
    if not isinstance(aliases, list):
        raise UserError(f"bench.{key} must be a list of model aliases, not {json_type(aliases)}")
    for i, alias in enumerate(aliases):
        if not isinstance(alias, str) or not alias:
            raise UserError(f"bench.{key}[{i}] must be a model alias, not {json_type(alias)}")
    return tuple(aliases)


def with_header_options(ask: Ask, headers: Mapping[str, str]) -> Ask:
    """The ask with the quorum and deadline of its `x-bench-quorum` and
    `x-bench-deadline` headers, which win over its body's."""
    if ask.mode == "route" or not headers:  # most asks send neither
        return ask
    quorum = quorum_value(headers.get(QUORUM_HEADER), QUORUM_HEADER, header=True)
    deadline = deadline_value(headers.get(DEADLINE_HEADER), DEADLINE_HEADER, header=True)
    if not quorum and not deadline:
        return ask
    return dataclasses.replace(ask, quorum=quorum or ask.quorum, deadline=deadline or ask.deadline)


def parse_model_name(name: object) -> tuple[str, AskMode]:
    """`"bench/trio"` -> `("trio", "panel")`, `"bench/trio:merged"` ->
    `("trio", "merged")`, `"bench/trio:route"` -> `("trio", "route")`.

    Anything else is a `UserError` that shows the form, so a client that
    sent `gpt-4o` learns at once what this server takes."""
    if not isinstance(name, str) or not name:
        raise UserError(f'"model" must be a string: {MODEL_FORM}')
    if not name.startswith(MODEL_PREFIX):
        raise UserError(f"model {name!r} is not a collection; name one as {MODEL_FORM}")
    rest = name[len(MODEL_PREFIX) :]
    collection, _, suffix = rest.partition(":")
    mode: AskMode = "panel"
    if suffix:
        if suffix not in ("merged", "route"):
            raise UserError(f"model {name!r}: unknown mode {suffix!r}; name one as {MODEL_FORM}")
        mode = "merged" if suffix == "merged" else "route"
    if not _COLLECTION_NAME.match(collection):
        raise UserError(f"model {name!r} names no collection; name one as {MODEL_FORM}")
    return collection, mode


def model_name(collection: str, mode: AskMode = "panel") -> str:
    """The name a client uses for a collection in a mode (the inverse of
    `parse_model_name`)."""
    return MODEL_PREFIX + collection + ("" if mode == "panel" else f":{mode}")


def logprobs_refused(field: str) -> UserError:
    """The one refusal for log probabilities asked of a panel (`field`, as
    the caller's format names it): its text is no one model's tokens."""
    return UserError(f"{field}: a panel's text is several models' answers, not one model's tokens")


def tools_refused() -> UserError:
    """The one refusal for tools sent to a panel: a panel answers with text,
    and route mode is what drives an agent's tools."""
    return UserError(
        "a panel answers with text and cannot run tools; "
        "to let one member drive your tools, use route mode: bench/<collection>:route"
    )


# ------------------------------------------------------------ type checking
# Each helper raises a UserError that names the field by its JSON path
# ("messages[2].content"), so a client can find its mistake from one line.


def require_object(value: object, where: str = "body") -> Mapping[str, Any]:
    if type(value) is dict:  # what a JSON reader makes: no walk of the ABC's registry
        return value
    if not isinstance(value, Mapping):
        raise UserError(f"{where} must be a JSON object, not {json_type(value)}")
    return value


def require_list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise UserError(f"{where} must be an array, not {json_type(value)}")
    return value


def require_str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise UserError(f"{where} must be a string, not {json_type(value)}")
    return value


def optional_str(body: Mapping[str, Any], key: str, where: str = "") -> str:
    value = body.get(key)
    return "" if value is None else require_str(value, where or key)


def optional_bool(body: Mapping[str, Any], key: str, where: str = "") -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise UserError(f"{where or key} must be true or false, not {json_type(value)}")
    return value


def optional_int(body: Mapping[str, Any], key: str, where: str = "", *, minimum: int = 0) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{where or key} must be an integer, not {json_type(value)}")
    if value < minimum:
        raise UserError(f"{where or key} must be at least {minimum}")
    return value


def optional_float(body: Mapping[str, Any], key: str, where: str = "") -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"{where or key} must be a number, not {json_type(value)}")
    # Python's JSON reader takes NaN, Infinity and integers too big for a
    # float; none of them is a setting a model can be sent.
    number = float(value) if isinstance(value, float) or abs(value) < 2**53 else math.inf
    if not math.isfinite(number):
        raise UserError(f"{where or key} must be a finite number")
    return number


def stop_sequences(value: object, where: str = "stop") -> tuple[str, ...]:
    """OpenAI's `stop` and its cousins: one string or an array of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = require_list(value, where)
    return tuple(require_str(s, f"{where}[{i}]") for i, s in enumerate(items))


def data_url_image(url: str) -> tuple[str, str] | None:
    """Split `data:image/png;base64,AAAA` into (media type, base64 data);
    None for a remote URL."""
    match = re.match(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", url, re.DOTALL)
    return (match.group(1), match.group(2)) if match else None


def pair_tool_ids(messages: list[Message]) -> list[Message]:
    """Ids for tool calls and results of APIs whose history may carry none
    (Gemini, Ollama): a call without one gets `call_<n>` by its place in the
    conversation (the same on every turn, since the history is resent), and
    a result without one answers the earliest unanswered call of its
    tool's name. Members on APIs that need ids (OpenAI, Anthropic) then get
    calls and results that match."""
    count = 0
    waiting: dict[str, list[str]] = {}
    paired: list[Message] = []
    for message in messages:
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolCall):
                count += 1
                part = part if part.id else ToolCall(f"call_{count}", part.name, part.arguments)
                waiting.setdefault(part.name, []).append(part.id)
            elif isinstance(part, ToolResult):
                pending = waiting.get(part.name, [])
                if not part.call_id:
                    call_id = pending.pop(0) if pending else f"call_{part.name or 'unknown'}"
                    part = ToolResult(call_id, part.content, part.name, part.is_error)
                elif part.call_id in pending:
                    pending.remove(part.call_id)
            parts.append(part)
        paired.append(Message(message.role, tuple(parts)))
    return paired


def arguments_object(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as an object, for APIs that carry them so
    (Anthropic `input`, Ollama, Gemini `args`); text that is not a JSON
    object is kept under `_raw` rather than lost."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw": arguments}
    return parsed if isinstance(parsed, dict) else {"_raw": arguments}


def json_type(value: object) -> str:
    """How a message names a JSON value's type ("a string", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
