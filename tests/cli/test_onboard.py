"""`benchwarmers onboard` and `benchwarmers probe` from a terminal."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.testing.script import RateLimit


def add_fake_endpoint(home: Path, fake: FakeProvider) -> None:
    async def work() -> None:
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "fake", fake.openai_base, "openai", needs_key=False)

    asyncio.run(work())


def test_onboard_quick_ad_hoc_then_probe(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("vendor/Model-X")
    add_fake_endpoint(home, fake_provider)
    runner = CliRunner()
    result = runner.invoke(
        app, ["onboard", "vendor/Model-X", "--endpoint", "fake", "--ad-hoc", "--role", "code"]
    )
    assert result.exit_code == 0, result.output
    assert "model-x is available" in result.output and "100%" in result.output
    assert fake_provider.calls["vendor/Model-X"] == 4

    # The daily pass leaves the ad hoc model alone; probing it by name asks it once.
    result = runner.invoke(app, ["probe"])
    assert result.exit_code == 0 and "Nothing to probe" in result.output
    result = runner.invoke(app, ["probe", "model-x"])
    assert result.exit_code == 0, result.output
    assert "1 probed, 0 retired" in result.output
    assert fake_provider.calls["vendor/Model-X"] == 5


def test_probe_over_the_bench_shows_progress_and_rests_rate_limited_models(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("steady")
    add_fake("busy", rate_limit=RateLimit("retry-after", retry=30))
    add_fake_endpoint(home, fake_provider)

    async def bench() -> None:
        async with Runtime.open(home=home) as rt:
            for name in ("steady", "busy"):
                await add_model(rt.store, name, "fake", name)

    asyncio.run(bench())
    result = CliRunner().invoke(app, ["probe"])
    assert result.exit_code == 0, result.output
    assert "2/2" in result.output  # the bar, at its end
    assert "busy rests, not retired" in result.output
    assert "2 probed, 0 retired, 0 back, 1 resting (rate limited)" in result.output


def test_onboarding_a_rate_limited_model_keeps_it_resting_not_removed(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("walled", rate_limit=RateLimit("retry-after", retry=3600))
    add_fake_endpoint(home, fake_provider)
    result = CliRunner().invoke(app, ["onboard", "walled", "--endpoint", "fake", "--quick"])
    assert result.exit_code == 0, result.output
    assert "walled is resting: rate limited until" in result.output
    assert "runs it again once the limit frees" in result.output
    assert fake_provider.calls["walled"] == 1

    async def kept() -> str:
        async with Runtime.open(home=home) as rt:
            return (await get_model(rt.store, "walled")).status

    assert asyncio.run(kept()) == "resting"


def test_onboard_errors_are_one_line(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake_endpoint(home, fake_provider)
    runner = CliRunner()
    result = runner.invoke(app, ["onboard", "m", "--endpoint", "elsewhere", "--quick"])
    assert result.exit_code != 0 and "no endpoint named 'elsewhere'" in result.output
    add_fake("down", error=FakeError(status=500))
    result = runner.invoke(app, ["onboard", "down", "--endpoint", "fake", "--quick"])
    assert result.exit_code == 1 and "did not answer" in result.output and "--keep" in result.output
    result = runner.invoke(app, ["onboard", "down", "--endpoint", "fake", "--quick", "--keep"])
    assert result.exit_code == 0, result.output
    assert "down is unavailable" in result.output


def test_a_providers_escape_sequences_reach_the_terminal_as_marks(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    """A provider's error went raw into onboard's progress lines and its
    one-line error: `ESC]52` writes the reader's clipboard in many terminals,
    `ESC[2J` clears the screen. Each control character now shows as a mark."""
    add_fake_endpoint(home, fake_provider)
    add_fake("evil", error=FakeError(status=400, message="nope \x1b]52;c;cm0gLXJm\x07 \x1b[2J"))
    runner = CliRunner()
    refused = runner.invoke(app, ["onboard", "evil", "--endpoint", "fake", "--quick"])
    kept = runner.invoke(app, ["onboard", "evil", "--endpoint", "fake", "--quick", "--keep"])
    assert (refused.exit_code, kept.exit_code) == (1, 0), kept.output
    for shown in (refused.output, kept.output):
        assert "\x1b" not in shown and "\x07" not in shown
        assert "nope ⟨U+001B⟩]52;c;cm0gLXJm⟨U+0007⟩ ⟨U+001B⟩[2J" in shown


def test_onboard_beside_a_running_server_lets_the_server_work_it(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    from benchwarmers.testing.live_server import live_server

    add_fake("shared")
    add_fake_endpoint(home, fake_provider)
    with live_server(home):
        result = CliRunner().invoke(app, ["onboard", "shared", "--endpoint", "fake", "--quick"])
    assert result.exit_code == 0, result.output
    assert "shared is available" in result.output
    assert fake_provider.calls["shared"] == 4  # worked once, by the server's worker
