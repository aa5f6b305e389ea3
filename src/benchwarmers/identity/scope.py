"""Who is calling, and what they may do: the local owner, or a gateway key
with its scope.

The guard authenticates every gateway request and puts an `Identity` on
the request scope; the core services take one and ask:

    if not may_call(identity, collection):
        raise Refused(f"this key may not call bench/{collection}", status=403)

and listings filter with the same function. Services that change the bench
or the settings ask `may_administer(identity)`. No HTTP here: the CLI is
the `OWNER`, the server reads the identity off its request
(`server.deps.identity_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchwarmers.identity.keys import KeyInfo, collection_name


@dataclass(frozen=True, slots=True)
class Identity:
    """`name` is the key's name, or "owner" for the person running the server
    (loopback without keys). Empty `collections` = all."""

    name: str
    collections: frozenset[str] = frozenset()
    owner: bool = False

    @classmethod
    def from_key(cls, key: KeyInfo) -> Identity:
        return cls(name=key.name, collections=frozenset(key.collections))


OWNER = Identity(name="owner", owner=True)
# What a request the guard never saw gets: no rights rather than all of them.
NOBODY = Identity(name="unauthenticated", collections=frozenset({""}))


def may_call(identity: Identity, collection: str) -> bool:
    """Whether `identity` may ask `collection` (`trio`, `bench/trio` or
    `bench/trio:merged` all name the same collection)."""
    return identity.owner or not identity.collections or collection_name(collection) in identity.collections


def may_administer(identity: Identity) -> bool:
    """Whether `identity` may change the bench and the server's settings: the
    owner, or a key not limited to some collections (a key handed out for
    one collection must not be able to widen its own door)."""
    return identity.owner or not identity.collections
