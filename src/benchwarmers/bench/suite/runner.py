"""Running the suite against one model: paced, checked, recorded.

Every task is one call through the caller (kind "suite"), so it is in the
call log, counts against the endpoint's limits and lands in the usage
ledger. Calls are paced: a minimum gap between one call's start and the
next, never a burst, because the suite runs on the user's free quotas
beside their real work. Each result (passed, confidently wrong, the
answer, what the checker said) is kept in `suite_results`, one row per
model, task and run; the decisions read the latest per task.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlparse

from sqlalchemy import func, select

from benchwarmers.bench.suite.checkers import CheckResult, cannot_run, check
from benchwarmers.bench.suite.tasks import Task, load_tasks
from benchwarmers.calls.caller import CallContext, Caller
from benchwarmers.config import tunables
from benchwarmers.errors import UserError
from benchwarmers.limits.quotas import quotas_view
from benchwarmers.reasoning import answer_of
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store
from benchwarmers.store.models import get_model
from benchwarmers.store.schema import SuiteResult
from benchwarmers.store.views import ModelView
from benchwarmers.types import Image, Message, Request, Sampling, Text

# The gap between two suite calls' starts, seconds, unless the caller says.
DEFAULT_GAP = 3.0
TASK_TIMEOUT = tunables.SUITE_TASK_TIMEOUT.value
ANSWER_KEPT = 20_000
SYSTEM = (
    "You are being evaluated on a task. Answer it directly. On the last line, on its own, "
    "state how sure you are that your answer is right, as 'Confidence: N%'."
)

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class TaskResult:
    task: str
    shape: str
    call: str
    passed: bool
    confidently_wrong: bool
    seconds: float
    detail: str


@dataclass(frozen=True, slots=True)
class SuiteRun:
    run_id: str
    alias: str
    results: tuple[TaskResult, ...] = field(default=())
    skipped: tuple[tuple[str, str], ...] = field(default=())  # (task, why it cannot run here)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def confidently_wrong(self) -> int:
        return sum(r.confidently_wrong for r in self.results)

    def summary(self) -> str:
        return (
            f"{self.alias}: {self.passed}/{len(self.results)} passed, "
            f"{self.confidently_wrong} confidently wrong"
            + (f", {len(self.skipped)} skipped ({self.skipped[0][1]})" if self.skipped else "")
        )


def fits(task: Task, role: str, vision: bool) -> bool:
    """Which tasks a model takes: image tasks only if it reads images; a
    vision-role model (weak at text by definition) only image tasks."""
    if role == "vision":
        return task.image is not None or task.shape == "vision"
    return vision or (task.image is None and task.shape != "vision")


async def tasks_for(runtime: Runtime, alias: str) -> list[Task]:
    """The tasks this model takes that can be checked here (code tasks need
    the sandbox: without it they are left out, never run unisolated)."""
    model = await get_model(runtime.store, alias)
    if model.role == "image":
        raise UserError(f"{alias} makes images; the suite has no tasks for it")
    return [
        t for t in load_tasks(runtime.home) if fits(t, model.role, model.vision) and cannot_run(t) is None
    ]


async def next_tasks_for(runtime: Runtime, alias: str, n: int) -> list[Task]:
    """Up to `n` tasks for this model: those it has never done first (in
    suite order), then those whose last result is oldest. Empty when it has
    done them all at least once, so a Quick model's passes stop when its
    suite is complete."""
    candidates = await tasks_for(runtime, alias)
    async with runtime.store.read() as session:
        done = set(
            (
                await session.scalars(select(SuiteResult.task).where(SuiteResult.alias == alias).distinct())
            ).all()
        )
    return [t for t in candidates if t.id not in done][:n]


async def paced_gap(store: Store, model: ModelView) -> float:
    """Seconds between suite calls to `model`, by what its endpoint allows:
    the tightest requests-a-minute limit known for it (set, or learned from
    the provider) spread evenly over the minute; no gap for a server on this
    machine with no such limit (no quota to spare); else `DEFAULT_GAP`."""
    view = await quotas_view(store)
    per_minute = [
        q.limit
        for q in view.quotas
        if q.endpoint == model.endpoint.name
        and q.served in ("", model.served)
        and (q.unit, q.window) == ("requests", "minute")
        and q.limit
    ]
    if per_minute:
        return 60.0 / min(per_minute)
    return 0.0 if _on_this_machine(model.endpoint.base_url) else DEFAULT_GAP


def _on_this_machine(base_url: str) -> bool:
    host = (urlparse(base_url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_suite(
    runtime: Runtime,
    alias: str,
    tasks: Sequence[Task] | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    *,
    gap: float | None = None,
    caller: Caller | None = None,
) -> SuiteRun:
    """Run `tasks` (default: every task that fits the model, those never run
    first) against `alias`, `limit` at most, one at a time, `gap` seconds
    apart at least (default: `paced_gap`); `progress(done, total)` after each."""
    model = await get_model(runtime.store, alias)
    if gap is None:
        gap = await paced_gap(runtime.store, model)
    if tasks is None:
        chosen = await _unrun_first(runtime, alias, await tasks_for(runtime, alias))
    else:
        chosen = list(tasks)
    skipped = tuple((t.id, reason) for t in chosen if (reason := cannot_run(t)) is not None)
    chosen = [t for t in chosen if cannot_run(t) is None]
    if limit is not None:
        chosen = chosen[: max(0, limit)]
    caller = caller or Caller(runtime)
    run_id = uuid.uuid4().hex[:16]
    results: list[TaskResult] = []
    last_start: float | None = None
    if progress:
        progress(0, len(chosen))
    for task in chosen:
        if last_start is not None:
            await asyncio.sleep(max(0.0, gap - (time.monotonic() - last_start)))
        last_start = time.monotonic()
        result = await caller.call(
            model,
            _request(task),
            kind="suite",
            timeout=TASK_TIMEOUT,
            context=CallContext(task=f"suite {task.id} ({task.shape})", shape=task.shape),
        )
        if result.answered:
            verdict = await check(task, answer_of(result.reply.text))  # graded past any think block
        else:
            verdict = CheckResult(False, f"{result.status}: {result.error}".strip(": "))
        outcome = TaskResult(
            task.id,
            task.shape,
            result.call,
            verdict.passed,
            verdict.confidently_wrong,
            result.seconds,
            verdict.detail,
        )
        results.append(outcome)
        await _record(runtime, run_id, alias, outcome, result.reply.text)
        if progress:
            progress(len(results), len(chosen))
    return SuiteRun(run_id, alias, tuple(results), skipped)


def _request(task: Task) -> Request:
    parts: list[Text | Image] = [Text(task.prompt)]
    if task.image is not None:
        media, data = task.image_base64()
        parts.insert(0, Image(media, data))
    system = SYSTEM + ("\n\n" + task.system if task.system else "")
    sampling = Sampling(temperature=0.0, max_tokens=task.max_tokens)
    return Request(messages=(Message("user", tuple(parts)),), system=system, sampling=sampling)


async def _unrun_first(runtime: Runtime, alias: str, tasks: list[Task]) -> list[Task]:
    async with runtime.store.read() as session:
        rows = await session.execute(
            select(SuiteResult.task, func.max(SuiteResult.at))
            .where(SuiteResult.alias == alias)
            .group_by(SuiteResult.task)
        )
        last = {task: at.timestamp() if at else 0.0 for task, at in rows.all()}
    return sorted(tasks, key=lambda t: (t.id in last, last.get(t.id, 0.0)))


async def _record(runtime: Runtime, run_id: str, alias: str, outcome: TaskResult, answer: str) -> None:
    async with runtime.store.write() as session:
        session.add(
            SuiteResult(
                run_id=run_id,
                alias=alias,
                task=outcome.task,
                shape=outcome.shape,
                call_id=outcome.call,
                at=datetime.now(UTC),
                passed=outcome.passed,
                confidently_wrong=outcome.confidently_wrong,
                seconds=outcome.seconds,
                answer=answer[:ANSWER_KEPT],
                detail=outcome.detail,
            )
        )


async def suite_summary(runtime: Runtime, alias: str) -> dict[str, dict[str, int]]:
    """Per shape, the latest result of each task: passed, total, confidently wrong."""
    async with runtime.store.read() as session:
        rows = (await session.scalars(select(SuiteResult).where(SuiteResult.alias == alias))).all()
    latest: dict[str, SuiteResult] = {}
    for row in rows:
        if row.task not in latest or row.at >= latest[row.task].at:
            latest[row.task] = row
    out: dict[str, dict[str, int]] = {}
    for row in latest.values():
        shape = out.setdefault(row.shape, {"passed": 0, "total": 0, "confidently_wrong": 0})
        shape["total"] += 1
        shape["passed"] += row.passed
        shape["confidently_wrong"] += row.confidently_wrong
    return out
