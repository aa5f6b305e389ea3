"""The order a panel's seats' calls go out in.

The seats are asked at once, but one event loop sets their calls up one
after the other: each seat's request is built, admitted and written before
the next seat's starts (0.3-0.4 ms a seat on a small box), so the last seat
sent goes out most of a millisecond after the first. Which seat that is
matters: a reply (and a merge) waits for its slowest seat, so it should be
sent first; a stream shows each seat's answer as that seat finishes, so its
first content comes soonest when the fastest seat is sent first.

How long a member takes is what its last call here took (remembered in this
process, per store, as seats end: no store read); a member not heard from
yet counts as slow. Only the order of sending changes: the seats' labels, their order in
the reply and on the bench stay as seated.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchwarmers.store.db import Store

# Members remembered at most per store (aliases are bench names; a backstop).
_CAP = 4096
# In `Store.local`: alias -> seconds its last call took.
_TOOK = "pace.took"


def note(store: Store, alias: str, seconds: float) -> None:
    """What a member's call took, for the next panel's order."""
    took: dict[str, float] | None = store.local.get(_TOOK)
    if took is None:
        took = store.local[_TOOK] = {}
    if alias in took or len(took) < _CAP:
        took[alias] = seconds


def send_order(store: Store, aliases: Sequence[str], *, slowest_first: bool) -> list[int]:
    """The seats' indices in the order to send their calls: the slowest
    first, or the fastest first; members that took the same (or that are
    not known yet) keep their seat order among themselves."""
    known: dict[str, float] = store.local.get(_TOOK, {})
    unknown = float("inf")
    took = [known.get(alias, unknown) for alias in aliases]
    return sorted(range(len(aliases)), key=lambda i: -took[i] if slowest_first else took[i])
