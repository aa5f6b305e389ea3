"""`benchwarmers quickstart`: from nothing to a panel that answers, asked
step by step.

It walks the first hour in order: the data folder; a first endpoint (a
local Ollama when one answers, else a provider's name, URL, API kind and
key, pasted without echo); two or three free models to onboard, picked from
Discover among the ones that endpoint lists (for a local server, the models
it lists, which cost nothing); a first collection of the ones that
answered; and the exact `curl` and SDK lines to ask it. Every step is the
same code as its own command (`endpoint add`, `endpoint key set`,
`onboard --quick`, `collection add`), so what it leaves behind is what those
would have, and nothing that did not answer is registered.

Answers come from the terminal, or line by line from standard input when it
is not one (the key too), so a script or a test can drive it:

    printf 'openrouter\\n\\nopenai\\nsk-...\\n\\nfirst\\n' | benchwarmers quickstart
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated
from urllib.parse import urlparse

import httpx
import typer
from rich.markup import escape

from benchwarmers import client_env
from benchwarmers.cli.context import console, read_secret, with_core
from benchwarmers.cli.endpoints import add_or_keep, write_key
from benchwarmers.cli.errors import print_warning
from benchwarmers.cli.onboard import onboard_model
from benchwarmers.core import (
    Core,
    EndpointView,
    OnboardRequest,
    api_kinds,
    check_endpoint,
    default_base_url,
    endpoint_key_source,
    ensure_home,
    environment,
    resolve_home,
    url_hint,
)
from benchwarmers.errors import UserError
from benchwarmers.hosts import is_loopback

OLLAMA_HOST_ENV = environment.OLLAMA_HOST.name
KNOWN_URLS = {
    "openrouter": ("https://openrouter.ai/api/v1", "openai"),
    "groq": ("https://api.groq.com/openai/v1", "openai"),
    "gemini": ("https://generativelanguage.googleapis.com", "gemini"),
    "anthropic": ("https://api.anthropic.com", "anthropic"),
    "openai": ("https://api.openai.com/v1", "openai"),
}
OFFERED = 8  # models shown to pick from
PICKED = 3  # picked unless the user says otherwise
QUESTION = "Why is the sky blue?"


def register(app: typer.Typer) -> None:
    app.command("quickstart")(quickstart)


def quickstart(
    ollama: Annotated[
        str,
        typer.Option(
            "--ollama", help="Where to look for a local Ollama (default: OLLAMA_HOST, else :11434)."
        ),
    ] = "",
) -> None:
    """Set up a first endpoint, two or three free models and a collection, step by step."""
    folder = ensure_home(resolve_home())
    console.print(f"Data folder: [bold]{escape(str(folder))}[/]")
    endpoint = _first_endpoint(ollama or _ollama_url())
    served = _pick_models(endpoint)
    aliases: list[str] = []
    for model_id in served:
        try:
            model, step = onboard_model(OnboardRequest(endpoint=endpoint.name, served=model_id, mode="quick"))
        except UserError as exc:
            print_warning(str(exc))
            continue
        console.print(f"[bold]{escape(model.alias)}[/] is {model.status}: {escape(step)}")
        aliases.append(model.alias)
    if not aliases:
        hint = url_hint(endpoint)
        raise UserError(
            f"none of the models on {endpoint.name} answered{'; ' + hint if hint else ''}; "
            "check it with `benchwarmers doctor`"
        )
    name = _ask("Name of your first collection", "first")
    with_core(lambda core: core.admin.add_collection(name, aliases, purpose="my first panel"))
    console.print(f"Collection [bold]bench/{escape(name)}[/] seats {', '.join(aliases)}.")
    _how_to_ask(name)


# ---------------------------------------------------------------- steps


def _first_endpoint(ollama_url: str) -> EndpointView:
    """An endpoint already here with its key, a local Ollama, or one typed in."""
    existing = with_core(lambda core: core.admin.endpoints())
    usable = [e for e in existing if not e.simulated and (not e.needs_key or endpoint_key_source(e.name))]
    if usable:
        console.print(f"Using endpoint [bold]{escape(usable[0].name)}[/] ({escape(usable[0].base_url)}).")
        return usable[0]
    if _answers(ollama_url + "/api/tags") and _yes(f"A local Ollama answers at {ollama_url}. Use it?"):
        return with_core(lambda core: add_or_keep(core, "ollama", ollama_url, "ollama"))
    name = _ask("Endpoint name (a provider, e.g. openrouter, groq, gemini)", "openrouter")
    known_url, known_api = KNOWN_URLS.get(name.lower(), ("", "openai"))
    base_url = _ask("Its base URL", known_url)
    api = _ask(f"Its API: {', '.join(api_kinds())}", known_api)
    check_endpoint(name, base_url, api)
    endpoint = with_core(lambda core: add_or_keep(core, name, base_url, api))
    if endpoint.needs_key and endpoint_key_source(name) is None:
        write_key(name, read_secret(f"Key for {name} (not shown)"))
    return endpoint


def _pick_models(endpoint: EndpointView) -> list[str]:
    """Free models this endpoint lists, Discover's first; the user picks."""

    async def look(core: Core) -> tuple[set[str] | None, list[str]]:
        listing = await core.admin.endpoint_listing(endpoint.name)
        listed = {m["served"] for m in listing["models"]} if listing["ok"] else None
        entries = await core.ops.discover(free_only=True)
        free = [e["model"] for e in entries if endpoint.name in e["reachable"] and not e["on_bench"]]
        return listed, free

    listed, free = with_core(look)
    if listed is None:
        hint = url_hint(endpoint)
        raise UserError(
            f"{endpoint.name} at {endpoint.base_url} did not list its models{'; ' + hint if hint else ''}; "
            f"check the URL and the key (`benchwarmers endpoint key set {endpoint.name}`), then again"
        )
    offered = [m for m in free if m in listed]
    if not offered and (_is_local(endpoint) or not free):
        offered = sorted(listed)  # a local server (or one Discover does not know): its list costs nothing
    if not offered:
        raise UserError(
            f"{endpoint.name} lists none of Discover's free models; onboard one by id with `onboard`"
        )
    offered = offered[:OFFERED]
    console.print(f"Free models on {escape(endpoint.name)}:")
    for number, model_id in enumerate(offered, 1):
        console.print(f"  {number}. {escape(model_id)}")
    default = " ".join(str(n) for n in range(1, min(PICKED, len(offered)) + 1))
    picked = _ask("Onboard which (numbers)", default)
    try:
        chosen = [offered[int(word) - 1] for word in picked.replace(",", " ").split()]
    except (ValueError, IndexError):
        raise UserError(f"pick by number, 1 to {len(offered)}, not {picked!r}") from None
    if not chosen:
        raise UserError("no model picked")
    return chosen


def _how_to_ask(name: str) -> None:
    url = client_env.server_url()
    body = json.dumps({"model": f"bench/{name}", "messages": [{"role": "user", "content": QUESTION}]})
    say = console.print
    say("\nStart the server (leave it running):", soft_wrap=True)
    say("  benchwarmers serve", markup=False)
    say("then ask your panel with curl:", soft_wrap=True)
    say(
        f"  curl -s {url}/v1/chat/completions -H 'content-type: application/json' -d '{body}'",
        markup=False,
        soft_wrap=True,
    )
    say("or the openai SDK:")
    say(
        f'  python -c \'from openai import OpenAI; c = OpenAI(base_url="{url}/v1", api_key="unused"); '
        f'print(c.chat.completions.create(model="bench/{name}", messages=[{{"role": "user", '
        f'"content": "{QUESTION}"}}]).choices[0].message.content)\'',
        markup=False,
        soft_wrap=True,
    )
    say("or this CLI:")
    say(f"  benchwarmers ask {name} '{QUESTION}'", markup=False)
    say("and say which seats helped: benchwarmers verdict CALL --useful", markup=False)


# -------------------------------------------------------------- asking


def _ask(question: str, default: str) -> str:
    """One answer: typed at a terminal, else the next line of standard input."""
    if sys.stdin.isatty():
        answer: str = typer.prompt(question, default=default or None, show_default=bool(default))
        return answer.strip()
    console.print(f"{question}{f' [{default}]' if default else ''}: ", end="", markup=False)
    line = sys.stdin.readline()
    if not line:
        raise UserError(f"standard input ended before the answer to {question!r}")
    console.print(line.rstrip("\n"), markup=False)
    answer = line.strip() or default
    if not answer:
        raise UserError(f"{question}: an answer is needed")
    return answer


def _yes(question: str) -> bool:
    return _ask(f"{question} (y/n)", "y").lower().startswith("y")


def _ollama_url() -> str:
    host = os.environ.get(OLLAMA_HOST_ENV, "").strip()
    if not host:
        return default_base_url("ollama")
    return host if "://" in host else f"http://{host}"


def _is_local(endpoint: EndpointView) -> bool:
    """Ollama, or any server on this machine (vLLM, llama.cpp, LM Studio...)."""
    return endpoint.api == "ollama" or is_loopback(urlparse(endpoint.base_url).hostname or "")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False
