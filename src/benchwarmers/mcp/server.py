"""The MCP tools, written once with the official SDK (`MCPServer`), for both
transports. A tool gets its `Backend` from `backend_of(ctx)`: on the server
an in-process one bound to the admitted HTTP request, under stdio one
that calls the server over HTTP.

The descriptions are the rules of use, because a tool description is all
an agent reads before it calls: ask a collection rather than a favourite
model, treat answers as claims to verify, name every seat when reporting,
and send a verdict per seat judged (verdicts are what pick the next panel).

A panel can run for minutes. While it does, `ask` sends a progress
notification every `BENCHWARMERS_MCP_PROGRESS_SECONDS` (default 5) to a
client that gave a progress token, so clients with an idle limit keep
waiting; the HTTP mount adds keep-alive comments for those that did not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, WithJsonSchema

from benchwarmers import __version__
from benchwarmers.core import checked_verdict_body, environment, tunables, verdict_body
from benchwarmers.errors import BenchwarmersError, UserError
from benchwarmers.formats.base import MODEL_PREFIX, deadline_value, parse_model_name, quorum_value
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.mcp.backend import Backend, PanelWatch
from benchwarmers.mcp.text import ask_text, collections_text, pending_text, verdict_text
from benchwarmers.mcp.transcript import call_ids_in_transcript
from benchwarmers.types import Ask, Request, user

PROGRESS_ENV = environment.MCP_PROGRESS.name
DEFAULT_PROGRESS_SECONDS = float(environment.MCP_PROGRESS.default)
MIN_PROGRESS_SECONDS = tunables.MIN_PROGRESS_SECONDS.value

BackendOf = Callable[[Context], Backend]
T = TypeVar("T")

INSTRUCTIONS = """\
Benchwarmers asks a panel of language models (a collection, named bench/<name>) one question at once \
and returns every seat's answer with a call id. Use it for a second opinion before acting on \
something uncertain: a diagnosis, a design choice, a fact you cannot check locally. Ask a collection \
(list_collections shows them and their purpose), never one favourite model. Answers are claims: \
verify them before acting. When you report, name every seat (seat, model alias) whose answer you \
used or rejected. Then send a verdict for each seat you judged: verdicts decide who sits on the next \
panel. pending_verdicts lists seats you have not judged yet."""

LIST_DESCRIPTION = """\
List the collections (panels) you may ask, with their purpose, members and reply mode. \
Pick the collection whose purpose fits the question; ask a collection, not a favourite model."""

ASK_DESCRIPTION = """\
Ask a collection of models one question at once; every seat answers side by side, each with a call id.

Rules of use:
- Ask a collection, not a favourite model (list_collections shows them); use `with` only to seat an extra \
model beside the collection's own.
- The prompt must stand alone: the seats see nothing of your conversation or files, so include the \
code, error text and context they need.
- Answers are claims, not facts: verify before acting (run it, read the source, test it).
- When you report back, name every seat (seat label and model alias) and say which answers you used.
- Send a `verdict` for each seat you judged (useful or not, with a short note on why).
A panel can take minutes; progress arrives while the seats answer."""

VERDICT_DESCRIPTION = """\
Say whether one seat's answer was useful, by its call id (from ask's result). Send one verdict per \
seat you judged, useful or not, with a short note on why (e.g. "correct fix, tests pass" or \
"invented an API"). Or compare two seats of one ask: `better` and `worse` (call ids), `tie` or \
`both_bad` (two call ids), or `best` (the best seat of its panel). Verdicts pick the next panel. Sending \
the same verdict again changes nothing; a different one replaces the first."""

PENDING_DESCRIPTION = """\
List the seats you were shown that still have no verdict: give `transcript_path` (your session's \
JSONL transcript; its call ids are read) or `calls` (call ids). Send a verdict for each seat you \
judged."""


def progress_seconds() -> float:
    """The interval between progress notifications, from the environment."""
    raw = os.environ.get(PROGRESS_ENV, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_PROGRESS_SECONDS
    except ValueError:
        seconds = DEFAULT_PROGRESS_SECONDS
    return max(seconds, MIN_PROGRESS_SECONDS)


def build_server(backend_of: BackendOf, *, progress_every: float | None = None) -> MCPServer:
    """The MCP server with the four tools, each calling `backend_of(ctx)`."""
    tools = _Tools(backend_of, progress_every if progress_every is not None else progress_seconds())
    server: MCPServer = _Server(
        "benchwarmers", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    server.add_tool(
        tools.list_collections,
        name="list_collections",
        title="List collections",
        description=LIST_DESCRIPTION,
        annotations=read_only,
        structured_output=False,
    )
    server.add_tool(
        _renaming(tools.ask, {"with": "with_"}),
        name="ask",
        title="Ask a panel",
        description=ASK_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        structured_output=False,
    )
    server.add_tool(
        tools.verdict,
        name="verdict",
        title="Judge a seat",
        description=VERDICT_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
        structured_output=False,
    )
    server.add_tool(
        tools.pending_verdicts,
        name="pending_verdicts",
        title="Seats without a verdict",
        description=PENDING_DESCRIPTION,
        annotations=read_only,
        structured_output=False,
    )
    return server


# The verdict tool's keys that take a list: a client that sends one as its JSON text (Claude
# Desktop does) has it read as the list, as the SDK reads the other tools' arguments.
LIST_KEYS = ("tie", "both_bad", "bothBad")


class _Server(MCPServer):
    """The SDK's server, refusing at its door the arguments a tool does not
    take. The SDK drops them unread, so a misspelt `note` judged the seat and
    lost the note, a `colection` asked nothing it meant, where
    `POST /bench/verdict` refuses a key it does not take. `verdict`'s
    arguments are that route's body, so they are checked as the route
    checks it, in its words (`bothBad` read as it reads it)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            if name == "verdict":
                arguments = checked_verdict_body(_given(arguments))
            else:
                await self._refuse_unknown(name, arguments)
        except BenchwarmersError as exc:  # worded as the SDK words a tool's own error
            raise ToolError(f"Error executing tool {name}: {exc}") from None
        return await super().call_tool(name, arguments, context)

    async def _refuse_unknown(self, name: str, arguments: dict[str, Any]) -> None:
        tool = next((tool for tool in await self.list_tools() if tool.name == name), None)
        known = list(tool.input_schema.get("properties", {})) if tool is not None else []
        unknown = [key for key in arguments if key not in known]
        if tool is not None and unknown:  # an unknown tool is the SDK's to refuse
            raise UserError(f"{name} takes no {unknown[0]!r}; it takes {', '.join(known)}")


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    """The verdict tool's arguments as a body: those left at the tool's
    defaults (null, or "" but for `note`, where "" clears the note) were not
    given, and a list sent as its JSON text is the list."""
    body: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None or (value == "" and key != "note"):
            continue
        if key in LIST_KEYS and isinstance(value, str):
            with suppress(ValueError, RecursionError):
                value = json.loads(value)
        body[key] = value
    return body


class _Tools:
    def __init__(self, backend_of: BackendOf, progress_every: float) -> None:
        self.backend_of = backend_of
        self.progress_every = progress_every

    async def list_collections(self, ctx: Context) -> CallToolResult:
        with _as_tool_error():
            listing = await self.backend_of(ctx).collections()
        return _result(ctx, collections_text(listing), {"collections": listing})

    async def ask(
        self,
        collection: Annotated[
            str, Field(description="The collection: NAME or bench/NAME (see list_collections).")
        ],
        prompt: Annotated[
            str, Field(description="The whole question, standing alone (code, errors, context).")
        ],
        ctx: Context,
        merged: Annotated[
            bool, Field(description="Also have a merger write one answer saying where the seats agree.")
        ] = False,
        with_: Annotated[
            list[str] | None,
            Field(alias="with", description="Extra model aliases to seat beside the collection's members."),
        ] = None,
        system: Annotated[str, Field(description="A system prompt for every seat.")] = "",
        quorum: Annotated[
            int | None,
            Field(description="Answer once this many seats answered; the seats still answering are cut."),
        ] = None,
        deadline: Annotated[
            float | None, Field(description="Answer with what is in after this many seconds.")
        ] = None,
    ) -> CallToolResult:
        with _as_tool_error():
            the_ask = _ask_of(collection, prompt, merged=merged, extras=with_ or [], system=system)
            the_ask = dataclasses.replace(
                the_ask,
                quorum=quorum_value(quorum, "quorum"),
                deadline=deadline_value(deadline, "deadline"),
            )
            watch = PanelWatch()
            label = MODEL_PREFIX + the_ask.collection
            reply = await self._with_progress(ctx, self.backend_of(ctx).ask(the_ask, watch), watch, label)
        return _result(ctx, ask_text(reply), {"bench": panel_json(reply)})

    async def verdict(
        self,
        ctx: Context,
        call: Annotated[str, Field(description="The seat's call id, from ask's result (c_...).")] = "",
        # Shown as a boolean, checked by `verdict_body` as HTTP checks it: "yes" or 1 is refused
        # with the same one line, not read as a verdict nobody gave, nor the SDK's pydantic report.
        useful: Annotated[
            Any, WithJsonSchema({"type": "boolean"}), Field(description="Was this seat's answer useful?")
        ] = None,
        note: Annotated[
            str | None,
            Field(description="Why, in a few words. Left out, the same verdict again keeps its note."),
        ] = None,
        better: Annotated[str, Field(description="A pair: the call id of the better answer.")] = "",
        worse: Annotated[str, Field(description="A pair: the call id of the worse answer.")] = "",
        tie: Annotated[
            list[str] | None, Field(description="A pair: two call ids of one ask, as good as each other.")
        ] = None,
        both_bad: Annotated[
            list[str] | None, Field(description="A pair: two call ids of one ask, both not useful.")
        ] = None,
        best: Annotated[
            str, Field(description="The best seat of its panel: better than every other seat that answered.")
        ] = "",
    ) -> CallToolResult:
        with _as_tool_error():
            body = verdict_body(
                call=call,
                useful=useful,
                note=note,
                better=better,
                worse=worse,
                tie=tie,
                both_bad=both_bad,
                best=best,
            )
            recorded = await self.backend_of(ctx).verdict(body)
        return _result(ctx, verdict_text(recorded), {"recorded": recorded})

    async def pending_verdicts(
        self,
        ctx: Context,
        transcript_path: Annotated[
            str, Field(description="Path of your session's JSONL transcript; the call ids in it are checked.")
        ] = "",
        calls: Annotated[list[str] | None, Field(description="Call ids to check.")] = None,
    ) -> CallToolResult:
        with _as_tool_error():
            if not transcript_path.strip() and calls is None:
                raise UserError("give transcript_path (your session's JSONL transcript) or calls (call ids)")
            wanted = list(calls or [])
            if transcript_path.strip():
                backend = self.backend_of(ctx)
                if not backend.reads_transcripts:
                    raise UserError(
                        "transcript_path is read only for the server's local owner (a path names a file "
                        "on the server); send `calls` (the call ids) instead"
                    )
                wanted += await asyncio.to_thread(call_ids_in_transcript, transcript_path.strip())
            found = await self.backend_of(ctx).pending(list(dict.fromkeys(wanted)))
        return _result(ctx, pending_text(found, checked=len(set(wanted))), {"pending": found})

    async def _with_progress(self, ctx: Context, work: Awaitable[T], watch: PanelWatch, label: str) -> T:
        """Await `work`, notifying progress every interval meanwhile. Progress
        is the seconds waited (it must grow with each notification); the
        message says which seats are in. Progress is best effort: a client
        that cannot take it still gets the result.

        `work` runs in a task of its own that this call watches: if this
        call is cancelled (its client sent `notifications/cancelled`, or its
        HTTP connection went), that task is cancelled too, which stops the
        panel as the dashboard's Stop does (the backends ask with
        `stop_on_close`): the seats still answering are cancelled upstream
        and logged `cancelled`, those in stay judgeable."""
        started = time.monotonic()
        task = asyncio.ensure_future(work)
        _FINISHING.add(task)
        task.add_done_callback(_forget)
        try:
            while not (await asyncio.wait({task}, timeout=self.progress_every))[0]:
                waited = round(time.monotonic() - started, 1)
                with suppress(Exception):
                    await ctx.report_progress(waited, message=f"{label}: {watch.summary()} ({waited:.0f} s)")
        except asyncio.CancelledError:
            task.cancel()  # the tool call is gone: so is the panel's reader, which stops its seats
            raise
        return task.result()


# Work being stopped after its caller left (a panel's seats being cancelled and
# logged): a task nobody references can be garbage-collected mid-flight.
_FINISHING: set[asyncio.Future[Any]] = set()


def _forget(task: asyncio.Future[Any]) -> None:
    _FINISHING.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a failure nobody awaits is not worth a warning


def _ask_of(collection: str, prompt: str, *, merged: bool, extras: list[str], system: str) -> Ask:
    name = collection.strip()
    name, mode = parse_model_name(name if name.startswith(MODEL_PREFIX) else MODEL_PREFIX + name)
    if mode == "route":
        raise UserError(
            "ask asks a panel; route mode (bench/NAME:route) is for an agent that the model drives"
        )
    if not prompt.strip():
        raise UserError("the prompt is empty; ask the whole question, with the context the seats need")
    request = Request(messages=(user(prompt),), system=system)
    extra_aliases = tuple(alias.strip() for alias in extras if alias.strip())
    return Ask(name, "merged" if merged else mode, request, stream=True, extra_aliases=extra_aliases)


# Clients that hand a result's structured content to the model in place of
# its text (Claude Code: the model then read the raw `{"bench": ...}` JSON,
# not the seat headings and verdict instructions the text holds).
TEXT_ONLY_CLIENTS = frozenset({"claude-code"})


def _result(ctx: Context, text: str, structured: dict[str, Any]) -> CallToolResult:
    """The readable text, and for clients that keep it apart from what the
    model reads, the same facts as structured content."""
    if _client_name(ctx) in TEXT_ONLY_CLIENTS:
        return CallToolResult(content=[TextContent(type="text", text=text)])
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _client_name(ctx: Context) -> str:
    """The client's name from its `initialize` (or, on the stateless HTTP
    transport, the request's `_meta` envelope); "" when it gave none."""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else ""


def _renaming(tool: Callable[..., Awaitable[T]], names: dict[str, str]) -> Callable[..., Awaitable[T]]:
    """`tool` as the SDK calls it: arguments by their wire names (`with`, a
    Python keyword, is the parameter `with_` aliased), renamed to the
    parameters. Its signature, and so the tool's schema, stay `tool`'s."""

    @functools.wraps(tool)
    async def call(**arguments: Any) -> T:
        return await tool(**{names.get(name, name): value for name, value in arguments.items()})

    return call


@contextmanager
def _as_tool_error() -> Iterator[None]:
    """Our errors become the tool's error result, one line the agent reads."""
    try:
        yield
    except BenchwarmersError as exc:
        raise ToolError(str(exc)) from None
