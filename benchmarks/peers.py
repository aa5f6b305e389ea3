"""Two more gateways beside ours, when installed: TensorZero's and Portkey's.

Neither is our dependency; each runs from its own install, outside the
repository, on the same instant upstream (`upstream.py`) as ours:

- **TensorZero** (Rust, axum/tokio): its gateway ships inside its PyPI wheel
  (`pip install tensorzero` in any environment) and serves HTTP offline
  through the package's private `_start_http_gateway` (what its
  `patch_openai_client` uses), with a `tensorzero.toml` naming one model
  whose provider is `type = "openai"` at the upstream. Without ClickHouse or
  Postgres it runs with observability off. Called as OpenAI at
  `/openai/v1/chat/completions`, model `tensorzero::model_name::alpha`.
- **Portkey** (Node): `npm install @portkey-ai/gateway` in any folder, run
  as `node build/start-server.js --port=P --headless`; each request names
  the provider and the upstream in headers. Its streaming fails on this
  Node (20), so it is compared on plain requests only.

`start_tensorzero(folder, upstream, python)` and `start_portkey(folder,
upstream, package)` return a `Peer`, or None with one line on stderr when
it is not installed or does not come up (a run on a machine without the
peers goes on without them, rather than ending in a traceback);
`vs_litellm.py` asks for them with `--tensorzero-python` and `--portkey`
(or `$TENSORZERO_PYTHON`, `$PORTKEY_GATEWAY`). Not named, each is looked
for where installing it as above puts it: `tensorzero` in the Python
running the benchmark, the npm package under `./node_modules`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import Child, free_port

TENSORZERO_MODEL = "tensorzero::model_name::alpha"
# Where `npm install @portkey-ai/gateway` in the current folder puts it.
PORTKEY_LOCAL = Path("node_modules") / "@portkey-ai" / "gateway"
# Run by TensorZero's own Python: start the gateway on PORT and keep it up.
_TENSORZERO_MAIN = """
import sys, threading, tensorzero
gateway = tensorzero._start_http_gateway(config_file=sys.argv[1], clickhouse_url=None, postgres_url=None,
                                         valkey_url=None, async_setup=False)
print("listening on", gateway.base_url, flush=True)
threading.Event().wait()
"""


@dataclass
class Peer:
    """A started peer: its server, where to post, and the headers it needs."""

    name: str
    child: Child
    chat_url: str
    headers: dict[str, str]
    model: str
    ready_seconds: float
    version: str


def body(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "Say hello in five words."}]}


def _version(python: str, package: str) -> str:
    probe = f"import importlib.metadata as m; print(m.version({package!r}))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "?"


def _skipped(name: str, why: str) -> None:
    """The one line a peer that does not run leaves on stderr."""
    print(f"{name} {why}: its column is skipped", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def start_tensorzero(folder: Path, upstream: str, python: str | None) -> Peer | None:
    named = bool(python)
    found = shutil.which(python) if python else sys.executable
    if found is None or subprocess.run([found, "-c", "import tensorzero"], capture_output=True).returncode:
        hint = "" if named else "; --tensorzero-python or $TENSORZERO_PYTHON names one that has it"
        _skipped("TensorZero", f"not installed (no tensorzero in python {python or found!r}{hint})")
        return None
    config = folder / "tensorzero.toml"
    config.write_text(
        '[models.alpha]\nrouting = ["instant"]\n\n'
        '[models.alpha.providers.instant]\ntype = "openai"\n'
        f'model_name = "alpha"\napi_base = "{upstream}/"\napi_key_location = "none"\n'
    )
    script = folder / "tensorzero_main.py"
    script.write_text(_TENSORZERO_MAIN)
    child = Child("tensorzero", [found, str(script), str(config)], cwd=folder)
    try:
        base = _announced(child).removesuffix("/openai/v1")  # it announces its OpenAI base
        chat_url = f"{base}/openai/v1/chat/completions"
        ready = child.wait_ready(chat_url, body(TENSORZERO_MODEL), timeout=60)
    except RuntimeError as exc:
        child.stop()
        _skipped("TensorZero", f"did not start ({_first_line(exc)})")
        return None
    return Peer("TensorZero", child, chat_url, {}, TENSORZERO_MODEL, ready, _version(found, "tensorzero"))


def start_portkey(folder: Path, upstream: str, package: str | None) -> Peer | None:
    node = shutil.which("node")
    if not package and PORTKEY_LOCAL.is_dir():
        package = str(PORTKEY_LOCAL.resolve())
    start = Path(package) / "build" / "start-server.js" if package else None
    if node is None or start is None or not start.exists():
        if node is None:
            why = "node is not on PATH"
        elif package:
            why = f"{package!r} has no build/start-server.js"
        else:
            why = f"none named, no ./{PORTKEY_LOCAL.as_posix()}; --portkey or $PORTKEY_GATEWAY names one"
        _skipped("Portkey's gateway", f"not installed ({why})")
        return None
    port = free_port()
    child = Child("portkey", [node, str(start), f"--port={port}", "--headless"], cwd=folder)
    headers = {
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": upstream,
        "authorization": "Bearer x",
    }
    chat_url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        ready = child.wait_ready(chat_url, body("alpha"), timeout=60, headers=headers)
    except RuntimeError as exc:
        child.stop()
        _skipped("Portkey's gateway", f"did not start ({_first_line(exc)})")
        return None
    version = "?"
    manifest = Path(package or "") / "package.json"
    if manifest.exists():
        import json

        version = json.loads(manifest.read_text()).get("version", "?")
    return Peer("Portkey", child, chat_url, headers, "alpha", ready, version)


def _announced(child: Child, timeout: float = 60.0) -> str:
    """The base URL a child prints as `listening on URL`."""
    import time

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        for line in child.log_path.read_text(errors="replace").splitlines():
            if line.startswith("listening on "):
                return line.split()[-1].rstrip("/")
        if child.process.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"{child.name} did not say where it listens:\n{child.log_tail()}")
