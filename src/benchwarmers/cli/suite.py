"""`benchwarmers suite run|list|import|fetch`: the private benchmark.

`suite run` without an alias runs every model the bench may call on its
own (available, not ad hoc, not an image model), one after another, paced.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.core import (
    DEFAULT_DATASET,
    DEFAULT_LIMIT,
    DEFAULT_SPLIT,
    SUITE_SHAPES,
    Core,
    Fetched,
    SuiteRun,
    import_tasks,
    sandbox_unavailable,
    suite_tasks,
)
from benchwarmers.errors import UserError

suite_app = typer.Typer(
    help="The private benchmark: run it, list its tasks, import real-bug tasks.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(suite_app, name="suite")


@suite_app.command("run")
def run(
    alias: Annotated[
        str | None, typer.Argument(help="One model; default: every model the bench may call.")
    ] = None,
    shape: Annotated[str | None, typer.Option("--shape", help=", ".join(SUITE_SHAPES))] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="At most this many tasks per model.")
    ] = None,
    gap: Annotated[
        float | None,
        typer.Option(
            "--gap", min=0.0, help="Seconds between calls, at least (default: by the endpoint's limits)."
        ),
    ] = None,
) -> None:
    """Run the suite against one model or the whole bench, with progress."""
    if shape is not None and shape not in SUITE_SHAPES:
        raise UserError(f"shape {shape!r} is not known; use one of: {', '.join(SUITE_SHAPES)}")
    runs = with_core(lambda core: _run_all(core, alias, shape, limit, gap))
    table = Table("model", "passed", "tasks", "confidently wrong")
    for one in runs:
        table.add_row(escape(one.alias), str(one.passed), str(len(one.results)), str(one.confidently_wrong))
    console.print(table)
    reason = sandbox_unavailable()
    if reason is not None:
        console.print(f"Code tasks were skipped: {escape(reason)}")


async def _run_all(
    core: Core, alias: str | None, shape: str | None, limit: int | None, gap: float | None
) -> list[SuiteRun]:
    aliases = await core.ops.suite_models(alias)
    runs = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        for name in aliases:
            tasks = await core.ops.suite_tasks_for(name, shape)
            line = bar.add_task(escape(name), total=min(len(tasks), limit or len(tasks)))

            def progress(done: int, total: int, line: TaskID = line) -> None:
                bar.update(line, completed=done, total=total)

            runs.append(await core.ops.run_suite(name, tasks, limit=limit, progress=progress, gap=gap))
    return runs


@suite_app.command("list")
def list_(
    shape: Annotated[str | None, typer.Option("--shape", help=", ".join(SUITE_SHAPES))] = None,
    as_json: JsonFlag = False,
) -> None:
    """List the tasks: shipped ones and yours (in the data folder's tasks/)."""
    tasks = [t for t in suite_tasks() if shape is None or t.shape == shape]
    if as_json:
        rows = [
            {"id": t.id, "role": t.role, "shape": t.shape, "checker": t.checker["kind"], "source": t.source}
            for t in tasks
        ]
        print_json(rows)
        return
    table = Table("id", "role", "shape", "checker", "source")
    for task in tasks:
        table.add_row(escape(task.id), task.role, task.shape, task.checker["kind"], task.source)
    console.print(table)


@suite_app.command("import")
def import_(
    file: Annotated[
        Path, typer.Argument(help="A SWE-rebench-style JSONL file.", exists=True, dir_okay=False)
    ],
    checkout: Annotated[
        Path | None,
        typer.Option(
            "--checkout",
            help="A git clone of the rows' repository: their code and tests are read from it, "
            "and only rows whose own fix passes their tests here are kept.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Import real-bug tasks from a SWE-rebench-style JSONL file into your tasks."""
    imported = asyncio.run(import_tasks(file, checkout))
    skipped = f", {imported.skipped} rows skipped" if imported.skipped else ""
    console.print(f"Imported {imported.tasks} tasks into {escape(str(imported.path))}{skipped}.")
    for reason in imported.reasons[:10]:
        console.print(f"  skipped {escape(reason)}")
    if checkout is None:
        console.print(
            "Without --checkout the tasks carry no code: the suite skips them until imported with it."
        )


@suite_app.command("fetch")
def fetch(
    dataset: Annotated[
        str, typer.Option("--dataset", help="A public Hugging Face dataset of SWE-rebench rows.")
    ] = DEFAULT_DATASET,
    split: Annotated[str, typer.Option("--split", help="The dataset's split.")] = DEFAULT_SPLIT,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Read at most this many rows.")] = (
        DEFAULT_LIMIT
    ),
    offset: Annotated[int, typer.Option("--offset", min=0, help="Start at this row.")] = 0,
) -> None:
    """Fetch real-bug tasks from a public SWE-rebench dataset online; already imported ones are kept."""
    fetched = with_core(lambda core: _fetch(core, dataset, split, limit, offset))
    notes = [f"{fetched.already} already imported"] if fetched.already else []
    notes += [f"{fetched.skipped} rows skipped"] if fetched.skipped else []
    where = f" into {escape(str(fetched.path))}" if fetched.new else ""
    tail = f" ({', '.join(notes)})" if notes else ""
    console.print(f"Fetched {fetched.new} new tasks{where}{tail}; the split has {fetched.available} rows.")


async def _fetch(core: Core, dataset: str, split: str, limit: int, offset: int) -> Fetched:
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        line = bar.add_task(escape(f"{dataset} ({split})"), total=None)

        def progress(done: int, total: int) -> None:
            bar.update(line, completed=done, total=total)

        return await core.ops.fetch_tasks(
            dataset=dataset, split=split, offset=offset, limit=limit, progress=progress
        )
