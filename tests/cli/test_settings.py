"""`benchwarmers settings list|get|set`: every setting reachable from the
command line, checked values, and a login password that is asked for
without echo, kept only as a hash and never printed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from benchwarmers.identity.passwords import verify_password
from benchwarmers.runtime import Runtime
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, Settings

from .test_main import bench, fails, ok


def stored_hash(home: Path) -> str:
    async def work() -> str:
        async with Runtime.open(home) as rt:
            return await Settings(rt.store).get(LOGIN_PASSWORD_HASH)

    return asyncio.run(work())


def test_list_get_and_set_the_guards_settings() -> None:
    listed = ok("settings", "list")
    for name in ("scheduler", "allowed_hosts", "require_key", "max_body_mb", "login_user", "login_password"):
        assert name in listed
    assert "login_password_hash" not in listed
    assert json.loads(ok("settings", "get", "max_body_mb")) == 20

    assert "require_key = true" in ok("settings", "set", "require_key", "on")
    assert json.loads(ok("settings", "get", "require_key")) is True
    ok("settings", "set", "allowed_hosts", "bench.example.org, Other.example")
    assert json.loads(ok("settings", "get", "allowed_hosts")) == ["bench.example.org", "other.example"]
    ok("settings", "set", "max_body_mb", "50")
    assert json.loads(ok("settings", "get", "max_body_mb")) == 50
    ok("settings", "set", "scheduler", "true")
    assert json.loads(ok("settings", "get", "scheduler")) is True
    ok("settings", "set", "login_user", "me")
    assert "bench.example.org" in ok("settings", "list")


def test_bad_settings_are_one_line_errors() -> None:
    fails("settings", "set", "max_body_mb", "0", contains="at least 1")
    fails("settings", "set", "require_key", "maybe", contains="true or false")
    fails("settings", "set", "allowed_hosts", "http://x.example/", contains="not a host name")
    fails("settings", "set", "colour", "blue", contains="no setting 'colour'")
    fails("settings", "get", "colour", contains="no setting 'colour'")
    fails("settings", "set", "require_key", contains="give the new value")
    fails("settings", "get", "login_password_hash", contains="never shown or set directly")
    fails("settings", "set", "login_password_hash", "x", contains="never shown or set directly")
    assert json.loads(ok("settings", "get", "max_body_mb")) == 20


def test_the_login_password_is_asked_for_and_only_its_hash_kept(home: Path) -> None:
    assert json.loads(ok("settings", "get", "login_password")) is False
    result = bench("settings", "set", "login_password", input="correct horse battery\n")
    assert result.exit_code == 0, result.output
    assert "correct horse" not in result.output
    stored = stored_hash(home)
    assert verify_password("correct horse battery", stored) and not verify_password("correct horse", stored)
    shown = ok("settings", "list") + ok("settings", "get", "login_password")
    assert stored not in shown and "scrypt" not in shown and "correct horse" not in shown
    assert json.loads(ok("settings", "get", "login_password")) is True
    fails("settings", "set", "login_password", "short", contains="at least 8")
    ok("settings", "set", "login_password", "")
    assert stored_hash(home) == ""
