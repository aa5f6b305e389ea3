"""How many tokens a request will take, before it is sent.

Two decisions need the number before any provider has counted: the
limiter (may this call go out under a tokens-per-minute limit?) and seating
(does the request fit a member's context window?). Neither needs precision,
both need the same answer, so there is one estimate: about four characters
a token, a fixed allowance per image, plus the reply the request allows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from benchwarmers.types import Image, Request, Text, ToolCall, ToolResult, Usage

CHARS_PER_TOKEN = 4
# What providers charge for a typical image (OpenAI's high-detail tile
# count for a 1024 px image lands near this).
TOKENS_PER_IMAGE = 800
# Reply allowance when the request sets no max_tokens: what a limit is
# charged in advance, and the least room a context window must leave.
DEFAULT_REPLY_TOKENS = 1024
REPLY_ROOM_TOKENS = 256


# The request last estimated and its estimate: one call estimates its request
# three or four times (its shape, each member's fit, the budgets and the
# limiter), and a `Request` is frozen, so the same object is the same estimate.
_last: tuple[Request | None, int] = (None, 0)


def prompt_tokens(request: Request) -> int:
    global _last
    last, tokens = _last
    if last is request:
        return tokens
    tokens = _estimate(request)
    _last = (request, tokens)
    return tokens


def _estimate(request: Request) -> int:
    chars = len(request.system)
    images = 0
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, Text):
                chars += len(part.text)
            elif isinstance(part, Image):
                images += 1
            elif isinstance(part, ToolCall):
                chars += len(part.name) + len(part.arguments)
            elif isinstance(part, ToolResult):
                chars += len(part.content)
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(str(tool.parameters))
    return chars // CHARS_PER_TOKEN + 1 + images * TOKENS_PER_IMAGE


def reply_tokens(request: Request) -> int:
    return request.sampling.max_tokens or DEFAULT_REPLY_TOKENS


def total_tokens(request: Request) -> int:
    """Prompt plus the reply it allows: what a context window must hold and
    what a tokens-per-minute limit will be charged at most."""
    return prompt_tokens(request) + reply_tokens(request)


def spent_estimate(request: Request, text: str) -> Usage:
    """What a call cut off before the provider counted it used: the prompt
    it was sent, and the reply text that had arrived (a panel's quorum cut a
    seat mid-answer: it still costs what it used)."""
    return Usage(prompt_tokens(request), (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def context_needed(request: Request) -> int:
    """What a context window must hold: the prompt and the reply asked for,
    or, when none was asked for, room for a short one."""
    return prompt_tokens(request) + (request.sampling.max_tokens or REPLY_ROOM_TOKENS)


class Sized(Protocol):
    """What fitting reads of a model: how much it may write and hold."""

    @property
    def output_limit(self) -> int | None: ...
    @property
    def context_window(self) -> int | None: ...


def fitted(request: Request, model: Sized) -> Request:
    """The request with its `max_tokens` lowered to what this model can
    write, when the client asked for more; unchanged otherwise. Clients ask
    big by default (Claude Code 32000, the openai SDK's agents 64000,
    LiteLLM's `anthropic/` its own default), which many good models cannot
    give: asked so, their provider refuses the call. The cap is the model's
    output limit and what its context window leaves after the prompt; with
    less than `REPLY_ROOM_TOKENS` left the request is left as it is, for
    seating to leave the model off. Panel seats, mergers and route turns
    are all fitted so."""
    asked = request.sampling.max_tokens
    if asked is None:
        return request
    caps = [model.output_limit] if model.output_limit else []
    if model.context_window:
        caps.append(model.context_window - prompt_tokens(request))
    cap = min(caps, default=asked)
    if asked <= cap or cap < REPLY_ROOM_TOKENS:
        return request
    return replace(request, sampling=replace(request.sampling, max_tokens=cap))
