"""`benchwarmers onboard SERVED --endpoint E [--quick] [--ad-hoc]` and
`benchwarmers probe [ALIAS]`.

`onboard` queues the model in the same store queue the server works and
runs it in this process with a progress bar (the same code the server's
worker runs). When a server is running, its worker holds the queue and
runs the item; the bar then follows the item's progress in the store, so
two processes never spend the same calls twice.

`probe` runs the health check now: for one model (even an ad hoc one: the
user asked), or the daily pass over the bench (which may retire a model
after one confirming call, exactly as the scheduled run would).
"""

from __future__ import annotations

import asyncio
import difflib
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchwarmers.bench import onboarding, probes, retirement, scheduler
from benchwarmers.bench.onboarding import OnboardRequest
from benchwarmers.cli.context import console, with_runtime
from benchwarmers.config import keys
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry, schema
from benchwarmers.types import MODEL_ROLES

POLL_SECONDS = 0.5


def register(app: typer.Typer) -> None:
    app.command("onboard")(onboard)
    app.command("probe")(probe)


def onboard(
    served: Annotated[str, typer.Argument(help="The provider's model id.")],
    endpoint: Annotated[str, typer.Option("--endpoint", "-e", help="The endpoint serving it.")],
    alias: Annotated[str, typer.Option("--alias", help="Its name on the bench (default: from the id).")] = "",
    role: Annotated[str, typer.Option("--role", help=", ".join(MODEL_ROLES))] = "",
    quick: Annotated[
        bool, typer.Option("--quick", help="Probe now; scheduled passes run the suite.")
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
        served, endpoint, mode=onboarding.mode_for(quick, ad_hoc), alias=alias, role=role, keep=keep
    )
    console.print(f"[bold]{escape(model.alias)}[/] is {model.status}: {escape(step)}")


def onboard_model(
    served: str,
    endpoint: str,
    *,
    mode: onboarding.Mode,
    alias: str = "",
    role: str = "",
    keep: bool = False,
) -> tuple[registry.ModelView, str]:
    """Onboard one model with a progress bar (`onboard`, `quickstart`): the
    model as it ended and the item's last step, or a `UserError` saying
    why nothing was kept."""
    new = True

    async def work(rt: Runtime) -> schema.OnboardingItem:
        nonlocal new
        target = await registry.get_endpoint(rt.store, endpoint)
        new = not any(m.served == served for m in await registry.list_models(rt.store, endpoint=endpoint))
        if new and not keep:
            await _check_it_can_work(rt, target, served)
        jobs = scheduler.bench_jobs(rt)
        [item_id] = await onboarding.enqueue(
            rt.store, [OnboardRequest(endpoint=endpoint, served=served, mode=mode, alias=alias, role=role)]
        )
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[step]}"),
            console=console,
        ) as bar:
            task = bar.add_task(escape(served), total=1.0, step="queued")

            def show(_item: int, step: str, fraction: float) -> None:
                bar.update(task, completed=fraction, step=escape(step.split(";", 1)[0]))

            done = await onboarding.work_items(
                rt, jobs.caller, {item_id}, suite=jobs.run_suite, progress=show
            )
            if done:
                return done[0]
            return await _follow(rt, item_id, show)

    item = with_runtime(work)
    if item.state == "failed":
        raise UserError(f"onboarding {served} failed: {item.error}")
    model = with_runtime(lambda rt: registry.get_model(rt.store, item.alias))
    if model.status == "unavailable" and new and not keep:
        with_runtime(lambda rt: registry.remove_model(rt.store, model.alias))
        raise UserError(
            f"{served} on {endpoint} did not answer ({model.status_reason.split(': ', 1)[-1]}), "
            f"so it is not kept{url_hint(model.endpoint)}; add --keep to register it anyway"
        )
    return model, item.step


async def _check_it_can_work(rt: Runtime, target: registry.EndpointView, served: str) -> None:
    """Refuse what cannot work before anything is registered: an endpoint
    with no key, or a served id the endpoint's own list does not have (with
    the closest ids it does serve). An endpoint that cannot list its models
    is given the benefit of the doubt: the probe decides."""
    if target.needs_key and keys.key_source(target.name) is None:
        raise UserError(
            f"endpoint {target.name!r} has no key yet: run `benchwarmers endpoint key set {target.name}` "
            f"(or set {keys.env_var_name(target.name)}) first"
        )
    listed = await retirement.endpoint_lists(rt.outbound, target)
    if listed is None or served in listed:
        return
    close = difflib.get_close_matches(served, sorted(listed), n=5, cutoff=0.5)
    some = close or sorted(listed)[:5]
    label = "close ids it serves" if close else f"it serves {len(listed)}, e.g."
    raise UserError(
        f"{target.name} does not serve {served!r} ({label}: {', '.join(some) or 'none'}); "
        "fix the id, or add --keep to register it anyway"
    )


def url_hint(target: registry.EndpointView) -> str:
    """The usual cause of "Not Found" from an OpenAI-compatible endpoint."""
    if target.api == "openai" and not target.base_url.rstrip("/").endswith("/v1"):
        return (
            f"; OpenAI-compatible base URLs usually end in /v1 ({target.base_url}/v1?): "
            f"`benchwarmers endpoint remove {target.name}` and add it again with that URL"
        )
    return ""


async def _follow(rt: Runtime, item_id: int, show: onboarding.Progress) -> schema.OnboardingItem:
    """Another process (the server) claimed the item: follow it in the store."""
    while True:
        async with rt.store.read() as session:
            item = await session.get(schema.OnboardingItem, item_id)
        assert item is not None
        show(item_id, item.step, item.progress)
        if item.state in ("done", "failed"):
            return item
        await asyncio.sleep(POLL_SECONDS)


def probe(
    alias: Annotated[
        str | None, typer.Argument(help="One model; without it, the daily pass over the bench.")
    ] = None,
) -> None:
    """Probe now: one-word health check, a failure confirmed once before retiring."""

    async def work(rt: Runtime) -> tuple[retirement.HealthReport, list[schema.Probe]]:
        caller = scheduler.bench_jobs(rt).caller
        if alias:
            report = await retirement.probe_now(caller, rt.store, rt.outbound, alias)
        else:
            report = await retirement.daily_health(caller, rt.store, rt.outbound, scheduler.now_utc())
        latest = [(await probes.probe_history(rt.store, a, limit=1))[0] for a in report.probed]
        return report, latest

    report, latest = with_runtime(work)
    if not report.probed:
        console.print("Nothing to probe: no available or unavailable models that are not ad hoc.")
        return
    table = Table("alias", "probe", "answered", "seconds", "answer / error")
    for row in latest:
        table.add_row(
            escape(row.alias),
            row.kind,
            "[green]yes[/]" if row.answered else "[red]no[/]",
            f"{row.seconds:.2f}",
            escape((row.answer or row.error)[:60]),
        )
    console.print(table)
    console.print(report.summary())
