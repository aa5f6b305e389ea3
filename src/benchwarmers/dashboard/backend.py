"""The dashboard's one seam onto the core API: everything its pages read and change.

Pages and JSON routes (`pages.py`, `api.py`) call only this class, and it
calls only `benchwarmers.core` (as the owner: the dashboard's login, not a
gateway key, decides who that is), the same services the CLI, MCP and the
HTTP API use, so no rule is restated here. What this module adds is the
attribution of a refusal to a form field (`fields.field`), the order that
leaves nothing half-saved (every check first, then the writes), and the
JSON the pages read.

    backend = Backend(runtime, bench_services)     # api.backend_of(request)
    await backend.add_endpoint({"name": "hub", "api": "openai", "base_url": ..., "key": ...})
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from benchwarmers.core import (
    BUDGET_PERIODS,
    BUDGET_SCOPES,
    LOGIN_PASSWORD,
    ONBOARDING_MODES,
    OWNER,
    PROMOTIONS,
    BenchServices,
    CollectionView,
    Core,
    EndpointView,
    KeyInfo,
    ModelView,
    OnboardRequest,
    Recorded,
    Runtime,
    budget_json,
    check_collection_name,
    check_endpoint,
    check_endpoint_key,
    collection_entry,
    default_base_url,
    endpoint_key_source,
    environment,
    iso_utc,
    money,
    needs_key_by_default,
    parse_budget_tokens,
    parse_budget_usd,
    probe_json,
    quotas_json,
    set_endpoint_key,
    tunables,
)
from benchwarmers.dashboard.fields import FieldError, field, names, number, text
from benchwarmers.errors import StoreError, UserError
from benchwarmers.formats.bench_json import left_off_json, merged_json, seat_json
from benchwarmers.types import (
    Ask,
    AskMode,
    MergeDone,
    Message,
    PanelDone,
    PanelEvent,
    PanelStarted,
    Request,
    SeatDone,
    SeatText,
    assistant,
    user,
)

# Where a local Ollama answers unless `OLLAMA_HOST` (Ollama's own variable) says otherwise.
OLLAMA_HOST_ENV = environment.OLLAMA_HOST.name
PROBE_TIMEOUT = tunables.LOCAL_PROBE_TIMEOUT.value
DISCOVER_DISMISSED = "discover_dismissed"
QUEUE_SHOWN = 30


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
    """The bench as the dashboard's owner sees it, through the core services."""

    def __init__(self, runtime: Runtime, bench: BenchServices | None) -> None:
        self.runtime = runtime
        self.core = Core(runtime, OWNER, bench)
        self.panels, self.admin, self.ops = self.core.panels, self.core.admin, self.core.ops

    # ------------------------------------------------------------ endpoints

    async def endpoints(self) -> list[EndpointRow]:
        counts = await self.admin.model_counts()
        return [
            EndpointRow(e.name, e.api, e.base_url, key_label(e), counts.get(e.name, 0), e.simulated)
            for e in await self.admin.endpoints()
        ]

    async def add_endpoint(self, body: dict[str, Any]) -> EndpointRow:
        """Check every field, then register the endpoint, then write its key;
        a key that cannot be written takes the endpoint back out."""
        name = text(body, "name", required=True, label="the name")
        api = text(body, "api") or "openai"
        base_url = text(body, "base_url", required=True, label="the base URL")
        key = text(body, "key")
        keyless = bool(body.get("keyless")) or not needs_key_by_default(api)
        with field("name"):
            self.admin.check_allowed()
            check_endpoint(name, "http://x", "openai")
        with field("api"):
            check_endpoint(name, "http://x", api)
        with field("base_url"):
            base_url = check_endpoint(name, base_url, api)
        if key:
            with field("key"):
                check_endpoint_key(key)
        elif not keyless and endpoint_key_source(name) is None:
            raise FieldError("key", "paste the endpoint's key (or tick 'needs no key' for a local server)")
        with field("name"):
            added = await self.admin.add_endpoint(name, base_url, api, needs_key=not keyless)
        if key:
            try:
                set_endpoint_key(name, key)
            except (UserError, StoreError) as exc:
                await self.admin.remove_endpoint(name)
                raise FieldError("key", str(exc)) from None
        return EndpointRow(added.name, added.api, added.base_url, key_label(added), 0, added.simulated)

    async def set_endpoint_key(self, name: str, body: dict[str, Any]) -> EndpointRow:
        endpoint = await self.admin.endpoint(name)
        key = text(body, "key", required=True, label="the key")
        with field("key"):
            set_endpoint_key(endpoint.name, key)
        return next(e for e in await self.endpoints() if e.name == endpoint.name)

    async def remove_endpoint(self, name: str, body: dict[str, Any]) -> None:
        """With `with_models` (the page said which first), its models go too."""
        await self.admin.remove_endpoint(name, with_models=bool(body.get("with_models")))

    async def remove_model(self, alias: str) -> None:
        """Off the bench and out of its collections (the page said which
        first); its calls and verdicts stay in the log."""
        await self.admin.remove_model(alias, from_collections=True)

    async def signed_in(self, name: str, base_url: str, api: str, key: str) -> None:
        """A provider's sign-in handed back `key`: stored like a pasted one,
        the endpoint added when it is not there yet."""
        check_endpoint_key(key)
        await self.admin.add_or_keep_endpoint(name, base_url, api)
        set_endpoint_key(name, key)

    async def endpoint_models(self, name: str) -> dict[str, Any]:
        """What the endpoint lists now (the connection test)."""
        return await self.admin.endpoint_listing(name)

    async def local_ollama(self) -> dict[str, Any] | None:
        """A local Ollama answering, offered when no endpoint points at it yet."""
        base = os.environ.get(OLLAMA_HOST_ENV, "").strip() or default_base_url("ollama")
        if "://" not in base:
            base = "http://" + base
        base = base.rstrip("/")
        if any(e.base_url.rstrip("/") == base for e in await self.admin.endpoints()):
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
        seated: dict[str, list[str]] = {}
        for view in await self.admin.collections():
            for member in view.members:
                seated.setdefault(member, []).append(view.name)
        for m in await self.admin.models():
            report = await self.ops.model_report(m.alias)
            history = report["probes"]
            timed = next((p for p in history if p.tokens_per_second), None)
            standing = max(report["record"], key=lambda r: r["judged"], default=None)
            rows.append(
                {
                    **model_json(m),
                    "last_probe": probe_json(history[0]) if history else None,
                    "speed": probe_json(timed) if timed else None,
                    "record": standing,
                    "collections": seated.get(m.alias, []),
                }
            )
        return rows

    async def model(self, alias: str) -> dict[str, Any]:
        report = await self.ops.model_report(alias)
        return {
            "model": model_json(report["model"]),
            "probes": [probe_json(p) for p in report["probes"]],
            "record": report["record"],
            "suite": report["suite"],
            "notes": report["notes"],
        }

    async def retire(self, alias: str) -> dict[str, Any]:
        return model_json(await self.ops.retire(alias, "retired from the dashboard"))

    async def restore(self, alias: str) -> dict[str, Any]:
        return model_json(await self.ops.restore(alias))

    async def set_role(self, alias: str, body: dict[str, Any]) -> dict[str, Any]:
        role = text(body, "role", required=True, label="the role")
        with field("role"):
            return model_json(await self.ops.set_role(alias, role))

    async def probe(self, alias: str) -> dict[str, Any]:
        await self.ops.probe(alias)
        return model_json(await self.admin.model(alias))

    async def alerts(self) -> list[dict[str, Any]]:
        return (await self.ops.alerts())[:50]

    # ----------------------------------------------------------- onboarding

    async def discover(self) -> dict[str, Any]:
        dismissed = set((await self.admin.setting(DISCOVER_DISMISSED)).value)
        shown: list[dict[str, Any]] = []
        hidden: list[dict[str, Any]] = []
        for row in await self.ops.discover():
            row["id"] = f"{row['provider']}/{row['model']}"
            (hidden if row["id"] in dismissed else shown).append(row)
        return {"models": shown, "dismissed": hidden}

    async def dismiss(self, body: dict[str, Any], *, undo: bool = False) -> list[str]:
        entry = text(body, "id", required=True, label="the model")
        dismissed: list[str] = (await self.admin.setting(DISCOVER_DISMISSED)).value
        dismissed = [d for d in dismissed if d != entry] if undo else [*dismissed, entry]
        changed: list[str] = (await self.admin.change_setting(DISCOVER_DISMISSED, dismissed)).value
        return changed

    async def onboard(self, body: dict[str, Any]) -> list[int]:
        endpoint = text(body, "endpoint", required=True, label="the endpoint")
        mode = text(body, "mode") or "full"
        served = names(body, "models")
        if mode not in ONBOARDING_MODES:
            raise FieldError("mode", f"the mode must be one of {', '.join(ONBOARDING_MODES)}")
        if not served:
            raise FieldError("models", "tick at least one model")
        with field("endpoint"):
            await self.admin.endpoint(endpoint)
        requests = [OnboardRequest(endpoint=endpoint, served=s, mode=mode) for s in served]
        with field("models"):
            for request in requests:  # one the endpoint does not serve is refused, naming close ids
                await self.ops.check_onboard(endpoint, request.served)
            return await self.ops.enqueue(requests)

    async def queue(self) -> dict[str, Any]:
        """The queue's unfinished items and the last few finished ones."""
        view = await self.ops.queue()
        view["items"] = view["items"][-QUEUE_SHOWN:]
        return view

    # ---------------------------------------------------------- collections

    async def collections(self) -> list[dict[str, Any]]:
        return [collection_json(c) for c in await self.panels.collections()]

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
            "blind": bool(body.get("blind")),
        }
        for key, label in (("seats", "seats"), ("explorer_seats", "explorer seats")):
            value = number(body, key, label=label)
            if value is not None:
                options[key] = int(value)
        budget_seating = text(body, "budget_seating")
        if budget_seating:
            if budget_seating not in ("cheapest", "record"):
                raise FieldError("budget_seating", "budget seating is cheapest or record")
            options["budget_seating"] = budget_seating
        promotion = text(body, "promotion")
        if promotion:
            if promotion not in PROMOTIONS:
                raise FieldError("promotion", f"promotion is one of {', '.join(PROMOTIONS)}")
            options["promotion"] = promotion
        if "keep_text" in body:
            if not isinstance(body["keep_text"], bool):
                raise FieldError("keep_text", "keep text is on or off (true or false)")
            options["keep_text"] = body["keep_text"]
        keep_days = number(body, "keep_days", label="the days text is kept")
        if keep_days is not None:
            if keep_days < 1:
                raise FieldError("keep_days", "text is kept at least 1 day")
            options["keep_days"] = int(keep_days)
        timeout = number(body, "seat_timeout", label="the seat timeout", whole=False)
        if timeout is not None:
            if timeout <= 0:
                raise FieldError("seat_timeout", "the seat timeout must be above 0 seconds")
            options["seat_timeout"] = timeout
        if not existing:
            with field("name"):
                check_collection_name(name)
        if not members:
            raise FieldError("members", "tick at least one member")
        known = {m.alias for m in await self.admin.models()}
        unknown = [m for m in members if m not in known]
        if unknown:
            raise FieldError("members", f"not on the bench: {', '.join(unknown)}")
        if options["merger"] and options["merger"] not in known:
            raise FieldError("merger", f"{options['merger']!r} is not on the bench")
        if reply not in ("panel", "merged"):
            raise FieldError("reply", "the reply is panel or merged")
        with field("name"):
            if existing:
                saved = await self.admin.update_collection(name, members=members, **options)
            else:
                saved = await self.admin.add_collection(name, members, **options)
        return collection_json(saved)

    async def remove_collection(self, name: str) -> None:
        await self.admin.remove_collection(name)

    async def recent_asks(self, collection: str = "") -> list[dict[str, Any]]:
        return await self.panels.recent_asks(collection)

    async def ask(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The playground: the panel's events as small JSON objects, in the
        order the engine sends them (started, each seat's text as it is
        written, each seat, the merge, done). Checks come before the first
        event, so a refusal is a plain 4xx. A follow-up sends the history
        (`messages`: earlier turns, the chosen answers) and the seats to ask
        (`seats`: exactly those aliases). Closing the stream stops the panel
        (the page's stop button): its seats still answering are cancelled."""
        collection = text(body, "collection", required=True, label="the collection")
        messages = conversation(body)
        merged = bool(body.get("merged"))
        only = tuple(names(body, "seats"))
        with field("collection"):
            found = await self.panels.collection(collection.removeprefix("bench/"))
        mode: AskMode = "merged" if merged or found.reply == "merged" else "panel"
        the_ask = Ask(
            found.name, mode, Request(messages=messages), stream=True, seat_text=True, only_aliases=only
        )
        with field("seats"):
            events = await self.panels.panel(the_ask, stop_on_close=True)

        async def stream() -> AsyncGenerator[dict[str, Any], None]:
            async with aclosing(events):
                async for event in events:
                    yield event_json(event)

        return stream()

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        recorded = await self.panels.verdict(body)
        judged = recorded.call if isinstance(recorded, Recorded) else recorded.pairs[0].better
        return {"recorded": recorded.as_json(), "record": await self.panels.seat_record(judged)}

    async def collection_record(self, name: str) -> dict[str, Any]:
        return await self.panels.record(name)

    async def leaderboard(self, collection: str, shape: str = "") -> dict[str, Any]:
        with field("collection"):
            return await self.panels.leaderboard(collection, shape)

    # --------------------------------------------------------------- quotas

    async def quotas(self) -> dict[str, Any]:
        view = quotas_json(await self.admin.quotas())
        view["days"] = await self.admin.usage_by_day()
        view["budgets"] = [{**row, "shown": _budget_amounts(row)} for row in await self.budgets()]
        return view

    # -------------------------------------------------------------- budgets

    async def budgets(self) -> list[dict[str, Any]]:
        return [budget_json(status) for status in await self.admin.budgets()]

    async def set_budget(self, body: dict[str, Any]) -> dict[str, Any]:
        """One budget from the Settings form: `for` ("install", "key:NAME" or
        "collection:NAME"), `period`, `usd` and `tokens` (empty: none; both
        empty removes the budget). Each field's error is said by it."""
        scope, _, name = text(body, "for", required=True, label="what the budget is for").partition(":")
        if scope not in BUDGET_SCOPES:
            raise FieldError("for", "a budget is for the install, a key or a collection")
        period = text(body, "period", required=True, label="the period")
        if period not in BUDGET_PERIODS:
            raise FieldError("period", f"the period is one of {', '.join(BUDGET_PERIODS)}")
        with field("usd"):
            usd = parse_budget_usd(body.get("usd") or None)
        with field("tokens"):
            tokens = parse_budget_tokens(body.get("tokens") or None)
        with field("for"):
            status = await self.admin.put_budget(scope, name, period, usd=usd, tokens=tokens)
        return budget_json(status)

    # ------------------------------------------------------------- settings

    async def settings(self) -> dict[str, Any]:
        rows = {r.name: r.value for r in await self.admin.settings()}
        return {
            "allowed_hosts": rows["allowed_hosts"],
            "require_key": rows["require_key"],
            "login_user": rows["login_user"],
            "login_password_set": rows[LOGIN_PASSWORD],
        }

    async def change(self, name: str, value: Any) -> None:
        """One setting from its form (whose input is named `value`)."""
        with field("value"):
            await self.admin.change_setting(name, value)
        await self.ops.settings_changed()

    async def scheduler(self) -> dict[str, Any]:
        return await self.ops.scheduler()

    async def switch_scheduler(self, enabled: bool) -> dict[str, Any]:
        return await self.ops.switch_scheduler(enabled)

    async def gateway_keys(self) -> list[dict[str, Any]]:
        return [key_json(k) for k in await self.admin.keys()]

    async def create_gateway_key(self, body: dict[str, Any]) -> dict[str, Any]:
        name = text(body, "name", required=True, label="the key's name")
        scope = names(body, "collections")
        rate = number(body, "rate", label="the rate")
        if rate is not None and rate < 1:
            raise FieldError("rate", "the rate is at least 1 request per minute (empty: no limit)")
        known = {c.name for c in await self.admin.collections()}
        unknown = [c for c in scope if c.removeprefix("bench/") not in known]
        if unknown:
            raise FieldError("collections", f"no collection {', '.join(unknown)}")
        with field("name"):
            info, secret, _missing = await self.admin.create_key(
                name, collections=tuple(scope), requests_per_minute=int(rate) if rate else None
            )
        return {"key": key_json(info), "secret": secret}

    async def revoke_gateway_key(self, name: str) -> dict[str, Any]:
        return key_json(await self.admin.revoke_key(name))

    async def has_endpoints(self) -> bool:
        return bool(await self.admin.endpoints())


# ---------------------------------------------------------------- JSON views


def key_label(endpoint: EndpointView) -> str:
    if not endpoint.needs_key:
        return "not needed"
    return endpoint_key_source(endpoint.name) or "missing"


def model_json(m: ModelView) -> dict[str, Any]:
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


def collection_json(c: CollectionView) -> dict[str, Any]:
    entry = collection_entry(c)
    return {
        "name": c.name,
        "model": entry["id"],
        "members": list(c.members),
        "seats": c.seats,
        "explorer_seats": c.explorer_seats,
        "promotion": c.promotion,
        "reply": c.reply,
        "merger": c.merger,
        "purpose": c.purpose,
        "system_prompt": c.system_prompt,
        "seat_timeout": c.seat_timeout,
        "keep_text": c.keep_text,
        "keep_days": c.keep_days,
        "blind": c.blind,
        "budget_seating": c.budget_seating,
    }


def _budget_amounts(row: dict[str, Any]) -> dict[str, str]:
    """A budget row's limit, spent and left as the Quotas page says them ("$0.25, 1200 tokens")."""

    def said(usd: float | None, tokens: int | None) -> str:
        parts = ([money(usd)] if usd is not None else []) + (
            [f"{tokens} tokens"] if tokens is not None else []
        )
        return ", ".join(parts) or "—"

    usd_set, tokens_set = row["usd"] is not None, row["tokens"] is not None
    return {
        "limit": said(row["usd"], row["tokens"]),
        "spent": said(row["spentUsd"] if usd_set else None, row["spentTokens"] if tokens_set else None),
        "left": said(row["leftUsd"], row["leftTokens"]),
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


def conversation(body: dict[str, Any]) -> tuple[Message, ...]:
    """The turns asked: `messages` (the history, `{"role": "user"|"assistant",
    "content": text}` each) and/or `prompt` (a last user turn after them).
    The last turn must be the user's: it is what the seats answer."""
    history = body.get("messages") or []
    prompt = text(body, "prompt", required=not history, label="the question")
    if not isinstance(history, list):
        raise FieldError("messages", 'messages must be a list of {"role", "content"}')
    turns: list[Message] = []
    for index, turn in enumerate(history):
        role = turn.get("role") if isinstance(turn, dict) else None
        content = turn.get("content") if isinstance(turn, dict) else None
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            raise FieldError(
                "messages", f'messages[{index}] must be {{"role": "user" or "assistant", "content": text}}'
            )
        turns.append(user(content) if role == "user" else assistant(content))
    if prompt:
        turns.append(user(prompt))
    if turns[-1].role != "user":
        raise FieldError("messages", "the last turn must be the user's: it is what the seats answer")
    return tuple(turns)


def event_json(event: PanelEvent) -> dict[str, Any]:
    if isinstance(event, PanelStarted):
        return {
            "event": "started",
            "collection": event.collection,
            "shape": event.shape,
            "seats": [{"seat": s, "alias": a, "call": c} for s, a, c in event.seats],
            "left_off": left_off_json(event.left_off),
            "merged": event.merged,
            "ask": event.ask,
        }
    if isinstance(event, SeatText):
        return {
            "event": "seat_text",
            "seat": event.seat,
            "alias": event.alias,
            "call": event.call,
            "text": event.text,
        }
    if isinstance(event, SeatDone):
        return {"event": "seat", "seat": seat_json(event.seat)}
    if isinstance(event, MergeDone):
        return {"event": "merged", "merged": merged_json(event.merged)}
    if isinstance(event, PanelDone):
        return {"event": "done", "shape": event.reply.shape}
    raise TypeError(f"unknown panel event {type(event).__name__}")
