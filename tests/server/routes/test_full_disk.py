"""A full disk (issue 36, attack 9), on a real 64 MB tmpfs as the data
folder: on 3fd40b0 every ask was answered by its seats, paid for, then a
500 once the log could not take it. Now an ask is refused with 507 in the
caller's format before any model is asked, streamed or not, panel or route;
`/healthz` and `doctor` say the disk is full; the database's own refusal
counts too (the free-space floor set to nothing); every call logged before
is still there; and once space is freed, asks are answered again."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.core.diagnostics import diagnose
from benchwarmers.errors import StoreFull
from benchwarmers.runtime import Runtime
from benchwarmers.store import space
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server

from .hardening_support import FORMATS, format_request, rows, shaped_like

pytestmark = pytest.mark.integration

DISK_MB = 64


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MB tmpfs (mounting needs root: the CI's containers run as root)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def server(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiveServer, FakeProvider]]:
    monkeypatch.setattr(space, "MIN_FREE_BYTES", 16 * 2**20)
    yield from _serving(small_disk / "home", monkeypatch)


@pytest.fixture
def anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiveServer, FakeProvider]]:
    """The server on an ordinary folder, for the check that needs no mount."""
    yield from _serving(tmp_path / "home", monkeypatch)


def _serving(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiveServer, FakeProvider]]:
    monkeypatch.setattr(space, "RECHECK_SECONDS", 0.0)  # each ask looks at the disk afresh
    with FakeProvider() as fake:
        fake.add(FakeModel("m", answer="an answer"))

        async def register() -> None:
            async with Runtime.open(home) as runtime:
                store = runtime.store
                await add_endpoint(store, "fake", fake.openai_base, "openai", needs_key=False)
                await add_model(runtime.store, "m", "fake", "m")
                await add_collection(runtime.store, "solo", ["m"])

        asyncio.run(register())
        with live_server(home) as live:
            yield live, fake


def _fill(disk: Path, leave: int) -> Path:
    """A file taking the disk's free space down to about `leave` bytes."""
    filler = disk / "filler"
    free = space.free_on(disk) or 0
    with filler.open("wb") as out, contextlib.suppress(OSError):
        remaining = max(0, free - leave)
        block = b"\0" * 2**20
        while remaining > 0:
            out.write(block[: min(len(block), remaining)])
            remaining -= len(block)
    return filler


def _ask(server: LiveServer, fmt: str, model: str, stream: bool) -> httpx.Response:
    path, body = format_request(fmt, model, stream)
    return httpx.post(server.url + path, json=body, timeout=60)


def test_a_full_disk_refuses_every_ask_before_any_seat_and_recovers(
    server: tuple[LiveServer, FakeProvider], small_disk: Path
) -> None:
    live, fake = server
    assert _ask(live, "chat", "bench/solo", False).status_code == 200
    logged_before = rows(live.home, "SELECT id FROM calls")
    asked_before = len(fake.requests)

    filler = _fill(small_disk, leave=4 * 2**20)
    for fmt in FORMATS:
        for model in ("bench/solo", "bench/solo:route"):
            for stream in (False, True):
                reply = _ask(live, fmt, model, stream)
                where = (fmt, model, stream, reply.status_code, reply.text[:200])
                assert reply.status_code == 507, where
                assert shaped_like(format_for(fmt), 507, reply.json()), where
                assert "disk is full" in reply.text, where
    assert len(fake.requests) == asked_before, "a model was asked while the disk was full"
    health = httpx.get(live.url + "/healthz", timeout=30)
    assert health.status_code == 507 and "disk is full" in health.text

    filler.unlink()
    assert _ask(live, "chat", "bench/solo", True).status_code == 200
    assert httpx.get(live.url + "/healthz", timeout=30).status_code == 200
    after = {row["id"] for row in rows(live.home, "SELECT id FROM calls")}
    assert {row["id"] for row in logged_before} <= after, "a call logged before the disk filled was lost"


def test_a_disk_under_the_floor_refuses_asks_before_any_seat_without_a_mount(
    anywhere: tuple[LiveServer, FakeProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same refusal where no tmpfs can be mounted: the floor raised above what the disk has."""
    live, fake = anywhere
    monkeypatch.setattr(space, "MIN_FREE_BYTES", 2**62)
    for fmt in FORMATS:
        reply = _ask(live, fmt, "bench/solo", fmt == "chat")
        assert reply.status_code == 507 and shaped_like(format_for(fmt), 507, reply.json()), reply.text
    assert fake.requests == []
    assert httpx.get(live.url + "/healthz", timeout=30).status_code == 507
    monkeypatch.setattr(space, "MIN_FREE_BYTES", 0)
    assert _ask(live, "chat", "bench/solo", False).status_code == 200


def test_the_databases_own_refusal_is_a_507_and_stops_the_next_asks_early(
    server: tuple[LiveServer, FakeProvider], small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, fake = server
    monkeypatch.setattr(space, "MIN_FREE_BYTES", 0)  # the disk check never fires: only the database can say
    logged_before = rows(live.home, "SELECT id FROM calls")
    filler = _fill(small_disk, leave=0)
    first = _ask(live, "chat", "bench/solo", False)
    # Its seat was answered; the log could not take it: said as a full disk, not a 500.
    assert first.status_code == 507 and "disk is full" in first.text, first.text[:300]
    asked = len(fake.requests)
    second = _ask(live, "messages", "bench/solo", False)
    assert second.status_code == 507 and shaped_like("anthropic", 507, second.json())
    assert len(fake.requests) == asked, "the next ask went out though the database had just said full"
    filler.unlink()
    deadline = time.monotonic() + space.REFUSED_HOLD_SECONDS * 6
    status = 0
    while status != 200 and time.monotonic() < deadline:
        status = _ask(live, "chat", "bench/solo", False).status_code
        time.sleep(0.5)
    assert status == 200, "asks were not answered again once space was freed"
    after = {row["id"] for row in rows(live.home, "SELECT id FROM calls")}
    assert {row["id"] for row in logged_before} <= after


@pytest.mark.parametrize("fmt", ["chat", "messages", "ollama"])
def test_a_stream_whose_log_fails_half_way_ends_with_the_formats_error_event(
    server: tuple[LiveServer, FakeProvider], small_disk: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    live, _fake = server
    monkeypatch.setattr(space, "MIN_FREE_BYTES", 0)  # admitted: the disk fills between the check and the log
    filler = _fill(small_disk, leave=0)
    try:
        reply = _ask(live, fmt, "bench/solo", True)
    finally:
        filler.unlink()
    assert reply.status_code == 200  # the stream had begun
    last = reply.text.strip().splitlines()[-1]
    if fmt == "ollama":
        assert "disk is full" in json.loads(last)["error"]
    else:
        assert last.startswith("data: ") and "disk is full" in last, reply.text[-400:]
        if fmt == "messages":
            assert "event: error" in reply.text
        assert shaped_like(format_for(fmt), 507, json.loads(last[len("data: ") :]))


def test_doctor_says_the_disk_is_full(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = small_disk / "home"
    home.mkdir()
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    _fill(small_disk, leave=2**20)
    checks = {check.what: check for check in asyncio.run(diagnose())}
    assert not checks["disk"].ok and "the disk is full" in checks["disk"].said
    assert "free some space" in checks["disk"].fix


def format_for(fmt: str) -> str:
    return {"chat": "openai_chat", "messages": "anthropic"}.get(fmt, fmt)


def test_a_check_that_found_room_holds_until_a_write_is_refused_for_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ask checks the disk, so a check that found room is held (the
    asks meanwhile pass on a look at the clock); a write refused for room
    ends the hold: the very next ask is refused, not one a recheck later."""
    monkeypatch.setattr(space, "RECHECK_SECONDS", 3600.0)
    store = Store(f"sqlite:///{tmp_path / 'held.db'}", home=tmp_path)
    space.ensure_room(store)
    space.ensure_room(store)  # within the hold
    space.note_write(store, OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(StoreFull, match="want of room"):
        space.ensure_room(store)
    space.note_write(store, None)  # a write went through: room again
    space.ensure_room(store)
    asyncio.run(store.close())
