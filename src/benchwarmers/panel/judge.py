"""Judge verdicts: after a panel's reply is out, a model that did not sit
compares the answers, and its judgement is stored as pair verdicts of kind
"judge" (`calls/pairs.py`), never mixed with people's.

Only on a collection that opts in (`judge_verdicts`), and only when two or
more seats answered. The judge is chosen as the merger is: the
collection's merger when it has one, then its members by record on this
shape, then the rest of the bench by record, always one that did not sit
on this panel (a judge must not judge its own answer) and that can take
the request now. It sees the answers as Seat A, B, C in a shuffled order
(`merge.anonymise`), never the models' names, and is asked for one JSON
object, by the prompt and by `Request.output` (adapters that send
structured output send it; a model with none of its own is asked in its
system prompt, `panel/structured.py`): `{"pairs": [{"a": "A", "b": "B", "verdict":
"A" | "B" | "tie" | "both_bad"}]}`. Its answer is read leniently (a fenced
block, a trailing comma, "Seat A" for "A"); a pair it names wrongly is
passed over, and an answer with no readable pair stores nothing and is
logged. Nothing here can fail the ask: it runs after the reply, in the
panel's own task, and any failure is logged.

Its call is an ordinary call through the caller (kind "judge"): logged,
limited and counted in the quotas like a seat's. How much its verdicts
count in the rating is `bench/pairs.py`'s (`pair_weight`): by how often it
agreed with people on the same pairs of this collection.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from itertools import combinations
from typing import Any, Literal

from benchwarmers.bench import decisions
from benchwarmers.calls.caller import CallContext, Caller
from benchwarmers.calls.log import panel_task
from benchwarmers.calls.pairs import PairJudgement, record_pairs
from benchwarmers.calls.tokens import fitted
from benchwarmers.config import tunables
from benchwarmers.panel.merge import Anonymised, anonymise, transcript
from benchwarmers.panel.seating import fitted_unfit_reason
from benchwarmers.panel.structured import as_asked
from benchwarmers.reasoning import answer_of
from benchwarmers.store.views import CollectionView, ModelView
from benchwarmers.types import Message, OutputFormat, Request, Sampling, Seat, Text

log = logging.getLogger(__name__)

JUDGE_MAX_TOKENS = tunables.JUDGE_MAX_TOKENS.value
# The roles that answer in text: a judge reads and writes text.
TEXT_ROLES = ("general", "code", "light")
VERDICTS = ("A", "B", "tie", "both_bad")

JUDGE_SYSTEM = """You judge the answers a panel of models gave to one question.
Compare every pair of answers and say which one better serves the person who asked: correct,
complete, direct. Answer "tie" when they are about as good and "both_bad" when neither does the job.
Refer to answers only by their seat letters. Answer with one JSON object and nothing else:
{"pairs": [{"a": "<letter>", "b": "<letter>", "verdict": "A" | "B" | "tie" | "both_bad"}]}
where "A" means seat a's answer is better and "B" means seat b's is better; one entry per pair."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": "string"},
                    "verdict": {"type": "string", "enum": list(VERDICTS)},
                },
                "required": ["a", "b", "verdict"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["pairs"],
    "additionalProperties": False,
}
JUDGE_OUTPUT = OutputFormat("json_schema", JUDGE_SCHEMA, name="pair_verdicts", strict=True)


def judge_request(request: Request, anonymised: Anonymised) -> Request:
    """The judge's one request: the question and the lettered answers (as
    the merger sees them: names never shown), with JSON asked for."""
    letters = list(anonymised.label_of_letter)
    answers = anonymised.answers()
    pairs = ", ".join(f"{a}-{b}" for a, b in combinations(letters, 2))
    text = (
        f"The question, as it was asked:\n\n{transcript(request)}\n\n"
        f"The panel's answers ({len(letters)} seats):\n\n{answers}\n\n"
        f"Judge each pair ({pairs}) and answer with the JSON object alone."
    )
    return Request(
        messages=(Message("user", (Text(text),)),),
        system=JUDGE_SYSTEM,
        sampling=Sampling(temperature=0.0, max_tokens=JUDGE_MAX_TOKENS),
        output=JUDGE_OUTPUT,
    )


Judged = tuple[Literal["better", "tie", "both_bad"], str, str]


def parse_judgement(text: str, label_of_letter: Mapping[str, str]) -> list[Judged]:
    """The judge's pairs as (outcome, first seat label, second seat label):
    for "better" the first is the better one. Unknown or repeated letters,
    a seat compared with itself and an unknown verdict are passed over; an
    unreadable answer is no pair at all."""
    data = _loads_lenient(text)
    items = data.get("pairs") if isinstance(data, dict) else data if isinstance(data, list) else None
    out: list[Judged] = []
    seen: set[frozenset[str]] = set()
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        a, b = _letter(item.get("a"), label_of_letter), _letter(item.get("b"), label_of_letter)
        verdict = item.get("verdict")
        if not a or not b or a == b or not isinstance(verdict, str) or frozenset((a, b)) in seen:
            continue
        # "A" / "B" name the pair's first / second seat (the schema's words); another letter of
        # the two names that seat.
        said = verdict.strip().lower().replace(" ", "_")
        letter = _letter(verdict, label_of_letter)
        first, second = label_of_letter[a], label_of_letter[b]
        if letter == "A" or (letter == a and letter != "B"):
            out.append(("better", first, second))
        elif letter == "B" or letter == b:
            out.append(("better", second, first))
        elif said in ("tie", "both_bad"):
            out.append(("tie" if said == "tie" else "both_bad", first, second))
        else:
            continue
        seen.add(frozenset((a, b)))
    return out


def _letter(value: object, known: Mapping[str, str]) -> str:
    """Letters as "A", "a" or "Seat A" -> "A" when known, else ""."""
    if not isinstance(value, str):
        return ""
    letter = re.sub(r"(?i)^\s*seat\s+", "", value).strip().upper()
    return letter if letter in known else ""


def _loads_lenient(text: str) -> Any:
    """The answer's JSON object, past any leading think block (`reasoning`):
    whole, in a fenced block, or the outermost braces with trailing commas
    dropped; None when there is none."""
    text = answer_of(text)
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    block = (fenced.group(1) if fenced else text).strip()
    try:
        return json.loads(block)
    except ValueError:
        pass
    first, last = block.find("{"), block.rfind("}")
    if first < 0 or last <= first:
        return None
    try:
        return json.loads(re.sub(r",\s*([}\]])", r"\1", block[first : last + 1]))
    except ValueError:
        return None


async def judge_candidates(
    store: Any,
    collection: CollectionView,
    shape: str,
    bench: Mapping[str, ModelView],
    request: Request,
    seated: Sequence[str],
) -> list[ModelView]:
    """Who may judge this panel, first choice first (module docstring). The
    rest of the bench is ranked only when no member is free to judge. A
    model with no structured output of its own may judge: it is asked for
    the JSON in its prompt (`judge_panel`), as a merger is."""
    now = datetime.now(UTC)
    fit_for = replace(request, output=None)

    def free(aliases: Sequence[str]) -> list[ModelView]:
        models = [bench[a] for a in dict.fromkeys(aliases) if a in bench and a not in seated]
        return [m for m in models if not fitted_unfit_reason(m, fit_for, now)]

    members = [a for a in collection.members if a in bench and a not in seated]
    ranked = await decisions.pick_mergers(store, collection.name, shape, members) if members else []
    chosen = free([collection.merger, *ranked] if collection.merger else ranked)
    if chosen:
        return chosen
    others = [
        a
        for a, m in bench.items()
        if a not in collection.members and a not in seated and not m.ad_hoc and m.role in TEXT_ROLES
    ]
    return free(await decisions.pick_mergers(store, collection.name, shape, others) if others else [])


async def judge_panel(
    caller: Caller,
    *,
    collection: CollectionView,
    bench: Mapping[str, ModelView],
    request: Request,
    shape: str,
    ask_id: str,
    seats: Sequence[Seat],
    seated: Sequence[str],
    rng: random.Random | None = None,
    key: str = "",
) -> int:
    """Ask the judge and store its pairs; the number stored. Never raises
    but for a cancellation: a judge that fails, answers nothing readable or
    cannot be chosen stores nothing and is logged. `key` is the gateway key
    that asked: the judge's call is logged as its, as the seats' are, so
    usage by key counts what judging its asks cost."""
    answered = [s for s in seats if s.status == "ok" and s.call]
    if len(answered) < 2:
        return 0
    store = caller.runtime.store
    try:
        anonymised = anonymise(answered, rng)
        asked = judge_request(request, anonymised)
        candidates = await judge_candidates(store, collection, shape, bench, asked, seated)
        if not candidates:
            log.info("bench/%s ask %s: no model outside the panel can judge it", collection.name, ask_id)
            return 0
        judge = candidates[0]
        result = await caller.call(
            judge,
            as_asked(fitted(asked, judge), judge)[0],
            kind="judge",
            timeout=collection.seat_timeout,
            context=CallContext(
                task=panel_task(collection.name, shape, "judge"),
                collection=collection.name,
                shape=shape,
                seat="judge",
                ask_id=ask_id,
                key=key,
            ),
            stream=True,
        )
        if result.status != "ok":
            log.info("judge %s of ask %s: %s %s", judge.alias, ask_id, result.status, result.error)
            return 0
        judged = parse_judgement(result.reply.text, anonymised.label_of_letter)
        if not judged:
            log.info("judge %s of ask %s (call %s): no readable pair", judge.alias, ask_id, result.call)
            return 0
        call_of = {s.seat: s.call for s in answered}
        for outcome, first, second in judged:
            await record_pairs(store, PairJudgement(outcome, (call_of[first], call_of[second])), kind="judge")
        return len(judged)
    except Exception:  # the reply is out: a judge's failure is logged, never the ask's
        log.exception("the judge of bench/%s ask %s failed", collection.name, ask_id)
        return 0
