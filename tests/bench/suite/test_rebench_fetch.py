"""`suite fetch`: SWE-rebench rows from a datasets server, paged, mapped like a
local import, idempotent, and one clear line when the server is out of reach.

The datasets server here is a real HTTP server on loopback answering the
public `/rows` API's shape (features, rows with row_idx and truncated_cells,
num_rows_total; `{"error": ...}` with a 4xx when the dataset is unknown).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from benchwarmers.bench.suite.rebench import import_jsonl
from benchwarmers.bench.suite.rebench_fetch import HF_DATASETS_URL_ENV, fetch_tasks
from benchwarmers.bench.suite.tasks import load_tasks
from benchwarmers.cli.main import app
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from tests.serving import free_port

DATASET = "acme/SWE-rebench"
ROWS = 150  # two pages of the API's 100


def rebench_row(i: int) -> dict[str, Any]:
    return {
        "instance_id": f"acme__pkg-{i}",
        "repo": "acme/pkg",
        "base_commit": f"{i:040x}",
        "problem_statement": f"Bug {i}: run() crashes on an empty list.",
        "hints_text": "",
        # Every tenth row has no patch: it makes no task.
        "patch": "" if i % 10 == 9 else f"diff --git a/pkg/m{i}.py b/pkg/m{i}.py\n--- a/pkg/m{i}.py\n",
        "test_patch": f"diff --git a/tests/test_m{i}.py b/tests/test_m{i}.py\n",
        "FAIL_TO_PASS": [f"tests/test_m{i}.py::test_empty"],
        "PASS_TO_PASS": [],
        "created_at": "2025-01-02T03:04:05",
        "version": "1.0",
    }


TRUNCATED = 7  # the server cut this row's patch: its file list would be wrong
USABLE = [i for i in range(ROWS) if i % 10 != 9 and i != TRUNCATED]


class FakeDatasetsServer:
    """The rows endpoint of datasets-server.huggingface.co, over real HTTP."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, int]] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def rows(self, request: Request) -> JSONResponse:
        query = request.query_params
        if (
            query.get("dataset") != DATASET
            or query.get("config") != "default"
            or query.get("split") != "test"
        ):
            return JSONResponse(
                {"error": "The dataset does not exist, or is not accessible."}, status_code=404
            )
        offset, length = int(query["offset"]), int(query["length"])
        if length > 100:
            return JSONResponse({"error": "Parameter 'length' must not be greater than 100"}, status_code=422)
        self.requests.append((offset, length))
        page = [
            {
                "row_idx": i,
                "row": rebench_row(i),
                "truncated_cells": ["patch"] if i == TRUNCATED else [],
            }
            for i in range(offset, min(offset + length, ROWS))
        ]
        features = [{"feature_idx": n, "name": name} for n, name in enumerate(rebench_row(0))]
        return JSONResponse(
            {
                "features": features,
                "rows": page,
                "num_rows_total": ROWS,
                "num_rows_per_page": 100,
                "partial": False,
            }
        )

    def __enter__(self) -> FakeDatasetsServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        asgi = Starlette(routes=[Route("/rows", self.rows)])
        config = uvicorn.Config(asgi, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        started = threading.Event()
        while not self._server.started:
            assert self._thread.is_alive(), "the fake datasets server did not start"
            started.wait(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=5)


@pytest.fixture(scope="module")
def datasets_server() -> Iterator[FakeDatasetsServer]:
    with FakeDatasetsServer() as server:
        yield server


@pytest.fixture
def hub(datasets_server: FakeDatasetsServer, monkeypatch: pytest.MonkeyPatch) -> FakeDatasetsServer:
    datasets_server.requests.clear()
    monkeypatch.setenv(HF_DATASETS_URL_ENV, datasets_server.url + "/")
    return datasets_server


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


async def test_fetch_pages_maps_and_writes(runtime: Runtime, hub: FakeDatasetsServer) -> None:
    seen: list[tuple[int, int]] = []
    fetched = await fetch_tasks(
        runtime.http, runtime.home, dataset=DATASET, limit=500, progress=lambda d, t: seen.append((d, t))
    )
    # Two pages; the second asks only for what is left of the split.
    assert hub.requests == [(0, 100), (100, 100)]
    assert seen == [(100, 150), (150, 150)]
    assert (fetched.new, fetched.already, fetched.skipped, fetched.available) == (len(USABLE), 0, 16, ROWS)
    assert fetched.path == runtime.home / "tasks" / "rebench-hub-acme-SWE-rebench-test.json"

    tasks = {t.id: t for t in load_tasks(runtime.home) if t.id.startswith("rebench-")}
    assert sorted(tasks) == sorted(f"rebench-acme__pkg-{i}" for i in USABLE)
    task = tasks["rebench-acme__pkg-12"]
    # The local importer's mapping: the same checker, meta and prompt.
    assert (task.role, task.shape, task.source) == ("code", "code", "user")
    assert task.checker["kind"] == "patch_tests" and task.checker["files"] == {}  # no code fetched
    assert task.checker["fail_to_pass"] == ["tests/test_m12.py::test_empty"]
    assert task.meta["fail_to_pass"] == ["tests/test_m12.py::test_empty"]
    assert "Bug 12" in task.prompt and "acme/pkg" in task.prompt and "test_m12" not in task.prompt


async def test_fetch_limit_offset_and_idempotency(runtime: Runtime, hub: FakeDatasetsServer) -> None:
    first = await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, offset=95, limit=10)
    assert hub.requests == [(95, 10)]  # limit caps the page
    assert (first.new, first.already, first.skipped) == (9, 0, 1)  # row 99 has no patch
    written = first.path.read_text()

    again = await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, offset=95, limit=10)
    assert (again.new, again.already) == (0, 9)
    assert first.path.read_text() == written  # nothing rewritten, nothing doubled

    # A later slice goes to the same file; a wider one adds only the rows not seen yet.
    more = await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, offset=105, limit=5)
    assert (more.new, more.already, more.skipped, more.path) == (4, 0, 1, first.path)
    wider = await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, offset=90, limit=25)
    assert hub.requests[-1] == (90, 25)
    assert (wider.new, wider.already, wider.skipped) == (10, 13, 2)
    ids = [t["id"] for t in json.loads(first.path.read_text())]
    assert len(ids) == len(set(ids)) == 23


async def test_rows_imported_locally_are_not_fetched_again(
    runtime: Runtime, hub: FakeDatasetsServer, tmp_path: Path
) -> None:
    local = tmp_path / "mine.jsonl"
    local.write_text(json.dumps(rebench_row(0)) + "\n")
    await import_jsonl(local, runtime.home)
    fetched = await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, limit=3)
    assert (fetched.new, fetched.already) == (2, 1)
    assert sum(t.id == "rebench-acme__pkg-0" for t in load_tasks(runtime.home)) == 1


async def test_fetch_errors_are_one_clear_line(
    runtime: Runtime, hub: FakeDatasetsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UserError, match="does not exist") as refused:
        await fetch_tasks(runtime.http, runtime.home, dataset="nobody/nothing")
    assert "HTTP 404" in str(refused.value)
    with pytest.raises(UserError, match="has 150 rows: none at offset 150"):
        await fetch_tasks(runtime.http, runtime.home, dataset=DATASET, offset=150)

    offline = closed_port_url()
    monkeypatch.setenv(HF_DATASETS_URL_ENV, offline)
    with pytest.raises(UserError) as unreachable:
        await fetch_tasks(runtime.http, runtime.home, dataset=DATASET)
    message = str(unreachable.value)
    assert message.startswith(f"could not reach {offline}") and "`suite import`" in message
    assert "\n" not in message
    assert not (runtime.home / "tasks").exists()


def test_suite_fetch_from_the_cli(
    home: Path, hub: FakeDatasetsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["suite", "fetch", "--dataset", DATASET, "--limit", "150"])
    assert result.exit_code == 0, result.output
    assert "150/150" in result.output  # the progress bar, done
    assert f"Fetched {len(USABLE)} new tasks into" in result.output and "16 rows skipped" in result.output
    again = runner.invoke(app, ["suite", "fetch", "--dataset", DATASET, "-n", "20", "--offset", "0"])
    assert again.exit_code == 0, again.output
    assert "Fetched 0 new tasks (17 already imported, 3 rows skipped)" in again.output
    ids = {t.id for t in load_tasks(home)}
    assert "rebench-acme__pkg-148" in ids and "rebench-acme__pkg-149" not in ids

    monkeypatch.setenv(HF_DATASETS_URL_ENV, closed_port_url())
    offline = runner.invoke(app, ["suite", "fetch"])
    assert offline.exit_code != 0
    assert "could not reach" in offline.output and "suite import" in offline.output
    assert "Traceback" not in offline.output
