"""`benchwarmers ask` and `verdict`, against a running server and in-process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwarmers.cli.ask import _seat_letter, _verdict_lines, seat_letters
from benchwarmers.cli.main import app
from benchwarmers.testing import script
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel
from tests.panel.conftest import register

MODELS = [
    FakeModel("one", answer="first answer", ttfb=0.02),
    FakeModel("two", answer="second answer", ttfb=0.15),
]
DUO = {"duo": {"members": ["one", "two"]}}
CALL_ID = re.compile(r"c_[A-Za-z0-9_-]{20}")


def verdict_count(home: Path) -> int:
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return db.execute("SELECT count(*) FROM verdicts").fetchone()[0]


def pair_count(home: Path) -> int:
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return db.execute("SELECT count(*) FROM pair_verdicts").fetchone()[0]


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_ask_and_verdict_against_a_running_server(panel_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with panel_server(MODELS, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        shown = run("ask", "duo", "which?").output
        assert "first answer" in shown and "second answer" in shown
        calls = CALL_ID.findall(shown)
        assert len(set(calls)) == 2
        # Seats print as they finish: the faster one first.
        assert shown.index("first answer") < shown.index("second answer")

        # Two answers: the way to compare them is shown beside the way to judge one.
        assert "compare two: benchwarmers verdict --better A --worse B" in shown
        as_json = json.loads(run("ask", "bench/duo", "again?", "--json").output)
        assert [s["alias"] for s in as_json["seats"]] == ["one", "two"]
        # A quorum of 1 (sent in the body's `bench`): the faster seat's answer, the
        # other cut, unless a busy machine let both in at once.
        cut = json.loads(run("ask", "duo", "again?", "--quorum", "1", "--deadline", "30", "--json").output)
        assert cut["seats"][0]["status"] == "ok"
        if cut["seats"][1]["status"] == "cancelled":
            assert cut["cut"] == {"reason": "quorum", "quorum": 1, "deadline": 30, "background": False}

        said = run("verdict", calls[0], "--useful", "--note", "spot on").output
        assert calls[0] in said and "useful" in said
        again = run("verdict", calls[0], "--useful", "--note", "spot on").output
        assert "nothing changed" in again
        assert verdict_count(server.home) == 1

        first, second = calls[0], calls[1]
        better = run("verdict", "--better", second, "--worse", first).output
        assert f"{second} · two better than {first} · one" in better
        tie = run("verdict", "--tie", first, second).output
        assert "tie with" in tie
        both_bad = run("verdict", "--both-bad", first, second).output
        assert "both bad with" in both_bad
        assert pair_count(server.home) == 1  # one pair, its verdict replaced each time
        mixed = CliRunner().invoke(app, ["verdict", first, "--useful", "--best", second])
        assert mixed.exit_code != 0 and "not both" in mixed.output


def test_a_seats_error_in_square_brackets_is_printed_as_written(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider's error may quote a path or a field in brackets, and a
    merger's point a path; they were read as console markup: `[/docs/errors]`
    ended the command with a MarkupError, and `[messages]` vanished."""
    said = "field [messages] is invalid, see [/docs/errors]"
    point = "names are in [/etc/hosts]"
    report = {**script.PLAIN_REPORT, "consensus": [point]}
    models = [
        FakeModel("one", answer=script.merger("first answer", report)),
        FakeModel("two", error=FakeError(400, said)),
    ]
    with panel_server(models, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        shown = " ".join(run("ask", "duo", "which?", "--merged").output.split())
    assert "first answer" in shown and said in shown and point in shown


def test_markup_in_an_answer_is_printed_as_the_model_wrote_it(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal's markdown dropped HTML: an answer saying
    `<script>alert(1)</script>` printed as `alert(1)`, an `<img onerror>` and a
    block of HTML not at all, so the words judged were not the model's."""
    inline = "Inline <script>alert(1)</script> and <img src=x onerror=alert(2)> stay."
    block = '<div class="x">\nblock kept\n</div>'
    merged = "Merged <b>bold?</b> as written"
    models = [
        FakeModel("one", answer=script.merger(merged, script.PLAIN_REPORT)),
        FakeModel("two", answer=f"## Title\n\n{inline}\n\n{block}\n\nAfter **it**."),
    ]
    with panel_server(models, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        shown = " ".join(run("ask", "duo", "which?", "--merged").output.split())
    assert inline in shown
    assert '<div class="x"> block kept </div>' in shown
    assert merged in shown
    # Markdown itself is still rendered: the heading's and the emphasis' marks are gone.
    assert "## Title" not in shown and "Title" in shown and "After it." in shown


def test_a_leading_think_block_is_folded_to_one_line_and_json_keeps_it(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reasoning model's `<think>` block in its text printed as if it were
    the answer; now one dim line says it was folded, and how long it was."""
    thinking = "Paris is the capital, surely; Lyon is not."
    models = [
        FakeModel("one", answer=script.merger("Merged: Paris.", script.PLAIN_REPORT)),
        FakeModel("two", answer="It is Paris.", thinking=thinking, think_tag="think"),
    ]
    with panel_server(models, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        shown = " ".join(run("ask", "duo", "capital?", "--merged").output.split())
        as_json = json.loads(run("ask", "duo", "capital?", "--json").output)
    assert f"reasoning folded ({len(thinking)} characters)" in shown
    assert "It is Paris." in shown and "Merged: Paris." in shown
    assert "surely" not in shown and "think>" not in shown
    # The API's text is the model's as written (docs/formats.md): the bench object keeps the block.
    (two,) = [seat for seat in as_json["seats"] if seat["alias"] == "two"]
    assert two["content"] == f"<think>\n{thinking}\n</think>\n\nIt is Paris."


def test_a_models_control_characters_reach_the_terminal_as_marks(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer or an upstream error carrying escape sequences went to the
    terminal raw: `ESC]52;c;...` writes the reader's clipboard in many
    terminals, `ESC[2J` clears the screen, `ESC[8m` hides what follows. Each
    control character but newline and tab now shows as a mark naming it."""
    answer = "Run \x1b]52;c;cm0gLXJmIH4=\x07 this\x1b[2J\r\nnext line\x9b31m end"
    error = "bad \x1b[8mhidden"
    models = [
        FakeModel("one", answer=script.merger(answer, script.PLAIN_REPORT)),
        FakeModel("two", error=FakeError(400, error)),
    ]
    with panel_server(models, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        shown = run("ask", "duo", "which?", "--merged").output
    controls = [c for c in shown if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert controls == []
    flat = " ".join(shown.split())
    assert "Run ⟨U+001B⟩]52;c;cm0gLXJmIH4=⟨U+0007⟩ this⟨U+001B⟩[2J next line⟨U+009B⟩31m end" in flat
    assert "bad ⟨U+001B⟩[8mhidden" in flat


def test_ask_in_process_when_no_server_answers(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with panel_server(MODELS, DUO) as server:
        home = server.home
    # The server is gone; nothing listens on port 9 of loopback.
    monkeypatch.setenv("BENCHWARMERS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    shown = run("ask", "duo", "which?", "--system", "be brief").output
    calls = CALL_ID.findall(shown)
    assert "first answer" in shown and len(set(calls)) == 2
    run("verdict", calls[1], "--not-useful")
    assert verdict_count(home) == 1

    refused = CliRunner().invoke(app, ["ask", "nope", "hi"])
    assert refused.exit_code != 0 and "nope" in refused.output
    no_quorum = CliRunner().invoke(app, ["ask", "duo", "hi", "--quorum", "0"])
    assert no_quorum.exit_code != 0 and "--quorum must be at least 1 seat" in no_quorum.output
    no_choice = CliRunner().invoke(app, ["verdict", calls[0]])
    assert no_choice.exit_code != 0 and "--useful" in no_choice.output
    assert "--best A" in no_choice.output  # every way to judge is named, the shortcut too


def test_an_in_process_ask_exits_without_a_traceback(fake_provider: FakeProvider, tmp_path: Path) -> None:
    """The panel's last writes (the seating history, after the reply) are
    done before the command closes the store: no "Exception during reset",
    no CancelledError on the way out. An explorer seat makes the seating, and
    so the history write, change from one ask to the next."""
    home = tmp_path / "home"
    spares = [FakeModel(alias, answer=f"{alias} answer", ttfb=0.02) for alias in ("three", "four", "five")]
    asyncio.run(
        register(
            home, fake_provider, [*MODELS, *spares], {"duo": {"members": ["one", "two"], "explorer_seats": 1}}
        )
    )
    env = {**os.environ, "BENCHWARMERS_HOME": str(home), "BENCHWARMERS_URL": "http://127.0.0.1:9"}
    command = [sys.executable, "-c", "from benchwarmers.cli.main import run; run()", "ask", "duo"]
    for attempt in range(3):
        done = subprocess.run(
            [*command, f"question {attempt}"], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "first answer" in done.stdout and "second answer" in done.stdout
        # One line says no server answered at BENCHWARMERS_URL; nothing else reaches stderr.
        assert done.stderr.startswith("warning: no server at http://127.0.0.1:9;")
        assert done.stderr.count("\n") == 1


def test_half_a_pair_is_refused_in_the_commands_words_before_any_server(tmp_path: Path) -> None:
    """`--better A` alone said '"worse" must be a call id', a body's key the
    command never showed; now it names the option missing, non-zero exit,
    nothing asked of a server (none runs here)."""
    for given, missing in (("--better", "--worse"), ("--worse", "--better")):
        refused = CliRunner().invoke(app, ["verdict", given, "c_AAAAAAAAAAAAAAAAAAAAAA"])
        assert refused.exit_code != 0
        assert f"{given} needs {missing} too" in refused.output and "--best A" in refused.output
        assert '"worse"' not in refused.output and '"better"' not in refused.output


def test_a_third_call_beside_a_pair_is_named_as_one_too_many(tmp_path: Path) -> None:
    """`--tie A B C` took C as the CALL argument and said "judge one seat
    (call and useful) or a pair ..., not both", though no --useful was
    given; now it names C as one call too many, before any server."""
    calls = [f"c_{letter * 20}" for letter in "ABC"]
    for args in (
        ["--tie", *calls],
        ["--both-bad", *calls],
        [calls[2], "--better", calls[0], "--worse", calls[1]],
    ):
        refused = CliRunner().invoke(app, ["verdict", *args])
        assert refused.exit_code != 0, args
        assert f"{calls[2]!r} is one too many" in refused.output and "useful" not in refused.output, (
            refused.output
        )


def test_the_note_stored_is_said_back_with_the_verdict_and_each_pair() -> None:
    """`verdict --best A --note "why"` printed its pairs and never the note
    it stored (the MCP tool says it): now each line ends with it."""
    seat = {"call": "c_1", "alias": "one", "useful": False, "note": "too long", "changed": True}
    assert _verdict_lines(seat) == ["c_1 · one: not useful — too long"]
    pairs = [
        {
            "better": "c_1",
            "worse": "c_2",
            "betterAlias": "one",
            "worseAlias": "two",
            "outcome": "better",
            "note": "cites it",
            "changed": True,
        },
        {
            "better": "c_1",
            "worse": "c_3",
            "betterAlias": "one",
            "worseAlias": "three",
            "outcome": "better",
            "note": "",
            "changed": False,
        },
    ]
    assert _verdict_lines({"pairs": pairs}) == [
        "c_1 · one better than c_2 · two — cites it",
        "c_1 · one better than c_3 · three (already recorded; nothing changed)",
    ]


def test_a_verdict_said_again_without_note_keeps_its_note(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`verdict CALL --useful` said again (no --note) sent `"note": ""`,
    which wrote over the note given before; now it changes nothing, and
    `--note ""` is how a note is cleared."""
    with panel_server(MODELS, DUO) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        call = CALL_ID.findall(run("ask", "duo", "which?").output)[0]
        run("verdict", call, "--useful", "--note", "spot on")
        again = run("verdict", call, "--useful").output
        assert "spot on" in again and "nothing changed" in again
        assert "spot on" not in run("verdict", call, "--useful", "--note", "").output
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            assert db.execute("SELECT note FROM verdicts").fetchall() == [("",)]


def test_a_blind_collection_is_asked_with_no_model_named_until_verdict_names_the_judged(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blind was the dashboard's alone: `ask` named each seat's model (and a
    failed seat's message named it too) before anyone judged."""
    models = [
        FakeModel("zephyr", answer="first answer", ttfb=0.02),
        FakeModel("quasar", answer="second answer", ttfb=0.15),
        FakeModel("nimbus", error=FakeError(500, "nimbus is overloaded")),
    ]
    blind = {"shy": {"members": ["zephyr", "quasar", "nimbus"], "blind": True}}
    with panel_server(models, blind) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        over_http = run("ask", "shy", "which?").output
        home = server.home
    monkeypatch.setenv("BENCHWARMERS_URL", "http://127.0.0.1:9")  # no server: in this process
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    in_process = run("ask", "shy", "which?").output
    for shown in (over_http, in_process):
        assert "first answer" in shown and "second answer" in shown
        assert not {"zephyr", "quasar", "nimbus"} & set(re.findall(r"\w+", shown)), shown
        assert all(f"Seat {letter} ·" in shown for letter in "ABC")
    first, second = re.findall(r"Seat [ABC] · ok · [\d.]+ s · call (c_[\w-]{20})", in_process)
    judged = run("verdict", "--better", first, "--worse", second).output  # the names, once judged
    assert {"zephyr", "quasar"} <= set(re.findall(r"\w+", judged)), judged


class _Rotating:
    """A shuffle of the test's own, put where the CLI draws its blind letters:
    the first ask's seats in the order given, each later ask's turned one further."""

    def __init__(self) -> None:
        self.asks = 0

    def shuffle(self, items: list[str]) -> None:
        turn = self.asks % len(items)
        items[:] = items[turn:] + items[:turn]
        self.asks += 1


BLIND_SEAT = re.compile(r"(Seat \w+) · ok · [\d.]+ s · call (c_[\w-]{20})")


def test_a_blind_asks_letters_are_shuffled_for_each_ask_not_given_in_the_order_seats_finish(
    panel_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The letters went in the order seats finished, so the fastest model was
    always Seat A and its speed named it; now each ask draws its letters
    once its seats are known, and a seat keeps its letter from its answer to
    the verdict that names it."""
    models = [
        FakeModel("zephyr", answer="first answer", ttfb=0.02),
        FakeModel("quasar", answer="second answer", ttfb=0.5),
        FakeModel("nimbus", answer="third answer", ttfb=1.0),
    ]
    answer_of = {"zephyr": "first answer", "quasar": "second answer", "nimbus": "third answer"}
    blind = {"shy": {"members": ["zephyr", "quasar", "nimbus"], "blind": True}}
    monkeypatch.setattr("benchwarmers.cli.ask._SHUFFLE", _Rotating())
    fastest = []
    with panel_server(models, blind) as server:
        monkeypatch.setenv("BENCHWARMERS_URL", server.url)
        for _ in range(3):
            shown = run("ask", "shy", "which?").output
            assert "asking 3 seats, blind" in shown
            assert not set(answer_of) & set(re.findall(r"\w+", shown)), shown
            heads = list(BLIND_SEAT.finditer(shown))
            assert sorted(head[1] for head in heads) == ["Seat A", "Seat B", "Seat C"], shown
            # Each seat's answer under its letter and call, as printed.
            seat_of = {
                shown[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(shown)]: head
                for i, head in enumerate(heads)
            }
            by_answer = {
                said: (head[1], head[2])
                for text, head in seat_of.items()
                for said in answer_of.values()
                if said in text
            }
            assert len(by_answer) == 3, shown
            fastest.append(by_answer["first answer"][0])
            # The reveal: the verdict on the two calls names the models whose answers
            # were printed under those letters.
            (_, best), (_, other) = by_answer["first answer"], by_answer["third answer"]
            judged = run("verdict", "--better", best, "--worse", other).output
            assert f"{best} · zephyr better than {other} · nimbus" in judged, judged
    # Rotated one further each ask, the fastest seat's letter is each of the three once:
    # in the order seats finish it was Seat A every time.
    assert sorted(fastest) == ["Seat A", "Seat B", "Seat C"], fastest


def test_blind_letters_are_one_shuffle_of_the_seats_then_numbers_after_z(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A panel of more than 26 seats: A to Z, then 27, 28...; each label once,
    in the order the shuffle left them."""
    monkeypatch.setattr("benchwarmers.cli.ask._SHUFFLE", _Rotating())
    labels = [f"Seat {n}" for n in range(1, 31)]
    assert seat_letters(labels) == {label: _seat_letter(i) for i, label in enumerate(labels)}
    # The second draw, turned one; a label said twice is lettered once.
    turned = seat_letters([*labels, "Seat 1"])
    assert turned["Seat 2"] == "Seat A" and turned["Seat 27"] == "Seat Z" and turned["Seat 28"] == "Seat 27"
    assert turned["Seat 1"] == "Seat 30" and len(set(turned.values())) == 30
