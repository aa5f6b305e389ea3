"""How many panels may run at once: in all, and per gateway key (a limit of
our own, like the rate limits beside it).

A panel fans out to every seat of its collection and outlives its client
(it runs in a task of its own until its seats are in), so one caller firing
asks as fast as it can would hold hundreds of panels and thousands of
outbound calls. Each panel takes a slot before it is seated and gives it
back when its seats (and merge) are over, before the seating history its
task still writes; past a cap the ask is refused with 429, saying
which cap and when to retry (`Retry-After`). The caps are settings
(`max_panels`, `max_panels_per_key`); the local owner is held to the total
only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from benchwarmers.config import tunables
from benchwarmers.errors import Refused

RETRY_SECONDS = tunables.PANEL_RETRY_SECONDS.value


@dataclass
class Slot:
    """One running panel's place; `release` is idempotent."""

    slots: PanelSlots
    holder: str | None
    released: bool = False

    def release(self, *_: object) -> None:
        if not self.released:
            self.released = True
            self.slots._give_back(self.holder)


@dataclass
class PanelSlots:
    """Running panels in this process (each server process keeps its own)."""

    running: int = 0
    by_holder: Counter[str] = field(default_factory=Counter)

    def take(self, holder: str | None, *, total: int, per_holder: int) -> Slot:
        """A slot for a panel of `holder` (a key's name; None for the owner),
        or `Refused` (429) past either cap."""
        if self.running >= total:
            raise _full(f"the server is running its limit of {total} panels at once")
        if holder is not None and self.by_holder[holder] >= per_holder:
            raise _full(f"gateway key {holder!r} is running its limit of {per_holder} panels at once")
        self.running += 1
        if holder is not None:
            self.by_holder[holder] += 1
        return Slot(self, holder)

    def _give_back(self, holder: str | None) -> None:
        self.running -= 1
        if holder is not None:
            self.by_holder[holder] -= 1
            if self.by_holder[holder] <= 0:
                del self.by_holder[holder]


def _full(message: str) -> Refused:
    return Refused(
        f"{message}; retry in {RETRY_SECONDS} s (the limit is `benchwarmers settings set max_panels` "
        "or `max_panels_per_key`)",
        status=429,
        headers={"retry-after": str(RETRY_SECONDS)},
    )
