"""`serve --demo`: a simulated bench that answers a panel with no key."""

from __future__ import annotations

import os
import re
from pathlib import Path

import openai

from benchwarmers.core import Admin
from benchwarmers.demo import ALIASES, COLLECTION, ENDPOINT, seed, simulated_models
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import get_collection
from benchwarmers.store.endpoints import list_endpoints
from benchwarmers.store.models import list_models
from benchwarmers.testing import FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.serving import served


async def test_seed_labels_everything_simulated(runtime: Runtime) -> None:
    await seed(Admin(runtime), "http://127.0.0.1:9/v1")
    (endpoint,) = await list_endpoints(runtime.store)
    assert endpoint.name == ENDPOINT and endpoint.simulated and not endpoint.needs_key
    models = await list_models(runtime.store)
    assert {m.alias for m in models} == {"sim-fast", "sim-steady", "sim-slow"}
    assert all(m.simulated for m in models)
    collection = await get_collection(runtime.store, COLLECTION)
    assert set(collection.members) == set(ALIASES.values()) and "simulated" in collection.purpose


def test_the_demo_bench_answers_a_panel(home: Path) -> None:
    with FakeProvider(simulated_models(pace=0.1)) as fake:

        async def prepare() -> None:
            async with Runtime.open(home) as runtime:
                await seed(Admin(runtime), fake.openai_base)

        import asyncio

        asyncio.run(prepare())
        with live_server(home) as server:
            client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="demo", max_retries=0)
            reply = client.chat.completions.create(
                model="bench/demo", messages=[{"role": "user", "content": "Is a hot dog a sandwich?"}]
            )
    text = reply.choices[0].message.content
    for label in ("simulated fast model", "simulated steady model", "simulated slow model"):
        assert label in text
    seats = reply.model_extra["bench"]["seats"]
    assert [s["alias"] for s in seats] == ["sim-fast", "sim-steady", "sim-slow"]
    assert all(s["status"] == "ok" for s in seats)


def test_serve_demo_starts_explains_and_cleans_up(tmp_path: Path) -> None:
    with served("--demo", log=tmp_path / "serve.log", env={**os.environ, "COLUMNS": "300"}) as child:
        port = child.port
    output = child.output()
    assert "SIMULATED" in output and "bench/demo" in output
    assert f"curl -s http://127.0.0.1:{port}/v1/chat/completions" in output
    assert "from openai import OpenAI" in output
    folder = re.search(r"(/\S*benchwarmers-demo-\w+)", output).group(1)
    assert not Path(folder).exists()
