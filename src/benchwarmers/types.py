"""The value types every layer speaks; this module imports nothing of ours.

Inbound format translators turn a client's request into a `Request`, provider
adapters turn a `Request` into a provider's call and its reply into `Chunk`s,
and the panel and route engines pass these values between the two without
knowing either side's wire format. Keeping them here, at the bottom, is what
lets the layers import one way: everything imports `types`, `types` imports
nothing.

Messages are pure values (frozen dataclasses, tuples not lists): no ids, no
storage, no HTTP. Call ids and records live in the store, not on a message.
The one mutable class, `ReplyBuilder`, folds chunks into a `Reply` for
every layer that reads a reply as it streams.

Content is Anthropic-shaped because it is the richest of the four APIs:
a message is a role and a tuple of parts; tool calls are parts of an
assistant message and tool results parts of a user message. Translators for
OpenAI (`tool_calls` / `tool` messages), Gemini (`functionCall` /
`functionResponse`) and Ollama (`tool_calls` / `tool` role) fold into and out
of this shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, get_args

# --------------------------------------------------------------------- words

# The API kinds as a static type; what each is (its adapter, whether it needs
# a key, its usual URL) is its registration in `providers/kinds.py`, which a
# test holds to these names.
ApiKind: TypeAlias = Literal["openai", "anthropic", "gemini", "ollama"]
API_KINDS: tuple[ApiKind, ...] = get_args(ApiKind)

ModelRole: TypeAlias = Literal["general", "code", "light", "vision", "image"]
MODEL_ROLES: tuple[ModelRole, ...] = ("general", "code", "light", "vision", "image")

ModelStatus: TypeAlias = Literal["onboarding", "available", "unavailable", "resting", "retired"]
MODEL_STATUSES: tuple[ModelStatus, ...] = ("onboarding", "available", "unavailable", "resting", "retired")

# `limited`: our own limits refused the call before it went out; `rate_limited`:
# it went out and the provider answered 429 (or a quota body); `cancelled`: the
# person who asked stopped the panel while this seat was still answering, or the
# reply went out without it (a quorum was reached, or the ask's deadline passed: its
# error then starts `cut: ` and says which), one word for both as the SPEC has it.
SeatStatus: TypeAlias = Literal["ok", "empty", "error", "timeout", "limited", "rate_limited", "cancelled"]
SEAT_STATUSES: tuple[SeatStatus, ...] = (
    "ok",
    "empty",
    "error",
    "timeout",
    "limited",
    "rate_limited",
    "cancelled",
)
# Statuses of calls that did not use a provider's quota: refused by us, or by the provider's 429.
NOT_SERVED: tuple[SeatStatus, ...] = ("limited", "rate_limited")

ReplyMode: TypeAlias = Literal["panel", "merged"]
# Whom a provider's rate limits count: every model behind one key, or each model.
LimitScope: TypeAlias = Literal["key", "model"]
LIMIT_SCOPES: tuple[LimitScope, ...] = ("key", "model")
AskMode: TypeAlias = Literal["panel", "merged", "route"]

# What a call in the call log was for.
# "judge": a model comparing a panel's answers after the reply (`panel/judge.py`).
CallKind: TypeAlias = Literal[
    "seat", "merge", "route", "shadow", "probe", "speed", "suite", "confirm", "judge"
]

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "error"]
FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)


# ------------------------------------------------------------------ messages


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Image:
    """An image sent inline. `data` is base64 (no `data:` prefix); `url` is set
    instead when the client sent a remote URL. Images are never written to the
    store or a log: only the fact that a request carried one is kept."""

    media_type: str
    data: str = ""
    url: str = ""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run a tool. `arguments` is JSON text, as the
    OpenAI API carries it; adapters parse it for APIs that want an object."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, sent back to the model. `name` is the tool's name,
    which Gemini and Ollama need and the others ignore."""

    call_id: str
    content: str
    name: str = ""
    is_error: bool = False


Part: TypeAlias = Text | Image | ToolCall | ToolResult


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    # Read several times for every message of every call (formats, seating, each
    # adapter): lists first, which are quicker to make than generators, and a
    # message of one text part (most of them) answered without either.

    @property
    def text(self) -> str:
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is Text:
            return parts[0].text
        return "".join([p.text for p in parts if isinstance(p, Text)])

    @property
    def images(self) -> tuple[Image, ...]:
        return tuple([p for p in self.parts if isinstance(p, Image)])

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple([p for p in self.parts if isinstance(p, ToolCall)])

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple([p for p in self.parts if isinstance(p, ToolResult)])


def user(text: str) -> Message:
    return Message("user", (Text(text),))


def assistant(text: str) -> Message:
    return Message("assistant", (Text(text),))


# ------------------------------------------------------------------- request


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class Sampling:
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None


# No sampling field set, as most requests come: one instance for all (it is frozen).
NO_SAMPLING = Sampling()


OutputKind: TypeAlias = Literal["json_object", "json_schema"]
OUTPUT_KINDS: tuple[OutputKind, ...] = get_args(OutputKind)


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The shape a caller asked the answer in (OpenAI `response_format`,
    Responses `text.format`, Anthropic `output_format`, Gemini
    `responseMimeType`/`responseSchema`, Ollama `format`): read once by the
    caller's format, sent out in each seat's own API's form, and each answer
    checked against it. `schema` is a JSON Schema, for `json_schema` only."""

    kind: OutputKind
    schema: dict[str, Any] | None = None
    name: str = ""
    strict: bool = False


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """Whether one answer holds to the `OutputFormat` it was asked in (valid
    JSON; valid against the schema), and if not, the first thing wrong. A
    seat's (and the merge's) `bench` carries it only when the ask asked for
    structured output."""

    kind: OutputKind
    valid: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class Request:
    """One request to one model, whatever API it came in and goes out by.
    The model is not part of it: the adapter is handed the served id."""

    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[Tool, ...] = ()
    # "auto", "none", "required", or a tool's name.
    tool_choice: str = ""
    sampling: Sampling = NO_SAMPLING
    # The answer as JSON (or JSON against a schema), when the caller asked for it.
    output: OutputFormat | None = None

    def under_system(self, collection_system: str) -> Request:
        """This request with a collection's system prompt first and the
        client's own after it (both panel and route mode seat it so)."""
        if not collection_system:
            return self
        system = collection_system + ("\n\n" + self.system if self.system else "")
        return replace(self, system=system)

    @property
    def has_images(self) -> bool:
        # Asked several times a call (seating, shapes): no tuple of images built to answer it.
        return any(isinstance(p, Image) for m in self.messages for p in m.parts)

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m.role == "user" and m.text:
                return m.text
        return ""


# The longest deadline an ask or a collection may set, in seconds (a day): no
# seat runs so long, so a larger one is a mistake (a unit slip), said as one.
DEADLINE_MOST = 86_400.0


@dataclass(frozen=True, slots=True)
class Ask:
    """A gateway request after its format was read: which collection, how it
    answers, and the request itself. Formats build it; engines take it."""

    collection: str
    mode: AskMode
    request: Request
    stream: bool = False
    # Aliases seated beside the collection's own (`ask --with`, MCP `with`).
    extra_aliases: tuple[str, ...] = ()
    # Route mode: the conversation key the client gave, if any.
    conversation: str = ""
    # A panel's stream carries each seat's text as it is written (`SeatText`),
    # not only each seat whole as it finishes.
    seat_text: bool = False
    # Seat exactly these aliases, in this order (a follow-up to the same seats,
    # or to one chosen seat), instead of the collection's seating.
    only_aliases: tuple[str, ...] = ()
    # Answer once this many seats answered (0: the collection's setting; none: every seat).
    quorum: int = 0
    # Answer with what is in after this many seconds (0: the collection's setting;
    # at most DEADLINE_MOST).
    deadline: float = 0.0
    # A follow-up where each seat continues its own thread: alias -> that seat's
    # own turns, the question last (the dashboard's "each seat its own answers").
    # A seat not named is asked `request`'s messages. Pairs of tuples, not a
    # dict: an `Ask` is frozen and hashable, and the usual ask (none) costs nothing.
    threads: tuple[tuple[str, tuple[Message, ...]], ...] = ()
    # The Ask page's Blind toggle, where it differs from the collection's setting:
    # logged on the ask's calls (`calls.blind`), so Recent asks hide (or show) its
    # names as it was asked. None: as the collection says.
    blind: bool | None = None
    # The gateway key that asks is not the ask's: the core hands it to the
    # engines beside it, from the caller's identity (`core.Panels.key`).


# --------------------------------------------------------- one model's reply


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call read and wrote. `cached_input_tokens` is the part of
    `input_tokens` the provider read from its prompt cache (OpenAI's
    `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`,
    Gemini's `cachedContentTokenCount`), billed at the cached price: 0 where the
    provider says nothing of it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call while it streams. `index` orders calls in one
    reply; `id` and `name` arrive on the first delta of a call, arguments in
    pieces after."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageReport:
    usage: Usage


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason


@dataclass(frozen=True, slots=True)
class ResponseHeaders:
    """The provider's response headers, yielded first by every adapter call so
    the limits layer can learn from them (rate-limit headers). Lower-cased
    names."""

    status: int
    headers: tuple[tuple[str, str], ...]


Chunk: TypeAlias = TextDelta | ToolCallDelta | UsageReport | Finish | ResponseHeaders
# The chunks that are the reply itself (its first byte is the first of them), for
# `isinstance` on every chunk: a tuple, where `TextDelta | ToolCallDelta` there
# would build a union object on each test.
CONTENT_CHUNKS = (TextDelta, ToolCallDelta)


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole reply, gathered from chunks (see `gather`)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish: FinishReason = "stop"
    usage: Usage = Usage()


class ReplyBuilder:
    """A reply as its chunks arrive: text joined, tool calls assembled from
    their pieces in index order, usage summed, the last finish. `reply()`
    is the reply so far, whole or not (the caller records what arrived
    even when a stream breaks).

    The one mutable thing here, because it is the one fold of chunks into
    a `Reply` and three layers need it: the caller's seam (what arrived,
    recorded however the call ends), `providers.gather` (a whole reply) and
    the route renderers in `formats` (a turn's usage, finish and whole tool
    calls), which sit below the providers."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self.usage = Usage()
        self.finish: FinishReason = "stop"

    def add(self, chunk: Chunk) -> None:
        if isinstance(chunk, TextDelta):
            self._text.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            call = self._calls.setdefault(chunk.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = call["id"] or chunk.id
            call["name"] = call["name"] or chunk.name
            call["arguments"] += chunk.arguments
        elif isinstance(chunk, UsageReport):
            self.usage = self.usage + chunk.usage
        elif isinstance(chunk, Finish):
            self.finish = chunk.reason

    def reply(self) -> Reply:
        calls = tuple(
            ToolCall(c["id"], c["name"], c["arguments"] or "{}") for _, c in sorted(self._calls.items())
        )
        return Reply(text="".join(self._text), tool_calls=calls, finish=self.finish, usage=self.usage)


# ---------------------------------------------------------------- the panel


@dataclass(frozen=True, slots=True)
class Seat:
    """One model's answer to one ask, as the `bench` object shows it."""

    call: str
    seat: str
    alias: str
    status: SeatStatus
    seconds: float
    content: str = ""
    error: str = ""
    usage: Usage = Usage()
    # When the seat is `limited`: when the limit frees (ISO 8601), if known.
    frees_at: str = ""
    explorer: bool = False
    # What the gateway changed for this seat ("max_tokens 64000 lowered to 8192, ...").
    note: str = ""
    # Whether its answer holds to the structured output asked for (None: none was asked).
    output_check: OutputCheck | None = None
    # What its call cost in USD; None when the model's price is unknown (never 0 for unknown).
    cost_usd: float | None = None
    # How its answer ended, as its provider said (a seat that answered, `ok` or
    # `empty`; "stop" for the others): "length" when cut at its output limit.
    finish: FinishReason = "stop"


@dataclass(frozen=True, slots=True)
class LeftOff:
    """A member that was not seated, and why ("context window 8192 < 12000
    tokens needed", "resting until ...", "vision model, no image")."""

    alias: str
    reason: str


@dataclass(frozen=True, slots=True)
class AgreementPoint:
    point: str
    held_by: tuple[str, ...] = ()
    contradicted_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Side:
    """One position on a contradicted point, and the seats that hold it."""

    position: str
    seats: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Contradiction:
    point: str
    sides: tuple[Side, ...] = ()


@dataclass(frozen=True, slots=True)
class Unique:
    """A point only one seat made; `right`: whether the merger thinks it is
    (None: it cannot tell)."""

    point: str
    seat: str
    right: bool | None = None


@dataclass(frozen=True, slots=True)
class MergeReport:
    """The merger's structured report on the seats' answers, checked
    against its schema (`panel/report.py`); seats named by their labels."""

    consensus: tuple[str, ...] = ()
    contradictions: tuple[Contradiction, ...] = ()
    unique: tuple[Unique, ...] = ()
    gaps: tuple[str, ...] = ()
    confidence: float = 0.0


@dataclass(frozen=True, slots=True)
class Cut:
    """Why a reply went out without some of its seats: `reason` "quorum"
    (that many seats had answered) or "deadline" (that many seconds had
    passed); `background`: the cut seats were left to finish and be logged."""

    reason: Literal["quorum", "deadline"]
    quorum: int = 0
    deadline: float = 0.0
    background: bool = False


@dataclass(frozen=True, slots=True)
class Merged:
    call: str
    alias: str
    status: SeatStatus
    seconds: float
    content: str = ""
    error: str = ""
    usage: Usage = Usage()
    agreement: tuple[AgreementPoint, ...] = ()
    # Set when no merger answered and the reply fell back to the panel (or,
    # asked for structured output, to a valid seat's answer: its call and
    # alias are then the seat's), or when no merger returned a valid report
    # (the answer stands).
    note: str = ""
    # Whether the merged answer holds to the structured output asked for (None: none was asked).
    output_check: OutputCheck | None = None
    # The merger's structured report (None: no merger returned a valid one).
    report: MergeReport | None = None
    # What its merge cost in USD (every merger tried); None when a price is unknown.
    cost_usd: float | None = None
    # How the merged answer ended (the merger's, or the standing-in seat's): "length" when cut.
    finish: FinishReason = "stop"


@dataclass(frozen=True, slots=True)
class PanelReply:
    """A panel's whole answer, every seat and the merge: what a panel reply's
    `bench` object carries (`formats/bench_json.py` writes it and reads it
    back, the one place its JSON is spelled)."""

    collection: str
    shape: str
    seats: tuple[Seat, ...]
    left_off: tuple[LeftOff, ...] = ()
    merged: Merged | None = None
    # Set when the reply went out without some seats (their status `cancelled`, error `cut: ...`).
    cut: Cut | None = None
    # What every call of the ask cost in USD (the known prices' sum), and whether
    # every call's price was known (False: the sum leaves some call out).
    cost_usd: float = 0.0
    cost_complete: bool = True

    @property
    def finish(self) -> FinishReason:
        """How the reply's answer ended, the one decision every format's
        finish reason renders: "length" when it was cut at an output limit,
        that is the merged answer's (when a merger's, or a seat's standing
        in, is the reply), else every seat's that answered (`ok`); "stop"
        otherwise, seats that ended differently included (each seat's own
        is its `finish`)."""
        merged = self.merged
        if merged is not None and merged.status == "ok":
            return "length" if merged.finish == "length" else "stop"
        answered = False
        for seat in self.seats:
            if seat.status == "ok":
                if seat.finish != "length":
                    return "stop"
                answered = True
        return "length" if answered else "stop"


# Panel events, in the order a stream delivers them: `PanelStarted` at once,
# `SeatText` pieces of each seat's answer as it is written (when the ask
# wants them: `Ask.seat_text`), a `SeatDone` per seat as each finishes,
# `MergeText` pieces of the merger's answer as it is written and `MergeDone`
# when merging, then `PanelDone` with the whole reply. A seat cut by a quorum
# or deadline gets its `SeatDone` (status `cancelled`) before any merge event.


@dataclass(frozen=True, slots=True)
class PanelStarted:
    collection: str
    shape: str
    # (seat label, alias, call id) in seat order: the id is minted when the
    # seat is planned, so a client can name the seat before it answers.
    seats: tuple[tuple[str, str, str], ...]
    left_off: tuple[LeftOff, ...] = ()
    # Whether a merger will answer (`:merged`, or the collection's reply is
    # merged): a stream then holds the seats back and sends the merge.
    merged: bool = False
    # The ask's id: every call of this panel carries it (`calls.ask_id`).
    ask: str = ""


@dataclass(frozen=True, slots=True)
class SeatText:
    """A piece of one seat's answer as it is written (a delta), between
    `PanelStarted` and that seat's `SeatDone`."""

    seat: str
    alias: str
    call: str
    text: str


@dataclass(frozen=True, slots=True)
class SeatDone:
    seat: Seat


@dataclass(frozen=True, slots=True)
class MergeText:
    """A piece of the merger's answer as it is written (a delta), before
    `MergeDone`. `restart`: an earlier merger failed after it had written
    something; this piece starts the next merger's answer."""

    alias: str
    call: str
    text: str
    restart: bool = False


@dataclass(frozen=True, slots=True)
class MergeDone:
    merged: Merged


@dataclass(frozen=True, slots=True)
class PanelDone:
    reply: PanelReply


PanelEvent: TypeAlias = PanelStarted | SeatText | SeatDone | MergeText | MergeDone | PanelDone


# ------------------------------------------------------------- route mode


@dataclass(frozen=True, slots=True)
class RouteFailure:
    """A member that failed a route-mode turn before the one that answered
    (its own call id, so the record shows who failed, and why)."""

    alias: str
    call: str
    status: SeatStatus
    error: str = ""


@dataclass(frozen=True, slots=True)
class RouteBench:
    """Who answered one route-mode turn, as its `bench` object shows it: the
    call id a verdict names, the member, the conversation it sticks to, who
    failed over before it, who shadows it, who could not drive it. The
    reply itself is the member's `Reply`, in the client's format."""

    collection: str
    shape: str
    call: str
    alias: str
    conversation: str = ""
    failover: tuple[RouteFailure, ...] = ()
    shadows: tuple[str, ...] = ()
    left_off: tuple[LeftOff, ...] = ()
    # Once the turn has ended: what its calls cost in USD (the known prices' sum) and
    # whether every price was known. None before (a stream's first events).
    cost_usd: float | None = None
    cost_complete: bool = True
