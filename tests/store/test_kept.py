"""Kept text (`store/kept.py`): written only for a collection that keeps
it, read back until it expires, deleted by the sweep, by turning the
setting off and with the collection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import kept
from benchwarmers.store.collections import add_collection, remove_collection, update_collection
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.migrate import migrate
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import KeptText
from benchwarmers.types import Request, assistant, user

QUESTION = Request((user("first"), assistant("an answer"), user("and then?")), system="be brief")


async def rows(runtime: Runtime) -> int:
    async with runtime.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(KeptText)) or 0)


async def keeping(store: Store, *names: str, days: int = 2) -> None:
    """Collections that keep text for `days`, of one model."""
    await add_endpoint(store, "fake", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    await add_model(store, "one", "fake", "one")
    for name in names:
        await add_collection(store, name, ["one"], keep_text=True, keep_days=days)


async def keep_one(runtime: Runtime, ask_id: str, collection: str = "trio") -> bool:
    return await kept.keep(
        runtime.store,
        collection=collection,
        ask_id=ask_id,
        request=QUESTION,
        answers=[(f"c_{ask_id}_1", "one says"), (f"c_{ask_id}_2", "two says"), ("", "never logged")],
    )


async def test_kept_until_it_expires_then_swept(runtime: Runtime) -> None:
    await keeping(runtime.store, "trio")
    assert await keep_one(runtime, "a_1")
    found = await kept.kept_asks(runtime.store, ["a_1", "a_other"])
    assert list(found) == ["a_1"]
    assert found["a_1"].question == {
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": "and then?"},
        ],
        "images": 0,
    }
    assert found["a_1"].answers == {"c_a_1_1": "one says", "c_a_1_2": "two says"}
    assert await kept.sweep(runtime.store) == 0  # not yet due
    assert await kept.sweep(runtime.store, datetime.now(UTC) + timedelta(days=3)) == 3
    assert await rows(runtime) == 0 and await kept.kept_asks(runtime.store, ["a_1"]) == {}


async def test_read_cut_to_a_head_each_text_says_its_whole_length(runtime: Runtime) -> None:
    """`head`: each answer cut by the database, the question's texts here, each length beside it
    (in characters, not bytes: `é` is one)."""
    await keeping(runtime.store, "trio")
    long = "é" * 10_000
    await kept.keep(
        runtime.store,
        collection="trio",
        ask_id="a_1",
        request=QUESTION,
        answers=[("c_1", long), ("c_2", "ok")],
    )
    found = (await kept.kept_asks(runtime.store, ["a_1"], head=4))["a_1"]
    assert found.answers == {"c_1": "éééé", "c_2": "ok"} and found.lengths == {"c_1": 10_000, "c_2": 2}
    assert found.question["system"] == "be b" and found.question["system_chars"] == 8
    assert found.question["messages"][2] == {"role": "user", "content": "and ", "content_chars": 9}
    whole = (await kept.kept_asks(runtime.store, ["a_1"]))["a_1"]
    assert whole.answers["c_1"] == long and whole.question == kept.question_of(QUESTION)


async def test_off_or_removed_takes_the_text_with_it(runtime: Runtime) -> None:
    await keeping(runtime.store, "other")
    view = await add_collection(runtime.store, "trio", ["one"], keep_text=True, keep_days=7)
    assert (view.keep_text, view.keep_days) == (True, 7)
    await keep_one(runtime, "a_1")
    await keep_one(runtime, "a_2", collection="other")
    off = await update_collection(runtime.store, "trio", keep_text=False)
    assert off.keep_text is False and off.keep_days == 7
    assert list(await kept.kept_asks(runtime.store, ["a_1", "a_2"])) == ["a_2"]
    await remove_collection(runtime.store, "other")
    assert await rows(runtime) == 0
    with pytest.raises(UserError, match="keep days must be 1 to 3650"):
        await update_collection(runtime.store, "trio", keep_days=0)


async def test_a_new_retention_moves_what_is_kept_already(runtime: Runtime) -> None:
    """Kept for the days the collection says now, counted from the ask:
    shortened, text past the new retention goes at once and the rest expires
    sooner; lengthened, it is kept longer."""
    await keeping(runtime.store, "trio", days=30)
    await keep_one(runtime, "a_old")
    async with runtime.store.write() as session:  # asked three days ago
        for row in await session.scalars(select(KeptText).where(KeptText.ask_id == "a_old")):
            row.expires_at = row.expires_at - timedelta(days=3)
    await keep_one(runtime, "a_new")

    await update_collection(runtime.store, "trio", keep_days=2)
    assert list(await kept.kept_asks(runtime.store, ["a_old", "a_new"])) == ["a_new"]
    assert await rows(runtime) == 3  # the three-day-old ask's rows are gone, not left to the sweep
    soon = datetime.now(UTC) + timedelta(days=2, minutes=1)
    assert await kept.sweep(runtime.store, soon) == 3

    await keep_one(runtime, "a_later")
    await update_collection(runtime.store, "trio", keep_days=10)
    assert await kept.sweep(runtime.store, datetime.now(UTC) + timedelta(days=5)) == 0
    assert list(await kept.kept_asks(runtime.store, ["a_later"])) == ["a_later"]


async def test_an_ask_done_after_the_setting_changed_keeps_as_it_says_now(runtime: Runtime) -> None:
    """A panel still answering when its owner turned keep_text off, removed
    the collection or changed the days: its text is kept as the collection
    says when it is done, not as it said when asked (it stayed for the old
    days, shown under a collection that keeps nothing)."""
    await keeping(runtime.store, "trio", "gone", days=30)
    await update_collection(runtime.store, "trio", keep_text=False)
    await remove_collection(runtime.store, "gone")
    assert not await keep_one(runtime, "a_off")
    assert not await keep_one(runtime, "a_gone", collection="gone")
    assert await rows(runtime) == 0
    await update_collection(runtime.store, "trio", keep_text=True, keep_days=3)
    assert await keep_one(runtime, "a_on")
    assert await kept.sweep(runtime.store, datetime.now(UTC) + timedelta(days=3, minutes=1)) == 3


def on_disk(folder: Path, *words: str) -> set[str]:
    """Which of `words` some file of the data folder holds, as bytes."""
    data = b"".join(f.read_bytes() for f in folder.rglob("*") if f.is_file())
    return {word for word in words if word.encode() in data}


async def test_deleted_text_is_gone_from_the_data_folder(runtime: Runtime, home: Path) -> None:
    """Expired, turned off, removed, or past a shortened retention: the words
    are in no file of the data folder (SQLite overwrites a deleted row and
    the WAL that held it is cut), not only out of the table."""
    await keeping(runtime.store, "off", "removed", "shorter", days=30)
    names = ("expired", "off", "removed", "shorter")
    # Long enough to run over SQLite pages of their own: each end is looked for.
    secret = {name: f"begins-{name} " + "x" * 9000 + f" ends-{name}" for name in names}

    async def keep_secret(name: str, collection: str) -> None:
        asked = Request((user(f"Q-{name}"),))
        await kept.keep(
            runtime.store,
            collection=collection,
            ask_id=f"a_{name}",
            request=asked,
            answers=[(f"c_{name}", secret[name])],
        )

    await keep_secret("expired", "off")
    await keep_secret("off", "off")
    await keep_secret("removed", "removed")
    await keep_secret("shorter", "shorter")
    async with runtime.store.write() as session:  # asked 29 days ago, and (shorter's) three days ago
        for row in await session.scalars(
            select(KeptText).where(KeptText.ask_id.in_(["a_expired", "a_shorter"]))
        ):
            row.expires_at = row.expires_at - timedelta(days=29 if row.ask_id == "a_expired" else 3)
    words = {name: (f"Q-{name}", f"begins-{name}", f"ends-{name}") for name in names}
    every = [word for three in words.values() for word in three]
    assert on_disk(home, *every) == set(every)

    assert await kept.sweep(runtime.store, datetime.now(UTC) + timedelta(days=2)) == 2
    assert not on_disk(home, *words["expired"])
    await update_collection(runtime.store, "off", keep_text=False)
    assert not on_disk(home, *words["off"])
    await remove_collection(runtime.store, "removed")
    assert not on_disk(home, *words["removed"])
    await update_collection(runtime.store, "shorter", keep_days=2)
    assert not on_disk(home, *every)


async def test_a_wal_not_cut_is_cut_by_the_next_sweep(
    runtime: Runtime, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long read kept the WAL from being cut when the text was deleted:
    the next sweep, with nothing due, cuts it."""
    await keeping(runtime.store, "trio")
    await keep_one(runtime, "a_1")
    cut = kept.wal.truncate
    monkeypatch.setattr(kept.wal, "truncate", lambda file: False)
    assert await kept.sweep(runtime.store, datetime.now(UTC) + timedelta(days=3)) == 3
    assert on_disk(home, "one says")
    monkeypatch.setattr(kept.wal, "truncate", cut)
    assert await kept.sweep(runtime.store) == 0
    assert not on_disk(home, "one says", "and then?")


async def test_a_new_retention_on_postgresql(postgres_url: str) -> None:
    """The same re-dating on PostgreSQL (one statement run for each row)."""
    store = Store(postgres_url)
    try:
        await migrate(store)
        await keeping(store, "trio", days=30)
        await kept.keep(store, collection="trio", ask_id="a_1", request=QUESTION, answers=[("c_1", "one")])
        await update_collection(store, "trio", keep_days=3)
        assert await kept.sweep(store, datetime.now(UTC) + timedelta(days=2)) == 0
        assert await kept.sweep(store, datetime.now(UTC) + timedelta(days=3, minutes=1)) == 2
    finally:
        await store.close()


async def test_a_cut_another_process_owed_is_made_by_this_ones_sweep(
    runtime: Runtime, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI command removed a collection that kept text while a long read
    kept the WAL from being cut, and exited: the server's next sweep, with
    nothing due of its own, cuts it (the debt is on disk, not in the CLI's memory)."""
    await keeping(runtime.store, "trio")
    await keep_one(runtime, "a_1")
    cut = kept.wal.truncate
    cli = Store(runtime.store.url)
    try:
        monkeypatch.setattr(kept.wal, "truncate", lambda file: False)
        await remove_collection(cli, "trio")
    finally:
        await cli.close()
    assert await rows(runtime) == 0
    assert on_disk(home, "one says")
    monkeypatch.setattr(kept.wal, "truncate", cut)
    assert await kept.sweep(runtime.store) == 0
    assert not on_disk(home, "one says", "and then?")
    assert not list(home.glob("*" + kept.OWED_SUFFIX))  # paid: the next sweeps cut nothing more
