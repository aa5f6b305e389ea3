"""The dashboard's one seam onto the core API: everything its pages read and change.

Pages and JSON routes (`pages.py`, `api.py`) call only this class, and it
calls only `benchwarmers.core` (as the owner: the dashboard's login, not a
gateway key, decides who that is), the same services the CLI, MCP and the
HTTP API use, so no rule is restated here. What this module adds is the
attribution of a refusal to a form field (`fields.field`), the order that
leaves nothing half-saved (every check first, then the writes), and the
JSON the pages read.

    backend = Backend(core.core(OWNER))     # api.backend_of(request): `CoreHandle.core`
    await backend.add_endpoint({"name": "hub", "api": "openai", "base_url": ..., "key": ...})
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

from benchwarmers.core import (
    BUDGET_PERIODS,
    BUDGET_SCOPES,
    LIMIT_KINDS,
    LOGIN_PASSWORD,
    ON_CUT,
    OUTPUT_FALLBACKS,
    PROMOTIONS,
    CollectionView,
    Core,
    Exhausted,
    KeyInfo,
    ModelView,
    Recorded,
    Standings,
    budget_json,
    check_collection_name,
    check_endpoint,
    check_endpoint_key,
    collection_entry,
    endpoint_json,
    endpoint_key_source,
    exhausted,
    iso_utc,
    model_json,
    money,
    needs_key_by_default,
    onboard_requests,
    parse_budget_tokens,
    parse_budget_usd,
    parse_expiry,
    probe_json,
    quotas_json,
    set_endpoint_key,
)
from benchwarmers.dashboard.blind import Blinder, hidden_ask
from benchwarmers.dashboard.fields import FieldError, field, names, number, switch, text
from benchwarmers.errors import StoreError, UserError
from benchwarmers.formats.bench_json import left_off_json, merged_json, seat_json
from benchwarmers.types import (
    DEADLINE_MOST,
    Ask,
    AskMode,
    MergeDone,
    MergeText,
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

# A user's limit kinds (`limit set --rpm ...`) in words, for the Quotas form.
LIMIT_KIND_WORDS = {
    "rpm": "requests / minute",
    "rpd": "requests / day",
    "rpmonth": "requests / month",
    "tpm": "tokens / minute",
    "tpd": "tokens / day",
}
LIMIT_KIND_OF = {(window, unit): kind for kind, (window, unit) in LIMIT_KINDS.items()}

# Where a local Ollama answers unless `OLLAMA_HOST` (Ollama's own variable) says otherwise.
DISCOVER_DISMISSED = "discover_dismissed"
QUEUE_SHOWN = 30
# The Quotas page's spend tables, this month (`Spend.usage`'s `by`).
SPEND_TABLES = ("key", "collection", "model")


class Backend:
    """The bench as the dashboard's owner sees it, through the core services."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.panels, self.admin, self.ops = self.core.panels, self.core.admin, self.core.ops

    # ------------------------------------------------------------ endpoints

    async def endpoints(self) -> list[dict[str, Any]]:
        """Each endpoint's JSON (`core.endpoint_json`: the pages read it too)."""
        counts = await self.admin.model_counts()
        return [endpoint_json(e, counts.get(e.name, 0)) for e in await self.admin.endpoints()]

    async def add_endpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        """Check every field, then register the endpoint, then write its key;
        a key that cannot be written takes the endpoint back out."""
        name = text(body, "name", required=True, label="the name")
        api = text(body, "api") or "openai"
        base_url = text(body, "base_url", required=True, label="the base URL")
        key = text(body, "key")
        keyless = bool(switch(body, "keyless", label="needs no key")) or not needs_key_by_default(api)
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
        return endpoint_json(added, 0)

    async def set_endpoint_key(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        endpoint = await self.admin.endpoint(name)
        key = text(body, "key", required=True, label="the key")
        with field("key"):
            set_endpoint_key(endpoint.name, key)
        return next(e for e in await self.endpoints() if e["name"] == endpoint.name)

    async def remove_endpoint(self, name: str, body: dict[str, Any]) -> None:
        """With `with_models` (the page said which first), its models go too."""
        with_models = bool(switch(body, "with_models", label="with its models"))  # "false" is no yes
        await self.admin.remove_endpoint(name, with_models=with_models)

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
        return await self.admin.local_ollama()

    # --------------------------------------------------------------- models

    async def models(self) -> list[dict[str, Any]]:
        """Every model with its last probe, its last measured speed, and its
        record where it is judged most (the decisions' own figures)."""
        rows = []
        seated: dict[str, list[str]] = {}
        for view in await self.admin.collections():
            for member in view.members:
                seated.setdefault(member, []).append(view.name)
        used_up = exhausted(await self.admin.quotas())
        standings: Standings = {}  # each collection and shape ranked once, for every model's record
        for m in await self.admin.models():
            report = await self.ops.model_report(m.alias, standings)
            history = report["probes"]
            timed = next((p for p in history if p.tokens_per_second), None)
            standing = max(report["record"], key=lambda r: (r["judged"], r["compared"]), default=None)
            rows.append(
                {
                    **model_json(m),
                    "last_probe": probe_json(history[0]) if history else None,
                    "speed": probe_json(timed) if timed else None,
                    "record": standing,
                    "collections": seated.get(m.alias, []),
                    "limited": _limited(m, used_up),
                }
            )
        return rows

    async def model(self, alias: str) -> dict[str, Any]:
        report = await self.ops.model_report(alias)
        m: ModelView = report["model"]
        quotas = await self.quotas()
        return {
            "model": model_json(m),
            "limited": _limited(m, exhausted(await self.admin.quotas())),
            "limits": [
                q
                for q in quotas["quotas"]
                if q["endpoint"] == m.endpoint.name and q["model"] in (None, m.served)
            ],
            "scopes": quotas["scopes"],
            "kinds": quotas["kinds"],
            "probes": [probe_json(p) for p in report["probes"]],
            "record": report["record"],
            "suite": report["suite"],
            "notes": report["notes"],
        }

    async def retire(self, alias: str) -> dict[str, Any]:
        return model_json(await self.ops.retire(alias, "retired from the dashboard"))

    async def restore(self, alias: str) -> dict[str, Any]:
        return model_json(await self.ops.restore(alias))

    async def accept_price(self, alias: str) -> dict[str, Any]:
        """A model that went paid is seated again by free-only collections."""
        return model_json(await self.admin.set_model_prices(alias, paid_ok=True))

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
        requests = onboard_requests(body)
        with field("endpoint"):
            await self.admin.endpoint(requests[0].endpoint)
        endpoint = requests[0].endpoint
        with field("models"):
            for request in requests:  # one the endpoint does not serve is refused, naming close ids
                await self.ops.check_onboard(endpoint, request.served)
            return await self.ops.enqueue(requests)

    async def queue(self) -> dict[str, Any]:
        """The queue's unfinished items and the last few finished ones."""
        view = await self.ops.queue()
        view["items"] = view["items"][-QUEUE_SHOWN:]
        return view

    async def cancel_onboarding(self, item_id: int) -> dict[str, Any]:
        return await self.ops.cancel_onboarding(item_id)

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
        }
        # On or off, as the form's boxes send them; left out, as they were (off for a new one).
        for key, label in (
            ("blind", "blind"),
            ("judge_verdicts", "judge verdicts"),
            ("keep_text", "keep text"),
        ):
            if (on := switch(body, key, label=label)) is not None:
                options[key] = on
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
        keep_days = number(body, "keep_days", label="the days text is kept")
        if keep_days is not None:
            if keep_days < 1:
                raise FieldError("keep_days", "text is kept at least 1 day")
            options["keep_days"] = int(keep_days)
        fallback = text(body, "output_fallback")
        if fallback:
            if fallback not in OUTPUT_FALLBACKS:
                raise FieldError("output_fallback", f"asked for JSON: one of {', '.join(OUTPUT_FALLBACKS)}")
            options["output_fallback"] = fallback
        timeout = number(body, "seat_timeout", label="the seat timeout", whole=False)
        if timeout is not None:
            if timeout <= 0:
                raise FieldError("seat_timeout", "the seat timeout must be above 0 seconds")
            options["seat_timeout"] = timeout
        quorum = number(body, "quorum", label="the quorum")
        if quorum is not None:
            options["quorum"] = int(quorum)
        deadline = number(body, "deadline", label="the deadline", whole=False)
        if deadline is not None:
            if deadline > DEADLINE_MOST:
                raise FieldError("deadline", f"the deadline is at most {DEADLINE_MOST:g} seconds (a day)")
            options["deadline"] = deadline
        on_cut = text(body, "on_cut")
        if on_cut:
            if on_cut not in ON_CUT:
                raise FieldError("on_cut", f"seats cut are one of {', '.join(ON_CUT)}")
            options["on_cut"] = on_cut
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

    async def recent_asks(
        self, collection: str = "", limit: int = 20, before: str = "", unless: str = "", head: int = 0
    ) -> tuple[dict[str, Any] | None, str]:
        """A page of Recent asks and `next`, the cursor of the page after it
        (null: none older), with the page's tag; None for the page when its
        tag is `unless` (the poller has it: `Panels.recent_asks_page`). The
        tag names the blind collections too: a collection made blind (or
        not) changes what the same asks show. `head`: each kept text cut
        to that many characters (`Panels.recent_asks_page`)."""
        blind = await self._blind_collections()
        suffix = "-b" + format(zlib.crc32("\n".join(blind).encode()), "x")
        had = unless[: -len(suffix)] if unless.endswith(suffix) else "\x00" if unless else ""
        asks, after, tag = await self.panels.recent_asks_page(collection, limit, before, had, head)
        if asks is None:
            return None, tag + suffix
        page = [_as_shown(ask, blind) for ask in asks]
        return {"asks": page, "next": after or None}, tag + suffix

    async def recent_ask(self, ask_id: str) -> dict[str, Any]:
        """One ask of Recent asks, its kept text whole, blind as the list shows it."""
        return _as_shown(await self.panels.recent_ask(ask_id), await self._blind_collections())

    async def _blind_collections(self) -> list[str]:
        return sorted(c.name for c in await self.panels.collections() if c.blind)

    async def ask(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The playground: the panel's events as small JSON objects, in the
        order the engine sends them (started, each seat's text as it is
        written, each seat, the merge, done). Checks come before the first
        event, so a refusal is a plain 4xx. A follow-up sends the history
        (`messages`: earlier turns, the chosen answers) and the seats to ask
        (`seats`: exactly those aliases); one where each seat continues its
        own thread sends each seat's earlier turns too (`threads`, by alias:
        `messages` stays the history the shape, the budgets' estimate and
        the merger read, and any seat's without a thread). Closing the stream
        stops the panel (the page's stop button): its seats still answering
        are cancelled."""
        collection = text(body, "collection", required=True, label="the collection")
        messages = conversation(body)
        merged = bool(switch(body, "merged", label="merged"))
        blind = switch(body, "blind", label="blind")
        only = tuple(names(body, "seats"))
        own = threads(body, only)
        with field("collection"):
            found = await self.panels.collection(collection.removeprefix("bench/"))
        blinder = None
        if found.blind if blind is None else blind:  # `dashboard/blind.py`: seats named by handles
            known = await self.panels.seat_aliases(found.name, [*only, *(a for a, _ in own)])
            blinder = Blinder({alias: handle for handle, alias in known.items()})
            only = tuple(known.get(seat, seat) for seat in only)
            own = tuple((known.get(seat, seat), thread) for seat, thread in own)
        mode: AskMode = "merged" if merged or found.reply == "merged" else "panel"
        # Logged on its calls where the toggle differs from the collection: Recent asks keep to it.
        own_blind = None if blind is None or blind == found.blind else blind
        the_ask = Ask(
            found.name,
            mode,
            Request(messages=messages),
            stream=True,
            seat_text=True,
            only_aliases=only,
            threads=own,
            blind=own_blind,
        )
        with field("seats"):
            try:
                events = await self.panels.panel(the_ask, stop_on_close=True, person=True)
            except UserError as refused:  # "no model 'x' on the bench to seat": blind, its handle
                if blinder is not None:
                    refused.args = (blinder.hide(str(refused)),)
                raise

        async def stream() -> AsyncGenerator[dict[str, Any], None]:
            async with aclosing(events):
                async for event in events:
                    yield event_json(event) if blinder is None else blinder.event(event_json(event))

        return stream()

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        """The verdict recorded and the collection's record after it; `"blind":
        true` (a blind ask's page) leaves out the models judged and the record."""
        blind = switch(body, "blind", label="blind")
        recorded = await self.panels.verdict({k: v for k, v in body.items() if k != "blind"})
        if blind:
            said = recorded.as_json()
            said.pop("alias", None)
            for pair in said.get("pairs", []):
                del pair["betterAlias"], pair["worseAlias"]
            return {"recorded": said}
        judged = recorded.call if isinstance(recorded, Recorded) else recorded.pairs[0].better
        return {"recorded": recorded.as_json(), "record": await self.panels.seat_record(judged)}

    async def judged_names(self, body: dict[str, Any]) -> dict[str, Any]:
        """A blind ask's names, once judged (`Panels.judged_names`)."""
        calls = names(body, "calls")
        if len(calls) > NAMES_AT_ONCE:
            raise FieldError("calls", f"at most {NAMES_AT_ONCE} calls at once")
        return await self.panels.judged_names(calls)

    async def collection_record(self, name: str) -> dict[str, Any]:
        return await self.panels.record(name)

    async def leaderboard(self, collection: str, shape: str = "") -> dict[str, Any]:
        with field("collection"):
            return await self.panels.leaderboard(collection, shape)

    # --------------------------------------------------------------- quotas

    async def quotas(self) -> dict[str, Any]:
        """Limits, this month's ledger and days, and its spend per key,
        collection and model (`spend`: `Spend.usage`'s report for each)."""
        view = quotas_json(await self.admin.quotas())
        view["days"] = await self.admin.usage_by_day()
        view["spend"] = {by: await self.core.spend.usage(by) for by in SPEND_TABLES}
        for q in view["quotas"]:  # the user's own: the kind `limit clear` names
            q["kind"] = LIMIT_KIND_OF.get((q["window"], q["unit"]), "") if q["source"] == "set" else ""
        view["scopes"] = await self.limit_scopes()
        view["kinds"] = LIMIT_KIND_WORDS
        view["budgets"] = [{**row, "shown": _budget_amounts(row)} for row in await self.budgets()]
        return view

    async def limit_scopes(self) -> list[dict[str, Any]]:
        """Each endpoint's limit scope: as set (key, model, or "" for auto) and in words."""
        words = await self.admin.limit_scopes()
        return [
            {"endpoint": e.name, "scope": e.limit_scope or "auto", "words": words.get(e.name, "")}
            for e in await self.admin.endpoints()
        ]

    async def set_limit(self, body: dict[str, Any]) -> dict[str, Any]:
        """One limit of the user's own, on an endpoint or one of its models."""
        endpoint = text(body, "endpoint", required=True, label="the endpoint")
        model = text(body, "model")
        kind = text(body, "kind", required=True, label="the limit")
        if kind not in LIMIT_KINDS:
            raise FieldError("kind", f"the limit is one of {', '.join(LIMIT_KINDS)}")
        amount = number(body, "amount", label="the amount")
        if amount is None or amount < 1 or amount != int(amount):
            raise FieldError("amount", "the amount is a whole number, at least 1 (Clear removes a limit)")
        with field("endpoint"):
            [limit] = await self.admin.set_limits(endpoint, model, {kind: int(amount)})
        return {"endpoint": limit.endpoint, "model": limit.served, "kind": kind, "amount": limit.amount}

    async def clear_limit(self, body: dict[str, Any]) -> dict[str, Any]:
        endpoint = text(body, "endpoint", required=True, label="the endpoint")
        kind = text(body, "kind")
        if kind and kind not in LIMIT_KINDS:
            raise FieldError("kind", f"the limit is one of {', '.join(LIMIT_KINDS)}")
        removed = await self.admin.clear_limits(endpoint, text(body, "model"), (kind,) if kind else ())
        return {"removed": removed}

    async def forget_learned_limit(self, body: dict[str, Any]) -> dict[str, Any]:
        endpoint = text(body, "endpoint", required=True, label="the endpoint")
        unit = text(body, "unit", required=True, label="the unit")
        removed = await self.admin.forget_learned_limit(
            endpoint, text(body, "model"), unit, text(body, "window")
        )
        return {"removed": removed}

    async def set_limit_scope(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        scope = text(body, "scope", required=True, label="the scope")
        with field("scope"):
            changed = await self.admin.set_limit_scope(name, scope)
        return {"endpoint": changed.name, "scope": changed.limit_scope or "auto"}

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
        expires = text(body, "expires", label="the expiry") or ""
        with field("expires"):
            parse_expiry(expires, datetime.now(UTC))  # the field's own error, before the name's
        with field("name"):
            info, secret, _missing = await self.admin.create_key(
                name,
                collections=tuple(scope),
                requests_per_minute=int(rate) if rate else None,
                expires=expires,
            )
        return {"key": key_json(info), "secret": secret}

    async def revoke_gateway_key(self, name: str) -> dict[str, Any]:
        return key_json(await self.admin.revoke_key(name))

    async def set_gateway_key_expiry(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        expires = text(body, "expires", label="the expiry") or ""
        with field("expires"):
            return key_json(await self.admin.set_key_expiry(name, expires))

    async def rotate_gateway_key(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A new secret (in the reply, once) and the old one's end."""
        grace = text(body, "grace", label="the grace period") or "0"
        with field("grace"):
            info, old, secret = await self.admin.rotate_key(name, grace)
        return {"key": key_json(info), "old": key_json(old), "secret": secret}

    async def has_endpoints(self) -> bool:
        return bool(await self.admin.endpoints())


# ---------------------------------------------------------------- JSON views


def _limited(m: ModelView, used_up: list[Exhausted]) -> dict[str, Any] | None:
    """Why an `available` model is refused now all the same: a limit used
    up on its endpoint (whose limits count per key) or on the model itself."""
    if m.status != "available":
        return None
    for limit in used_up:
        if limit.endpoint == m.endpoint.name and limit.served in ("", m.served):
            whole = "its endpoint rests: " if not limit.served else ""
            return {"why": whole + limit.why, "until": iso_utc(limit.until) if limit.until else None}
    return None


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
        "judge_verdicts": c.judge_verdicts,
        "output_fallback": c.output_fallback,
        "quorum": c.quorum,
        "deadline": c.deadline,
        "on_cut": c.on_cut,
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
    now = datetime.now(UTC)
    return {
        "name": k.name,
        "prefix": k.prefix,
        "collections": list(k.collections),
        "rate": k.requests_per_minute,
        "created_at": iso_utc(k.created_at),
        "revoked_at": iso_utc(k.revoked_at) if k.revoked_at else None,
        "active": k.active,
        "expires_at": iso_utc(k.expires_at) if k.expires_at else None,
        "rotated_at": iso_utc(k.rotated_at) if k.rotated_at else None,
        "works": k.works(now.timestamp()),
        "state": k.state(now),
    }


def conversation(body: dict[str, Any]) -> tuple[Message, ...]:
    """The turns asked: `messages` (the history, `{"role": "user"|"assistant",
    "content": text}` each) and/or `prompt` (a last user turn after them).
    The last turn must be the user's: it is what the seats answer."""
    history = body.get("messages") or []
    prompt = text(body, "prompt", required=not history, label="the question")
    return _turns(history, prompt, "messages", "messages")


def threads(body: dict[str, Any], seats: tuple[str, ...]) -> tuple[tuple[str, tuple[Message, ...]], ...]:
    """Each seat's own thread (`threads`: `{alias: [{"role", "content"}...]}`,
    its earlier turns), the question (`prompt`) after each, checked as
    `conversation` checks `messages`; every alias one of `seats` (the
    aliases asked). None given: () (`Ask.threads`: every seat is asked `messages`)."""
    given = body.get("threads")
    if given is None or given == {}:
        return ()
    if not isinstance(given, dict):
        raise FieldError("threads", 'threads must be an object: {alias: [{"role", "content"}...]}')
    unknown = [alias for alias in given if alias not in seats]
    if unknown:
        asked = f"the seats asked are {', '.join(seats)}" if seats else "no seats were named (seats)"
        raise FieldError("threads", f"threads name seats not asked: {', '.join(unknown)} ({asked})")
    prompt = text(body, "prompt", label="the question")
    return tuple(
        (alias, _turns(thread, prompt, "threads", f'threads["{alias}"]')) for alias, thread in given.items()
    )


def _turns(history: Any, prompt: str, name: str, label: str) -> tuple[Message, ...]:
    """The turns of a history (field `name`, called `label` in its errors) and the question after them."""
    if not isinstance(history, list):
        raise FieldError(name, f'{label} must be a list of {{"role", "content"}}')
    turns: list[Message] = []
    for index, turn in enumerate(history):
        role = turn.get("role") if isinstance(turn, dict) else None
        content = turn.get("content") if isinstance(turn, dict) else None
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            raise FieldError(
                name, f'{label}[{index}] must be {{"role": "user" or "assistant", "content": text}}'
            )
        turns.append(user(content) if role == "user" else assistant(content))
    if prompt:
        turns.append(user(prompt))
    if not turns or turns[-1].role != "user":
        where = f"{label}: " if label != name else ""
        raise FieldError(name, f"{where}the last turn must be the user's: it is what the seats answer")
    return tuple(turns)


# The calls one `names` request may name: a long conversation's seats and merges.
NAMES_AT_ONCE = 1000


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
    if isinstance(event, MergeText):
        return {"event": "merge_text", "alias": event.alias, "call": event.call, "text": event.text}
    if isinstance(event, MergeDone):
        return {"event": "merged", "merged": merged_json(event.merged)}
    if isinstance(event, PanelDone):
        return {
            "event": "done",
            "shape": event.reply.shape,
            "costUsd": event.reply.cost_usd,
            "costComplete": event.reply.cost_complete,
        }
    raise TypeError(f"unknown panel event {type(event).__name__}")


def _as_shown(ask: dict[str, Any], blind: Sequence[str]) -> dict[str, Any]:
    """An ask of Recent asks as the page may see it: an ask the Ask page's toggle made
    blind or not says so itself (`calls.blind`); the rest are as their collection is now."""
    return hidden_ask(ask) if ask.get("blind", ask["collection"] in blind) else ask
