"""The HTTP backend `benchwarmers mcp` uses, against the live server: its
failures are one line an agent can act on."""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchwarmers.errors import UserError
from benchwarmers.mcp.backend import PanelWatch
from benchwarmers.mcp.remote import HttpBackend
from benchwarmers.types import Ask, Request, user

from .mcp_support import call_rows, trio_models


def trio_ask() -> Ask:
    return Ask("trio", "panel", Request(messages=(user("hi"),)), stream=True)


async def test_a_panel_longer_than_the_timeout_is_a_clear_error_and_still_recorded(bench_server: Any) -> None:
    with bench_server(trio_models(slow_ttfb=2.0)) as server:
        watch = PanelWatch()
        with pytest.raises(UserError, match=r"did not answer within 0.8 s \(BENCHWARMERS_TIMEOUT\)"):
            await HttpBackend(server.url, timeout=0.8).ask(trio_ask(), watch)
        assert "slow" not in [seat.alias for seat in watch.answered]
        deadline = time.monotonic() + 30
        while len([r for r in call_rows(server.home).values() if r["kind"] == "seat"]) < 3:
            assert time.monotonic() < deadline, "the slow seat was never recorded"
            time.sleep(0.1)


async def test_the_servers_own_message_comes_through(bench_server: Any) -> None:
    with bench_server() as server:
        backend = HttpBackend(server.url)
        with pytest.raises(UserError, match=r"the server said 404: no collection 'bench/nope'"):
            await backend.ask(Ask("nope", "panel", Request(messages=(user("hi"),))), PanelWatch())
        with pytest.raises(UserError, match=r"the server said 404: no call"):
            await backend.verdict({"call": "c_" + "z" * 20, "useful": True, "note": ""})


@pytest.mark.parametrize(("value", "says"), [("soon", "must be a number"), ("0", "more than 0")])
def test_a_bad_timeout_setting_is_refused(monkeypatch: pytest.MonkeyPatch, value: str, says: str) -> None:
    monkeypatch.setenv("BENCHWARMERS_TIMEOUT", value)
    with pytest.raises(UserError, match=says):
        HttpBackend.from_environment()


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHWARMERS_URL", "http://10.0.0.2:9000/")
    monkeypatch.setenv("BENCHWARMERS_KEY", "bw_secret")
    monkeypatch.setenv("BENCHWARMERS_TIMEOUT", "30")
    backend = HttpBackend.from_environment()
    assert (backend.url, backend.key, backend.timeout) == ("http://10.0.0.2:9000", "bw_secret", 30.0)
    for name in ("BENCHWARMERS_URL", "BENCHWARMERS_KEY", "BENCHWARMERS_TIMEOUT"):
        monkeypatch.delenv(name)
    backend = HttpBackend.from_environment()
    assert (backend.url, backend.key, backend.timeout) == ("http://127.0.0.1:8122", "", 900.0)
