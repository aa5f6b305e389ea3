"""Every environment variable this program reads, in one index: its name,
the kind of value, its default, who reads it and what it does.

The modules that read a variable take its name from here (`HOME.name`,
`HOME.read()`), front ends through `benchwarmers.core`; so a variable is
added here or not at all, and docs/cli.md's "Environment" table is this
index written out (`markdown_table`; tests/config/test_environment.py holds
the two equal, and finds any variable read in `src/` that is missing here).
Three are set by `serve --workers` for its own workers and are not the
user's (`internal`); `metrics.py` sits below this package and spells its
one name itself (the test holds it to the index too).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

Kind: TypeAlias = Literal["path", "url", "text", "seconds", "list", "flag", "host"]


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One variable. `name` may hold a `<NAME>` part (one variable per
    endpoint or provider); `default` is what applies when it is unset, in
    words ("" for nothing)."""

    name: str
    kind: Kind
    used_by: str
    does: str
    default: str = ""
    internal: bool = False

    def read(self, environ: Mapping[str, str] | None = None) -> str:
        """The value, stripped; "" when unset or blank."""
        return (os.environ if environ is None else environ).get(self.name, "").strip()

    def named(self, part: str) -> EnvVar:
        """The variable of one endpoint or provider (`<NAME>` filled in)."""
        return EnvVar(self.name.replace("<NAME>", part), self.kind, self.used_by, self.does, self.default)


HOME = EnvVar("BENCHWARMERS_HOME", "path", "every command", "the data folder")
DATABASE_URL = EnvVar(
    "BENCHWARMERS_DATABASE_URL",
    "url",
    "every command",
    "`postgresql://user:pass@host/db` instead of SQLite in the data folder (migrated on every start)",
)
REDIS_URL = EnvVar(
    "BENCHWARMERS_REDIS_URL",
    "url",
    "every process that calls models",
    "shared rate-limit counters, so several replicas (and a CLI beside them) keep one count, and the "
    "channel on which replicas drop a route conversation another one moved (`redis://host:6379/0`)",
)
ENDPOINT_KEY = EnvVar(
    "BENCHWARMERS_KEY_<NAME>",
    "text",
    "every call to endpoint NAME",
    "the endpoint's key (NAME upper-cased, `-` as `_`)",
)
LLM_USER_PATH = EnvVar(
    "LLM_USER_PATH", "path", "key lookup", "where llm's `keys.json` lives", default="llm's user folder"
)
ALLOWED_HOSTS = EnvVar(
    "BENCHWARMERS_ALLOWED_HOSTS",
    "list",
    "`serve`",
    "Host names accepted besides loopback, comma or space separated (`*` turns the check off)",
)
CLIENT_URL = EnvVar(
    "BENCHWARMERS_URL",
    "url",
    "`ask`, `verdict`, `mcp` (`doctor`, `quickstart`: the URL)",
    "the server to call",
    default="http://127.0.0.1:8122",
)
CLIENT_KEY = EnvVar("BENCHWARMERS_KEY", "text", CLIENT_URL.used_by, "a gateway key")
CLIENT_TIMEOUT = EnvVar(
    "BENCHWARMERS_TIMEOUT", "seconds", CLIENT_URL.used_by, "seconds to wait for a panel", default="900"
)
MCP_PROGRESS = EnvVar(
    "BENCHWARMERS_MCP_PROGRESS_SECONDS", "seconds", "`serve`", "interval of MCP progress notifications", "5"
)
TRANSCRIPT_DIRS = EnvVar(
    "BENCHWARMERS_TRANSCRIPT_DIRS",
    "list",
    "`serve`, `mcp`",
    "the folders (path-separator separated) the MCP `pending_verdicts` tool reads agent transcripts from, "
    "instead of the agents' own",
)
CLAUDE_CONFIG_DIR = EnvVar(
    "CLAUDE_CONFIG_DIR", "path", "`serve`, `mcp`", "Claude Code's folder (its own variable)", "`~/.claude`"
)
CODEX_HOME = EnvVar(
    "CODEX_HOME", "path", "`serve`, `mcp`", "Codex CLI's folder (its own variable)", "`~/.codex`"
)
MODELS_DEV_URL = EnvVar(
    "BENCHWARMERS_MODELS_DEV_URL",
    "url",
    "`serve`",
    "a mirror of `https://models.dev/api.json` for the catalog refresh",
)
FREELLMAPI_URL = EnvVar(
    "BENCHWARMERS_FREELLMAPI_URL",
    "url",
    "`serve`",
    "a copy of FreeLLMAPI's catalogue (its field names) for the catalog refresh; it publishes no feed "
    "of its own",
)
HF_DATASETS_URL = EnvVar(
    "BENCHWARMERS_HF_DATASETS_URL",
    "url",
    "`suite fetch`",
    "a mirror of `https://datasets-server.huggingface.co` (its `/rows` API)",
)
SIGNIN_URL = EnvVar(
    "BENCHWARMERS_SIGNIN_<NAME>_URL",
    "url",
    "the dashboard's provider sign-in",
    "where provider NAME's sign-in answers instead of its own site (a test double, a mirror)",
)
DEBUG = EnvVar("BENCHWARMERS_DEBUG", "flag", "every command", "`1` prints tracebacks")
OLLAMA_HOST = EnvVar(
    "OLLAMA_HOST",
    "host",
    "`quickstart`, the dashboard",
    "where a local Ollama listens (Ollama's own variable)",
    default="`127.0.0.1:11434`",
)
BIND_HOST = EnvVar(
    "BENCHWARMERS_BIND_HOST",
    "host",
    "`serve --workers` workers",
    "the address the server listens on, for each worker's guard",
    internal=True,
)
PROMETHEUS_MULTIPROC = EnvVar(
    "PROMETHEUS_MULTIPROC_DIR",
    "path",
    "`serve --workers` workers",
    "where the workers' metrics meet (prometheus_client's own variable)",
    internal=True,
)
COUNTERS_SOCKET = EnvVar(
    "BENCHWARMERS_COUNTERS_SOCKET",
    "path",
    "`serve --workers` workers",
    "the Unix socket of the supervisor's shared limit counters, when there is no Redis",
    internal=True,
)

ENVIRONMENT: tuple[EnvVar, ...] = (
    HOME,
    DATABASE_URL,
    REDIS_URL,
    ENDPOINT_KEY,
    LLM_USER_PATH,
    ALLOWED_HOSTS,
    CLIENT_URL,
    CLIENT_KEY,
    CLIENT_TIMEOUT,
    MCP_PROGRESS,
    TRANSCRIPT_DIRS,
    CLAUDE_CONFIG_DIR,
    CODEX_HOME,
    MODELS_DEV_URL,
    FREELLMAPI_URL,
    HF_DATASETS_URL,
    SIGNIN_URL,
    DEBUG,
    OLLAMA_HOST,
    BIND_HOST,
    PROMETHEUS_MULTIPROC,
    COUNTERS_SOCKET,
)


def markdown_table() -> str:
    """docs/cli.md's "Environment" table: the variables that are the user's."""
    rows = ["| variable | used by | meaning |", "|---|---|---|"]
    for var in ENVIRONMENT:
        if var.internal:
            continue
        meaning = var.does + (f" (default {var.default})" if var.default else "")
        rows.append(f"| `{var.name}` | {var.used_by} | {meaning} |")
    return "\n".join(rows) + "\n"
