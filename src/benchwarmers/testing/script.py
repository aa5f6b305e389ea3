"""How a fake model behaves: the script a test (or a JSON file) gives it.

A `FakeModel` is keyed by its served id and answers on all four APIs. Its
answer is text or a function of the parsed request; its tool calls are
emitted whenever the request offers tools and is not already carrying this
turn's tool results, so a multi-turn tool loop runs by itself (call, result,
answer). Asked for structured output, it answers `json_answer` when set
(valid JSON or not, or `SCHEMA_EXAMPLE`: a value valid against the schema
asked). Faults (`error`, `rate_limit`, `cut_after`, `malformed_json`,
`never_ending`) apply to every call, or only to the first `fail_first`
calls, after which the model answers normally. An answer longer than the
request's output limit, or the model's own (`max_output`), is cut there
and ends for length, as a real model's does.

Token usage is counted in words (`count_tokens`), the same way on every
API, so a test can compare a ledger's sums with what the fake reported.
"""

from __future__ import annotations

import email.utils
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, get_args

from benchwarmers.types import API_KINDS, ApiKind

RateLimitStyle = Literal[
    "openai",
    "anthropic",
    "gemini",
    "gemini-details",
    "retry-after",
    "retry-after-date",
    "retry-after-ms",
    "body",
    "day",
]
RATE_LIMIT_STYLES: tuple[str, ...] = get_args(RateLimitStyle)
ThinkTag = Literal["", "think", "thinking", "/think"]
THINK_TAGS: tuple[str, ...] = get_args(ThinkTag)


def count_tokens(text: str) -> int:
    """The fake's token count: words."""
    return len(text.split())


@dataclass
class FakeMessage:
    """One message of a request, read back from whichever API sent it."""

    role: str  # "user", "assistant", "tool"
    text: str = ""
    images: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments"}
    tool_results: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "content"}


@dataclass
class FakeRequest:
    """What a fake model was asked, whichever API asked it. `body` and
    `headers` are kept raw so tests can assert the exact wire shape."""

    api: ApiKind
    model: str
    stream: bool
    body: dict[str, Any]
    headers: dict[str, str]
    system: str = ""
    messages: list[FakeMessage] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    max_tokens: int | None = None
    # The structured output asked in the API's own setting, read back:
    # {"kind": "json_object" | "json_schema", "schema"}; None when none was.
    output: dict[str, Any] | None = None
    # The same, asked in words in the system prompt (no API setting for it): `wire._prompted_output`.
    prompted: dict[str, Any] | None = None

    @property
    def prompt(self) -> str:
        """The last user text."""
        for message in reversed(self.messages):
            if message.role == "user" and message.text:
                return message.text
        return ""

    @property
    def answering_tool_results(self) -> bool:
        """Whether the request ends with tool results, i.e. the model is now
        to answer from them rather than call tools again."""
        return bool(self.messages) and bool(self.messages[-1].tool_results)

    @property
    def images(self) -> int:
        return sum(m.images for m in self.messages)

    @property
    def input_tokens(self) -> int:
        texts = [self.system] + [m.text for m in self.messages]
        texts += [str(r["content"]) for m in self.messages for r in m.tool_results]
        return sum(count_tokens(t) for t in texts)


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call the model makes. `id` is made up when not given; Gemini
    and Ollama replies carry no id at all, as the real APIs often do not."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class FakeError:
    """An HTTP error reply in the asking API's error shape."""

    status: int = 500
    message: str = "the fake model failed"


@dataclass(frozen=True)
class RateLimit:
    """A rate limit, in one provider's style. On a model's `rate_limit` it
    makes the call a 429; its `headers()` also fit a success reply's
    `headers`, so the limits layer can learn from successes.

    `retry` is seconds until the limit resets. Styles: `openai`
    (`x-ratelimit-*`, durations like `6m0s`, "try again in" body), `anthropic`
    (`anthropic-ratelimit-*` RFC 3339 times and `retry-after`), `gemini`
    (RetryInfo and "Please retry in 1.5s"), `gemini-details` (RetryInfo in
    the error's details only, the message saying nothing of when, as older
    Gemini replies do), `retry-after` (seconds),
    `retry-after-date` (HTTP date), `retry-after-ms`, `body` ("try again in
    20s", no headers) and `day` (a per-day quota message, no retry time)."""

    style: RateLimitStyle = "retry-after"
    retry: float = 20.0
    limit: int = 100
    remaining: int = 0

    def headers(self) -> dict[str, str]:
        reset_at = datetime.now(UTC) + timedelta(seconds=self.retry)
        if self.style == "openai":
            return {
                "x-ratelimit-limit-requests": str(self.limit),
                "x-ratelimit-remaining-requests": str(self.remaining),
                "x-ratelimit-reset-requests": go_duration(self.retry),
                "x-ratelimit-limit-tokens": str(self.limit * 1000),
                "x-ratelimit-remaining-tokens": str(self.remaining * 1000),
                "x-ratelimit-reset-tokens": go_duration(self.retry),
            }
        if self.style == "anthropic":
            stamp = reset_at.isoformat(timespec="seconds").replace("+00:00", "Z")
            found = {
                "anthropic-ratelimit-requests-limit": str(self.limit),
                "anthropic-ratelimit-requests-remaining": str(self.remaining),
                "anthropic-ratelimit-requests-reset": stamp,
                "anthropic-ratelimit-tokens-limit": str(self.limit * 1000),
                "anthropic-ratelimit-tokens-remaining": str(self.remaining * 1000),
                "anthropic-ratelimit-tokens-reset": stamp,
            }
            if self.remaining == 0:
                found["retry-after"] = str(math.ceil(self.retry))
            return found
        if self.style == "retry-after":
            return {"retry-after": str(math.ceil(self.retry))}
        if self.style == "retry-after-date":
            return {"retry-after": email.utils.formatdate(time.time() + self.retry, usegmt=True)}
        if self.style == "retry-after-ms":
            return {"retry-after-ms": str(round(self.retry * 1000))}
        return {}

    def message(self) -> str:
        if self.style == "openai":
            return f"Rate limit reached for requests. Please try again in {go_duration(self.retry)}."
        if self.style == "gemini":
            return f"Resource has been exhausted (e.g. check quota). Please retry in {self.retry:g}s."
        if self.style == "gemini-details":
            return "You exceeded your current quota, please check your plan and billing details."
        if self.style == "body":
            return f"Rate limit exceeded, try again in {self.retry:g}s"
        if self.style == "day":
            return f"You exceeded your current quota: {self.limit} requests per day. Come back tomorrow."
        return "Too many requests"


def go_duration(seconds: float) -> str:
    """A duration as OpenAI writes it: `6m0s`, `1.5s`, `20ms`, `1h0m0s`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m" + text
    if hours:
        text = f"{int(hours)}h" + text
    return text


Answer = str | Callable[[FakeRequest], str]
ToolScript = list[FakeToolCall] | Callable[[FakeRequest], list[FakeToolCall]]


@dataclass
class FakeModel:
    """One scripted model. Times are seconds; `latency` is the whole call,
    `ttfb` the wait before the reply's headers, `tokens_per_second` paces a
    stream's pieces (one word each)."""

    served: str
    answer: Answer = "ok"
    tool_calls: ToolScript = field(default_factory=list)
    latency: float = 0.0
    ttfb: float = 0.0
    tokens_per_second: float | None = None
    error: FakeError | None = None
    rate_limit: RateLimit | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Streams: stop after this many content pieces; "close" ends the body
    # cleanly without the end marker, "abort" breaks the connection, "error"
    # sends the API's in-stream error event (Anthropic's `overloaded_error`).
    cut_after: int | None = None
    cut_mode: Literal["close", "abort", "error"] = "close"
    malformed_json: bool = False
    never_ending: bool = False
    fail_first: int | None = None
    listed: set[ApiKind] = field(default_factory=lambda: set(API_KINDS))
    # The reply waits (after `ttfb`) until the test sets this event: a model
    # still answering for exactly as long as a test needs, whatever the clock.
    hold: threading.Event | None = None
    # The answer when the request asks for structured output in its API's own
    # setting (`FakeRequest.output`): text (valid JSON or not, as the test
    # needs), a function of the request, or `SCHEMA_EXAMPLE`, the smallest
    # value valid against the schema asked (`{}` for plain JSON). None: `answer`.
    json_answer: Answer | None = None
    # With `hold`, a stream first sends this many content pieces, then waits
    # on it: a model caught half way through writing (a slow merger).
    hold_after: int | None = None
    # The model's own output limit in tokens (words): a longer answer is cut
    # there and ends for length in its API's words, as one longer than the
    # request's limit (`max_tokens`) is; the smaller of the two cuts.
    max_output: int | None = None
    # Reasoning the model writes before its answer, sent in each API's own
    # shape for it (OpenAI-compatible `reasoning_content` deltas, Anthropic
    # `thinking` blocks with a signature, Gemini `thought` parts, Ollama's
    # `thinking`): a gateway must not show it as the answer.
    thinking: str = ""
    # Write `thinking` into the answer's text instead, as reasoning models
    # through Ollama and some compatible servers do: "think" a leading
    # `<think>…</think>` block, "thinking" `<thinking>…</thinking>`,
    # "/think" no opening tag (the reasoning, then `</think>`).
    think_tag: ThinkTag = ""
    # Answer a request that did not ask to stream as a stream all the same
    # (SSE; Ollama's NDJSON), as some compatible servers and proxies do.
    stream_always: bool = False

    def output_limit(self, request: FakeRequest) -> int | None:
        """Where this model's answer to `request` is cut (None: nowhere)."""
        limits = [n for n in (request.max_tokens, self.max_output) if n is not None]
        return min(limits) if limits else None

    def faulty(self, call_number: int) -> bool:
        """Whether the scripted faults apply to this call (1-based)."""
        return self.fail_first is None or call_number <= self.fail_first

    def text_for(self, request: FakeRequest) -> str:
        answer = self.answer
        asked = request.output or request.prompted
        if asked is not None and self.json_answer is not None:
            answer = self.json_answer
        if answer == SCHEMA_EXAMPLE:
            return json.dumps(schema_example((asked or {}).get("schema") or {"type": "object"}))
        return answer(request) if callable(answer) else answer

    def written(self, text: str) -> tuple[str, str]:
        """The answer's text and the reasoning sent in its API's own field:
        with `think_tag`, the reasoning leads the text and the field is empty."""
        if not self.think_tag or not self.thinking:
            return text, self.thinking
        if self.think_tag == "/think":
            return f"{self.thinking}\n</think>\n\n{text}", ""
        return f"<{self.think_tag}>\n{self.thinking}\n</{self.think_tag}>\n\n{text}", ""

    def calls_for(self, request: FakeRequest) -> list[FakeToolCall]:
        if callable(self.tool_calls):
            return self.tool_calls(request)
        if not request.tools or request.answering_tool_results:
            return []
        return list(self.tool_calls)


def merger(
    answer: Answer, report: dict[str, Any] | str | Callable[[FakeRequest], str]
) -> Callable[[FakeRequest], str]:
    """A fake merger's script: `answer` to the merge itself, `report` (an
    object, sent as JSON; or text as it is, say invalid JSON) to the call
    that asks for the merge report (`panel/report.py`), told apart by its
    system prompt, which asks for "a merge report"."""

    def reply(request: FakeRequest) -> str:
        if "a merge report" in request.system:
            if callable(report):
                return report(request)
            return report if isinstance(report, str) else json.dumps(report)
        return answer(request) if callable(answer) else answer

    return reply


# A report that passes the schema and says nothing in particular.
PLAIN_REPORT: dict[str, Any] = {
    "consensus": [],
    "contradictions": [],
    "unique": [],
    "gaps": [],
    "confidence": 0.5,
}


# ------------------------------------------------------------- JSON scripts


def models_from_json(text: str) -> tuple[list[FakeModel], str | None]:
    """Models (and an optional required key) from the JSON format documented
    in `benchwarmers.cli.fake_provider` and docs/fake-provider.md. Raises
    ValueError with the offending model's id on a bad entry."""
    document = json.loads(text)
    entries = document.get("models") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise ValueError('expected {"models": [...]} or a list of models')
    key = document.get("key") if isinstance(document, dict) else None
    return [_model_from_json(entry) for entry in entries], key


_SIMPLE_FIELDS = ("latency", "ttfb", "tokens_per_second", "cut_after", "cut_mode", "malformed_json")
_MORE_FIELDS = ("never_ending", "fail_first", "headers", "json_answer", "max_output", "thinking")
_STYLE_FIELDS = ("think_tag", "stream_always")


def _model_from_json(entry: dict[str, Any]) -> FakeModel:
    served = entry.get("served") or entry.get("id")
    if not isinstance(served, str) or not served:
        raise ValueError(f"a model needs a 'served' id: {entry!r}")
    unknown = set(entry) - {"served", "id", "answer", "tool_calls", "error", "rate_limit", "listed"}
    unknown -= set(_SIMPLE_FIELDS + _MORE_FIELDS + _STYLE_FIELDS)
    if unknown:
        raise ValueError(f"model {served}: unknown fields {sorted(unknown)}")
    model = FakeModel(
        served,
        **{name: entry[name] for name in _SIMPLE_FIELDS + _MORE_FIELDS + _STYLE_FIELDS if name in entry},
    )
    if model.think_tag not in THINK_TAGS:
        raise ValueError(f"model {served}: think_tag must be one of {', '.join(map(repr, THINK_TAGS))}")
    answer = entry.get("answer", "ok")
    model.answer = _template(answer) if any("{" + p + "}" in answer for p in _PLACEHOLDERS) else answer
    model.tool_calls = [
        FakeToolCall(c["name"], c.get("arguments", {}), c.get("id", "")) for c in entry.get("tool_calls", [])
    ]
    if "error" in entry:
        model.error = FakeError(
            int(entry["error"].get("status", 500)), entry["error"].get("message", "failed")
        )
    if "rate_limit" in entry:
        style = entry["rate_limit"].get("style", "retry-after")
        if style not in RATE_LIMIT_STYLES:
            raise ValueError(
                f"model {served}: rate_limit style must be one of {', '.join(RATE_LIMIT_STYLES)}"
            )
        model.rate_limit = RateLimit(**entry["rate_limit"])
    if "listed" in entry:
        model.listed = set(entry["listed"])
    return model


_PLACEHOLDERS = ("prompt", "model", "api", "system")


SCHEMA_EXAMPLE = "schema-example"


def schema_example(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """The smallest value valid against a plain JSON Schema: an object's
    required properties, each its own example; the first of an `enum` or
    `anyOf`; `minItems` examples in an array (`prefixItems` first); a number
    within its bounds (exclusive ones, and a maximum below 0, too) and a
    multiple of its `multipleOf`; a string of its `minLength`. A local
    `$ref` (`#/$defs/Inner`, as pydantic writes nested models) is followed
    and `allOf`'s parts joined, so an SDK's schema of a nested model gets a
    valid example. Enough for a fake's answers, not a generator for every
    schema (`not`, `pattern` and `if` are not followed)."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > _EXAMPLE_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return schema_example(_joined(_pointed(root, ref), rest), root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        joined = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict) and isinstance(part.get("$ref"), str) and part["$ref"].startswith("#"):
                part = _joined(_pointed(root, part["$ref"]), {k: v for k, v in part.items() if k != "$ref"})
            joined = _joined(joined, part if isinstance(part, dict) else {})
        return schema_example(joined, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return schema_example(schema[key][0], root, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: schema_example(properties.get(name, {}), root, depth + 1)
            for name in schema.get("required", [])
        }
    if kind == "array":
        prefix = [schema_example(item, root, depth + 1) for item in schema.get("prefixItems") or []]
        more = max(int(schema.get("minItems", 0)) - len(prefix), 0)
        return prefix + [schema_example(schema.get("items", {}), root, depth + 1) for _ in range(more)]
    if kind in ("integer", "number"):
        return _number_example(schema, whole=kind == "integer")
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind == "boolean":
        return False
    return None


# How deep `schema_example` follows a schema (a `$ref` to itself ends here).
_EXAMPLE_DEPTH = 32


def _pointed(root: Any, ref: str) -> dict[str, Any]:
    """What a local `$ref` points to in the root schema ({} when nothing)."""
    target = root
    for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, dict) else None
    return target if isinstance(target, dict) else {}


def _joined(schema: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """Two schemas an answer must meet both of, as one (properties and
    required lists joined; any other key of `part` wins)."""
    out = {**schema, **part}
    out["properties"] = {**(schema.get("properties") or {}), **(part.get("properties") or {})}
    out["required"] = list(dict.fromkeys([*(schema.get("required") or []), *(part.get("required") or [])]))
    return out


def _number_example(schema: dict[str, Any], *, whole: bool) -> float | int:
    """The number nearest 0 within the schema's bounds: an exclusive bound
    (a number in 2020-12, `true` beside `minimum` in draft 4) stepped past,
    a `multipleOf` rounded up to."""
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if above is True:
        above, low = low, None
    if below is True:
        below, high = high, None
    step = 1 if whole else 0.5
    value: float = 0
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = max(value, low) if low > 0 else value
    if isinstance(above, int | float) and not isinstance(above, bool) and value <= above:
        value = above + step
    if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
        value = high
    if isinstance(below, int | float) and not isinstance(below, bool) and value >= below:
        value = below - step
    if isinstance(low, int | float) and not isinstance(low, bool) and value < low:
        value = low
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and not isinstance(multiple, bool) and multiple > 0:
        value = math.ceil(value / multiple) * multiple
    return math.ceil(value) if whole else value


def _template(answer: str) -> Callable[[FakeRequest], str]:
    """`"You said: {prompt}"`: the placeholders are `prompt`, `model`, `api`
    and `system`, each replaced where it stands; other braces are the
    answer's own (a JSON answer: `{"name": "{model}"}`)."""

    def render(request: FakeRequest) -> str:
        values = {
            "prompt": request.prompt,
            "model": request.model,
            "api": request.api,
            "system": request.system,
        }
        text = answer
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        return text

    return render
