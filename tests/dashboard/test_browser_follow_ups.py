"""Follow-ups on the Ask page in worlds the first tests did not make, in
headless Chromium: a blind conversation of four turns whose seats leave the
bench between them (one retired, one taken off the bench), each seat
keeping its letter, the members left off named by their seat until judged,
a refused follow-up naming no model and leaving its form in place, a turn's
cost waiting for the names, and each seat's own thread carried past the
turn that was refused."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.script import FakeRequest
from tests.conftest import capable
from tests.dashboard.test_browser_judging import answers, bench, logged_aliases, stop_while_writing

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
NAMES = ("alpha", "beta", "gamma")


def cli(*args: str) -> None:
    """A CLI command, as the owner runs it beside the open page (off Playwright's thread)."""

    def run() -> None:
        result = CliRunner().invoke(app, list(args))
        assert result.exit_code == 0, result.output

    with ThreadPoolExecutor(1) as pool:
        pool.submit(run).result()


def seat_aliases(home: Path, page: Any, turn: int) -> dict[str, str]:
    """Seat label -> alias of one turn's cards, read from the log (the page names none yet)."""
    cards = page.locator("#conversation section.turn").nth(turn).locator(".seat-card").all()
    logged = logged_aliases(home)
    return {c.get_attribute("data-label"): logged[c.get_attribute("data-call")] for c in cards}


def test_a_blind_conversation_of_four_turns_whose_seats_leave_the_bench_between_them(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    said = answers(First="One.", Second="Two.", Third="Three.", Fourth="Four.")
    with bench(browser, home, fake_provider, [FakeModel(n, answer=said) for n in NAMES], blind=True) as b:
        page, left_off = b.page, b.page.locator("#left-off")
        fetched: list[Any] = []  # what the page fetched to ask and to judge: no model named in it
        page.on(
            "response", lambda r: fetched.append(r) if r.url.endswith(("/api/ask", "/api/verdict")) else None
        )
        b.ask("First question")
        page.locator("#ask-state >> text=Done.").wait_for()
        first = seat_aliases(home, page, 0)
        assert sorted(first) == ["Seat A", "Seat B", "Seat C"]

        # Seat C's model is retired: the follow-up to the same seats leaves it off, by its seat.
        cli("model", "retire", first["Seat C"])
        page.get_by_label("Follow-up").fill("Second question")
        page.get_by_role("button", name="Send follow-up").click()
        page.locator("#conversation section.turn >> nth=1").wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(left_off).to_have_text("Seat C left off: retired: retired by the user")
        assert seat_aliases(home, page, 1) == {"Seat A": first["Seat A"], "Seat B": first["Seat B"]}
        assert not any(name in page.content() for name in NAMES)

        # Seat B's model leaves the collection and the bench: asked alone, the refusal names its seat.
        members = [first["Seat A"], first["Seat C"]]
        cli("collection", "set", "trio", *[f"--member={m}" for m in members])
        cli("model", "remove", first["Seat B"])
        page.get_by_label("Send to").select_option(label="only Seat B")
        page.get_by_label("Follow-up").fill("Third question, to B")
        page.get_by_role("button", name="Send follow-up").click()
        # The form stays, saying why (it hid, its error in it: no follow-up could be sent again).
        expect(page.locator("#follow-up")).to_be_visible()
        expect(page.locator("#follow-up")).to_contain_text("no model 'Seat B' on the bench to seat")
        expect(page.get_by_label("Follow-up")).to_have_value("Third question, to B")
        assert page.locator("#conversation section.turn").count() == 2
        assert not any(name in page.content() for name in NAMES)
        b.watch.take()  # the refusal's 404, expected

        # The fourth turn, to the same seats: Seat B is left off (it was a 404 for all of them),
        # Seat A answers with its own thread, the refused turn in none of it.
        page.get_by_label("Send to").select_option(index=0)
        page.get_by_label("Follow-up").fill("Fourth question")
        page.get_by_role("button", name="Send follow-up").click()
        page.locator("#conversation section.turn >> nth=2").wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(left_off).to_have_text("Seat B left off: no longer on the bench")
        # A turn to one seat costs that seat's price, which tells its model: it waits for the names.
        expect(page.locator("#ask-state")).to_contain_text("Its cost shows with the names.")
        assert "cost" not in page.locator("#ask-state").inner_text().replace("Its cost shows", "")
        assert seat_aliases(home, page, 2) == {"Seat A": first["Seat A"]}
        assert [(m.role, m.text) for m in fake_provider.last(first["Seat A"]).messages] == [
            ("user", "First question"),
            ("assistant", "One."),
            ("user", "Second question"),
            ("assistant", "Two."),
            ("user", "Fourth question"),
        ]
        assert not any(name in page.content() for name in NAMES)

        # Each turn judged: the names show, the members left off among them.
        turns = page.locator("#conversation section.turn")
        for turn in range(2):
            turns.nth(turn).locator('.seat-card[data-label="Seat A"]').get_by_role(
                "button", name="Best of the panel"
            ).click()
            expect(turns.nth(turn).locator(".compare .pairs li").first).to_be_visible()
        turns.nth(2).locator(".seat-card").get_by_role("button", name="Useful", exact=True).click()
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(6)
        expect(left_off).to_have_text(f"{first['Seat B']} left off: no longer on the bench")
        expect(page.locator("#ask-state")).to_contain_text("This ask cost")
        page.screenshot(path=str(artifacts / "ask-blind-four-turns.png"), full_page=True)
        assert b.watch.take() == []
        bodies = [r.text() for r in fetched]
        assert len(bodies) == 7 and all(bodies)  # four asks (one refused) and three verdicts
        assert not [name for name in NAMES for body in bodies if name in body]


def test_after_a_stop_and_a_turn_to_one_seat_the_whole_panel_is_asked_again_each_its_own_thread(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """After a follow-up to one chosen seat, the Send-to choices were that
    seat alone ("the same seats (Seat B)", "only Seat B"): the conversation
    could never go back to its panel, nor on with another of its seats."""
    long = " ".join(f"word{i}" for i in range(400))

    def said(request: FakeRequest) -> str:
        prompt = request.messages[-1].text if request.messages else ""
        if request.model == "gamma" and prompt.startswith("Stop"):
            return long
        if prompt.split()[0] in ("Stop", "Second", "Third", "Fourth"):
            return f"{request.model} on {prompt.split()[0]}"
        return capable(request)

    models = [FakeModel(n, answer=said, tokens_per_second=5 if n == "gamma" else None) for n in NAMES]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        send_to = page.get_by_label("Send to")
        b.ask("Stop here, gamma")
        stop_while_writing(page, "gamma")
        turns = page.locator("#conversation section.turn")

        def follow(question: str, to: str) -> None:
            asked = turns.count()
            send_to.select_option(label=to)
            page.get_by_label("Follow-up").fill(question)
            page.get_by_role("button", name="Send follow-up").click()
            expect(turns).to_have_count(asked + 1)
            page.locator("#ask-state >> text=Done.").wait_for()

        # After the Stop: the same seats, gamma's cut answer carried by none (the turn's pick instead).
        follow("Second question", "the same seats (Seat A, Seat B, Seat C)")
        gamma = [(m.role, m.text) for m in fake_provider.last("gamma").messages]
        assert gamma == [
            ("user", "Stop here, gamma"),
            ("assistant", "alpha on Stop"),
            ("user", "Second question"),
        ]
        # One chosen seat, then the whole panel again: each seat its own thread.
        follow("Third question", "only Seat B · beta")
        assert send_to.locator("option").all_inner_texts() == [
            "the same seats (Seat B)",
            "the whole panel again (Seat A, Seat B, Seat C)",
            "only Seat A · alpha",
            "only Seat B · beta",
            "only Seat C · gamma",
        ]
        send_to.select_option(label="the whole panel again (Seat A, Seat B, Seat C)")
        page.get_by_label("History carries").select_option(label="each seat its own answers")
        follow("Fourth question", "the whole panel again (Seat A, Seat B, Seat C)")
        assert [(m.role, m.text) for m in fake_provider.last("alpha").messages] == [
            ("user", "Stop here, gamma"),
            ("assistant", "alpha on Stop"),
            ("user", "Second question"),
            ("assistant", "alpha on Second"),
            ("user", "Third question"),
            ("assistant", "beta on Third"),
            ("user", "Fourth question"),
        ]
        assert fake_provider.last("gamma").messages[3].text == "gamma on Second"
        assert "the whole panel again" not in " ".join(send_to.locator("option").all_inner_texts())

        # The fourth turn's answers are paired as the first turn's were.
        fourth = turns.nth(3)
        fourth.get_by_role("button", name="A is better").click()
        expect(fourth.locator(".compare .pairs li")).to_have_text(
            ["Seat A · alpha better than Seat B · beta"]
        )
        page.screenshot(path=str(artifacts / "ask-back-to-the-panel.png"), full_page=True)
        assert b.watch.take_after(page, 1) == [f"failed: POST {b.base}/ui/api/ask net::ERR_ABORTED"]


def test_seat_letters_are_one_each_past_z_and_shuffled_afresh_each_conversation(
    browser: Any, home: Path
) -> None:
    """The 27th seat of a panel was "Seat A" again: two cards, and two of the
    follow-up's choices, under one name (blind, "only Seat A" asked whichever
    came last)."""
    with live_server(home) as server:
        page = browser.new_page()
        page.goto(server.url + "/ask")
        page.locator("body[data-ready]").wait_for(state="attached")
        labels, orders, hidden = page.evaluate(
            """() => {
                const many = Array.from({ length: 60 }, (_, i) => `m${i}`);
                const names = bw.seatNames(false);
                names.assign(many);
                const orders = Array.from({ length: 30 }, () => {
                    const blind = bw.seatNames(true);
                    blind.assign(['alpha', 'beta', 'gamma']);
                    return ['alpha', 'beta', 'gamma'].map((a) => blind.label(a)).join();
                });
                const blind = bw.seatNames(true);
                blind.assign(['gpt-4o', 'gpt-4o-mini']);
                const hidden = blind.hide("no model 'gpt-4o-mini' (gpt-4o)");
                return [many.map((a) => names.label(a)), orders, hidden];
            }"""
        )
        page.close()
    assert labels[:3] == ["Seat A", "Seat B", "Seat C"] and labels[25:28] == ["Seat Z", "Seat AA", "Seat AB"]
    assert labels[51:53] == ["Seat AZ", "Seat BA"] and len(set(labels)) == 60
    assert len(set(orders)) > 1  # 30 blind conversations, one order each: never all alike
    assert "gpt" not in hidden and hidden.count("Seat ") == 2


def test_a_follow_up_stopped_before_any_answer_ends_no_conversation(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """A follow-up stopped before any seat answered (or one every seat
    failed) hid the follow-up form: the conversation, its history and its
    seats were lost, and the next question went to a new panel."""
    long = " ".join(f"word{i}" for i in range(400))

    def said(request: FakeRequest) -> str:
        prompt = request.messages[-1].text if request.messages else ""
        if prompt.startswith("Second"):
            return long
        return (
            f"{request.model} on {prompt.split()[0]}"
            if prompt.startswith(("First", "Third"))
            else capable(request)
        )

    models = [FakeModel(n, answer=said, tokens_per_second=5) for n in NAMES]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        b.ask("First question")
        page.locator("#ask-state >> text=Done.").wait_for()
        page.get_by_label("Follow-up").fill("Second question")
        page.get_by_role("button", name="Send follow-up").click()
        second = page.locator("#conversation section.turn").nth(1)
        second.locator(".answer >> text=/word1/").first.wait_for()
        page.click("#ask-stop")
        expect(page.locator("#ask-state")).to_contain_text("Stopped")
        expect(second.locator(".seat-card.s-cancelled")).to_have_count(3)

        expect(page.locator("#follow-up")).to_be_visible()
        assert page.get_by_label("Send to").input_value() == ""  # the same seats
        page.get_by_label("Follow-up").fill("Third question")
        page.get_by_role("button", name="Send follow-up").click()
        expect(page.locator("#conversation section.turn")).to_have_count(3)
        page.locator("#ask-state >> text=Done.").wait_for()
        for alias in NAMES:
            assert [(m.role, m.text) for m in fake_provider.last(alias).messages] == [
                ("user", "First question"),
                ("assistant", f"{alias} on First"),
                ("user", "Second question"),
                ("user", "Third question"),
            ]
        assert b.watch.take_after(page, 1) == [f"failed: POST {b.base}/ui/api/ask net::ERR_ABORTED"]
