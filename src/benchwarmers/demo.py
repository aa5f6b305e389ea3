"""`benchwarmers serve --demo`: a panel answer within a minute, with no key.

The demo is the real server on a throwaway data folder (and its own SQLite
store, whatever `BENCHWARMERS_DATABASE_URL` says), with the fake provider
from `benchwarmers.testing` running in this process as an endpoint named
`simulated`. Three simulated models sit on it, each with its own speed and
its own kind of answer, so a panel visibly answers side by side and seat by
seat; the collection `demo` seats all three. Every name says "simulated",
and the endpoint is flagged simulated in the store, so nothing here can be
taken for a real model. The folder is deleted when the server stops.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from functools import partial
from pathlib import Path

from rich.console import Console

from benchwarmers import client_env
from benchwarmers.assembly import app_for_home
from benchwarmers.core import HOME_ENV, Admin, Core, sqlite_url
from benchwarmers.hosts import is_loopback
from benchwarmers.server.run import base_url, bind_socket, run_server
from benchwarmers.testing import FakeModel, FakeProvider, FakeRequest

ENDPOINT = "simulated"
COLLECTION = "demo"
QUESTION = "Is a hot dog a sandwich?"


def _fast(request: FakeRequest) -> str:
    return (
        f"(simulated fast model) Short answer to “{_short(request.prompt)}”: yes. "
        "Quick answers like this one are cheap; check them against the other seats."
    )


def _steady(request: FakeRequest) -> str:
    return (
        f"(simulated steady model) “{_short(request.prompt)}” depends on your definitions. "
        "Two things to weigh: what the question assumes, and what you would do with the answer. "
        "Weighing both, a careful yes."
    )


def _slow(request: FakeRequest) -> str:
    return (
        f"(simulated slow model) I disagree with a quick yes on “{_short(request.prompt)}”. "
        "The usual definitions pull in different directions, so the honest answer is no, "
        "and the reasons matter more than the verdict."
    )


def _short(prompt: str) -> str:
    prompt = " ".join(prompt.split())
    return prompt if len(prompt) <= 80 else prompt[:77] + "..."


def simulated_models(pace: float = 1.0) -> list[FakeModel]:
    """Three scripted models: fast and terse, steady, slow and contrary.
    `pace` scales their times (tests run them ten times faster)."""
    return [
        FakeModel("simulated-fast", answer=_fast, latency=0.3 * pace, tokens_per_second=120 / pace),
        FakeModel(
            "simulated-steady",
            answer=_steady,
            latency=1.2 * pace,
            ttfb=0.4 * pace,
            tokens_per_second=40 / pace,
        ),
        FakeModel(
            "simulated-slow", answer=_slow, latency=2.5 * pace, ttfb=1.0 * pace, tokens_per_second=20 / pace
        ),
    ]


ALIASES = {"simulated-fast": "sim-fast", "simulated-steady": "sim-steady", "simulated-slow": "sim-slow"}


async def seed(admin: Admin, openai_base: str) -> None:
    """The simulated endpoint, its three models and the `demo` collection."""
    await admin.add_endpoint(ENDPOINT, openai_base, "openai", simulated=True, needs_key=False)
    for served, alias in ALIASES.items():
        await admin.add_model(alias, ENDPOINT, served, context_window=32768, price_in=0, price_out=0)
    await admin.add_collection(
        COLLECTION,
        list(ALIASES.values()),
        purpose="A simulated panel (no real model): try Benchwarmers with no key",
        seat_timeout=30.0,
    )


def run_demo(host: str, port: int, console: Console) -> None:
    """Seed a throwaway bench, serve it until Ctrl-C, then delete it; what
    it serves is said on `console` (the CLI's)."""
    home = Path(tempfile.mkdtemp(prefix="benchwarmers-demo-"))
    database_url = sqlite_url(home)
    os.environ[HOME_ENV] = str(home)  # anything that resolves the data folder finds the demo's
    try:
        with FakeProvider(simulated_models()) as fake:
            key = asyncio.run(_prepare(home, database_url, fake.openai_base, exposed=not is_loopback(host)))
            sock = bind_socket(host, port)
            app = app_for_home(home, database_url, bind_host=host)
            _explain(console, base_url(host, sock.getsockname()[1]), home, key)
            run_server(app, sock)
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def _prepare(home: Path, database_url: str, openai_base: str, *, exposed: bool) -> str:
    """Seed the store; beyond loopback, also make the key the demo needs."""
    async with Core.open(home, database_url) as core:
        await seed(core.admin, openai_base)
        if not exposed:
            return ""
        _, secret, _ = await core.admin.create_key("demo")
        return secret


def _explain(console: Console, url: str, home: Path, key: str) -> None:
    api_key = key or "demo"
    auth = f" -H 'authorization: Bearer {key}'" if key else ""
    body = f'{{"model": "bench/{COLLECTION}", "messages": [{{"role": "user", "content": "{QUESTION}"}}]}}'
    say = partial(console.print, soft_wrap=True)  # no wrapping mid-path when not on a terminal
    say(f"[bold]Benchwarmers demo[/] on {url}: a throwaway bench in {home}, deleted when you stop it.")
    say(
        f"Endpoint [bold]{ENDPOINT}[/] is a fake provider in this process serving three SIMULATED models "
        f"({', '.join(ALIASES.values())}); collection [bold]{COLLECTION}[/] seats all three."
    )
    if key:
        say(f"Listening beyond loopback, so calls need this demo gateway key: {key}")
    say("\nAsk the panel with curl:")
    say(
        f"  curl -s {url}/v1/chat/completions -H 'content-type: application/json'{auth} -d '{body}'",
        markup=False,
    )
    say("or with the openai client:")
    say(
        f'  python -c \'from openai import OpenAI; c = OpenAI(base_url="{url}/v1", api_key="{api_key}"); '
        f'print(c.chat.completions.create(model="bench/{COLLECTION}", messages=[{{"role": "user", '
        f'"content": "{QUESTION}"}}]).choices[0].message.content)\'',
        markup=False,
    )
    say("or from another terminal:")
    say(f"  {_client_env(url, key)}benchwarmers ask {COLLECTION} '{QUESTION}'", markup=False)
    say("\nStop with Ctrl-C.\n")


def _client_env(url: str, key: str) -> str:
    """What `benchwarmers ask` needs set to find this server: nothing on the
    default URL, else `BENCHWARMERS_URL` (and the key beyond loopback)."""
    words = [] if url == client_env.DEFAULT_URL else [f"{client_env.URL_ENV}={url}"]
    if key:
        words.append(f"{client_env.KEY_ENV}={key}")
    return "".join(f"{word} " for word in words)
