"""Tests mirror modules: each source module `src/benchwarmers/<path>.py` has
its test module `tests/<dir>/test_<name>.py`, or a line in the index below
saying which tests cover it (a module exercised through a public face, a
CLI command or a route, is tested there: the index names where). A new
module with neither fails here, so does an index line whose test is gone or
whose module now has its own test module (take the line off).

The first place to look for a module's tests is its mirror; the index is
for the rest, kept honest by this test."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "benchwarmers"

# module (under src/benchwarmers) -> the test modules that cover it.
COVERED_BY: dict[str, tuple[str, ...]] = {
    "limits/budget_spend.py": ("tests/limits/test_spending.py", "tests/limits/test_spending_concurrency.py"),
    "core/spend.py": ("tests/calls/test_usage.py",),
    "store/prices.py": ("tests/calls/test_cost.py", "tests/bench/test_catalog.py"),
    "api_client.py": ("tests/cli/test_ask.py", "tests/mcp/test_remote.py"),
    "assembly.py": ("tests/server/test_access.py", "tests/test_imports.py"),
    "bench/discover.py": ("tests/bench/test_catalog.py",),
    "bench/evidence.py": ("tests/bench/test_decisions.py", "tests/bench/test_scale.py"),
    "bench/explain.py": ("tests/bench/test_decisions.py", "tests/server/routes/test_decisions.py"),
    "bench/facts.py": ("tests/bench/test_decisions.py", "tests/bench/test_explorers.py"),
    "bench/forgetting.py": ("tests/bench/test_decider.py",),
    "bench/leases.py": ("tests/bench/test_lease.py",),
    "bench/pair_reads.py": ("tests/bench/test_decisions.py", "tests/bench/test_leaderboard.py"),
    "bench/probes.py": ("tests/bench/test_onboarding.py", "tests/bench/test_scheduler.py"),
    "bench/revive.py": ("tests/calls/test_health.py",),
    "bench/seated.py": ("tests/bench/test_scale.py", "tests/bench/test_decisions.py"),
    "bench/suite/harness.py": ("tests/bench/suite/test_runner.py", "tests/bench/suite/test_checkers.py"),
    "calls/call_ids.py": ("tests/calls/test_log.py", "tests/calls/test_pairs.py"),
    "calls/reach.py": ("tests/bench/test_explorers.py",),
    "calls/reads.py": ("tests/calls/test_log.py",),
    "cli/collections.py": ("tests/cli/test_main.py", "tests/cli/test_first_hour.py"),
    "cli/context.py": ("tests/limits/test_quotas.py",),
    "cli/doctor.py": ("tests/cli/test_doctor_quickstart.py",),
    "cli/endpoints.py": ("tests/cli/test_main.py", "tests/cli/test_first_day.py"),
    "cli/errors.py": ("tests/cli/test_main.py", "tests/cli/test_first_hour.py"),
    "cli/fake_provider.py": ("tests/testing/test_fake_provider.py",),
    "cli/help.py": ("tests/cli/test_docs.py",),
    "cli/init.py": ("tests/cli/test_first_hour.py",),
    "cli/keys.py": ("tests/cli/test_keys_serve.py", "tests/server/test_keys.py"),
    "cli/limits.py": ("tests/cli/test_settings.py", "tests/limits/test_quotas.py"),
    "cli/mcp.py": ("tests/mcp/test_stdio.py",),
    "cli/model_show.py": ("tests/cli/test_main.py",),
    "cli/models.py": ("tests/cli/test_main.py", "tests/bench/test_retirement.py"),
    "cli/quickstart.py": ("tests/cli/test_doctor_quickstart.py",),
    "cli/serve.py": ("tests/cli/test_serve_loopback.py",),
    "client_env.py": ("tests/config/test_environment.py",),
    "core/admin.py": ("tests/providers/test_kinds.py", "tests/cli/test_main.py"),
    "core/diagnostics.py": ("tests/server/routes/test_full_disk.py",),
    "core/login.py": ("tests/dashboard/test_door.py",),
    "core/routing.py": ("tests/route/test_engine.py", "tests/route/test_failover.py"),
    "core/services.py": ("tests/core/test_panels.py", "tests/cli/test_main.py"),
    "core/settings.py": ("tests/server/test_settings_route.py", "tests/cli/test_settings.py"),
    "dashboard/auth.py": ("tests/dashboard/test_browser_judging.py", "tests/dashboard/test_units.py"),
    "dashboard/chart.py": ("tests/dashboard/test_units.py",),
    "dashboard/fields.py": ("tests/dashboard/test_units.py",),
    "dashboard/pages.py": ("tests/dashboard/test_door.py", "tests/dashboard/test_browser.py"),
    "dashboard/signin.py": ("tests/dashboard/test_units.py",),
    "errors.py": ("tests/limits/test_scope.py", "tests/limits/test_limiter.py"),
    "formats/anthropic.py": ("tests/formats/test_translators.py",),
    "formats/anthropic_route.py": ("tests/route/test_rendering.py",),
    "formats/builtin.py": ("tests/formats/test_registry.py",),
    "formats/errors.py": ("tests/formats/test_registry.py",),
    "formats/gemini.py": ("tests/formats/test_translators.py",),
    "formats/gemini_route.py": (
        "tests/route/test_gemini_ollama_agents.py",
        "tests/route/test_strict_types.py",
    ),
    "formats/ollama.py": ("tests/formats/test_translators.py",),
    "formats/ollama_route.py": ("tests/route/test_rendering.py", "tests/route/test_gemini_ollama_agents.py"),
    "formats/openai_chat.py": ("tests/route/test_conversation.py",),
    "formats/openai_route.py": ("tests/route/test_rendering.py",),
    "formats/responses.py": ("tests/formats/test_translators.py",),
    "formats/responses_route.py": ("tests/route/test_responses_agent.py", "tests/route/test_strict_types.py"),
    "identity/passwords.py": ("tests/server/test_settings_route.py", "tests/cli/test_settings.py"),
    "identity/scope.py": ("tests/server/test_keys.py",),
    "limits/enforce.py": ("tests/limits/test_limiter.py", "tests/limits/test_quotas.py"),
    "limits/ledger.py": ("tests/limits/test_limiter.py", "tests/limits/test_quotas.py"),
    "limits/panels.py": ("tests/server/routes/test_panel_caps.py",),
    "limits/rest.py": ("tests/limits/test_limiter.py",),
    "limits/user_limits.py": ("tests/limits/test_limiter.py", "tests/limits/test_quotas.py"),
    "mcp/backend.py": ("tests/mcp/test_remote.py",),
    "mcp/server.py": ("tests/agents/test_claude_code.py",),
    "mcp/transcript.py": ("tests/mcp/test_transcript_guard.py", "tests/mcp/test_stdio.py"),
    "metrics.py": ("tests/server/test_hot.py", "tests/config/test_environment.py"),
    "panel/history.py": ("tests/panel/test_costs.py",),
    "panel/merge.py": ("tests/panel/test_rules.py",),
    "panel/merger.py": ("tests/panel/test_structured.py", "tests/panel/test_quorum.py"),
    "panel/plan.py": ("tests/calls/test_health.py", "tests/panel/test_structured.py"),
    "panel/seating.py": ("tests/panel/test_rules.py",),
    "panel/seats.py": ("tests/panel/test_engine.py", "tests/panel/test_pace.py"),
    "providers/base.py": ("tests/providers/test_memory.py", "tests/providers/test_outbound.py"),
    "providers/sse.py": ("tests/providers/test_transport.py",),
    "route/members.py": ("tests/route/test_engine.py", "tests/route/test_failover.py"),
    "route/record.py": ("tests/route/test_shadow.py", "tests/route/test_engine.py"),
    "runtime.py": ("tests/test_demo.py",),
    "server/app.py": ("tests/server/test_hot.py", "tests/server/test_access.py"),
    "server/deps.py": ("tests/server/test_hot.py", "tests/server/test_shutdown.py"),
    "server/json_response.py": ("tests/server/test_hot.py",),
    "server/protocol.py": ("tests/server/test_slow_clients.py",),
    "server/route_mode.py": ("tests/route/test_rendering.py", "tests/route/test_failover.py"),
    "server/routes/anthropic.py": ("tests/formats/test_clients.py", "tests/server/routes/test_gateway.py"),
    "server/routes/gemini.py": ("tests/formats/test_clients.py", "tests/server/routes/test_ops.py"),
    "server/routes/health.py": ("tests/server/test_hot.py", "tests/server/test_metrics_guard.py"),
    "server/routes/inbound.py": ("tests/formats/test_registry.py",),
    "server/routes/metrics.py": ("tests/server/test_metrics_guard.py",),
    "server/routes/ollama.py": ("tests/formats/test_clients.py", "tests/route/test_gemini_ollama_agents.py"),
    "server/routes/openai_chat.py": ("tests/server/routes/test_gateway.py", "tests/panel/test_http.py"),
    "server/routes/quotas.py": ("tests/limits/test_quotas.py", "tests/server/routes/test_bench_api.py"),
    "server/routes/responses.py": (
        "tests/route/test_strict_types.py",
        "tests/server/routes/test_disconnect.py",
    ),
    "server/routes/settings.py": ("tests/server/test_settings_route.py",),
    "server/run.py": ("tests/cli/test_serve_workers.py", "tests/cli/test_keys_serve.py"),
    "server/streaming.py": ("tests/server/routes/test_full_disk.py", "tests/route/test_rendering.py"),
    "store/call_rows.py": ("tests/calls/test_log_postgres.py",),
    "store/migrate.py": ("tests/store/test_migrations.py",),
    "store/schema.py": ("tests/store/test_migrations.py", "tests/store/test_journal.py"),
    "store/space.py": ("tests/server/routes/test_full_disk.py",),
    "store/views.py": ("tests/store/test_models.py", "tests/store/test_times.py"),
    "testing/fake_oauth.py": ("tests/dashboard/test_door.py",),
    "testing/kept_asks.py": ("tests/dashboard/test_api.py",),
    "testing/hostile.py": ("tests/server/test_stalled_readers.py", "tests/providers/test_wire_fuzz.py"),
    "testing/prompt_server.py": ("tests/testing/test_live_server.py", "tests/server/test_slow_clients.py"),
    "testing/pytest_plugin.py": ("tests/testing/test_fake_provider.py",),
    "testing/script.py": ("tests/testing/test_fake_provider.py",),
    "testing/sdk_types.py": ("tests/route/test_gemini_ollama_agents.py", "tests/route/test_strict_types.py"),
    "testing/store_template.py": ("tests/calls/test_log.py", "tests/store/test_journal.py"),
    "testing/wire.py": ("tests/providers/test_adapters_offline.py",),
    "types.py": ("tests/limits/test_scope.py", "tests/limits/test_limiter.py"),
}


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name != "__init__.py" and "migrations" not in path.parts
    )


def _mirror(module: str) -> Path:
    path = Path(module)
    return ROOT / "tests" / path.parent / f"test_{path.name}"


def test_every_module_has_its_test_module_or_an_index_line() -> None:
    untested = [m for m in _modules() if not _mirror(m).exists() and m not in COVERED_BY]
    assert untested == [], "give each a tests/<dir>/test_<name>.py, or a COVERED_BY line naming its tests"


def test_the_index_names_only_live_modules_and_tests() -> None:
    modules = set(_modules())
    assert sorted(m for m in COVERED_BY if m not in modules) == []  # a module gone: take its line off
    assert sorted(m for m in COVERED_BY if _mirror(m).exists()) == []  # it has its own tests now
    missing = sorted(t for tests in COVERED_BY.values() for t in tests if not (ROOT / t).is_file())
    assert missing == []
