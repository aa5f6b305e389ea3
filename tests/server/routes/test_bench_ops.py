"""The bench operations HTTP API, against the real server on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server


def is_utc(stamp: str | None) -> bool:
    """An ISO timestamp that says it is UTC (SQLite hands back naive datetimes)."""
    return stamp is not None and datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


def wait_for_queue(client: httpx.Client, base: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        queue = client.get(f"{base}/bench/ops/queue").json()
        if queue["items"] and all(i["state"] in ("done", "failed") for i in queue["items"]):
            return queue
        time.sleep(0.05)
    raise AssertionError(f"the queue did not finish: {queue}")


async def test_onboard_queue_models_and_scheduler_over_http(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("org/a")
    add_fake("b")
    async with Runtime.open(home=home) as rt:
        await add_endpoint(rt.store, "fake", fake_provider.openai_base, "openai", needs_key=False)

    def scenario() -> None:
        with live_server(home) as server, httpx.Client(timeout=60) as client:
            base = server.url
            answer = client.post(
                f"{base}/bench/ops/onboard",
                json={
                    "endpoint": "fake",
                    "mode": "quick",
                    "models": ["org/a", {"served": "b", "alias": "bee"}],
                },
            )
            assert answer.status_code == 200, answer.text
            assert len(answer.json()["queued"]) == 2
            queue = wait_for_queue(client, base)
            assert [(i["alias"], i["state"], i["progress"]) for i in queue["items"]] == [
                ("a", "done", 1.0),
                ("bee", "done", 1.0),
            ]
            assert fake_provider.calls["org/a"] == 4 and fake_provider.calls["b"] == 4
            for item in queue["items"]:
                assert all(is_utc(item[k]) for k in ("created_at", "started_at", "finished_at")), item

            status = client.get(f"{base}/bench/ops/scheduler").json()
            assert status["enabled"] is False and status["active"] is False
            assert {j["job"] for j in status["jobs"]} == {
                "daily_probe",
                "weekly_speed",
                "daily_catalog",
                "suite_pass",
            }
            switched = client.post(f"{base}/bench/ops/scheduler", json={"enabled": True}).json()
            assert switched["active"] is True and all(is_utc(j["next_run_at"]) for j in switched["jobs"])
            assert (
                client.post(f"{base}/bench/ops/scheduler", json={"enabled": False}).json()["active"] is False
            )

            retired = client.post(f"{base}/bench/ops/models/bee/retire", json={"reason": "testing"}).json()
            assert retired["model"]["status"] == "retired" and retired["model"]["status_reason"] == "testing"
            assert (
                client.post(f"{base}/bench/ops/models/bee/restore").json()["model"]["status"] == "available"
            )
            assert (
                client.post(f"{base}/bench/ops/models/bee/role", json={"role": "code"}).json()["model"][
                    "role"
                ]
                == "code"
            )

            probed = client.post(f"{base}/bench/ops/models/bee/probe").json()
            assert probed["probes"][0]["kind"] == "daily" and probed["probes"][0]["answered"] is True
            assert fake_provider.calls["b"] == 5
            history = client.get(f"{base}/bench/ops/models/bee/probes").json()["probes"]
            assert len(history) == 5 and all(is_utc(p["at"]) for p in [*history, *probed["probes"]])
            assert all(p["answered"] and p["passed"] for p in history)
            ran = client.post(f"{base}/bench/ops/scheduler/run/daily_probe").json()
            assert ran["status"] == "ok" and is_utc(ran["at"])
            jobs = client.get(f"{base}/bench/ops/scheduler").json()["jobs"]
            probe_job = next(j for j in jobs if j["job"] == "daily_probe")
            assert is_utc(probe_job["last_run_at"]) and is_utc(probe_job["next_due_at"])

            discovered = client.get(f"{base}/bench/ops/discover", params={"free": "true"}).json()["models"]
            assert discovered and all(m["free"] or m["free_tier"] for m in discovered)
            assert client.get(f"{base}/bench/ops/alerts").json() == {"alerts": []}

            # Bad input is a clear 4xx, never a 500.
            bad = client.post(
                f"{base}/bench/ops/onboard", json={"endpoint": "fake", "mode": "fast", "models": ["x"]}
            )
            assert bad.status_code == 400 and "mode" in bad.text
            assert (
                client.post(
                    f"{base}/bench/ops/onboard", json={"endpoint": "nope", "models": ["x"]}
                ).status_code
                == 404
            )
            assert client.post(f"{base}/bench/ops/onboard", content=b"{").status_code == 400
            assert client.post(f"{base}/bench/ops/models/ghost/restore").status_code == 404
            assert client.post(f"{base}/bench/ops/scheduler", json={"enabled": "yes"}).status_code == 400
            assert client.post(f"{base}/bench/ops/scheduler/run/nothing").status_code == 404

    await asyncio.to_thread(scenario)


async def test_a_model_already_queued_is_a_409_over_the_gateway(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    """Issue 40 item 18: the same model POSTed twice is queued once."""
    add_fake("slow", latency=2.0)
    async with Runtime.open(home=home) as rt:
        await add_endpoint(rt.store, "fake", fake_provider.openai_base, "openai", needs_key=False)

    def scenario() -> None:
        with live_server(home) as server, httpx.Client(timeout=60) as client:
            ask = {"endpoint": "fake", "mode": "quick", "models": ["slow"]}
            first = client.post(f"{server.url}/bench/ops/onboard", json=ask)
            assert first.status_code == 200, first.text
            again = client.post(f"{server.url}/bench/ops/onboard", json=ask)
            assert again.status_code == 409
            assert "already in the onboarding queue" in again.json()["error"]["message"]
            items = client.get(f"{server.url}/bench/ops/queue").json()["items"]
            assert [i["served"] for i in items] == ["slow"]

    await asyncio.to_thread(scenario)


async def test_an_alias_with_a_dot_dot_part_is_a_400_over_the_gateway(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    """An owner-typed alias that would change an address (`/..`, `?`) is refused before it is
    queued, in the gateway's error body, saying what an alias may hold."""
    add_fake("m1")
    async with Runtime.open(home=home) as rt:
        await add_endpoint(rt.store, "fake", fake_provider.openai_base, "openai", needs_key=False)

    def scenario() -> None:
        with live_server(home) as server, httpx.Client(timeout=60) as client:
            for alias in ("m1/../../ui", "m1?x=1"):
                ask = {"endpoint": "fake", "mode": "quick", "models": [{"served": "m1", "alias": alias}]}
                refused = client.post(f"{server.url}/bench/ops/onboard", json=ask)
                assert refused.status_code == 400, refused.text
                assert "letters, digits and . _ - : / @ +" in refused.json()["error"]["message"]
            assert client.get(f"{server.url}/bench/ops/queue").json()["items"] == []

    await asyncio.to_thread(scenario)
