"""Route-mode stickiness (the `conversations` table), read from memory.

Every route turn asks "which member answers this conversation?", and most
turns keep the member they had. Reading the row each time cost a SELECT,
a pool checkout and a rollback per turn (about a fifth of a passthrough
turn's CPU), so the answer is kept here, in a bounded map (least recently
used out first), and the table is written only when the member changes (a
new conversation, or a failover). The table stays the durable copy: a
restart, or a conversation that fell out of the map, reads it again.

Several processes may route the same conversation (`serve --workers N`,
replicas behind a load balancer), so a remembered member must not outlive
another process's change. Which rule holds depends on what is shared:

* **Redis** (`BENCHWARMERS_REDIS_URL`): a
  process that changes a conversation's member publishes the key on one
  channel after its write commits; every other process drops that key, so
  its next turn reads the new row. A turn costs no round trip at all (a
  Redis GET per turn would: the map is read on every turn, changed on few).
  While the subscription is down (Redis restarting), nothing is
  remembered: every turn reads the table, and the map starts empty again
  once it is back, since drops may have been missed.
* **PostgreSQL without Redis**: another replica may change a row unseen,
  so a remembered member is trusted for `changes.DEFAULT_TTL` seconds, the
  staleness every other cached read accepts across processes.
* **SQLite**: one server process routes, so what this process wrote is
  all there is: remembered until pushed out. Under `serve --workers N`
  without Redis, a worker is trusted no longer than `DEFAULT_TTL`, as a
  replica without Redis (`Runtime.open` passes the `ttl`).

A read that raced a drop of its key is not kept, so a drop that lands
while the table is being read cannot be undone by the read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter, OrderedDict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.config import tunables
from benchwarmers.store.changes import DEFAULT_TTL
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Conversation

log = logging.getLogger(__name__)

# Conversations remembered per process: a few hundred bytes each, and far
# more than the agents of one install hold open at once.
MAX_REMEMBERED = 20_000
CHANNEL = "bw:conversations"
RESUBSCRIBE_SECONDS = tunables.RESUBSCRIBE_SECONDS.value


class Conversations:
    """Which member answers a conversation: `await get(key)`, `await
    put(key, collection, alias)`. One per runtime (`Runtime.conversations`),
    started and closed with it."""

    def __init__(
        self,
        store: Store,
        redis_url: str | None = None,
        *,
        channel: str = CHANNEL,
        size: int = MAX_REMEMBERED,
        ttl: float | None = None,
    ) -> None:
        self.store = store
        self.channel = channel
        self.size = size
        # How long a remembered member is trusted; None: until dropped or pushed out.
        if ttl is None and redis_url is None and not store.is_sqlite:
            ttl = DEFAULT_TTL
        self.ttl = ttl
        self._redis_url = redis_url
        self._redis: Any = None
        self._listening: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._origin = uuid.uuid4().hex  # our own messages are not drops for us
        self._known: OrderedDict[str, tuple[str, float]] = OrderedDict()
        # Keys being read from the table now (how many reads of each), and those of them
        # dropped meanwhile: such a read is not remembered.
        self._reading: Counter[str] = Counter()
        self._void: set[str] = set()
        # Drops other processes sent us, all told (for tests and debugging).
        self.drops_seen = 0

    @property
    def coherent(self) -> bool:
        """Whether remembered members can be trusted now (with Redis: while subscribed)."""
        return self._redis_url is None or self._subscribed.is_set()

    async def start(self, wait: float = 2.0) -> None:
        """Subscribe to other processes' changes (with Redis); waits up to
        `wait` seconds for the subscription, then goes on without it (every
        turn reads the table until it is up)."""
        if self._redis_url is None or self._listening is not None:
            return
        from redis.asyncio import Redis

        self._redis = Redis.from_url(self._redis_url, decode_responses=True)
        self._listening = asyncio.create_task(self._listen(), name="conversations: others' drops")
        try:
            await asyncio.wait_for(self._subscribed.wait(), wait)
        except TimeoutError:
            log.warning("no Redis subscription yet: route stickiness is read from the store on every turn")

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            await asyncio.gather(self._listening, return_exceptions=True)
            self._listening = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def get(self, key: str) -> str | None:
        """The member that answered this conversation last, if any."""
        known = self._known.get(key)
        if known is not None and self.coherent:
            remembered, at = known
            if self.ttl is None or time.monotonic() - at < self.ttl:
                self._known.move_to_end(key)
                return remembered
        self._reading[key] += 1
        try:
            async with self.store.read() as session:
                row = await session.get(Conversation, key)
                alias = row.alias if row is not None else None
            if alias is not None and key not in self._void and self.coherent:
                self._remember(key, alias)
        finally:
            self._reading[key] -= 1
            if not self._reading[key]:
                del self._reading[key]
                self._void.discard(key)
        return alias

    async def put(self, key: str, collection: str, alias: str) -> None:
        """This member answers the conversation from now on: remembered here,
        written to the table, and, with Redis, dropped by every other process."""
        self._remember(key, alias)
        now = datetime.now(UTC)
        insert = sqlite_insert if self.store.is_sqlite else pg_insert
        statement = insert(Conversation).values(
            key=key, collection=collection, alias=alias, created_at=now, updated_at=now
        )
        statement = statement.on_conflict_do_update(
            index_elements=["key"], set_={"alias": alias, "updated_at": now}
        )
        async with self.store.write() as session:
            await session.execute(statement)
        if self._redis is not None:
            try:
                await self._redis.publish(self.channel, f"{self._origin}\t{key}")
            except Exception as exc:  # the row is in; others see it within their next subscription
                log.warning("could not tell other processes of a route member change: %s", exc)

    def forget(self) -> None:
        """Remember nothing (the next turn of every conversation reads the table)."""
        self._known.clear()
        self._void.update(self._reading)

    def _remember(self, key: str, alias: str) -> None:
        self._known[key] = (alias, time.monotonic())
        self._known.move_to_end(key)
        while len(self._known) > self.size:
            self._known.popitem(last=False)

    def _drop(self, key: str) -> None:
        self._known.pop(key, None)
        if key in self._reading:
            self._void.add(key)

    async def _listen(self) -> None:
        """Drop what other processes changed, for as long as the runtime is
        open; resubscribe (remembering nothing missed) when Redis comes back."""
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                async for message in pubsub.listen():
                    if message["type"] == "subscribe":
                        self.forget()  # whatever changed while we were not listening
                        self._subscribed.set()
                    elif message["type"] == "message":
                        origin, _, key = str(message["data"]).partition("\t")
                        if origin != self._origin:
                            self._drop(key)
                            self.drops_seen += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: trust nothing until subscribed again
                log.warning("route stickiness lost its Redis subscription (%s); retrying", exc)
            finally:
                self._subscribed.clear()
                with contextlib.suppress(Exception):  # closing a broken connection may fail too
                    await pubsub.aclose()
            self.forget()
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
