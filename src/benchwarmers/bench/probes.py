"""Probes: short calls that tell whether a model answers, and how fast.

Onboarding asks four short things, each testing a different basic skill a
panel member needs (say one word; add two numbers; write a JSON object;
follow a format instruction). The daily probe is one word per model, the
cheapest call that proves a model still answers. The weekly speed probe
streams a short and a long prompt to measure time to first token and tokens
per second. Every probe goes through the caller (so it is limited, logged
and counted) and lands in `probes` with its answer: our prompts, our
answers, kept as evidence for whoever wonders why a model was benched.

"Answered" and "passed" differ on purpose: a model that replies but gets the
sum wrong is reachable (it stays on the bench, its record will show it);
only a model that does not reply at all is unavailable. A call that never
went out (our own limits refused it, or every outbound connection was busy:
`ProviderBusy`) is no evidence either way: `evidence` is false on it, and
health never benches a model on it. Both facts are kept
per probe (`answered`, and `ok` for answered and passed): health, retirement
and the decisions' health term read `answered`; the checks' results are a
weak quality signal beside the suite.

A rate limit is a third thing, `limited`: a 429, or our limiter refusing
the call, says the model is resting, not that it stopped answering. No
probe waits on the limiter inside its call (`limit_wait=0`): a wait could
eat the probe's time and end as a timeout, which would read as silence.
Health, retirement and onboarding skip limited probes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchwarmers.calls.caller import CallContext, Caller, CallResult
from benchwarmers.config import tunables
from benchwarmers.errors import LimitExceeded, ProviderBusy
from benchwarmers.reasoning import answer_of
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.views import ModelView
from benchwarmers.types import NOT_SERVED, CallKind, Request, Sampling, user

PROBE_TIMEOUT = tunables.PROBE_TIMEOUT.value
# An onboarding probe stopped by a rate limit that frees within this long waits for it.
ONBOARD_PAUSE_MAX = 60.0
SPEED_TIMEOUT = tunables.SPEED_TIMEOUT.value


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    name: str
    prompt: str
    check: Callable[[str], bool]
    max_tokens: int = 64


def _one_word(answer: str) -> bool:
    words = re.findall(r"[A-Za-z]+", answer)
    return len(words) == 1


def _sum(answer: str) -> bool:
    return re.findall(r"-?\d+", answer) == ["42"]


def _json_object(answer: str) -> bool:
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", answer.strip())
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("name") == "bench" and value.get("count") == 3


def _format(answer: str) -> bool:
    return re.fullmatch(r"ANSWER:\s*Paris\.?", answer.strip()) is not None


ONBOARD_PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec(
        "word", "Reply with exactly one word, nothing else: the colour of a clear daytime sky.", _one_word
    ),
    ProbeSpec("sum", "What is 17 + 25? Reply with the number only.", _sum),
    ProbeSpec(
        "json",
        'Reply with only a JSON object, no prose and no code fence: {"name": "bench", "count": 3} '
        "with the same keys and values.",
        _json_object,
    ),
    ProbeSpec(
        "format",
        "Answer in exactly this format and nothing else: ANSWER: <the capital of France>",
        _format,
    ),
)
DAILY_PROBE = ProbeSpec(
    "word", "Reply with one word: ready.", lambda answer: bool(answer.strip()), max_tokens=16
)
SPEED_PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec("short", "Say hello in one short sentence.", lambda a: bool(a.strip()), max_tokens=64),
    ProbeSpec(
        "long",
        "Write about 300 words on the history of the bicycle, in plain prose.",
        lambda a: bool(a.strip()),
        max_tokens=600,
    ),
)


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    name: str
    call: str
    answered: bool
    passed: bool
    seconds: float
    answer: str
    error: str
    first_byte_seconds: float | None = None
    tokens_per_second: float | None = None
    limited: bool = False
    # When limited: the Unix time the limit frees, if known.
    frees_at: float | None = None
    # Whether a failure says anything about the model (False when the call never went out).
    evidence: bool = True


async def probe_once(
    caller: Caller,
    store: Store,
    model: ModelView,
    spec: ProbeSpec,
    *,
    probe_kind: str,
    call_kind: CallKind,
    now: datetime,
    stream: bool = False,
    timeout: float | None = None,
    limit_wait: float | None = None,
) -> ProbeOutcome:
    """One probe call, recorded in the call log (by the caller) and in
    `probes` (here) with its answer. `limit_wait` caps the wait on the
    limiter (the caller's default: the probe's timeout)."""
    request = Request(
        messages=(user(spec.prompt),), sampling=Sampling(max_tokens=spec.max_tokens, temperature=0)
    )
    result = await caller.call(
        model,
        request,
        kind=call_kind,
        timeout=timeout or PROBE_TIMEOUT,
        stream=stream,
        context=CallContext(task=f"{probe_kind} probe: {spec.name}"),
        limit_wait=limit_wait,
    )
    outcome = _outcome(spec, result)
    async with store.write() as session:
        session.add(
            schema.Probe(
                alias=model.alias,
                call_id=outcome.call,
                kind=probe_kind,
                name=spec.name,
                at=now,
                answered=outcome.answered,
                limited=outcome.limited,
                ok=outcome.passed,
                seconds=outcome.seconds,
                first_byte_seconds=outcome.first_byte_seconds,
                tokens_per_second=outcome.tokens_per_second,
                answer=outcome.answer,
                error=outcome.error,
            )
        )
    return outcome


# A speed is tokens over the time between the first byte and the last. A
# reply that arrives in one piece (any provider that does not stream) has
# next to no such time, and dividing by it gave 475,180 to 1,009,995 tokens/s:
# below this much generating time no speed is measured.
MIN_GENERATING_SECONDS = 0.2


def _outcome(spec: ProbeSpec, result: CallResult) -> ProbeOutcome:
    answer = result.reply.text
    answered = result.status == "ok"
    tps = None
    if answered and result.first_byte_seconds is not None:
        generating = result.seconds - result.first_byte_seconds
        tokens = result.reply.usage.output_tokens or max(1, len(answer) // 4)
        tps = tokens / generating if generating >= MIN_GENERATING_SECONDS else None
    error = result.error or ("" if answered else f"status {result.status}")
    return ProbeOutcome(
        name=spec.name,
        call=result.call,
        answered=answered,
        passed=answered and spec.check(answer_of(answer)),  # a reasoning model's think block no part of it
        seconds=result.seconds,
        answer=answer,
        error=error,
        first_byte_seconds=result.first_byte_seconds,
        tokens_per_second=tps,
        limited=result.status in NOT_SERVED,
        frees_at=result.frees_at,
        evidence=not isinstance(result.failure, ProviderBusy | LimitExceeded),
    )


async def onboarding_probe(
    caller: Caller,
    store: Store,
    model: ModelView,
    now: datetime,
    progress: Callable[[str, float], None] | None = None,
) -> list[ProbeOutcome]:
    """The four short calls; `progress(step, fraction)` after each.

    No call waits on the limiter (a wait eats the call's own time and ends
    as a timeout, which reads as silence). A probe the rate limit stops is
    tried once more when the limit frees, if that is within
    `ONBOARD_PAUSE_MAX` (the pause is taken between calls, not inside one);
    when it stops a probe again, or frees later, probing stops there: the
    rest would only call into the same wall, and `onboarding.py` rests the
    model and tries it again after the reset."""
    outcomes = []
    for i, spec in enumerate(ONBOARD_PROBES):
        if progress:
            progress(f"probe {i + 1}/{len(ONBOARD_PROBES)}: {spec.name}", i / len(ONBOARD_PROBES))
        outcome = await _onboard_once(caller, store, model, spec, now)
        if outcome.limited and outcome.frees_at is not None:
            pause = outcome.frees_at - time.time()
            if pause <= ONBOARD_PAUSE_MAX:
                if progress:
                    waiting = f"rate limited: waiting {max(pause, 0):.0f}s to try {spec.name} again"
                    progress(waiting, i / len(ONBOARD_PROBES))
                await asyncio.sleep(max(pause, 0.0))
                outcome = await _onboard_once(caller, store, model, spec, now)
        outcomes.append(outcome)
        if outcome.limited:
            break
    return outcomes


async def _onboard_once(
    caller: Caller, store: Store, model: ModelView, spec: ProbeSpec, now: datetime
) -> ProbeOutcome:
    return await probe_once(
        caller, store, model, spec, probe_kind="onboard", call_kind="probe", now=now, limit_wait=0.0
    )


async def daily_probe(caller: Caller, store: Store, model: ModelView, now: datetime) -> ProbeOutcome:
    return await probe_once(
        caller, store, model, DAILY_PROBE, probe_kind="daily", call_kind="probe", now=now, limit_wait=0.0
    )


async def speed_probe(caller: Caller, store: Store, model: ModelView, now: datetime) -> list[ProbeOutcome]:
    """Streamed, so the first token's time is the model's, not the transport's."""
    return [
        await probe_once(
            caller,
            store,
            model,
            spec,
            probe_kind="speed",
            call_kind="speed",
            now=now,
            stream=True,
            timeout=SPEED_TIMEOUT,
        )
        for spec in SPEED_PROBES
    ]


async def confirm_probe(caller: Caller, store: Store, model: ModelView, now: datetime) -> ProbeOutcome:
    """The one confirming call before a retirement, made only if the limiter
    lets it go now (a wait would eat the probe's time and read as silence)."""
    return await probe_once(
        caller, store, model, DAILY_PROBE, probe_kind="confirm", call_kind="confirm", now=now, limit_wait=0.0
    )


async def probe_history(store: Store, alias: str, limit: int = 50) -> list[schema.Probe]:
    async with store.read() as session:
        rows = await session.scalars(
            select(schema.Probe)
            .where(schema.Probe.alias == alias)
            .order_by(schema.Probe.at.desc(), schema.Probe.id.desc())
            .limit(limit)
        )
        return list(rows.all())
