"""Endpoint keys: found, never stored by us.

An endpoint's key comes from `BENCHWARMERS_KEY_<NAME>` (the endpoint name
upper-cased, `-` as `_`) first, else from llm's key file, `keys.json` in
llm's user folder (`$LLM_USER_PATH`, else the platform's user-config folder
for `io.datasette.llm`), keyed by endpoint name. Sharing llm's file means a
key pasted once serves both tools, and it keeps keys out of our data folder,
which people back up, copy and attach to bug reports.

Nothing here logs, prints or returns a key except `endpoint_key`; callers that
show where a key comes from use `key_source`, which names the place only.

`endpoint_key` runs for every seat of every panel, so the file is parsed
only when it changed: each read costs one `stat`, and the parsed file is
kept (in memory only) under its identity, inode, modification time and
size. An edit in place changes the time or the size, and `set_key` (like
llm) replaces the file, which changes the inode.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import platformdirs

from benchwarmers.config import environment
from benchwarmers.errors import StoreError, UserError

ENV_PREFIX = environment.ENDPOINT_KEY.name.removesuffix("<NAME>")
LLM_USER_PATH_ENV = environment.LLM_USER_PATH.name
LLM_APP_ID = "io.datasette.llm"
KEYS_FILE = "keys.json"
# llm writes this note into a fresh keys.json; we do the same so the file explains itself.
_NOTE_KEY = "// Note"
_NOTE = "This file stores secret API credentials. Do not share!"

KeySource = Literal["env", "keys.json"]
# What identifies one version of the file: (inode, mtime_ns, size).
FileVersion = tuple[int, int, int]

_parsed: dict[Path, tuple[FileVersion, dict[str, object]]] = {}
_parsed_lock = threading.Lock()  # seats run on several threads (the CLI's, the server's)


def env_var_name(endpoint: str) -> str:
    return ENV_PREFIX + endpoint.upper().replace("-", "_")


def keys_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    folder = env.get(LLM_USER_PATH_ENV, "").strip()
    base = (
        Path(folder).expanduser()
        if folder
        else Path(platformdirs.user_config_dir(LLM_APP_ID, appauthor=False))
    )
    return base / KEYS_FILE


def endpoint_key(endpoint: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The endpoint's key, or None when neither place has one."""
    env = os.environ if environ is None else environ
    from_env = env.get(env_var_name(endpoint), "").strip()
    if from_env:
        return from_env
    stored = _stored_keys(keys_path(env)).get(endpoint)
    return (stored.strip() or None) if isinstance(stored, str) else None


def key_source(endpoint: str, environ: Mapping[str, str] | None = None) -> KeySource | None:
    """Where the key would come from, without reading it out."""
    env = os.environ if environ is None else environ
    if env.get(env_var_name(endpoint), "").strip():
        return "env"
    stored = _stored_keys(keys_path(env)).get(endpoint)
    return "keys.json" if isinstance(stored, str) and stored.strip() else None


def check_key(key: str) -> str:
    """A pasted key, stripped; refused when empty or holding whitespace (a paste gone wrong)."""
    key = key.strip()
    if not key:
        raise UserError("the key is empty")
    if any(c.isspace() for c in key):
        raise UserError("the key contains whitespace; paste it again")
    return key


def set_key(endpoint: str, key: str, environ: Mapping[str, str] | None = None) -> Path:
    """Write the key into keys.json (created with mode 0600, replaced
    atomically so a crash never leaves half a file) and return its path."""
    key = check_key(key)
    path = keys_path(environ)
    keys = _read_keys(path)
    keys.setdefault(_NOTE_KEY, _NOTE)
    keys[endpoint] = key
    _write_private_json(path, keys)
    return path


def _stored_keys(path: Path) -> Mapping[str, object]:
    """The key file's contents, parsed again only when the file changed."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoreError(f"cannot read the key file {path}: {exc.strerror or exc}") from exc
    version = (info.st_ino, info.st_mtime_ns, info.st_size)
    with _parsed_lock:
        cached = _parsed.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    keys = _read_keys(path)
    with _parsed_lock:
        _parsed[path] = (version, keys)
    return keys


def _read_keys(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoreError(f"cannot read the key file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise StoreError(f"the key file {path} is not valid JSON (line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise StoreError(f"the key file {path} should hold a JSON object")
    return data


def _write_private_json(path: Path, data: dict[str, object]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".keys-", suffix=".tmp")  # mkstemp: mode 0600
    except OSError as exc:
        raise StoreError(f"cannot write the key file {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StoreError(f"cannot write the key file {path}: {exc.strerror or exc}") from exc
