"""Asks logged and kept straight into a store, as a panel of a collection
keeping text (`keep_text`) leaves them, with no model called: what a test
of Recent asks, or `benchmarks/recent_asks.py`, reads back.

    await kept_ask(store, "duo", "a1", {"c1": ("m1", "an answer")}, question, at)
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from benchwarmers.store import kept, schema
from benchwarmers.store.db import Store
from benchwarmers.types import Request


async def kept_ask(
    store: Store,
    collection: str,
    ask_id: str,
    answers: Mapping[str, tuple[str, str]],
    question: Request,
    at: datetime,
) -> None:
    """One ask of `collection`: a seat call for each of `answers` (call id -> alias and its
    answer), a second apart from `at` in the order given, and its question and answers kept."""
    async with store.write() as session:
        for k, (call, (alias, _)) in enumerate(answers.items()):
            session.add(
                schema.Call(
                    id=call,
                    at=at + timedelta(seconds=k),
                    kind="seat",
                    alias=alias,
                    collection=collection,
                    shape="chat",
                    seat=f"Seat {k + 1}",
                    ask_id=ask_id,
                    status="ok",
                )
            )
    texts = [(call, text) for call, (_, text) in answers.items()]
    await kept.keep(store, collection=collection, ask_id=ask_id, request=question, answers=texts)
