"""`benchwarmers ask` and `benchwarmers verdict`: a panel from the terminal.

Both talk to a running server first (`client_env`: `BENCHWARMERS_URL`,
default http://127.0.0.1:8122, with `BENCHWARMERS_KEY` if keys are on), so
the server's limits, guard and call log are the ones in force. When no
server answers they say so (a warning line naming the URL and how to start
one or point at yours) and run in-process on the data folder, through the
same core service (`core.Panels`) the server's routes use, as the
owner, but only when the data folder has what was asked for (the
collection, the call); else that is the error, with the missing server in
the same line, so `serve --demo --port 8123` without `BENCHWARMERS_URL`
never ends as a bare "no collection". `ask` prints each seat the moment it
finishes, with the call id a verdict names; a blind collection's seats as
Seat A, B, C, lettered in a shuffled order drawn for each ask (`seat_letters`;
in the order they finish, the fastest seat would always be Seat A and its
speed would name it), with no model named (nor a failed seat's message,
which often names it), until `verdict` names the judged.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from collections.abc import Awaitable, Sequence
from contextlib import aclosing
from typing import Annotated, Any, TypeVar

import typer
from markdown_it import MarkdownIt
from rich.markdown import Markdown
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from benchwarmers import client_env
from benchwarmers.api_client import ApiClient, NoServer
from benchwarmers.cli.context import console, with_core
from benchwarmers.cli.errors import as_text, print_warning
from benchwarmers.core import Core, verdict_body
from benchwarmers.errors import NotFound, UserError
from benchwarmers.formats.base import deadline_value, parse_model_name, quorum_value
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.reasoning import split
from benchwarmers.types import Ask, Merged, PanelDone, PanelReply, PanelStarted, Request, Seat, SeatDone, user

# A blind ask's letters are shuffled with the operating system's randomness, seeded by nothing the
# user sees; the tests put a shuffle of their own here.
_SHUFFLE: random.Random = random.SystemRandom()


class AsWritten(Markdown):
    """An answer's markdown for the terminal, with any HTML in it read as the
    text it is: rich's own parser reads `<script>alert(1)</script>` as a tag
    and prints only `alert(1)` (an `<img onerror>`, a `<div>` block, nothing),
    so the words judged would not be the model's."""

    def __init__(self, markup: str) -> None:
        super().__init__("")
        self.markup = as_text(markup)
        self.parsed = _MARKDOWN.parse(self.markup)


# rich's own reading of markdown (CommonMark, strikethrough, tables), with HTML off; made once.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough", "table"])


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
    app.command("verdict")(verdict)


def ask(
    collection: Annotated[str, typer.Argument(help="The collection: NAME or bench/NAME.")],
    prompt: Annotated[str, typer.Argument(help="The question.")],
    merged: Annotated[
        bool, typer.Option("--merged", help="One merged answer (every seat still shown).")
    ] = False,
    with_: Annotated[
        list[str] | None, typer.Option("--with", help="Seat this model too (repeatable).", show_default=False)
    ] = None,
    system: Annotated[str, typer.Option("--system", help="A system prompt for every seat.")] = "",
    quorum: Annotated[
        int | None,
        typer.Option(
            "--quorum", help="Answer once this many seats answered; cut the rest.", show_default=False
        ),
    ] = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline", help="Answer with what is in after this many seconds.", show_default=False
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the bench object as JSON at the end.")
    ] = False,
) -> None:
    """Ask a collection; each seat prints as it finishes, with its call id."""
    name, mode = parse_model_name(collection if collection.startswith("bench/") else f"bench/{collection}")
    if mode == "route":
        raise UserError(
            "ask asks a panel; route mode is for agents with tools (point them at bench/NAME:route)"
        )
    mode = "merged" if merged else mode
    extras = tuple(with_ or ())
    show = _Printer(quiet=as_json)
    url = client_env.server_url()
    the_ask = Ask(
        name,
        mode,
        Request(messages=(user(prompt),), system=system),
        stream=True,
        extra_aliases=extras,
        quorum=quorum_value(quorum, "--quorum"),
        deadline=deadline_value(deadline, "--deadline"),
    )

    async def over_http() -> PanelReply | None:
        reply: PanelReply | None = None
        async with ApiClient.from_environment() as api:
            listed = (await api.get("/v1/models")).get("data") or []
            show.blind = any(c.get("id") == f"bench/{name}" and c.get("blind") is True for c in listed)
            async with aclosing(api.panel(the_ask)) as answers:
                async for answer in answers:
                    if isinstance(answer, PanelStarted):
                        show.started(answer.seats)
                    elif isinstance(answer, Seat):
                        show.seat(answer)
                    else:
                        reply = answer
        return reply

    async def in_process(core: Core) -> PanelReply | None:
        # The panel's last writes (its seating history) come after the reply:
        # closing `core` waits for them before the runtime closes.
        show.blind = (await _here_or_no_server(url, core.panels.collection(name))).blind
        async with aclosing(await core.panels.panel(the_ask)) as events:
            async for event in events:
                if isinstance(event, PanelStarted):
                    show.started(event.seats)
                elif isinstance(event, SeatDone):
                    show.seat(event.seat)
                elif isinstance(event, PanelDone):
                    return event.reply
        return None

    try:
        reply = asyncio.run(over_http())
    except NoServer:
        reply = with_core(in_process)
    if reply is None:
        raise UserError("the panel ended without a reply")
    show.finish(reply)
    if as_json:
        typer.echo(json.dumps(panel_json(reply), indent=2, ensure_ascii=False))


def verdict(
    call: Annotated[
        str, typer.Argument(help="The call id (from ask, or bench.seats[].call); none for a pair.")
    ] = "",
    useful: Annotated[
        bool | None, typer.Option("--useful/--not-useful", help="Was the answer useful?", show_default=False)
    ] = None,
    note: Annotated[
        str | None,
        typer.Option(
            "--note",
            help="Why; `GET /bench/record?task=` matches its words. Left out, the same verdict"
            ' keeps its note; --note "" clears it.',
        ),
    ] = None,
    better: Annotated[str, typer.Option("--better", help="A pair: the better answer's call id.")] = "",
    worse: Annotated[str, typer.Option("--worse", help="A pair: the worse answer's call id.")] = "",
    tie: Annotated[
        tuple[str, str] | None,
        typer.Option("--tie", help="A pair of one ask's seats, as good as each other.", show_default=False),
    ] = None,
    both_bad: Annotated[
        tuple[str, str] | None,
        typer.Option("--both-bad", help="A pair of one ask's seats, both not useful.", show_default=False),
    ] = None,
    best: Annotated[
        str, typer.Option("--best", help="The best seat of its panel (better than each other seat).")
    ] = "",
) -> None:
    """Say whether one seat's (or merge's) answer was useful, or compare two
    seats of one ask (--better A --worse B, --tie A B, --both-bad A B, --best A)."""
    pair = bool(better or worse or tie or both_bad or best)
    if not pair and useful is None:
        raise UserError(
            "say --useful or --not-useful"
            " (or compare: --better A --worse B, --tie A B, --both-bad A B, --best A)"
        )
    if pair and call and useful is None:  # `--tie A B C`: the third id lands here, not in the pair
        raise UserError(
            f"a pair names its calls in its options, so {call!r} is one too many:"
            " --better A --worse B, --tie A B, --both-bad A B or --best A"
        )
    if bool(better) != bool(worse):  # said in the command's words, not the body's keys
        given, missing = ("--better", "--worse") if better else ("--worse", "--better")
        raise UserError(
            f"{given} needs {missing} too: --better A --worse B (or --best A: better than each other seat)"
        )
    # The command's own arguments, checked before either path, so a mistake is
    # the same one line whether a server runs or not.
    body = verdict_body(
        call=call, useful=useful, note=note, better=better, worse=worse, tie=tie, both_bad=both_bad, best=best
    )

    url = client_env.server_url()

    async def over_http() -> dict[str, Any]:
        async with ApiClient.from_environment() as api:
            recorded: dict[str, Any] = (await api.post("/bench/verdict", body))["recorded"]
        return recorded

    async def in_process(core: Core) -> dict[str, Any]:
        recorded = await _here_or_no_server(url, core.panels.verdict(body))
        return recorded.as_json()

    try:
        recorded = asyncio.run(over_http())
    except NoServer:
        recorded = with_core(in_process)
    for line in _verdict_lines(recorded):
        console.print(line)


def _verdict_lines(recorded: dict[str, Any]) -> list[str]:
    """What was recorded, a line per seat or pair."""
    if "pairs" not in recorded:
        said = "useful" if recorded["useful"] else "not useful"
        changed = "" if recorded.get("changed", True) else " (already recorded; nothing changed)"
        return [f"{recorded['call']} · {recorded['alias']}: {said}{_noted(recorded)}{changed}"]
    lines = []
    for pair in recorded["pairs"]:
        between = {"better": "better than", "tie": "tie with", "both_bad": "both bad with"}[pair["outcome"]]
        changed = "" if pair.get("changed", True) else " (already recorded; nothing changed)"
        better, worse = f"{pair['better']} · {pair['betterAlias']}", f"{pair['worse']} · {pair['worseAlias']}"
        lines.append(f"{better} {between} {worse}{_noted(pair)}{changed}")
    return lines


def _noted(recorded: dict[str, Any]) -> str:
    """The note stored with a verdict or a pair, as the MCP tool says it: ` — why`."""
    return f" — {recorded['note']}" if recorded.get("note") else ""


def _answer(text: str) -> None:
    """An answer as markdown, its leading think block (`reasoning`) folded to
    one dim line saying how long it was: the reasoning is the model's
    working, not what it answered (`--json` keeps the text as written)."""
    reasoning, answer, closed = split(text)
    if reasoning is not None:
        cut = "" if closed else ", cut before it ended"
        console.print(f"[dim]reasoning folded ({len(reasoning):,} characters{cut})[/dim]")
    if answer:
        console.print(AsWritten(answer))


# --------------------------------------------------------------- plumbing

R = TypeVar("R")


def seat_letters(labels: Sequence[str]) -> dict[str, str]:
    """A blind ask's seats, each by its label ("Seat 2"), lettered in a shuffled
    order ("Seat 2" -> "Seat C"): A to Z, then numbers (27, 28...), so a panel of
    more than 26 seats stays unambiguous."""
    order = list(dict.fromkeys(labels))
    _SHUFFLE.shuffle(order)
    return {label: _seat_letter(i) for i, label in enumerate(order)}


def _seat_letter(index: int) -> str:
    upper = string.ascii_uppercase
    return f"Seat {upper[index] if index < len(upper) else index + 1}"


async def _here_or_no_server(url: str, lookup: Awaitable[R]) -> R:
    """The in-process fallback, taken only when the data folder has what was
    asked for; either way the user hears that no server answered."""
    try:
        found = await lookup
    except NotFound as exc:
        raise NotFound(f"{client_env.no_server(url)}; and in this data folder: {exc}") from None
    print_warning(f"{client_env.no_server(url)}; running in this process on the data folder")
    return found


class _Printer:
    """Seats as they finish; then the merge, the agreement map, who was left off."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        # A blind collection's: no model named; each seat a letter, by its label ("Seat 2" ->
        # "Seat C"), shuffled once the seats are known (not the members' order, which would name
        # them, nor the order they finish, which their speed would), the same letter everywhere after.
        self.blind = False
        self.letters: dict[str, str] = {}

    def started(self, seats: tuple[tuple[str, str, str], ...]) -> None:
        if self.blind:
            self.letters = seat_letters([label for label, _alias, _call in seats])
        if self.quiet:
            return
        if self.blind:
            console.print(f"[dim]asking {len(seats)} seats, blind: models named once judged…[/dim]")
        else:
            console.print(f"[dim]asking {', '.join(alias for _label, alias, _call in seats)}…[/dim]")

    def seat(self, seat: Seat) -> None:
        if self.quiet:
            return
        colour = "green" if seat.status == "ok" else "yellow" if seat.status == "empty" else "red"
        if self.blind:
            # A seat not in the plan (a server too old to send it): the next letter free.
            letter = self.letters.setdefault(seat.seat, _seat_letter(len(self.letters)))
            named = f"[bold]{letter}[/bold]"
        else:
            named = f"[bold]{seat.seat}[/bold] · {seat.alias}"
        flag = " · explorer" if seat.explorer and not self.blind else ""
        title = (
            f"{named} · [{colour}]{seat.status}[/{colour}] "
            f"· {seat.seconds:.1f} s{flag} · call [cyan]{seat.call}[/cyan]"
        )
        console.print(Rule(title, align="left"))
        if seat.content:
            _answer(seat.content)
        elif seat.error and self.blind:
            console.print(f"[{colour}]its message is not shown: it may name the model (blind)[/{colour}]")
        elif seat.error:
            console.print(f"[{colour}]{escape(as_text(seat.error))}[/{colour}]")

    def finish(self, reply: PanelReply) -> None:
        if self.quiet:
            return
        if reply.merged is not None:
            self._merged(reply.merged)
        for member in reply.left_off:
            who = "a member" if self.blind else member.alias
            console.print(f"[dim]left off: {who}: {escape(as_text(member.reason))}[/dim]")
        if self.blind:
            console.print("[dim]blind: verdict names the models of the seats you judge[/dim]")
        console.print("[dim]judge a seat: benchwarmers verdict CALL --useful|--not-useful[/dim]")
        if sum(seat.status in ("ok", "empty") for seat in reply.seats) >= 2:  # two answers to compare
            console.print(
                "[dim]compare two: benchwarmers verdict --better A --worse B (or --tie A B,"
                " --both-bad A B, --best A)[/dim]"
            )

    def _merged(self, merged: Merged) -> None:
        if merged.status != "ok":
            said = "no merged answer (why is not shown: it may name a model)" if self.blind else None
            console.print(f"[red]{escape(as_text(said or merged.note or merged.error))}[/red]")
            return
        by = "" if self.blind else f" · {merged.alias}"
        console.print(Rule(f"[bold]merged[/bold]{by} · call [cyan]{merged.call}[/cyan]"))
        if merged.note and not self.blind:  # a merge after others failed, or a seat's answer standing in
            console.print(f"[dim]{escape(as_text(merged.note))}[/dim]")
        _answer(merged.content)
        if merged.agreement:
            table = Table("point", "held by", "contradicted by", show_lines=False)
            for point in merged.agreement:
                held, contradicted = (
                    ", ".join(self.letters.get(label, label) for label in labels)
                    for labels in (point.held_by, point.contradicted_by)
                )
                table.add_row(escape(as_text(point.point)), held, contradicted)
            console.print(table)
