"""`benchwarmers collection add|list|show|set|remove`: named panels, asked
as `bench/<name>`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.core import CollectionView, Core

collection_app = typer.Typer(help="Named panels, asked as bench/<name>.", no_args_is_help=True)

Members = Annotated[
    list[str] | None, typer.Option("--member", "-m", help="A member's alias (repeat for each).")
]
Reply = Annotated[
    str | None, typer.Option("--reply", help="panel (every seat's answer) or merged (one answer).")
]
Merger = Annotated[
    str | None, typer.Option("--merger", help="Alias of the model that merges (default: by record).")
]
Purpose = Annotated[str | None, typer.Option("--purpose", help="What the panel is for, shown to callers.")]
Seats = Annotated[int | None, typer.Option("--seats", min=0, help="Seats in all; 0 seats every member.")]
Explorer = Annotated[
    int | None, typer.Option("--explorer", min=0, help="Explorer seats for unproven models.")
]
FreeOnly = Annotated[
    bool | None,
    typer.Option(
        "--free-only/--any-price", help="Explorer seats only for models that cost nothing (or any price)."
    ),
]
Promotion = Annotated[
    str | None,
    typer.Option(
        "--promotion",
        help="An explorer's find clearly better than a record seat: auto (takes it), "
        "suggest (named in the decisions) or never.",
    ),
]
BudgetSeating = Annotated[
    str | None,
    typer.Option(
        "--budget-seating",
        help="A budget that cannot pay for every seat seats the cheapest first (cheapest) "
        "or the best by record first (record).",
    ),
]
System = Annotated[str | None, typer.Option("--system", help="System prompt given to every seat.")]
Timeout = Annotated[float | None, typer.Option("--timeout", help="Seconds each seat may take.")]
Shadow = Annotated[
    int | None, typer.Option("--shadow", min=0, help="Route mode: members answering in the background.")
]
Quorum = Annotated[
    int | None,
    typer.Option("--quorum", min=0, help="Answer once this many seats answered (0: wait for every seat)."),
]
Deadline = Annotated[
    float | None,
    typer.Option("--deadline", min=0, help="Answer with what is in after this many seconds (0: none)."),
]
OnCut = Annotated[
    str | None,
    typer.Option(
        "--on-cut",
        help="The seats still answering at the quorum or deadline: cancel (logged cancelled, error cut: ...) "
        "or finish (in the background, logged with their outcome).",
    ),
]
KeepText = Annotated[
    bool | None,
    typer.Option(
        "--keep-text/--no-keep-text",
        help="Keep each panel ask's question and answers in the data folder (for --keep-days), "
        "to read and judge them later (a :route turn keeps none); off removes what was kept.",
    ),
]
KeepDays = Annotated[
    int | None, typer.Option("--keep-days", min=1, help="Days kept text stays (default 30).")
]
Blind = Annotated[
    bool | None,
    typer.Option(
        "--blind/--no-blind",
        help="The dashboard's Ask page shows the answers as Seat A/B/C, shuffled, and names "
        "the models once you have judged (the page's toggle changes it for one ask).",
    ),
]
JudgeVerdicts = Annotated[
    bool | None,
    typer.Option(
        "--judge-verdicts/--no-judge-verdicts",
        help="After each panel ask, a model that did not sit compares the answers; its verdicts "
        "(kind judge) count in the rating as far as they agreed with people's.",
    ),
]
OutputFallback = Annotated[
    str | None,
    typer.Option(
        "--output-fallback",
        help="A member that cannot answer in JSON, asked for structured output: "
        "leave_off (the default) or prompt (the schema in its system prompt).",
    ),
]


def register(app: typer.Typer) -> None:
    app.add_typer(collection_app, name="collection")


@collection_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The collection's name; callers ask bench/<name>.")],
    members: Members = None,
    reply: Reply = None,
    merger: Merger = None,
    purpose: Purpose = None,
    seats: Seats = None,
    explorer: Explorer = None,
    free_only: FreeOnly = None,
    promotion: Promotion = None,
    system: System = None,
    timeout: Timeout = None,
    shadow: Shadow = None,
    keep_text: KeepText = None,
    keep_days: KeepDays = None,
    blind: Blind = None,
    judge_verdicts: JudgeVerdicts = None,
    output_fallback: OutputFallback = None,
    quorum: Quorum = None,
    deadline: Deadline = None,
    on_cut: OnCut = None,
    budget_seating: BudgetSeating = None,
) -> None:
    """Create a collection."""
    given = {
        "reply": reply,
        "merger": merger,
        "purpose": purpose,
        "seats": seats,
        "explorer_seats": explorer,
        "free_only": free_only,
        "promotion": promotion,
        "system_prompt": system,
        "seat_timeout": timeout,
        "shadow_seats": shadow,
        "keep_text": keep_text,
        "keep_days": keep_days,
        "blind": blind,
        "judge_verdicts": judge_verdicts,
        "output_fallback": output_fallback,
        "quorum": quorum,
        "deadline": deadline,
        "on_cut": on_cut,
        "budget_seating": budget_seating,
    }
    options: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    collection = with_core(lambda core: core.admin.add_collection(name, members or [], **options))
    _show(collection)


@collection_app.command("set")
def set_(
    name: Annotated[str, typer.Argument(help="The collection's name.")],
    members: Members = None,
    reply: Reply = None,
    merger: Merger = None,
    purpose: Purpose = None,
    seats: Seats = None,
    explorer: Explorer = None,
    free_only: FreeOnly = None,
    promotion: Promotion = None,
    system: System = None,
    timeout: Timeout = None,
    shadow: Shadow = None,
    keep_text: KeepText = None,
    keep_days: KeepDays = None,
    blind: Blind = None,
    judge_verdicts: JudgeVerdicts = None,
    output_fallback: OutputFallback = None,
    quorum: Quorum = None,
    deadline: Deadline = None,
    on_cut: OnCut = None,
    budget_seating: BudgetSeating = None,
) -> None:
    """Change a collection (--member replaces the member list; --merger '' clears the merger)."""

    async def change(core: Core) -> tuple[bool, CollectionView]:
        kept = (await core.admin.collection(name)).keep_text
        return kept, await core.admin.update_collection(
            name,
            members=members,
            reply=reply,
            merger=merger,
            purpose=purpose,
            seats=seats,
            explorer_seats=explorer,
            free_only=free_only,
            promotion=promotion,
            system_prompt=system,
            seat_timeout=timeout,
            shadow_seats=shadow,
            keep_text=keep_text,
            keep_days=keep_days,
            blind=blind,
            judge_verdicts=judge_verdicts,
            output_fallback=output_fallback,
            quorum=quorum,
            deadline=deadline,
            on_cut=on_cut,
            budget_seating=budget_seating,
        )

    kept, collection = with_core(change)
    _show(collection)
    if kept and not collection.keep_text:  # said, not only in the help: the text is gone for good
        console.print("Deleted the questions and answers it kept: keep text is off.")


@collection_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List collections and their members."""
    collections = with_core(lambda core: core.admin.collections())
    if as_json:
        print_json(collections)
        return
    if not collections:
        console.print("No collections yet: [bold]benchwarmers collection add NAME --member ALIAS ...[/]")
        return
    table = Table("model name", "members", "reply", "seats", "purpose")
    for collection in collections:
        table.add_row(
            f"bench/{escape(collection.name)}",
            escape(", ".join(collection.members)),
            collection.reply,
            _seats_label(collection),
            escape(collection.purpose),
        )
    console.print(table)


@collection_app.command("show")
def show(name: Annotated[str, typer.Argument(help="The collection's name (bench/ optional).")]) -> None:
    """Show one collection."""
    _show(with_core(lambda core: core.admin.collection(name)))


@collection_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="The collection's name.")]) -> None:
    """Remove a collection (its calls and verdicts stay in the log)."""
    with_core(lambda core: core.admin.remove_collection(name))
    console.print(f"Removed collection [bold]{escape(name)}[/].")


def _show(collection: CollectionView) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    rows = [
        (
            "model name",
            f"bench/{collection.name}  (bench/{collection.name}:merged, bench/{collection.name}:route)",
        ),
        ("members", ", ".join(collection.members)),
        ("reply", collection.reply),
        ("merger", collection.merger or "by record"),
        ("seats", _seats_label(collection)),
        ("seat timeout", f"{collection.seat_timeout:g} s"),
        ("quorum", _quorum_label(collection)),
        ("shadow seats", str(collection.shadow_seats)),
        ("keep text", _days(collection.keep_days) if collection.keep_text else "no"),
        ("blind", "yes" if collection.blind else "no"),
        ("judge verdicts", "on" if collection.judge_verdicts else "off"),
        ("output fallback", collection.output_fallback),
        ("purpose", collection.purpose or "-"),
        ("system prompt", collection.system_prompt or "-"),
    ]
    for label, value in rows:
        table.add_row(label, escape(value))
    console.print(table)


def _days(days: int) -> str:
    return "1 day" if days == 1 else f"{days} days"


def _seats_label(collection: CollectionView) -> str:
    seats = str(collection.seats) if collection.seats else f"all {len(collection.members)}"
    if not collection.explorer_seats:
        return seats
    free = " (free only)" if collection.free_only else ""
    return seats + f" + {collection.explorer_seats} explorer{free}"


def _quorum_label(collection: CollectionView) -> str:
    """ "2 seats, deadline 5 s; cut seats finish" or "every seat"."""
    parts = [f"{collection.quorum} seats" if collection.quorum else "every seat"]
    if collection.deadline:
        parts.append(f"deadline {collection.deadline:g} s")
    if collection.quorum or collection.deadline:
        return ", ".join(parts) + f"; cut seats {collection.on_cut}"
    return parts[0]
