"""THE CORE API: the services every front end (HTTP routes, the dashboard's
JSON routes, MCP, the CLI) answers through. Each takes the open runtime and
the identity calling, and enforces its own access rule:

- `Panels`: collections an identity may call, panels, verdicts, records,
  pending seats, decisions (`panels.py`);
- `RouteMode`: route-mode turns (`routing.py`);
- `Admin`: endpoints and their keys, models, collections, gateway keys,
  limits, quotas, settings (`admin.py`);
- `Spend`: what the calls cost, by key, collection, model or day (`spend.py`);
- `Operations`: onboarding queue, probes, retire/restore, roles, the
  scheduler, the suite, a model's report (`operations.py`).

`Core` bundles the five for one identity over one runtime (`Core.open()`
in a command). `CoreHandle` is the core as a server holds it: opened once by
the composition root, it hands out the services per request's identity,
the dashboard's login (`CoreHandle.login`) and `/healthz`'s check. A front end
imports this package, `formats` and `types` (and `errors`) only, and never
holds the runtime: the values it needs from below (an identity, the views
the services return) are re-exported here, and no store row nor the
`Runtime` is (`tests/core/test_views.py`). docs/architecture.md lists
every method.
"""

from benchwarmers.bench.evidence import SHAPES as DECISION_SHAPES
from benchwarmers.bench.explain import Standings
from benchwarmers.bench.onboarding import MODES as ONBOARDING_MODES
from benchwarmers.bench.onboarding import OnboardRequest, mode_for
from benchwarmers.bench.retirement import HealthReport
from benchwarmers.bench.suite.rebench_fetch import DEFAULT_DATASET, DEFAULT_LIMIT, DEFAULT_SPLIT, Fetched
from benchwarmers.bench.suite.runner import SuiteRun
from benchwarmers.bench.suite.sandbox import unavailable as sandbox_unavailable
from benchwarmers.bench.suite.tasks import SHAPES as SUITE_SHAPES
from benchwarmers.calls.call_ids import CALL_ID_PREFIX
from benchwarmers.calls.pairs import checked_verdict_body, verdict_body
from benchwarmers.calls.verdicts import Recorded, check_verdict_body
from benchwarmers.config import environment, tunables
from benchwarmers.config.home import (
    HOME_ENV,
    POINTER_FILE,
    ensure_home,
    home_and_source,
    resolve_home,
    write_pointer,
)
from benchwarmers.core.admin import (
    Admin,
    api_kinds,
    check_collection_name,
    check_endpoint,
    check_endpoint_key,
    check_scope,
    default_base_url,
    endpoint_key_source,
    endpoint_key_variable,
    needs_key_by_default,
    set_endpoint_key,
)
from benchwarmers.core.diagnostics import Check, diagnose, local_store, url_hint
from benchwarmers.core.handle import CoreHandle
from benchwarmers.core.login import LoginPolicy
from benchwarmers.core.operations import (
    Operations,
    import_tasks,
    onboard_requests,
    suite_tasks,
)
from benchwarmers.core.panels import Panels, collection_entry, finish_background
from benchwarmers.core.routing import AGENT_SESSION_HEADERS, CONVERSATION_HEADER, RouteMode, RouteTurn
from benchwarmers.core.services import Core
from benchwarmers.core.settings import LOGIN_PASSWORD, SettingRow
from benchwarmers.core.spend import USAGE_BY, Spend, usd_text
from benchwarmers.core.views import (
    OnboardingView,
    ProbeView,
    endpoint_json,
    key_label,
    model_json,
    probe_json,
)
from benchwarmers.identity.expiry import parse_expiry
from benchwarmers.identity.expiry import show as show_moment
from benchwarmers.identity.keys import KeyInfo
from benchwarmers.identity.scope import NOBODY, OWNER, Identity
from benchwarmers.limits.budgets import CURRENCIES as BUDGET_CURRENCIES
from benchwarmers.limits.budgets import PERIODS as BUDGET_PERIODS
from benchwarmers.limits.budgets import SCOPES as BUDGET_SCOPES
from benchwarmers.limits.budgets import parse_tokens as parse_budget_tokens
from benchwarmers.limits.budgets import parse_usd as parse_budget_usd
from benchwarmers.limits.quotas import Exhausted, Quota, QuotasView, exhausted
from benchwarmers.limits.quotas import as_json as quotas_json
from benchwarmers.limits.spending import BudgetStatus, money
from benchwarmers.limits.spending import status_json as budget_json
from benchwarmers.limits.user_limits import KINDS as LIMIT_KINDS
from benchwarmers.limits.user_limits import UserLimit
from benchwarmers.store.collections import ON_CUT, OUTPUT_FALLBACKS, PROMOTIONS
from benchwarmers.store.db import sqlite_url
from benchwarmers.store.times import iso_utc, utc
from benchwarmers.store.views import CollectionView, EndpointView, ModelView

__all__ = [
    "AGENT_SESSION_HEADERS",
    "BUDGET_CURRENCIES",
    "BUDGET_PERIODS",
    "BUDGET_SCOPES",
    "CALL_ID_PREFIX",
    "CONVERSATION_HEADER",
    "DECISION_SHAPES",
    "DEFAULT_DATASET",
    "DEFAULT_LIMIT",
    "DEFAULT_SPLIT",
    "HOME_ENV",
    "LIMIT_KINDS",
    "LOGIN_PASSWORD",
    "NOBODY",
    "ONBOARDING_MODES",
    "ON_CUT",
    "OUTPUT_FALLBACKS",
    "OWNER",
    "POINTER_FILE",
    "PROMOTIONS",
    "SUITE_SHAPES",
    "USAGE_BY",
    "Admin",
    "BudgetStatus",
    "Check",
    "CollectionView",
    "Core",
    "CoreHandle",
    "EndpointView",
    "Exhausted",
    "Fetched",
    "HealthReport",
    "Identity",
    "KeyInfo",
    "LoginPolicy",
    "ModelView",
    "OnboardRequest",
    "OnboardingView",
    "Operations",
    "Panels",
    "ProbeView",
    "Quota",
    "QuotasView",
    "Recorded",
    "RouteMode",
    "RouteTurn",
    "SettingRow",
    "Spend",
    "Standings",
    "SuiteRun",
    "UserLimit",
    "api_kinds",
    "budget_json",
    "check_collection_name",
    "check_endpoint",
    "check_endpoint_key",
    "check_scope",
    "check_verdict_body",
    "checked_verdict_body",
    "collection_entry",
    "default_base_url",
    "diagnose",
    "endpoint_json",
    "endpoint_key_source",
    "endpoint_key_variable",
    "ensure_home",
    "environment",
    "exhausted",
    "finish_background",
    "home_and_source",
    "import_tasks",
    "iso_utc",
    "key_label",
    "local_store",
    "mode_for",
    "model_json",
    "money",
    "needs_key_by_default",
    "onboard_requests",
    "parse_budget_tokens",
    "parse_budget_usd",
    "parse_expiry",
    "probe_json",
    "quotas_json",
    "resolve_home",
    "sandbox_unavailable",
    "set_endpoint_key",
    "show_moment",
    "sqlite_url",
    "suite_tasks",
    "tunables",
    "url_hint",
    "usd_text",
    "utc",
    "verdict_body",
    "write_pointer",
]
