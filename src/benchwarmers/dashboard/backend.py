"""The dashboard's one seam onto the bench: everything its pages read and change.

Pages and JSON routes (`pages.py`, `api.py`) call only this class, so the
dashboard has one place that knows where each rule lives. The rules
themselves are never restated here: a name is checked by `store.registry`,
a key by `config.keys`, a setting by `config.settings_view`, a verdict by
the core API (`core.Panels`), onboarding by `bench.onboarding`. What
this module adds is the attribution of a refusal to a form field
(`fields.field`) and the order that leaves nothing half-saved (every check
first, then the writes).

    backend = Backend(runtime, bench_services)     # api.backend_of(request)
    await backend.add_endpoint({"name": "hub", "api": "openai", "base_url": ..., "key": ...})
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy import desc, func, select

from benchwarmers.bench import discover, onboarding, probes, retirement, scheduler
from benchwarmers.bench.decisions import model_report
from benchwarmers.bench.suite.runner import suite_summary
from benchwarmers.calls import verdicts
from benchwarmers.config import keys
from benchwarmers.core import Panels, collection_entry
from benchwarmers.core.settings import LOGIN_PASSWORD, change_setting, setting_rows
from benchwarmers.dashboard.fields import FieldError, field, names, number, text
from benchwarmers.errors import ProviderError, StoreError, UserError
from benchwarmers.formats.panel_text import merged_object, seat_object
from benchwarmers.identity.keys import KeyInfo, create_key, list_keys, revoke_key
from benchwarmers.limits import quotas
from benchwarmers.limits.ledger import month_of, month_start, next_month
from benchwarmers.providers.base import Target, adapter_for
from benchwarmers.store import registry, schema
from benchwarmers.store.settings import DISCOVER_DISMISSED, LOGIN_USER, SCHEDULER
from benchwarmers.store.times import iso_utc
from benchwarmers.types import (
    Ask,
    AskMode,
    MergeDone,
    PanelDone,
    PanelEvent,
    PanelStarted,
    Request,
    SeatDone,
    user,
)

if TYPE_CHECKING:
    from benchwarmers.core import BenchServices
    from benchwarmers.runtime import Runtime

# Where a local Ollama answers unless `OLLAMA_HOST` (Ollama's own variable) says otherwise.
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
OLLAMA_HOST_ENV = "OLLAMA_HOST"
PROBE_TIMEOUT = 1.5  # a local server answers at once or is not there
LIST_TIMEOUT = 15.0
RECENT_ASKS = 20
SEAT_KINDS = ("seat", "merge")


@dataclass(frozen=True, slots=True)
class EndpointRow:
    name: str
    api: str
    base_url: str
    key: str  # where the key comes from: "env", "keys.json", "missing" or "not needed"
    models: int
    simulated: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "api": self.api,
            "base_url": self.base_url,
            "key": self.key,
            "models": self.models,
            "simulated": self.simulated,
        }


class Backend:
    """The bench as the dashboard's owner sees it (the dashboard's login, not
    a gateway key, decides who that is)."""

    def __init__(self, runtime: Runtime, bench: BenchServices | None) -> None:
        self.runtime = runtime
        self.store = runtime.store
        self.core = Panels(runtime)
        self._bench = bench

    @property
    def bench(self) -> BenchServices:
        if self._bench is None:
            raise StoreError("the bench's services are not running in this server")
        return self._bench

    # ------------------------------------------------------------ endpoints

    async def endpoints(self) -> list[EndpointRow]:
        counts = await registry.count_models(self.store)
        return [
            EndpointRow(e.name, e.api, e.base_url, key_label(e), counts.get(e.name, 0), e.simulated)
            for e in await registry.list_endpoints(self.store)
        ]

    async def add_endpoint(self, body: dict[str, Any]) -> EndpointRow:
        """Check every field, then register the endpoint, then write its key;
        a key that cannot be written takes the endpoint back out."""
        name = text(body, "name", required=True, label="the name")
        api = text(body, "api") or "openai"
        base_url = text(body, "base_url", required=True, label="the base URL")
        key = text(body, "key")
        keyless = bool(body.get("keyless")) or api == "ollama"
        with field("name"):
            registry.check_endpoint_name(name)
        with field("api"):
            registry.check_api(api)
        with field("base_url"):
            base_url = registry.check_base_url(base_url)
        if key:
            with field("key"):
                keys.check_key(key)
        elif not keyless and keys.key_source(name) is None:
            raise FieldError("key", "paste the endpoint's key (or tick 'needs no key' for a local server)")
        with field("name"):
            added = await registry.add_endpoint(self.store, name, base_url, api, needs_key=not keyless)
        if key:
            try:
                keys.set_key(name, key)
            except (UserError, StoreError) as exc:
                await registry.remove_endpoint(self.store, name)
                raise FieldError("key", str(exc)) from None
        return EndpointRow(added.name, added.api, added.base_url, key_label(added), 0, added.simulated)

    async def set_endpoint_key(self, name: str, body: dict[str, Any]) -> EndpointRow:
        endpoint = await registry.get_endpoint(self.store, name)
        key = text(body, "key", required=True, label="the key")
        with field("key"):
            keys.set_key(endpoint.name, key)
        return next(e for e in await self.endpoints() if e.name == endpoint.name)

    async def remove_endpoint(self, name: str) -> None:
        await registry.remove_endpoint(self.store, name)

    async def signed_in(self, name: str, base_url: str, api: str, key: str) -> None:
        """A provider's sign-in handed back `key`: stored like a pasted one,
        the endpoint added when it is not there yet."""
        keys.check_key(key)
        if name not in {e.name for e in await registry.list_endpoints(self.store)}:
            await registry.add_endpoint(self.store, name, base_url, api)
        keys.set_key(name, key)

    async def endpoint_models(self, name: str) -> dict[str, Any]:
        """What the endpoint lists now (a connection test), each marked with
        the alias it has on the bench, if any."""
        endpoint = await registry.get_endpoint(self.store, name)
        target = Target(
            endpoint=endpoint.name,
            api=endpoint.api,
            base_url=endpoint.base_url,
            served="",
            key=(keys.endpoint_key(endpoint.name) or "") if endpoint.needs_key else "",
        )
        try:
            listed = await adapter_for(endpoint.api, self.runtime.outbound).list_models(target)
        except ProviderError as exc:
            return {"endpoint": name, "ok": False, "error": str(exc), "models": []}
        on_bench = {m.served: m.alias for m in await registry.list_models(self.store, endpoint=name)}
        return {
            "endpoint": name,
            "ok": True,
            "error": "",
            "models": [{"served": s, "alias": on_bench.get(s, "")} for s in sorted(set(listed))],
        }

    async def local_ollama(self) -> dict[str, Any] | None:
        """A local Ollama answering, offered when no endpoint points at it yet."""
        base = os.environ.get(OLLAMA_HOST_ENV, "").strip() or OLLAMA_DEFAULT
        if "://" not in base:
            base = "http://" + base
        base = base.rstrip("/")
        if any(e.base_url.rstrip("/") == base for e in await registry.list_endpoints(self.store)):
            return None
        try:
            reply = await self.runtime.http.get(base + "/api/version", timeout=PROBE_TIMEOUT)
            version = reply.json().get("version", "") if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return None if version is None else {"base_url": base, "version": str(version)}

    # --------------------------------------------------------------- models

    async def models(self) -> list[dict[str, Any]]:
        """Every model with its last probe, its last measured speed, and its
        record where it is judged most (the decisions' own figures)."""
        rows = []
        for m in await registry.list_models(self.store):
            history = await probes.probe_history(self.store, m.alias, limit=20)
            timed = next((p for p in history if p.tokens_per_second), None)
            standing = max(await model_report(self.store, m.alias), key=lambda r: r["judged"], default=None)
            rows.append(
                {
                    **model_json(m),
                    "last_probe": probe_json(history[0]) if history else None,
                    "speed": probe_json(timed) if timed else None,
                    "record": standing,
                }
            )
        return rows

    async def model(self, alias: str) -> dict[str, Any]:
        m = await registry.get_model(self.store, alias)
        return {
            "model": model_json(m),
            "probes": [probe_json(p) for p in await probes.probe_history(self.store, alias, limit=20)],
            "record": await model_report(self.store, alias),
            "suite": await suite_summary(self.runtime, alias),
        }

    async def retire(self, alias: str) -> dict[str, Any]:
        return model_json(await registry.retire(self.store, alias, "retired from the dashboard"))

    async def restore(self, alias: str) -> dict[str, Any]:
        return model_json(await registry.restore(self.store, alias))

    async def set_role(self, alias: str, body: dict[str, Any]) -> dict[str, Any]:
        role = text(body, "role", required=True, label="the role")
        with field("role"):
            return model_json(await registry.set_role(self.store, alias, role))

    async def probe(self, alias: str) -> dict[str, Any]:
        jobs = self.bench.jobs
        await retirement.probe_now(jobs.caller, self.store, self.runtime.outbound, alias)
        return model_json(await registry.get_model(self.store, alias))

    async def alerts(self) -> list[dict[str, Any]]:
        query = select(schema.Alert).where(schema.Alert.dismissed.is_(False)).order_by(desc(schema.Alert.at))
        async with self.store.read() as session:
            rows = (await session.scalars(query.limit(50))).all()
        return [{"id": a.id, "kind": a.kind, "subject": a.subject, "message": a.message} for a in rows]

    # ----------------------------------------------------------- onboarding

    async def discover(self) -> dict[str, Any]:
        hidden_ids: list[str] = await self.runtime.settings.get(DISCOVER_DISMISSED)
        dismissed = set(hidden_ids)
        shown: list[dict[str, Any]] = []
        hidden: list[dict[str, Any]] = []
        for entry in await discover.discover(self.store):
            row = entry.as_dict()
            row["id"] = f"{entry.provider}/{entry.model}"
            (hidden if row["id"] in dismissed else shown).append(row)
        return {"models": shown, "dismissed": hidden}

    async def dismiss(self, body: dict[str, Any], *, undo: bool = False) -> list[str]:
        entry = text(body, "id", required=True, label="the model")
        dismissed = await self.runtime.settings.get(DISCOVER_DISMISSED)
        dismissed = [d for d in dismissed if d != entry] if undo else [*dismissed, entry]
        return await self.runtime.settings.set(DISCOVER_DISMISSED, dismissed)

    async def onboard(self, body: dict[str, Any]) -> list[int]:
        endpoint = text(body, "endpoint", required=True, label="the endpoint")
        mode = text(body, "mode") or "full"
        served = names(body, "models")
        if mode not in onboarding.MODES:
            raise FieldError("mode", f"the mode must be one of {', '.join(onboarding.MODES)}")
        if not served:
            raise FieldError("models", "tick at least one model")
        with field("endpoint"):
            await registry.get_endpoint(self.store, endpoint)
        requests = [onboarding.OnboardRequest(endpoint=endpoint, served=s, mode=mode) for s in served]
        with field("models"):
            ids = await onboarding.enqueue(self.store, requests)
        self.bench.worker.wake()
        return ids

    async def queue(self) -> dict[str, Any]:
        """The queue's unfinished items and the last few finished ones."""
        items = [onboarding.item_view(i) for i in await onboarding.queue_items(self.store, limit=30)]
        running = next((i for i in items if i["state"] == "running"), None)
        waiting = sum(i["state"] == "queued" for i in items)
        return {"items": items, "running": running, "queued": waiting}

    # ---------------------------------------------------------- collections

    async def collections(self) -> list[dict[str, Any]]:
        return [collection_json(c) for c in await self.core.collections()]

    async def save_collection(self, body: dict[str, Any], *, existing: str = "") -> dict[str, Any]:
        """Create (or, with `existing`, change) a collection from its form."""
        name = existing or text(body, "name", required=True, label="the name")
        members = names(body, "members")
        reply = text(body, "reply") or "panel"
        options: dict[str, Any] = {
            "reply": reply,
            "merger": text(body, "merger"),
            "purpose": text(body, "purpose"),
            "system_prompt": text(body, "system_prompt"),
        }
        for key, label in (("seats", "seats"), ("explorer_seats", "explorer seats")):
            value = number(body, key, label=label)
            if value is not None:
                options[key] = int(value)
        timeout = number(body, "seat_timeout", label="the seat timeout", whole=False)
        if timeout is not None:
            if timeout <= 0:
                raise FieldError("seat_timeout", "the seat timeout must be above 0 seconds")
            options["seat_timeout"] = timeout
        if not existing:
            with field("name"):
                registry.check_collection_name(name)
        if not members:
            raise FieldError("members", "tick at least one member")
        known = {m.alias for m in await registry.list_models(self.store)}
        unknown = [m for m in members if m not in known]
        if unknown:
            raise FieldError("members", f"not on the bench: {', '.join(unknown)}")
        if options["merger"] and options["merger"] not in known:
            raise FieldError("merger", f"{options['merger']!r} is not on the bench")
        if reply not in ("panel", "merged"):
            raise FieldError("reply", "the reply is panel or merged")
        with field("name"):
            if existing:
                saved = await registry.update_collection(self.store, name, members=members, **options)
            else:
                saved = await registry.add_collection(self.store, name, members, **options)
        return collection_json(saved)

    async def remove_collection(self, name: str) -> None:
        await registry.remove_collection(self.store, name)

    async def recent_asks(self, collection: str = "", limit: int = RECENT_ASKS) -> list[dict[str, Any]]:
        """The gateway's latest asks with their seats side by side: call ids,
        aliases, status, time, tokens and verdicts (the log keeps no text)."""
        where = [schema.Call.kind.in_(SEAT_KINDS), schema.Call.ask_id != ""]
        if collection:
            where.append(schema.Call.collection == collection)
        latest = (
            select(schema.Call.ask_id, func.max(schema.Call.at).label("at"))
            .where(*where)
            .group_by(schema.Call.ask_id)
            .order_by(desc("at"))
            .limit(limit)
        )
        async with self.store.read() as session:
            asks = (await session.execute(latest)).all()
            ask_ids = [row.ask_id for row in asks]
            rows = (
                await session.execute(
                    select(schema.Call, schema.Verdict)
                    .outerjoin(schema.Verdict, schema.Verdict.call_id == schema.Call.id)
                    .where(schema.Call.ask_id.in_(ask_ids))
                    .order_by(schema.Call.at)
                )
            ).all()
        grouped: dict[str, dict[str, Any]] = {}
        for call, verdict in rows:
            ask = grouped.setdefault(
                call.ask_id,
                {"ask": call.ask_id, "collection": call.collection, "shape": call.shape, "seats": []},
            )
            ask["at"] = iso_utc(call.at)
            ask["seats"].append(
                {
                    "call": call.id,
                    "kind": call.kind,
                    "seat": call.seat or ("merged" if call.kind == "merge" else ""),
                    "alias": call.alias,
                    "status": call.status,
                    "seconds": round(call.seconds, 2),
                    "tokens_in": call.tokens_in,
                    "tokens_out": call.tokens_out,
                    "error": call.error,
                    "explorer": call.explorer,
                    "verdict": None
                    if verdict is None
                    else {"useful": verdict.useful, "note": verdict.note, "at": iso_utc(verdict.at)},
                }
            )
        for ask in grouped.values():
            ask["seats"].sort(key=_seat_order)
        return [grouped[a] for a in ask_ids if a in grouped]

    async def ask(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The playground: the panel's events as small JSON objects, in the
        order the engine sends them (started, each seat, the merge, done).
        Checks come before the first event, so a refusal is a plain 4xx."""
        collection = text(body, "collection", required=True, label="the collection")
        prompt = text(body, "prompt", required=True, label="the question")
        merged = bool(body.get("merged"))
        with field("collection"):
            found = await self.core.collection(collection.removeprefix("bench/"))
        mode: AskMode = "merged" if merged or found.reply == "merged" else "panel"
        the_ask = Ask(found.name, mode, Request(messages=(user(prompt),)), stream=True)
        events = await self.core.panel(the_ask)

        async def stream() -> AsyncGenerator[dict[str, Any], None]:
            async with aclosing(events):
                async for event in events:
                    yield event_json(event)

        return stream()

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        call, useful, note = verdicts.check_verdict_body(body)
        recorded = await self.core.verdict({"call": call, "useful": useful, "note": note})
        logged = await self.record(recorded.call)
        return {"recorded": recorded.as_json(), "record": logged}

    async def record(self, call: str) -> dict[str, Any] | None:
        """The record of the collection a call was a seat of (None for other calls)."""
        async with self.store.read() as session:
            row = await session.get(schema.Call, call)
        if row is None or not row.collection:
            return None
        return await self.core.record(row.collection)

    async def collection_record(self, name: str) -> dict[str, Any]:
        return await self.core.record(name)

    # --------------------------------------------------------------- quotas

    async def quotas(self) -> dict[str, Any]:
        view = quotas.as_json(await quotas.quotas_view(self.store))
        view["days"] = await self.usage_by_day()
        return view

    async def usage_by_day(self, now: datetime | None = None) -> dict[str, Any]:
        """Tokens per endpoint per day of this month, for the chart."""
        now = now or datetime.now(UTC)
        start, end = month_start(now), next_month(now)
        day = func.date(schema.Call.at)
        query = (
            select(
                schema.Call.endpoint,
                day.label("day"),
                func.sum(schema.Call.tokens_in + schema.Call.tokens_out),
                func.count(),
            )
            .where(schema.Call.at >= start, schema.Call.at < end, schema.Call.endpoint != "")
            .group_by(schema.Call.endpoint, day)
        )
        async with self.store.read() as session:
            rows = (await session.execute(query)).all()
        series: dict[str, dict[str, dict[str, int]]] = {}
        for endpoint, when, tokens, requests in rows:
            series.setdefault(endpoint, {})[str(when)[:10]] = {
                "tokens": int(tokens or 0),
                "requests": int(requests),
            }
        return {"month": month_of(now), "days_in_month": (end - start).days, "series": series}

    # ------------------------------------------------------------- settings

    async def settings(self) -> dict[str, Any]:
        rows = {r.name: r.value for r in await setting_rows(self.runtime.settings)}
        return {
            "allowed_hosts": rows["allowed_hosts"],
            "require_key": rows["require_key"],
            "login_user": rows[LOGIN_USER.name],
            "login_password_set": rows[LOGIN_PASSWORD],
        }

    async def change(self, name: str, value: Any) -> None:
        """One setting from its form (whose input is named `value`)."""
        with field("value"):
            await change_setting(self.runtime.settings, name, value)

    async def scheduler(self) -> dict[str, Any]:
        bench = self.bench
        jobs = await scheduler.job_status(self.store)
        next_runs = bench.clock.next_runs()
        for job in jobs:
            job["next_run_at"] = next_runs.get(job["job"])
        return {
            "enabled": await self.runtime.settings.get(SCHEDULER),
            "active": bench.clock.active,
            "jobs": jobs,
        }

    async def switch_scheduler(self, enabled: bool) -> dict[str, Any]:
        await self.bench.clock.set_enabled(enabled)
        return await self.scheduler()

    async def gateway_keys(self) -> list[dict[str, Any]]:
        return [key_json(k) for k in await list_keys(self.store)]

    async def create_gateway_key(self, body: dict[str, Any]) -> dict[str, Any]:
        name = text(body, "name", required=True, label="the key's name")
        scope = names(body, "collections")
        rate = number(body, "rate", label="the rate")
        if rate is not None and rate < 1:
            raise FieldError("rate", "the rate is at least 1 request per minute (empty: no limit)")
        known = {c.name for c in await registry.list_collections(self.store)}
        unknown = [c for c in scope if c.removeprefix("bench/") not in known]
        if unknown:
            raise FieldError("collections", f"no collection {', '.join(unknown)}")
        with field("name"):
            info, secret = await create_key(
                self.store, name, collections=tuple(scope), requests_per_minute=int(rate) if rate else None
            )
        return {"key": key_json(info), "secret": secret}

    async def revoke_gateway_key(self, name: str) -> dict[str, Any]:
        return key_json(await revoke_key(self.store, name))

    async def has_endpoints(self) -> bool:
        return bool(await registry.list_endpoints(self.store))


# ---------------------------------------------------------------- JSON views


def _seat_order(seat: dict[str, Any]) -> tuple[bool, int, str]:
    """Seats in seat order ("Seat 2" before "Seat 10"), the merge last."""
    digits = "".join(c for c in seat["seat"] if c.isdigit())
    return seat["kind"] == "merge", int(digits) if digits else 0, seat["seat"]


def key_label(endpoint: registry.EndpointView) -> str:
    if not endpoint.needs_key:
        return "not needed"
    return keys.key_source(endpoint.name) or "missing"


def model_json(m: registry.ModelView) -> dict[str, Any]:
    return {
        "alias": m.alias,
        "endpoint": m.endpoint.name,
        "served": m.served,
        "role": m.role,
        "status": m.status,
        "status_reason": m.status_reason,
        "ad_hoc": m.ad_hoc,
        "context_window": m.context_window,
        "vision": m.vision,
        "tools": m.tools,
        "price_in": m.price_in,
        "price_out": m.price_out,
        "resting_until": iso_utc(m.resting_until) if m.resting_until else None,
    }


def probe_json(p: schema.Probe) -> dict[str, Any]:
    return {
        "at": iso_utc(p.at),
        "kind": p.kind,
        "name": p.name,
        "answered": p.answered,
        "passed": p.ok,
        "seconds": round(p.seconds, 2),
        "first_byte_seconds": p.first_byte_seconds,
        "tokens_per_second": p.tokens_per_second,
        "error": p.error,
    }


def collection_json(c: registry.CollectionView) -> dict[str, Any]:
    entry = collection_entry(c)
    return {
        "name": c.name,
        "model": entry["id"],
        "members": list(c.members),
        "seats": c.seats,
        "explorer_seats": c.explorer_seats,
        "reply": c.reply,
        "merger": c.merger,
        "purpose": c.purpose,
        "system_prompt": c.system_prompt,
        "seat_timeout": c.seat_timeout,
    }


def key_json(k: KeyInfo) -> dict[str, Any]:
    return {
        "name": k.name,
        "prefix": k.prefix,
        "collections": list(k.collections),
        "rate": k.requests_per_minute,
        "created_at": iso_utc(k.created_at),
        "revoked_at": iso_utc(k.revoked_at) if k.revoked_at else None,
        "active": k.active,
    }


def event_json(event: PanelEvent) -> dict[str, Any]:
    if isinstance(event, PanelStarted):
        return {
            "event": "started",
            "collection": event.collection,
            "shape": event.shape,
            "seats": [{"seat": s, "alias": a} for s, a in event.seats],
            "left_off": [{"alias": x.alias, "reason": x.reason} for x in event.left_off],
            "merged": event.merged,
        }
    if isinstance(event, SeatDone):
        return {"event": "seat", "seat": seat_object(event.seat)}
    if isinstance(event, MergeDone):
        return {"event": "merged", "merged": merged_object(event.merged)}
    if isinstance(event, PanelDone):
        return {"event": "done", "shape": event.reply.shape}
    raise TypeError(f"unknown panel event {type(event).__name__}")
