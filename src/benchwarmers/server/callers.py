"""Who is calling: the local owner, or a gateway key with its scope.

The guard authenticates every gateway request and puts a `Caller` on the
request scope (`scope["state"]["caller"]`, i.e. `request.state.caller`).
Routes never look at keys themselves; they ask:

    caller = caller_of(request)
    if not caller_may_call(caller, collection):
        raise Refused(f"this key may not call bench/{collection}", status=403)

and `GET /v1/models`-style listings filter with the same function. Routes
that change the bench or the settings ask `caller_may_administer(caller)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchwarmers.server.gatewaykeys import KeyInfo, collection_name


@dataclass(frozen=True, slots=True)
class Caller:
    """`name` is the key's name, or "owner" for the person running the server
    (loopback without keys). Empty `collections` = all."""

    name: str
    collections: frozenset[str] = frozenset()
    owner: bool = False

    @classmethod
    def from_key(cls, key: KeyInfo) -> Caller:
        return cls(name=key.name, collections=frozenset(key.collections))


OWNER = Caller(name="owner", owner=True)


def caller_may_call(caller: Caller, collection: str) -> bool:
    """Whether `caller` may ask `collection` (`trio`, `bench/trio` or
    `bench/trio:merged` all name the same collection)."""
    return caller.owner or not caller.collections or collection_name(collection) in caller.collections


def caller_may_administer(caller: Caller) -> bool:
    """Whether `caller` may change the bench and the server's settings: the
    owner, or a key not limited to some collections (a key handed out for
    one collection must not be able to widen its own door)."""
    return caller.owner or not caller.collections


def caller_of(request: Any) -> Caller:
    """The caller the guard put on this request (a Starlette `Request` or a
    raw ASGI scope). A request the guard never saw (an app built without it)
    gets no rights rather than all of them."""
    scope = request if isinstance(request, dict) else request.scope
    caller = scope.get("state", {}).get("caller")
    if isinstance(caller, Caller):
        return caller
    return Caller(name="unauthenticated", collections=frozenset({""}))
