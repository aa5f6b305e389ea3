"""Endpoint keys: the environment first, then llm's keys.json, written 0600."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import platformdirs
import pytest

from benchwarmers.config.keys import endpoint_key, env_var_name, key_source, keys_path, set_key
from benchwarmers.errors import StoreError, UserError

pytestmark = pytest.mark.unit


def test_env_var_name_upper_cases_and_replaces_dashes() -> None:
    assert env_var_name("my-hub") == "BENCHWARMERS_KEY_MY_HUB"


def test_keys_path_follows_llm_user_path(tmp_path: Path) -> None:
    assert keys_path({"LLM_USER_PATH": str(tmp_path)}) == tmp_path / "keys.json"
    assert (
        keys_path({}) == Path(platformdirs.user_config_dir("io.datasette.llm", appauthor=False)) / "keys.json"
    )


def test_environment_wins_over_keys_json(tmp_path: Path) -> None:
    env = {"LLM_USER_PATH": str(tmp_path)}
    set_key("my-hub", "from-file", env)
    assert endpoint_key("my-hub", env) == "from-file"
    assert key_source("my-hub", env) == "keys.json"
    env["BENCHWARMERS_KEY_MY_HUB"] = "from-env"
    assert endpoint_key("my-hub", env) == "from-env"
    assert key_source("my-hub", env) == "env"


def test_missing_key_is_none(tmp_path: Path) -> None:
    env = {"LLM_USER_PATH": str(tmp_path)}
    assert endpoint_key("nobody", env) is None
    assert key_source("nobody", env) is None


def test_written_file_is_private_and_keeps_other_keys(tmp_path: Path) -> None:
    env = {"LLM_USER_PATH": str(tmp_path / "llm")}
    path = keys_path(env)
    path.parent.mkdir()
    path.write_text(json.dumps({"openai": "sk-llm-own"}))
    path.chmod(0o644)
    set_key("hub", "sk-ours", env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["openai"] == "sk-llm-own"
    assert data["hub"] == "sk-ours"
    assert [p.name for p in path.parent.iterdir()] == ["keys.json"]  # no temp file left behind


def test_updating_a_key_replaces_it(tmp_path: Path) -> None:
    env = {"LLM_USER_PATH": str(tmp_path)}
    set_key("hub", "old", env)
    set_key("hub", "new", env)
    assert endpoint_key("hub", env) == "new"


def test_blank_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError):
        set_key("hub", "  ", {"LLM_USER_PATH": str(tmp_path)})


def test_malformed_keys_json_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text("{not json")
    with pytest.raises(StoreError, match="not valid JSON"):
        endpoint_key("hub", {"LLM_USER_PATH": str(tmp_path)})


def _rewrite_keeping_stat(path: Path, text: str) -> None:
    """Change the file's bytes in place while its inode, size and time stay."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    with path.open("r+", encoding="utf-8") as handle:
        handle.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_an_unchanged_keys_json_is_not_parsed_again(tmp_path: Path) -> None:
    """Seats ask for keys all the time: one stat each, a parse only on change.
    (Bytes changed behind an unchanged stat prove the file was not re-read.)"""
    env = {"LLM_USER_PATH": str(tmp_path)}
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"hub": "key-aaaa"}))
    assert endpoint_key("hub", env) == "key-aaaa"
    _rewrite_keeping_stat(path, json.dumps({"hub": "key-bbbb"}))
    assert endpoint_key("hub", env) == "key-aaaa"
    assert key_source("other", env) is None


def test_a_changed_keys_json_is_seen(tmp_path: Path) -> None:
    env = {"LLM_USER_PATH": str(tmp_path)}
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"hub": "key-aaaa"}))
    assert endpoint_key("hub", env) == "key-aaaa"
    stamp = path.stat().st_mtime_ns
    path.write_text(json.dumps({"hub": "key-bbbb"}))  # same size, in place: only the time tells
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))
    assert endpoint_key("hub", env) == "key-bbbb"
    path.write_text(json.dumps({"hub": "key-cccccc"}))  # a new size
    os.utime(path, ns=(stamp + 1_000_000, stamp + 1_000_000))
    assert endpoint_key("hub", env) == "key-cccccc"
    set_key("hub", "key-dddddd", env)  # replaced: a new file
    assert endpoint_key("hub", env) == "key-dddddd"
    path.unlink()
    assert endpoint_key("hub", env) is None
