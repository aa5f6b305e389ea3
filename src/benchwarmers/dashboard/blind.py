"""A blind ask on the Ask page: the models' names kept out of everything the
page fetches until the person has judged, not only out of what it draws.

The stream of a blind ask (`POST /ui/api/ask` with `"blind": true`) names
each seat by a *handle* instead of its model: the call id of its seat in
the first turn of the conversation it sat in (a call id tells nothing of
its model). The server's seat label ("Seat 2", the members' order) is the
handle too, and so are the seats a merger's report cites; a seat's error
(a provider's words, which often name the model), its note, cost and
usage, the merger's alias and the ask's cost are left out. A follow-up
names its seats (and threads) by their handles, which the log turns back
into models (`Panels.seat_aliases`); the stream then names each by the
same handle again, so a seat keeps its letter across turns. Once the
person has judged, the page asks `POST /ui/api/names` for what was left
out (`Panels.judged_names`: only for asks judged). Recent asks of a blind
collection are so too (`hidden_ask`): an ask not judged yet names its seats
by their calls; an ask the page's toggle made blind or not against its
collection says so on its calls (`calls.blind`, `Ask.blind`) and is as it
was asked. Neither lists the seats in the members' order, which the
Collections page shows.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

# A seat's error kept back while blind; a stop's or a cut's is ours and names no model.
ERROR_HIDDEN = "hidden until the names are shown"
_SHUFFLE = random.SystemRandom()
# What a seat or a merge says that could tell its model.
_TELLING = ("costUsd", "usage", "note", "explorer", "freesAt")


@dataclass
class Blinder:
    """One blind ask's stream: `handles` maps each model to its handle (the
    follow-up's, given; a new seat's is its call id in this ask)."""

    handles: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # server seat label -> handle

    def event(self, out: dict[str, Any]) -> dict[str, Any]:
        """The event's JSON as the page may see it."""
        kind = out["event"]
        if kind == "started":  # shuffled: the seats' order is the members' order
            out["seats"] = [self._named(seat) for seat in out["seats"]]
            _SHUFFLE.shuffle(out["seats"])
            out["left_off"] = [
                {"alias": self.handles.get(x["alias"], ""), "reason": self.hide(x["reason"])}
                for x in out["left_off"]
            ]
        elif kind == "seat_text":
            out["alias"] = out["seat"] = self.handles.get(out["alias"], "")
        elif kind == "seat":
            out["seat"] = self._quiet(self._named(out["seat"]))
        elif kind == "merge_text":
            out["alias"] = ""
        elif kind == "merged":
            out["merged"] = self._merged(out["merged"])
        elif kind == "done":
            out.pop("costUsd", None)
            out.pop("costComplete", None)
        return out

    def hide(self, text: str) -> str:
        """Text of ours that may name a seat's model, each such name its handle
        (a whole name: `gpt-4o` is not the start of `gpt-4o-mini`)."""
        for alias in sorted(self.handles, key=len, reverse=True):
            whole = re.compile(rf"(?<![\w.:/-]){re.escape(alias)}(?![\w.:/-])")
            text = whole.sub(self.handles[alias].replace("\\", "\\\\"), text)
        return text

    def _named(self, seat: dict[str, Any]) -> dict[str, Any]:
        handle = self.handles.setdefault(seat["alias"], seat["call"])
        self.labels.setdefault(seat["seat"], handle)
        return {**seat, "alias": handle, "seat": handle}

    def _quiet(self, part: dict[str, Any]) -> dict[str, Any]:
        """A seat's or a merge's JSON without what could tell its model."""
        quiet = {key: value for key, value in part.items() if key not in _TELLING}
        if quiet.get("error") and quiet.get("status") != "cancelled":
            quiet["error"] = ERROR_HIDDEN
        return quiet

    def _merged(self, merged: dict[str, Any]) -> dict[str, Any]:
        quiet = self._quiet({**merged, "alias": ""})
        cite = self._cited
        quiet["agreement"] = [
            {**p, "heldBy": cite(p["heldBy"]), "contradictedBy": cite(p["contradictedBy"])}
            for p in merged.get("agreement", [])
        ]
        report = merged.get("report")
        if report is not None:
            quiet["report"] = {
                **report,
                "contradictions": [
                    {**c, "sides": [{**side, "seats": cite(side["seats"])} for side in c["sides"]]}
                    for c in report["contradictions"]
                ],
                "unique": [{**u, "seat": cite([u["seat"]])[0]} for u in report["unique"]],
            }
        return quiet

    def _cited(self, seats: list[str]) -> list[str]:
        """Seats a merger cites, by the server's label (or a model's name): their handles."""
        return [self.labels.get(s) or self.handles.get(s) or "" for s in seats]


def judged(ask: dict[str, Any]) -> bool:
    """A Recent asks row judged as `Panels.judged_names` judges one: a pair, a
    verdict on each seat that answered, or none answered."""
    answered = [s for s in ask["seats"] if s["kind"] == "seat" and s["status"] in ("ok", "empty")]
    return bool(ask.get("pairs")) or all(s["verdict"] is not None for s in answered)


def hidden_ask(ask: dict[str, Any]) -> dict[str, Any]:
    """A blind collection's ask in Recent asks: as it is once judged; before,
    each seat named by its call (`"hidden": true`), the merger by nothing,
    and no error, price or explorer seat that could tell a model; its seats
    in the order of their calls, not the members'."""
    if judged(ask):
        return ask
    seats = []
    # By call, not in seat order (the members' order): the same order on every read of it.
    for seat in sorted(ask["seats"], key=lambda s: (s["kind"] == "merge", s["call"])):
        quiet = {k: v for k, v in seat.items() if k not in ("cost_usd", "explorer")}
        merge = seat["kind"] == "merge"
        quiet.update(alias="" if merge else seat["call"], seat=seat["seat"] if merge else seat["call"])
        if quiet["error"] and quiet["status"] != "cancelled":
            quiet["error"] = ERROR_HIDDEN
        seats.append(quiet)
    return {**ask, "seats": seats, "hidden": True}
