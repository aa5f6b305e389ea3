"""Conversation keys: whatever the client names its conversation with, the
key is a short digest of all of it."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.formats import anthropic as anthropic_format
from benchwarmers.formats import openai_chat
from benchwarmers.route.conversation import conversation_key

pytestmark = pytest.mark.unit

SHARED_PREFIX = "tenant-42/workspace-7/" + "x" * 100


def openai_body(**extra: Any) -> dict[str, Any]:
    return {"model": "bench/agents:route", "messages": [{"role": "user", "content": "hi"}], **extra}


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "bench/agents:route",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


@pytest.mark.parametrize(
    "body_for",
    [
        lambda session: openai_chat.parse_ask(openai_body(user=session)),
        lambda session: openai_chat.parse_ask(openai_body(metadata={"session_id": session})),
        lambda session: openai_chat.parse_ask(openai_body(metadata={"conversation_id": session})),
        lambda session: anthropic_format.parse_ask(anthropic_body(metadata={"user_id": session})),
    ],
    ids=["openai user", "openai session_id", "openai conversation_id", "anthropic user_id"],
)
def test_long_client_ids_that_differ_late_are_different_conversations(body_for: Any) -> None:
    first, second = body_for(SHARED_PREFIX + "-a"), body_for(SHARED_PREFIX + "-b")
    key_one = conversation_key("agents", first.request, client=first.conversation)
    key_two = conversation_key("agents", second.request, client=second.conversation)
    assert key_one != key_two
    assert key_one.startswith("client:") and len(key_one) <= 80 and SHARED_PREFIX[:20] not in key_one
    again = body_for(SHARED_PREFIX + "-a")
    assert conversation_key("agents", again.request, client=again.conversation) == key_one
