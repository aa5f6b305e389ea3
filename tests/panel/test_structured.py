"""Who is asked for structured output how (`panel/structured.py`), through
the engine: a model known not to answer in JSON is left off ("no
structured output: ...") or, under the collection's `output_fallback =
"prompt"`, asked with the schema in its system prompt; unknown is asked
natively; every answer is checked (a fenced one taken out of its fence);
`:merged` falls back past a merger whose answer is not valid, and says so."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from sqlalchemy import select

from benchwarmers.bench import decisions
from benchwarmers.formats.panel_text import StreamText, reply_text
from benchwarmers.panel.engine import _RUNNING, PanelEngine
from benchwarmers.panel.structured import NO_OUTPUT, as_asked, for_seating, native
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import KeptText
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeRequest
from benchwarmers.types import Ask, MergeText, OutputFormat, PanelReply, Request, user

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
OUTPUT = OutputFormat("json_schema", SCHEMA, name="count")
GOOD = '{"n": 4}'


def _ask(mode: str = "panel") -> Ask:
    return Ask("c", mode, Request((user("how many?"),), output=OUTPUT))  # type: ignore[arg-type]


async def _reply(runtime: Runtime, ask: Ask) -> PanelReply:
    reply = await PanelEngine(runtime).answer(ask)
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)
    return reply


async def _bench(runtime: Runtime, fake: FakeProvider, models: dict[str, tuple[object, bool | None]]) -> None:
    await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
    for alias, (answer, can) in models.items():
        fake.add(FakeModel(alias, answer=answer))  # type: ignore[arg-type]
        await add_model(runtime.store, alias, "fake", alias, structured_output=can)


def test_unknown_is_native_and_false_is_not() -> None:
    class M:
        structured_output: bool | None = None

    unknown, cannot = M(), M()
    cannot.structured_output = False
    request = Request((user("hi"),), system="Be brief.", output=OUTPUT)
    assert native(unknown) and not native(cannot)
    assert as_asked(request, unknown) == (request, "")
    prompted, note = as_asked(request, cannot)
    assert prompted.output is None and "asked for JSON in its system prompt" in note
    assert (
        prompted.system.startswith("Be brief.\n\n")
        and json.dumps(SCHEMA, separators=(",", ":")) in prompted.system
    )
    assert for_seating(request, "leave_off") is request
    assert for_seating(request, "prompt").output is None


async def test_a_model_that_cannot_is_left_off_with_the_reason(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(
        runtime, fake_provider, {"can": (GOOD, True), "cannot": (GOOD, False), "unknown": (GOOD, None)}
    )
    await add_collection(runtime.store, "c", ["can", "cannot", "unknown"])
    reply = await _reply(runtime, _ask())
    assert [s.alias for s in reply.seats] == ["can", "unknown"]
    assert [m.alias for m in reply.left_off] == ["cannot"]
    assert reply.left_off[0].reason.startswith(NO_OUTPUT)
    assert fake_provider.calls["cannot"] == 0
    for seat in reply.seats:
        assert seat.output_check is not None and seat.output_check.valid
        assert fake_provider.last(seat.alias).body["response_format"]["json_schema"]["schema"] == SCHEMA


async def test_the_prompt_fallback_puts_the_schema_in_the_system_prompt(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    fenced = f"```json\n{GOOD}\n```"
    await _bench(runtime, fake_provider, {"can": (GOOD, True), "cannot": (fenced, False)})
    await add_collection(runtime.store, "c", ["can", "cannot"], output_fallback="prompt")
    reply = await _reply(runtime, _ask())
    assert not reply.left_off
    prompted = fake_provider.last("cannot")
    assert "response_format" not in prompted.body and prompted.output is None
    assert '"required":["n"]' in prompted.system
    seat = next(s for s in reply.seats if s.alias == "cannot")
    assert seat.output_check is not None and seat.output_check.valid
    assert seat.content == fenced  # as written: the check reads inside the fence
    assert "system prompt" in seat.note


async def test_an_invalid_answer_is_marked_and_still_shown(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(
        runtime, fake_provider, {"good": (GOOD, None), "wrong": ('{"n": "four"}', None), "prose": ("4", None)}
    )
    await add_collection(runtime.store, "c", ["good", "wrong", "prose"])
    reply = await _reply(runtime, _ask())
    checks = {s.alias: (s.status, s.content, s.output_check) for s in reply.seats}
    assert checks["good"][2] is not None and checks["good"][2].valid
    status, content, check = checks["wrong"]
    assert status == "ok" and content == '{"n": "four"}'
    assert check is not None and not check.valid and check.error == "$.n: 'four' is not of type 'integer'"
    assert checks["prose"][2] is not None and "a JSON object" not in checks["prose"][2].error
    assert not checks["prose"][2].valid


def _merging(seat: str, merge: str):  # type: ignore[no-untyped-def]
    def answer(request: FakeRequest) -> str:
        return merge if "You merge the answers" in request.system else seat

    return answer


async def test_a_merger_whose_answer_is_invalid_falls_back_to_the_next(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Only `json` sits, so `prose`, a member off this panel, is the first
    merger tried: its merge in prose is passed over, and the reply says so."""
    await _bench(
        runtime,
        fake_provider,
        {"prose": (_merging(GOOD, "They say four."), None), "json": (_merging(GOOD, '{"n": 4}'), None)},
    )
    await add_collection(runtime.store, "c", ["prose", "json"])
    reply = await _reply(runtime, replace(_ask("merged"), only_aliases=("json",)))
    merged = reply.merged
    assert merged is not None and merged.status == "ok" and merged.alias == "json"
    assert merged.content == '{"n": 4}'
    assert merged.output_check is not None and merged.output_check.valid
    # Asked to merge (and, beside it, for the merger's report), never to sit.
    merges = [r for r in fake_provider.requests if r.model == "prose" and "You merge the answers" in r.system]
    assert len(merges) == 1 and merges[0].output == {"kind": "json_schema", "schema": SCHEMA}
    assert all(
        "You merge the answers" in r.system or "report" in r.system.lower()
        for r in fake_provider.requests
        if r.model == "prose"
    )
    assert merged.note.startswith(
        "Merged after prose: not valid against the output asked"
        " (not JSON: Expecting value: line 1 column 1 (char 0))."
    )


async def test_no_valid_merge_answers_with_the_first_valid_seat_and_says_whose(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """No merger's answer is valid: the answer is the valid seat's (`b`'s,
    out of its fence; `a`'s seat answered prose), its call and alias in the
    merge's place, the note naming both mergers' failures and the seat."""
    await _bench(
        runtime,
        fake_provider,
        {
            "a": (_merging("four", "prose"), None),
            "b": (_merging(f"```json\n{GOOD}\n```", '{"n": "x"}'), None),
        },
    )
    await add_collection(runtime.store, "c", ["a", "b"])
    reply = await _reply(runtime, _ask("merged"))
    merged, seat = reply.merged, next(s for s in reply.seats if s.alias == "b")
    assert merged is not None and merged.status == "ok"
    assert (merged.call, merged.alias, merged.content) == (seat.call, "b", GOOD)
    assert merged.output_check is not None and merged.output_check.valid
    assert merged.note.startswith("No merger's answer was valid (")
    assert "a: not valid against the output asked" in merged.note
    assert "b: not valid against the output asked" in merged.note
    assert f"this is {seat.seat}'s answer instead (b, call {seat.call})" in merged.note
    assert reply_text(reply) == GOOD


async def test_a_kept_ask_keeps_a_standing_in_seat_answer_once(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """The stand-in's call is its seat's: kept text holds that answer once,
    not a second row under the same call id (which the store refuses)."""
    await _bench(runtime, fake_provider, {"a": (_merging(GOOD, "prose"), None)})
    await add_collection(runtime.store, "c", ["a"], keep_text=True)
    reply = await _reply(runtime, _ask("merged"))
    assert reply.merged is not None and reply.merged.call == reply.seats[0].call
    async with runtime.store.read() as session:
        rows = (await session.execute(select(KeptText.id, KeptText.answer))).all()
    assert (reply.seats[0].call, GOOD) in rows and len(rows) == 2  # the ask's question, the seat's answer


async def test_of_several_valid_seats_the_first_by_record_stands_in(
    runtime: Runtime, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two valid seats: with no record, the first in member order stands in;
    with `b` ranked first on this shape (as mergers are picked), `b`."""
    await _bench(
        runtime,
        fake_provider,
        {"a": (_merging('{"n": 1}', "prose"), None), "b": (_merging('{"n": 2}', "prose"), None)},
    )
    await add_collection(runtime.store, "c", ["a", "b"])
    reply = await _reply(runtime, _ask("merged"))
    assert reply.merged is not None and (reply.merged.alias, reply.merged.content) == ("a", '{"n": 1}')
    asked: list[list[str]] = []

    async def b_first(store: object, collection: str, shape: str, aliases: list[str]) -> list[str]:
        asked.append(aliases)
        return sorted(aliases, reverse=True)

    monkeypatch.setattr(decisions, "rank_aliases", b_first)
    reply = await _reply(runtime, _ask("merged"))
    assert reply.merged is not None and (reply.merged.alias, reply.merged.content) == ("b", '{"n": 2}')
    assert asked == [["a", "b"]]  # the valid seats, in seat order


async def test_no_valid_merge_nor_seat_falls_back_to_the_panel_and_says_why(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(
        runtime,
        fake_provider,
        {"a": (_merging("four", "prose"), None), "b": (_merging('{"n": "4"}', '{"n": "x"}'), None)},
    )
    await add_collection(runtime.store, "c", ["a", "b"])
    reply = await _reply(runtime, _ask("merged"))
    merged = reply.merged
    assert merged is not None and merged.status == "error"
    assert "a: not valid against the output asked" in merged.error
    assert "b: not valid against the output asked" in merged.error
    assert merged.output_check is not None and not merged.output_check.valid
    assert merged.note.startswith("No merger answered")
    assert reply_text(reply).startswith(f"_{merged.note}_") and "### Seat 1" in reply_text(reply)


async def test_a_streamed_merge_with_a_schema_is_one_valid_answer(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Streamed, a merger's answer that is not valid (`prose`'s, tried
    first as it did not sit) is not shown, nor the fence around a valid
    one (`fenced`'s): the stream's text is the valid merge alone, as the
    whole reply's is, so a client parsing it gets one JSON value."""
    await _bench(
        runtime,
        fake_provider,
        {
            "prose": (_merging(GOOD, "They say four."), None),
            "fenced": (_merging(GOOD, '```json\n{"n": 4}\n```'), None),
        },
    )
    await add_collection(runtime.store, "c", ["prose", "fenced"])
    ask = replace(_ask("merged"), stream=True, only_aliases=("fenced",))
    text = StreamText(merged=True)
    pieces = [text.piece(event) async for event in PanelEngine(runtime).run(ask)]
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)
    assert json.loads("".join(pieces)) == {"n": 4}, pieces


async def test_a_streamed_merge_with_no_valid_merger_is_the_valid_seat_in_one_piece(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Streamed, a valid seat's answer standing in for the merge goes out as a
    checked merge does: one `MergeText`, out of its fence, the stream's one JSON value."""
    await _bench(
        runtime,
        fake_provider,
        {
            "a": (_merging("four", "prose"), None),
            "b": (_merging(f"```json\n{GOOD}\n```", "They say four."), None),
        },
    )
    await add_collection(runtime.store, "c", ["a", "b"])
    text = StreamText(merged=True)
    events = [event async for event in PanelEngine(runtime).run(replace(_ask("merged"), stream=True))]
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)
    pieces = [text.piece(event) for event in events]
    merge_texts = [e for e in events if isinstance(e, MergeText)]
    assert [(e.alias, e.text) for e in merge_texts] == [("b", GOOD)]
    assert json.loads("".join(pieces)) == {"n": 4}, pieces
