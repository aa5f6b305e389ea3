"""Administration, for one identity: endpoints (and their keys), models,
collections, gateway keys, limits and settings.

The CLI (as the owner) and the HTTP API (as the request's identity) change
the bench through this one service, so its rule holds the same through
each: only the owner, or a gateway key not limited to some collections,
may read or change any of it (a key handed out for one collection must not
widen its own door). The quotas view is the exception: every admitted
identity may read what is used and left, as `GET /bench/quotas` always
allowed.

    admin = Admin(runtime)                         # the CLI: the owner
    await admin.add_endpoint("hub", "https://hub.example/v1", "openai")
    await admin.change_setting("max_body_mb", 50)

The rules themselves live below (`store.endpoints`, `store.models` and
`store.collections` check names and members, `identity.keys` makes keys,
`limits.user_limits` checks amounts); this layer decides who may, and is
the one door the front ends use.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy import func, select

from benchwarmers.config import environment, tunables
from benchwarmers.config import keys as endpoint_keys
from benchwarmers.core import diagnostics
from benchwarmers.core.settings import SettingRow, change_setting, setting_row, setting_rows
from benchwarmers.errors import Conflict, NotFound, ProviderAuthError, ProviderError, Refused, UserError
from benchwarmers.identity import expiry as key_expiry
from benchwarmers.identity import keys as gateway_keys
from benchwarmers.identity.scope import OWNER, Identity, may_administer
from benchwarmers.limits import budgets, ledger, quotas, spending, user_limits
from benchwarmers.limits.scope import scopes_in_words
from benchwarmers.providers import kinds
from benchwarmers.store import prices
from benchwarmers.store.collections import (
    add_collection,
    get_collection,
    list_collections,
    remove_collection,
    update_collection,
)
from benchwarmers.store.collections import check_collection_name as _check_collection_name
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import (
    add_endpoint,
    check_api,
    check_base_url,
    check_endpoint_name,
    count_models,
    get_endpoint,
    list_endpoints,
    remove_endpoint,
    set_limit_scope,
)
from benchwarmers.store.endpoints import check_scope as _check_scope
from benchwarmers.store.models import add_model, get_model, list_models, remove_model
from benchwarmers.store.schema import Call
from benchwarmers.store.views import CollectionView, EndpointView, ModelView

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

LOCAL_PROBE_TIMEOUT = tunables.LOCAL_PROBE_TIMEOUT.value
SIGNIN_EXCHANGE_TIMEOUT = tunables.SIGNIN_EXCHANGE_TIMEOUT.value


def check_scope(scope: str) -> str:
    """A limit scope as given (key, model, auto), checked before a store opens."""
    return _check_scope(scope)


def check_endpoint(name: str, base_url: str, api: str) -> str:
    """An endpoint's name, URL and API checked before anything is asked of
    the user (the CLI prompts for a key only for a valid endpoint); returns
    the base URL as it will be stored."""
    check_endpoint_name(name)
    check_api(api)
    return check_base_url(base_url)


def api_kinds() -> tuple[str, ...]:
    """The API kinds an endpoint may speak (`providers/kinds.py`)."""
    return kinds.api_kinds()


def needs_key_by_default(api: str) -> bool:
    """Whether a new endpoint of this API kind needs a key unless told
    otherwise (Ollama runs locally without one); True for a kind not
    known, which its own check refuses."""
    return api not in kinds.api_kinds() or kinds.kind(api).needs_key


def default_base_url(api: str) -> str:
    """Where an API kind's own service answers (Ollama's: this machine)."""
    return kinds.kind(api).default_base_url


def check_collection_name(name: str) -> str:
    """A collection's name checked before its form is taken further."""
    return _check_collection_name(name)


def check_endpoint_key(key: str) -> str:
    """A pasted key, stripped; refused when empty or holding whitespace."""
    return endpoint_keys.check_key(key)


def set_endpoint_key(name: str, key: str) -> Path:
    """Keep an endpoint's key in llm's keys.json (mode 0600, never in the
    data folder); returns the file's path. The user's own files: for the
    CLI and the dashboard, which run as the owner (no gateway route writes a key)."""
    return endpoint_keys.set_key(name, key)


def endpoint_key_source(name: str) -> str | None:
    """Where an endpoint's key comes from (`env` or `keys.json`), or None;
    never the key itself."""
    return endpoint_keys.key_source(name)


def endpoint_key_variable(name: str) -> str:
    """The environment variable an endpoint's key may come from."""
    return endpoint_keys.env_var_name(name)


class Admin:
    """What an identity may administer, over one open runtime."""

    def __init__(self, runtime: Runtime, identity: Identity = OWNER) -> None:
        self.runtime = runtime
        self.identity = identity

    def check_allowed(self) -> None:
        """Refused (403) unless this identity may administer the bench."""
        if not may_administer(self.identity):
            raise Refused(
                "this key is limited to some collections and may not read or change the bench", status=403
            )

    def _store(self) -> Store:
        """The store, once this identity may administer."""
        self.check_allowed()
        return self.runtime.store

    # ------------------------------------------------------------ endpoints

    async def add_endpoint(
        self,
        name: str,
        base_url: str,
        api: str = "openai",
        *,
        needs_key: bool | None = None,
        simulated: bool = False,
    ) -> EndpointView:
        needs_key = needs_key_by_default(api) if needs_key is None else needs_key
        return await add_endpoint(
            self._store(), name, base_url, api, needs_key=needs_key, simulated=simulated
        )

    async def add_or_keep_endpoint(
        self,
        name: str,
        base_url: str,
        api: str = "openai",
        *,
        needs_key: bool | None = None,
        limit_scope: str = "",
    ) -> tuple[EndpointView, bool]:
        """Add the endpoint (True), or keep it (False) when one of that name is
        already there with this URL and API, so adding again is safe (and
        sets a key); another URL or API under the name is a Conflict that
        says how to change it."""
        store = self._store()
        if same := await self._same_endpoint(name, base_url, api):
            return same, False
        needs_key = needs_key_by_default(api) if needs_key is None else needs_key
        added = await add_endpoint(store, name, base_url, api, needs_key=needs_key, limit_scope=limit_scope)
        return added, True

    async def _same_endpoint(self, name: str, base_url: str, api: str) -> EndpointView | None:
        """The endpoint of that name when it has this URL and API; another
        URL or API under the name is a Conflict that says how to change it."""
        for same in await list_endpoints(self._store()):
            if same.name != name:
                continue
            if (same.base_url, same.api) != (check_base_url(base_url), api):
                raise Conflict(
                    f"endpoint {name!r} already exists with {same.api} at {same.base_url}; "
                    f"remove it first to change it (`benchwarmers endpoint remove {name}`)"
                )
            return same
        return None

    async def check_server(
        self, name: str, base_url: str, api: str, *, key: str | None, needs_key: bool
    ) -> int | None:
        """How many models a server lists at `base_url` as `api`, before it is
        kept as endpoint `name`: with `key`, else the key `name` already has;
        None (not asked) when it needs a key and has none. A UserError says
        in one line what is wrong (dead, no /v1, the key refused). An empty
        list is an answer, not evidence against it."""
        await self._same_endpoint(name, base_url, api)
        if needs_key and key is None:
            key = endpoint_keys.endpoint_key(name)
            if key is None:
                return None
        try:
            listed = await diagnostics.listed_at(
                self.runtime, name, check_api(api), check_base_url(base_url), key
            )
        except (ProviderError, TimeoutError) as exc:
            said = str(exc) or "no answer in time"
            if isinstance(exc, ProviderAuthError):
                fix = (
                    f"the key was refused: give the right one (`benchwarmers endpoint add {name} URL --key`)"
                )
            elif diagnostics.missing_v1(api, base_url):
                fix = f"OpenAI-compatible base URLs usually end in /v1 ({base_url.rstrip('/')}/v1?)"
            else:
                fix = "check the URL (is the server running?)"
            raise UserError(
                f"{name} at {base_url} did not list its models ({said}); {fix}; "
                "not added (`--no-check` adds it unchecked)"
            ) from None
        return len(listed)

    async def set_limit_scope(self, name: str, scope: str) -> EndpointView:
        """Whom the endpoint's rate limits count: key, model or auto (`limits/scope.py`)."""
        return await set_limit_scope(self._store(), name, scope)

    async def limit_scopes(self) -> dict[str, str]:
        """Each endpoint's limit scope in words, with where it came from."""
        return await scopes_in_words(self._store())

    async def endpoints(self) -> list[EndpointView]:
        return await list_endpoints(self._store())

    async def endpoint(self, name: str) -> EndpointView:
        return await get_endpoint(self._store(), name)

    async def model_counts(self) -> dict[str, int]:
        """How many models each endpoint serves, by endpoint name."""
        return await count_models(self._store())

    async def remove_endpoint(self, name: str, *, with_models: bool = False) -> None:
        await remove_endpoint(self._store(), name, with_models=with_models)

    async def endpoint_listing(self, name: str) -> dict[str, Any]:
        """What the endpoint lists now (a connection test), each served id
        with its alias on the bench ("" when not there), or why it could not say."""
        store = self._store()
        endpoint = await get_endpoint(store, name)
        try:
            listed = await diagnostics.endpoint_models(self.runtime, endpoint)
        except (ProviderError, TimeoutError) as exc:
            return {"endpoint": name, "ok": False, "error": str(exc) or "no answer in time", "models": []}
        on_bench = {m.served: m.alias for m in await list_models(store, endpoint=name)}
        return {
            "endpoint": name,
            "ok": True,
            "error": "",
            "models": [{"served": s, "alias": on_bench.get(s, "")} for s in sorted(set(listed))],
        }

    # --------------------------------------------------------------- models

    async def add_model(
        self, alias: str, endpoint: str, served: str, role: str = "general", **facts: Any
    ) -> ModelView:
        """`facts`: what `store.models.add_model` takes besides (context window,
        prices, vision, tools)."""
        return await add_model(self._store(), alias, endpoint, served, role, **facts)

    async def models(self, *, endpoint: str | None = None, include_retired: bool = True) -> list[ModelView]:
        """The bench by alias; an unknown endpoint is NotFound, not an empty list."""
        store = self._store()
        if endpoint is not None:
            await get_endpoint(store, endpoint)
        return await list_models(store, endpoint=endpoint, include_retired=include_retired)

    async def model(self, alias: str) -> ModelView:
        return await get_model(self._store(), alias)

    async def remove_model(self, alias: str, *, from_collections: bool = False) -> None:
        await remove_model(self._store(), alias, from_collections=from_collections)

    async def set_model_prices(
        self,
        alias: str,
        *,
        price_in: float | None = None,
        price_out: float | None = None,
        price_cached: float | None = None,
        paid_ok: bool = False,
        catalog: bool = False,
    ) -> ModelView:
        """The user's prices for a model from now on (USD per million tokens;
        the catalog's refresh leaves them), and/or accepting a went-paid
        model's price (`paid_ok`: free-only collections seat it again), or
        handing the prices back to the catalog (`store/prices.py`)."""
        await prices.set_prices(
            self._store(),
            alias,
            price_in=price_in,
            price_out=price_out,
            price_cached=price_cached,
            paid_ok=paid_ok,
            catalog=catalog,
        )
        return await get_model(self._store(), alias)

    async def price_history(self, alias: str) -> list[prices.PriceChange]:
        """A model's prices, oldest first, each with when it took effect."""
        await get_model(self._store(), alias)  # NotFound for an unknown alias
        return await prices.history(self._store(), alias)

    # ---------------------------------------------------------- collections

    async def add_collection(self, name: str, members: Sequence[str], **fields: Any) -> CollectionView:
        return await add_collection(self._store(), name, members, **fields)

    async def update_collection(self, name: str, **fields: Any) -> CollectionView:
        return await update_collection(self._store(), name, **fields)

    async def collections(self) -> list[CollectionView]:
        return await list_collections(self._store())

    async def collection(self, name: str) -> CollectionView:
        return await get_collection(self._store(), name)

    async def remove_collection(self, name: str) -> None:
        await remove_collection(self._store(), name)

    # --------------------------------------------------------- gateway keys

    async def create_key(
        self,
        name: str,
        *,
        collections: Sequence[str] = (),
        requests_per_minute: int | None = None,
        expires: str = "",
    ) -> tuple[gateway_keys.KeyInfo, str, list[str]]:
        """Make a gateway key: its info, the secret (shown once, never
        stored) and the scoped collections that do not exist (yet).
        `expires`: a date, a time from now (`30d`) or empty/`never`."""
        store = self._store()
        expires_at = key_expiry.parse_expiry(expires, datetime.now(UTC))
        known = {c.name for c in await list_collections(store)}
        info, secret = await gateway_keys.create_key(
            store,
            name,
            collections=tuple(collections),
            requests_per_minute=requests_per_minute,
            expires_at=expires_at,
        )
        return info, secret, [c for c in info.collections if c not in known]

    async def keys(self) -> list[gateway_keys.KeyInfo]:
        return await gateway_keys.list_keys(self._store())

    async def revoke_key(self, name: str) -> gateway_keys.KeyInfo:
        return await gateway_keys.revoke_key(self._store(), name)

    async def set_key_expiry(self, name: str, expires: str) -> gateway_keys.KeyInfo:
        """Change when a key expires: a date, a time from now, or `never`."""
        expires_at = key_expiry.parse_expiry(expires, datetime.now(UTC))
        return await gateway_keys.set_expiry(self._store(), name, expires_at)

    async def rotate_key(
        self, name: str, grace: str
    ) -> tuple[gateway_keys.KeyInfo, gateway_keys.KeyInfo, str]:
        """A new secret for `name`: the new key, the old secret's info and the
        secret (shown once); the old one works for `grace` (`1h`, `0`) more."""
        return await gateway_keys.rotate_key(self._store(), name, key_expiry.parse_grace(grace))

    # --------------------------------------------------------------- limits

    async def set_limits(
        self, endpoint: str, model: str, amounts: dict[str, int]
    ) -> list[user_limits.UserLimit]:
        store = self._store()
        await get_endpoint(store, endpoint)  # a clear NotFound for a typo
        return await user_limits.set_limits(store, endpoint, model, amounts)

    async def limits(self) -> list[user_limits.UserLimit]:
        return await user_limits.list_limits(self._store())

    async def clear_limits(self, endpoint: str, model: str = "", kinds: Sequence[str] = ()) -> int:
        return await user_limits.clear_limits(self._store(), endpoint, model, tuple(kinds))

    async def forget_learned_limit(self, endpoint: str, model: str, unit: str, window: str) -> int:
        """Clear a limit a provider's headers or 429 taught (`Limiter.forget_learned`)."""
        self.check_allowed()
        await get_endpoint(self._store(), endpoint)  # a clear NotFound for a typo
        removed = await self.runtime.limiter.forget_learned(endpoint, model, unit, window)
        if not removed:
            where = f"{endpoint}/{model}" if model else endpoint
            raise NotFound(f"no learned {unit} limit{f' per {window}' if window else ''} on {where}")
        return removed

    # -------------------------------------------------------------- budgets

    async def budgets(self) -> list[spending.BudgetStatus]:
        """Every budget with its period's spend, what is left and when it resets."""
        self.check_allowed()
        return await self.runtime.spending.status()

    async def set_budget(self, body: object) -> spending.BudgetStatus:
        """One budget as a client sends it (`{"scope", "name", "period", "usd"?,
        "tokens"?, "currency"?}`; both amounts null removes it), checked whole
        before anything is saved; its status after."""
        store = self._store()
        if not isinstance(body, dict):
            raise UserError('send one budget: {"scope", "name", "period", "usd", "tokens"}')
        unknown = sorted(set(body) - {"scope", "name", "period", "usd", "tokens", "currency"})
        if unknown:
            raise UserError(f"unknown field {unknown[0]!r} in the budget")
        name = body.get("name") or ""
        if not isinstance(name, str):
            raise UserError("name must be text")
        scope, period = budgets.check_scope(body.get("scope"), body.get("period"))
        currency = body.get("currency", "USD")
        if not isinstance(currency, str):
            raise UserError("currency must be text (USD)")
        usd = budgets.parse_usd(body.get("usd"), currency)
        tokens = budgets.parse_tokens(body.get("tokens"))
        return await self.put_budget(scope, name, period, usd=usd, tokens=tokens, store=store)

    async def put_budget(
        self,
        scope: str,
        name: str,
        period: str,
        *,
        usd: float | None,
        tokens: int | None,
        store: Store | None = None,
    ) -> spending.BudgetStatus:
        store = store or self._store()
        saved = await budgets.set_budget(store, scope, name, period, usd=usd, tokens=tokens)
        checked_scope, checked_period = budgets.check_scope(scope, period)
        return await self.runtime.spending.status_of(
            saved or budgets.Budget(checked_scope, name.strip(), checked_period, None, None)
        )

    async def clear_budgets(self, scope: str, name: str = "", period: str | None = None) -> int:
        return await budgets.clear_budgets(self._store(), scope, name, period)

    async def usage_by_day(self, now: datetime | None = None) -> dict[str, Any]:
        """Tokens, requests and USD (the known prices' sum; `unpriced`: calls
        whose price was unknown) per endpoint per day of this month (UTC),
        from the call log: what the Quotas page draws."""
        now = now or datetime.now(UTC)
        start, end = ledger.month_start(now), ledger.next_month(now)
        day = func.date(Call.at)
        query = (
            select(
                Call.endpoint,
                day.label("day"),
                func.sum(Call.tokens_in + Call.tokens_out),
                func.count(),
                func.coalesce(func.sum(Call.cost_usd), 0.0),
                func.count() - func.count(Call.cost_usd),
            )
            .where(Call.at >= start, Call.at < end, Call.endpoint != "")
            .group_by(Call.endpoint, day)
        )
        async with self.runtime.store.read() as session:
            rows = (await session.execute(query)).all()
        series: dict[str, dict[str, dict[str, Any]]] = {}
        for endpoint, when, tokens, requests, usd, unpriced in rows:
            series.setdefault(endpoint, {})[str(when)[:10]] = {
                "tokens": int(tokens or 0),
                "requests": int(requests),
                "usd": float(usd),
                "unpriced": int(unpriced),
            }
        return {"month": ledger.month_of(now), "days_in_month": (end - start).days, "series": series}

    async def quotas(self) -> quotas.QuotasView:
        """Every limit with what is used, left and when it resets: every
        endpoint's usage, so not for a key limited to some collections (it
        would learn what other collections' endpoints spend)."""
        self.check_allowed()
        return await quotas.quotas_view(self.runtime.store)

    # ------------------------------------------------------------- settings

    async def settings(self) -> list[SettingRow]:
        self.check_allowed()
        return await setting_rows(self.runtime.settings)

    async def setting(self, name: str) -> SettingRow:
        self.check_allowed()
        return await setting_row(self.runtime.settings, name)

    async def change_setting(self, name: str, value: Any) -> SettingRow:
        """Check and store one setting; it reads back as it now is (the
        login password as set or not, never its hash)."""
        self.check_allowed()
        return await change_setting(self.runtime.settings, name, value)

    # ------------------------------------------- fetches the owner asked for

    async def local_ollama(self) -> dict[str, Any] | None:
        """A local Ollama answering (`OLLAMA_HOST`, else its usual address),
        offered when no endpoint points at it yet: `{"base_url", "version"}`."""
        base = environment.OLLAMA_HOST.read().strip() or default_base_url("ollama")
        if "://" not in base:
            base = "http://" + base
        base = base.rstrip("/")
        if any(e.base_url.rstrip("/") == base for e in await self.endpoints()):
            return None
        try:
            reply = await self.runtime.http.get(base + "/api/version", timeout=LOCAL_PROBE_TIMEOUT)
            version = reply.json().get("version", "") if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return None if version is None else {"base_url": base, "version": str(version)}

    async def exchange_signin_code(self, url: str, payload: dict[str, str], provider: str) -> str:
        """A provider sign-in's code exchanged for its key (OAuth PKCE): the key,
        or one `UserError` saying what went wrong, never the key in it."""
        self.check_allowed()
        try:
            reply = await self.runtime.http.post(url, json=payload, timeout=SIGNIN_EXCHANGE_TIMEOUT)
        except httpx.HTTPError as exc:
            raise UserError(f"could not reach {provider} ({type(exc).__name__})") from None
        if reply.status_code != 200:
            raise UserError(f"{provider} refused the code (HTTP {reply.status_code})")
        try:
            key = reply.json().get("key")
        except (ValueError, AttributeError):
            key = None
        if not isinstance(key, str) or not key.strip():
            raise UserError(f"{provider} answered without a key")
        return key
