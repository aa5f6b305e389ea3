"""Which conversation a route turn belongs to, and which member answers it.

An agent sends its whole history every turn and nothing that says "this is
the same conversation as before" in a standard way, so the key is the best
evidence at hand, most explicit first:

1. the `x-bench-conversation` header (the route passes it as `given`,
   source "header");
2. the client's own session id, source "client": the session header an
   agent sends (`AGENT_SESSION_HEADERS`: Claude Code's
   `x-claude-code-session-id`, Codex's `session_id`), else one in the body
   (Anthropic `metadata.user_id`; Responses `prompt_cache_key`, which Codex
   fills with its session id; OpenAI `metadata`/`user`). Keeping a session
   on one member also keeps that provider's prompt cache warm;
3. else a digest of the system prompt and the first user message, which an
   agent resends unchanged on every turn of one conversation.

Keys are digests, never the raw ids or text: a client's user id or its
first message is not ours to store. The key also folds in the collection,
so one session asking two collections is two conversations.

Which member a key sticks to is kept by `store/conversations.py`
(`Runtime.conversations`): in memory for the turns, in the store's
`conversations` table for a restart and for other replicas, with Redis
telling replicas when a member changed.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from benchwarmers.types import Request

KeySource = Literal["header", "client", "prompt"]
CONVERSATION_HEADER = "x-bench-conversation"
# The session ids agents send as headers, each the same on every turn of one
# session: Claude Code's, then Codex's (lower case, as ASGI gives them).
AGENT_SESSION_HEADERS = ("x-claude-code-session-id", "session_id")
_DIGEST_CHARS = 40


def conversation_key(collection: str, request: Request, *, header: str = "", client: str = "") -> str:
    """`<source>:<digest>`, at most 80 characters (the column's width)."""
    source: KeySource
    if header.strip():
        source, raw = "header", header.strip()
    elif client.strip():
        source, raw = "client", client.strip()
    else:
        source, raw = "prompt", _opening(request)
    digest = hashlib.sha256(f"{collection}\0{source}\0{raw}".encode()).hexdigest()[:_DIGEST_CHARS]
    return f"{source}:{digest}"


def _opening(request: Request) -> str:
    """What stays the same on every turn of one conversation: the system
    prompt and the first user message (its text and how many images)."""
    first = next((m for m in request.messages if m.role == "user"), None)
    text = first.text if first is not None else ""
    images = len(first.images) if first is not None else 0
    return f"{request.system}\0{text}\0{images}"
