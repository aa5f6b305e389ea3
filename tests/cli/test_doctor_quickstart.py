"""`benchwarmers doctor`, `benchwarmers quickstart` (driven on standard input
against the fake provider), shell completion and `--json` on every listing,
through the real CLI in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchwarmers.bench import discover
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server

from .test_first_hour import bw, dead_url, given, ok


def free_on_openrouter(scratch: Path) -> list[str]:
    """Three free OpenRouter models Discover knows (from the shipped catalog)."""

    async def look() -> list[str]:
        async with Runtime.open(scratch) as rt:
            await add_endpoint(rt.store, "openrouter", "http://127.0.0.1:9/v1", "openai")
            entries = await discover.discover(rt.store, free_only=True)
        return [e.model for e in entries if "openrouter" in e.reachable][:3]

    return asyncio.run(look())


def lines(text: str) -> list[str]:
    return [row for row in text.splitlines() if row.strip()]


def test_doctor_says_what_is_wrong_and_how_to_fix_it(fake_provider: FakeProvider, home: Path) -> None:
    with ThreadPoolExecutor(1) as beside:  # a folder of its own: it runs while the bench is set up
        asking = beside.submit(bw, "doctor", BENCHWARMERS_HOME=str(home / "nowhere"), url=dead_url())
        _doctor_on_a_bench(fake_provider, home)
        missing = asking.result()
    assert missing.returncode == 1
    assert lines(missing.stdout)[0].startswith(
        f"✗ data folder: {home / 'nowhere'} does not exist → benchwarmers init"
    )


def _doctor_on_a_bench(fake_provider: FakeProvider, home: Path) -> None:
    fake_provider.add(FakeModel("m1", answer="ready"))
    given("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
    given("model", "add", "m1", "-e", "hub", "-s", "m1")
    given("endpoint", "add", "locked", fake_provider.openai_base)
    with live_server(home) as server:
        done = bw("doctor", url=server.url, BENCHWARMERS_KEY_LOCKED="sk-never-shown-42")
        assert done.returncode == 0, done.stdout
        shown = lines(done.stdout)
        assert all(row.startswith("✓ ") for row in shown), shown
        assert any(row.startswith("✓ store (SQLite):") and "at the newest schema" in row for row in shown)
        assert f"✓ endpoint hub: {fake_provider.openai_base} reached, 1 models listed; no key needed" in shown
        assert any("endpoint locked" in row and "key from BENCHWARMERS_KEY_LOCKED" in row for row in shown)
        assert "sk-never-shown-42" not in done.stdout + done.stderr
        assert "✓ models: 1 on the bench (1 available)" in shown
        assert f"✓ server: answers at {server.url}, on the data folder {home}" in shown

    url = dead_url()
    red = bw("doctor", url=url, BENCHWARMERS_REDIS_URL="redis://127.0.0.1:1/0")
    assert red.returncode == 1
    shown = lines(red.stdout)
    assert any(
        row.startswith("✗ endpoint locked:")
        and "key missing" in row
        and "→ benchwarmers endpoint key set locked" in row
        for row in shown
    ), shown
    assert f"✗ server: nothing answers at {url} → benchwarmers serve, or set BENCHWARMERS_URL" in shown
    assert any(row.startswith("✗ Redis: redis://127.0.0.1:1/0") for row in shown)


def test_quickstart_with_a_pasted_key(fake_provider: FakeProvider, tmp_path: Path) -> None:
    free = free_on_openrouter(tmp_path / "scratch")
    fake_provider.key = "sk-quick-7"
    for served in [*free, "paid/model"]:
        fake_provider.add(FakeModel(served, answer="ready"))
    answers = f"openrouter\n{fake_provider.openai_base}\n\nsk-quick-7\n\npanel\n"
    done = bw("quickstart", "--ollama", dead_url(), input=answers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sk-quick-7" not in done.stdout + done.stderr
    assert json.loads((tmp_path / "llm" / "keys.json").read_text())["openrouter"] == "sk-quick-7"
    assert "Free models on openrouter:" in done.stdout and "paid/model" not in done.stdout
    assert "Collection bench/panel seats " in done.stdout
    body = '{"model": "bench/panel", "messages": [{"role": "user", "content": "Why is the sky blue?"}]}'
    assert (
        f"  curl -s http://127.0.0.1:8122/v1/chat/completions -H 'content-type: application/json' -d '{body}'"
        in done.stdout.splitlines()
    )
    assert 'OpenAI(base_url="http://127.0.0.1:8122/v1"' in done.stdout
    models = json.loads(given("model", "list", "--json"))
    assert sorted(m["served"] for m in models) == sorted(free)
    assert {m["status"] for m in models} == {"available"}
    (collection,) = json.loads(given("collection", "list", "--json"))
    assert collection["name"] == "panel" and len(collection["members"]) == 3


def test_quickstart_finds_a_local_ollama(fake_provider: FakeProvider) -> None:
    for served in ("llama3.2", "qwen2.5"):
        fake_provider.add(FakeModel(served, answer="ready"))
    done = bw("quickstart", "--ollama", fake_provider.url, input="y\n1 2\nlocal\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"A local Ollama answers at {fake_provider.url}." in done.stdout
    assert "Collection bench/local seats llama3.2, qwen2.5." in done.stdout
    (endpoint,) = json.loads(given("endpoint", "list", "--json"))
    assert (endpoint["name"], endpoint["api"], endpoint["key"]) == ("ollama", "ollama", "not needed")


def test_quickstart_stops_with_one_line_when_nothing_answers() -> None:
    url = dead_url()
    done = bw("quickstart", "--ollama", dead_url(), input=f"hub\n{url}/v1\nopenai\nsk-1\n")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: hub at {url}/v1 did not list its models")


def test_completion_installs_and_every_listing_has_json(fake_provider: FakeProvider) -> None:
    # The installed script, as a shell runs it (its name is what completion is keyed on).
    script = str(Path(sys.executable).parent / "benchwarmers")
    # The shell named outright: typer otherwise detects it from the parent
    # processes, which differ between a terminal, CI and an agent's shell.
    named = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    completion = {"COMP_WORDS": "benchwarmers endpoint k", "COMP_CWORD": "2"}
    with ThreadPoolExecutor(2) as side_by_side:  # two reads of the same script
        showing = side_by_side.submit(
            subprocess.run,
            [script, "--show-completion", "bash"],
            env=named,
            capture_output=True,
            text=True,
            timeout=60,
        )
        completing = side_by_side.submit(
            subprocess.run,
            [script],
            env={**os.environ, **completion, "_BENCHWARMERS_COMPLETE": "complete_bash"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        shown, completed = showing.result(), completing.result()
    assert shown.returncode == 0 and "_BENCHWARMERS_COMPLETE=complete_bash" in shown.stdout
    assert completed.stdout.split() == ["key"]

    given("endpoint", "add", "hub", fake_provider.openai_base)
    listed = json.loads(ok("endpoint", "list", "--json"))
    assert listed[0]["name"] == "hub" and listed[0]["key"] == "missing"
    for command in (
        ["model", "list"],
        ["collection", "list"],
        ["key", "list"],
        ["settings", "list"],
        ["limit", "list"],
        ["suite", "list"],
    ):
        assert isinstance(json.loads(given(*command, "--json")), list), command
    assert set(json.loads(given("quotas", "--json"))) >= {"quotas", "usage"}
