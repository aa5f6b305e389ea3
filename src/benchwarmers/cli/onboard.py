"""`benchwarmers onboard SERVED --endpoint E [--quick] [--ad-hoc]` and
`benchwarmers probe [ALIAS]`.

`onboard` queues the model in the same store queue the server works and
runs it in this process with a progress bar (the same code the server's
worker runs). When a server is running, its worker holds the queue and
runs the item; the bar then follows the item's progress in the store, so
two processes never spend the same calls twice.

`probe` runs the health check now: for one model (even an ad hoc one: the
user asked), or the daily pass over the bench (which may retire a model
after one confirming call, exactly as the scheduled run would) with a bar
that names the model being probed. Rate-limited models are shown resting,
never retired (`bench/retirement.py`).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchwarmers.cli.context import console, with_core
from benchwarmers.cli.errors import as_text
from benchwarmers.core import (
    Core,
    HealthReport,
    ModelView,
    OnboardingView,
    OnboardRequest,
    ProbeView,
    mode_for,
    url_hint,
)
from benchwarmers.errors import UserError
from benchwarmers.types import MODEL_ROLES


def register(app: typer.Typer) -> None:
    app.command("onboard")(onboard)
    app.command("probe")(probe)


def onboard(
    served: Annotated[str, typer.Argument(help="The provider's model id.")],
    endpoint: Annotated[str, typer.Option("--endpoint", "-e", help="The endpoint serving it.")],
    alias: Annotated[str, typer.Option("--alias", help="Its name on the bench (default: from the id).")] = "",
    role: Annotated[str, typer.Option("--role", help=", ".join(MODEL_ROLES))] = "",
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Probe now; scheduled passes run the suite (once the scheduler is on)."),
    ] = False,
    ad_hoc: Annotated[
        bool,
        typer.Option("--ad-hoc", help="Probe only; the bench never calls it on its own (implies --quick)."),
    ] = False,
    keep: Annotated[
        bool,
        typer.Option(
            "--keep", help="Register it even if the endpoint does not list it or it does not answer."
        ),
    ] = False,
) -> None:
    """Register a model, probe it with four short calls and (unless --quick) run the suite."""
    model, step = onboard_model(
        OnboardRequest(
            endpoint=endpoint, served=served, mode=mode_for(quick, ad_hoc), alias=alias, role=role
        ),
        keep=keep,
    )
    console.print(f"[bold]{escape(model.alias)}[/] is {model.status}: {escape(as_text(step))}")
    if model.status == "resting":
        console.print(
            "a rate limit is no failure: it stays queued, and the server's onboarding worker "
            "(`benchwarmers serve`) runs it again once the limit frees"
        )


def onboard_model(request: OnboardRequest, *, keep: bool = False) -> tuple[ModelView, str]:
    """Onboard one model with a progress bar (`onboard`, `quickstart`): the
    model as it ended and the item's last step, or a `UserError` saying why
    nothing was kept."""
    new = True

    async def work(core: Core) -> OnboardingView:
        nonlocal new
        new = await core.ops.check_onboard(request.endpoint, request.served, keep=keep)
        if not console.is_terminal:  # a log or a pipe: a line per stage, as it starts
            said: list[str] = []

            def say(_item: int, step: str, fraction: float) -> None:
                stage = step.split(";", 1)[0].split(":", 1)[0]
                if not said or stage != said[-1]:
                    said.append(stage)
                    console.print(f"{request.served}: {as_text(step)} ({fraction:.0%})", markup=False)

            return await core.ops.onboard(request, say)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[step]}"),
            console=console,
        ) as bar:
            task = bar.add_task(escape(request.served), total=1.0, step="queued")

            def show(_item: int, step: str, fraction: float) -> None:
                bar.update(task, completed=fraction, step=escape(as_text(step.split(";", 1)[0])))

            return await core.ops.onboard(request, show)

    item = with_core(work)
    if item.state == "failed":
        raise UserError(f"onboarding {request.served} failed: {item.error}")
    model = with_core(lambda core: core.admin.model(item.alias))
    if model.status == "unavailable" and new and not keep:
        with_core(lambda core: core.admin.remove_model(model.alias))
        hint = url_hint(model.endpoint)
        raise UserError(
            f"{request.served} on {request.endpoint} did not answer "
            f"({model.status_reason.split(': ', 1)[-1]}), so it is not kept{'; ' + hint if hint else ''}; "
            "add --keep to register it anyway"
        )
    return model, item.step


def probe(
    alias: Annotated[
        str | None, typer.Argument(help="One model; without it, the daily pass over the bench.")
    ] = None,
) -> None:
    """Probe now: one-word health check, a failure confirmed once before retiring."""

    async def work(core: Core) -> tuple[HealthReport, list[ProbeView]]:
        if alias:
            report = await core.ops.probe(alias)
        else:
            with Progress(
                TextColumn("probing"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[model]}"),
                console=console,
            ) as bar:
                line = bar.add_task("probe", total=None, model="")

                def show(done: int, total: int, model: str) -> None:
                    bar.update(line, completed=done, total=total, model=escape(model))

                report = await core.ops.probe(None, progress=show)
        latest = [(await core.ops.probes(a, limit=1))[0] for a in report.probed]
        return report, latest

    report, latest = with_core(work)
    if not report.probed:
        console.print("Nothing to probe: no available or unavailable models that are not ad hoc.")
        return
    table = Table("alias", "probe", "answered", "seconds", "answer / error")
    for row in latest:
        answered = "[green]yes[/]" if row.answered else "[red]no[/]"
        table.add_row(
            escape(row.alias),
            row.kind,
            "[yellow]resting[/]" if row.limited else answered,
            f"{row.seconds:.2f}",
            escape(as_text((row.answer or row.error)[:60])),
        )
    console.print(table)
    for resting, why in report.resting.items():
        console.print(f"[yellow]{escape(resting)}[/] rests, not retired: {escape(as_text(why))}")
    console.print(report.summary())
