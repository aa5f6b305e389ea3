"""The judging loop as a newcomer walks it, keys first (headless Chromium):
an ask sent with Ctrl+Enter is judged by its keys at once, the compare bar
starts at Seat A and Seat B whichever answered first, a Leaderboard left
open in another tab shows the new pair, a blind ask's letters are the same
on the Ask page, in Recent asks and after a reload, and each collection
says whether it keeps its asks' text and for how long.
"""

from __future__ import annotations

import contextlib
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from tests.conftest import capable
from tests.dashboard.test_browser_judging import bench, card, stop_while_writing
from tests.waiting import wait_for

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

NAMES = ("alpha", "beta", "gamma")


def test_keys_judge_at_once_after_ctrl_enter_and_the_open_leaderboard_shows_the_pair(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, Ctrl+Enter left the focus in the question: 1, U, E... were typed
    into it. The bar compared the first two seats to finish (Seat B and Seat C,
    Seat A being slow), so "A is better" judged other seats than it says; and
    a Leaderboard tab showed a pair only once reloaded."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        board = page.context.new_page()
        board.goto(b.base + "/leaderboard?collection=trio")
        row = board.locator('#leaderboard tr[data-alias="alpha"]')
        expect(row.locator(".pairs")).to_have_text("0 won, 0 lost, 0 tied")

        release = threading.Event()
        fake_provider.add(FakeModel("alpha", answer=capable, hold=release))  # Seat A answers last
        page.get_by_label("Question").fill("Which is best?")
        page.keyboard.press("Control+Enter")
        for alias in ("beta", "gamma"):
            expect(card(page, alias).locator(".answer")).to_have_text(f"An answer from {alias}.")
        compare = page.locator("section.compare")
        expect(compare.locator('select[data-side="a"] option:checked')).to_have_text("Seat B · beta")
        release.set()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(compare.locator('select[data-side="a"] option:checked')).to_have_text("Seat A · alpha")
        expect(compare.locator('select[data-side="b"] option:checked')).to_have_text("Seat B · beta")

        # The keys are the answers' at once: 2 goes to Seat B; a note (E, words, Esc), then U saves both.
        for key in ("2", "e", *"a plan, then code", "Escape", "u"):
            page.keyboard.press(key)
        expect(card(page, "beta").locator(".judge-state")).to_have_text("✓ useful — “a plan, then code”")
        expect(page.get_by_label("Question")).to_have_value("Which is best?")
        page.keyboard.press("a")
        expect(compare.locator(".pairs li")).to_have_text(["Seat A · alpha better than Seat B · beta"])
        page.screenshot(path=str(artifacts / "ask-keys-at-once.png"), full_page=True)

        # The Leaderboard left open counts it, without a reload.
        expect(row.locator(".pairs")).to_have_text("1 won, 0 lost, 0 tied")
        cell = board.locator('#win-matrix tr[data-alias="alpha"] td[data-against="beta"]')
        expect(cell).to_contain_text("1–0")
        board.screenshot(path=str(artifacts / "leaderboard-live.png"), full_page=True)
        assert b.watch.take() == []


def test_a_pairs_note_is_written_and_saved_by_keys_alone(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, the pair's note box kept the keys: Esc and Enter did nothing in
    it, so a note was saved with a pair only by the mouse."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        calls = b.answered("Which is best?", NAMES)
        compare = page.locator("section.compare")
        note = compare.get_by_label("Note on the pair (optional)")
        note.focus()
        page.keyboard.type("beta is sharper")
        page.keyboard.press("Enter")  # not judged yet: the keys are the pair's again
        expect(compare.locator(".compare-state")).to_contain_text("Now A, B, T or X")
        page.keyboard.press("b")
        expect(compare.locator(".pairs li")).to_have_text(
            ["Seat B · beta better than Seat A · alpha — “beta is sharper”"]
        )
        compare.locator('select[data-side="a"]').select_option(calls["alpha"])
        compare.locator('select[data-side="b"]').select_option(calls["beta"])
        expect(note).to_have_value("beta is sharper")
        note.fill("beta is much sharper")
        page.keyboard.press("Enter")  # judged: saved again as it was, with the note
        expect(compare.locator(".pairs li")).to_have_text(
            ["Seat B · beta better than Seat A · alpha — “beta is much sharper”"]
        )
        note.fill("both fine")
        page.keyboard.press("Escape")
        page.keyboard.press("t")  # the bar's next pair: Seat A and Seat C
        expect(compare.locator(".pairs li").nth(1)).to_have_text(
            "Seat A · alpha and Seat C · gamma: tie — “both fine”"
        )
        stored = b.client.get("/ui/api/asks").json()["asks"][0]["pairs"]
        assert {(p["outcome"], p["note"]) for p in stored} == {
            ("better", "beta is much sharper"),
            ("tie", "both fine"),
        }
        assert b.watch.take() == []


def test_a_digit_goes_to_its_seats_letter_though_a_seat_before_it_failed(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, the digits counted only the answers to judge: with Seat B
    failed, 3 did nothing and 2 went to Seat C."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        fake_provider.add(FakeModel("beta", error=FakeError(500, "upstream exploded")))
        b.answered("Which is best?", ())
        expect(card(page, "beta")).to_have_class(re.compile(r"\bs-error\b"))
        page.locator("body").press("3")
        expect(card(page, "gamma")).to_be_focused()
        assert card(page, "gamma").get_attribute("aria-keyshortcuts") == "3"
        page.keyboard.press("u")
        expect(card(page, "gamma").locator(".judge-state")).to_have_text("✓ useful")
        page.keyboard.press("2")
        expect(card(page, "beta")).to_be_focused()
        page.keyboard.press("u")  # a failed seat: nothing to judge, no verdict asked for
        expect(card(page, "beta").locator(".judge-state")).to_have_count(0)
        assert b.watch.take() == []


def test_on_a_phone_stop_stays_in_reach_while_the_answers_are_read_below(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, Stop stayed by the question, a screen or more above the answers
    being read, and a phone has no Esc: the slow seat could not be stopped
    from where the person was."""
    long = " ".join(f"word{i}" for i in range(300))
    with bench(
        browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES], viewport=(390, 844)
    ) as b:
        page = b.page
        release = threading.Event()
        fake_provider.add(FakeModel("alpha", answer=long))
        fake_provider.add(FakeModel("gamma", answer=capable, hold=release))
        b.ask("Which is best?")
        expect(card(page, "alpha")).to_have_class(re.compile(r"\bs-ok\b"))
        page.locator("footer.bottom").scroll_into_view_if_needed()
        stop = page.get_by_role("button", name="Stop")
        expect(stop).to_be_in_viewport()
        page.screenshot(path=str(artifacts / "ask-phone-stop.png"))
        stop.click()
        expect(card(page, "gamma")).to_have_class(re.compile(r"\bs-cancelled\b"))
        release.set()
        assert b.watch.take_after(page, 1) == [f"failed: POST {b.base}/ui/api/ask net::ERR_ABORTED"]


def test_a_reload_mid_stream_stops_the_panel_and_gives_the_question_back(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, a reload while the seats wrote left a blank page: the question
    was gone with the answers (stopped upstream, as Stop stops them)."""
    long = " ".join(f"word{i}" for i in range(400))
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        fake_provider.add(FakeModel("gamma", answer=long, tokens_per_second=5))
        b.ask("Will a reload stop you?")
        card(page, "gamma").locator(".answer >> text=/word1/").wait_for()
        page.reload()
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        expect(page.get_by_label("Question")).to_have_value("Will a reload stop you?")
        expect(page.locator("#ask-state")).to_contain_text("stopped it")
        wait_for(lambda: ("closed", "gamma") in fake_provider.timeline)
        page.reload()  # said once: a second reload is a fresh page
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        expect(page.locator("#ask-state")).to_have_text("")
        problems = b.watch.take()
        assert all("ERR_ABORTED" in p for p in problems), problems


def test_a_refused_ask_or_follow_up_gives_its_box_back(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Sending moves the keys to the answers; an ask or a follow-up refused
    (no question) leaves them in its box, to write the question there. An
    empty follow-up said "the last turn must be the user's", the API's words."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES[:2]]) as b:
        page = b.page
        page.get_by_label("Question").focus()
        page.keyboard.press("Control+Enter")
        expect(page.locator('#ask-form [data-error-for="prompt"]')).to_have_text("the question is required")
        expect(page.get_by_label("Question")).to_be_focused()
        page.keyboard.type("Which is best?")
        page.keyboard.press("Control+Enter")
        page.locator("#ask-state >> text=Done.").wait_for()
        page.keyboard.press("f")
        expect(page.get_by_label("Follow-up")).to_be_focused()
        page.keyboard.press("Control+Enter")
        expect(page.locator('#follow-up [data-error-for="prompt"]')).to_have_text("the question is required")
        expect(page.get_by_label("Follow-up")).to_be_focused()
        assert [p for p in b.watch.take() if "400" not in p] == []


def test_a_blind_asks_letters_are_the_same_on_the_ask_page_in_recent_asks_and_after_a_reload(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, Recent asks shuffled a blind ask's seats afresh on each load: the
    Seat A judged on the Ask page was another model's letter there."""
    models = [FakeModel(n, answer=capable) for n in NAMES]
    with bench(browser, home, fake_provider, models, blind=True, keep_text=True, keep_days=7) as b:
        page = b.page
        b.ask("Who is who?")
        page.locator("#ask-state >> text=Done.").wait_for()

        def letters(scope: str) -> dict[str, str]:
            seats = page.locator(f"{scope} .seat-card")
            expect(seats).to_have_count(3)
            drawn = [seats.nth(i) for i in range(3)]
            return {seat.get_attribute("data-call"): seat.get_attribute("data-label") for seat in drawn}

        asked = letters("#conversation")
        assert sorted(asked.values()) == ["Seat A", "Seat B", "Seat C"]
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        assert letters("#asks article.ask") == asked
        page.reload()
        assert letters("#asks article.ask") == asked

        # What the collection keeps, said on its card without opening Edit.
        said = page.locator('section.collection[data-collection="trio"] .settings-said')
        expect(said).to_contain_text("questions and answers for 7 days")
        expect(said).to_contain_text("blind")
        page.screenshot(path=str(artifacts / "recent-asks-blind-letters.png"), full_page=True)
        assert b.watch.take() == []


def test_the_leaderboard_shows_a_collection_once_chosen_the_last_choice_winning_and_back_going_back(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, choosing another collection in the Leaderboard's picker changed
    nothing until Show was clicked: the board below still said the first."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        made = b.client.post("/ui/api/collections", json={"name": "duo", "members": ["alpha", "beta"]})
        assert made.status_code == 200, made.text
        page = b.page
        page.goto(b.base + "/leaderboard?collection=trio")
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        caption = page.locator("#leaderboard caption")
        rows = page.locator("#leaderboard tbody tr")
        expect(caption).to_contain_text("trio")
        pick = page.get_by_label("Collection")
        pick.select_option("duo")
        expect(caption).to_contain_text("duo")
        expect(rows).to_have_count(2)
        expect(page).to_have_url(re.compile(r"collection=duo"))

        # A load still on its way when another choice is made is never drawn over it.
        held: list[Any] = []
        slow = re.compile(r"/leaderboard\?collection=trio")
        page.route(slow, lambda route: held.append(route))
        pick.select_option("trio")
        for _ in range(50):
            if held:
                break
            page.wait_for_timeout(100)
        assert held
        pick.select_option("duo")
        expect(caption).to_contain_text("duo")
        page.unroute(slow)
        with contextlib.suppress(Exception):  # the page gave it up already: nothing left to answer
            held[0].continue_()
        page.wait_for_timeout(1000)
        expect(caption).to_contain_text("duo")
        expect(rows).to_have_count(2)

        # Show still shows; Back and Forward go through the choices, the picker following.
        page.get_by_role("button", name="Show").click()
        expect(caption).to_contain_text("duo")
        page.screenshot(path=str(artifacts / "leaderboard-chosen.png"), full_page=True)
        page.go_back()
        expect(pick).to_have_value("trio")
        expect(caption).to_contain_text("trio")
        expect(rows).to_have_count(3)
        page.go_forward()
        expect(pick).to_have_value("duo")
        expect(caption).to_contain_text("duo")
        assert b.watch.take() == [], "the choices, Back and Forward: no error"


def test_a_models_page_left_open_shows_notes_and_counts_given_elsewhere(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, a note given in another tab or over the API showed on the
    model's page only once reloaded, and its record's counts stayed as they were."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        calls = b.answered("Which is best?", NAMES)
        model = b.page.context.new_page()
        model.goto(b.base + "/models/alpha")
        model.locator('body[data-ready="Bench"]').wait_for(state="attached")
        model.evaluate("window.__notReloaded = true")
        expect(model.locator("#notes")).to_have_count(0)
        judged = model.locator("#record tbody tr", has_text="trio").locator("td").nth(5)
        expect(judged).to_have_text(re.compile(r"^\s*0\b"))
        for said in (
            {"call": calls["alpha"], "useful": True, "note": "clear and right"},
            {"better": calls["alpha"], "worse": calls["beta"], "note": "alpha is sharper"},
        ):
            assert b.client.post("/bench/verdict", json=said).status_code == 200
        notes = model.locator("#notes li")
        expect(notes).to_have_count(2, timeout=15_000)
        expect(model.locator("#notes")).to_contain_text("clear and right")
        expect(model.locator("#notes")).to_contain_text("alpha is sharper")
        expect(judged).to_have_text(re.compile(r"^\s*1\b.*in pairs"))
        assert model.evaluate("window.__notReloaded") is True
        model.screenshot(path=str(artifacts / "model-notes-live.png"), full_page=True)
        assert b.watch.take() == []


def test_a_stopped_seat_keeps_what_it_had_written_in_recent_asks(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, with keep_text on, an ask stopped by its person kept nothing of
    the seat it cut: Recent asks said only "stopped by the person who asked".
    Now the seat keeps what it had written by then, marked as cut, not judged."""
    long = " ".join(f"word{i}" for i in range(400))
    models = [FakeModel(n, answer=capable) for n in NAMES]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=7) as b:
        page = b.page
        fake_provider.add(FakeModel("gamma", answer=long, tokens_per_second=5))
        b.ask("Stop the slow one")
        stop_while_writing(page, "gamma")
        expect(card(page, "gamma")).to_have_class(re.compile(r"\bs-cancelled\b"))
        expect(card(page, "gamma").locator(".answer")).to_contain_text("word0")
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        ask = page.locator("#asks article.ask").first
        expect(ask.locator(".question")).to_contain_text("Stop the slow one")
        gamma = ask.locator('.seat-card[data-alias="gamma"]')
        expect(gamma).to_have_class(re.compile(r"\bs-cancelled\b"))
        expect(gamma.locator(".answer")).to_contain_text("stopped by the person who asked")
        expect(gamma.locator(".answer")).to_contain_text("word0")
        expect(gamma.locator(".cut-note")).to_contain_text("cut where it stopped")
        expect(gamma.locator("[data-verdict]")).to_have_count(0)
        expect(ask.locator('.seat-card[data-alias="alpha"] .answer')).to_have_text("An answer from alpha.")
        page.screenshot(path=str(artifacts / "recent-asks-stopped-seat.png"), full_page=True)
        problems = b.watch.take()
        assert all("ERR_ABORTED" in p for p in problems), problems


def test_the_pairs_note_has_its_own_key(browser: Any, home: Path, fake_provider: FakeProvider) -> None:
    """Before, the pair's note was reached only by Tab: no key went there."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        b.answered("Which is best?", NAMES)
        compare = page.locator("section.compare")
        note = compare.get_by_label("Note on the pair (optional)")
        assert note.get_attribute("aria-keyshortcuts") == "O"
        expect(page.locator("#keys dl.keys")).to_contain_text("write a note on that pair")
        page.keyboard.press("1")  # an answer in focus: O is still the pair's note, E the answer's
        page.keyboard.press("o")
        expect(note).to_be_focused()
        page.keyboard.type("beta reads better")
        page.keyboard.press("Escape")
        expect(compare).to_be_focused()
        page.keyboard.press("b")
        expect(compare.locator(".pairs li")).to_have_text(
            ["Seat B · beta better than Seat A · alpha — “beta reads better”"]
        )
        page.keyboard.press("e")  # the bar in focus: E writes its note too
        expect(note).to_be_focused()
        assert b.watch.take() == []


def test_a_note_saved_before_its_verdict_hands_the_keys_back_for_it(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, Enter in an answer's note with no verdict yet said "Now Useful
    or Not useful saves the note", but the box kept the keys: the U typed next
    went into the note, which was never saved. The merged answer's note alike."""
    with bench(browser, home, fake_provider, [FakeModel(n, answer=capable) for n in NAMES]) as b:
        page = b.page
        b.answered("Which is best?", NAMES)
        for key in ("2", "e", *"clear", "Enter"):
            page.keyboard.press(key)
        beta = card(page, "beta")
        expect(beta.locator(".judge-state")).to_contain_text("Now Useful or Not useful saves the note")
        expect(beta).to_be_focused()
        page.keyboard.press("u")
        expect(beta.locator(".judge-state")).to_have_text("✓ useful — “clear”")
        expect(beta.locator("input.note")).to_have_value("clear")

        page.check("#f-merged")
        b.ask("One answer from all, please")
        page.locator("#ask-state >> text=Done.").wait_for()
        merged = page.locator("#conversation .merged-card").last
        expect(merged).to_be_visible()
        for key in ("m", "e", *"fair", "Enter"):
            page.keyboard.press(key)
        expect(merged.locator(".judge-state")).to_contain_text("Now Useful or Not useful saves the note")
        expect(merged).to_be_focused()
        page.keyboard.press("n")
        expect(merged.locator(".judge-state")).to_contain_text("not useful")
        record = b.client.get("/bench/record", params={"collection": "bench/trio"}).json()
        assert record["merged"]["notUseful"] == 1
        assert b.watch.take() == []


def test_recent_asks_draw_a_long_answers_head_and_judge_it_opened_whole(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Recent asks with kept answers of megabytes drew every one whole, seconds a page: the list
    draws each answer's head, saying how long it is; "Read it whole" reads the ask whole, in
    place, and it is judged (and its verdict changed) there as any ask, staying whole across the
    poll's redraws. A cut answer offers no Copy (it would copy the head)."""
    long = "word " * 60_000 + "the very end"
    models = [FakeModel("alpha", answer=long), FakeModel("beta", answer=capable)]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=1) as b:
        page = b.page
        calls = b.answered("a long one?", ("alpha", "beta"))
        page.goto(b.base + "/collections")
        page.locator("body[data-ready]").wait_for(state="attached")
        ask = page.locator("#asks article.ask").first
        alpha, beta = (ask.locator(f'.seat-card[data-alias="{a}"]') for a in ("alpha", "beta"))
        expect(alpha.locator(".cut-note")).to_contain_text(f"{len(long):,} characters")
        assert "the very end" not in alpha.locator(".answer").inner_text()
        assert len(alpha.locator(".answer").inner_text()) <= 16_000  # its head, not its 300,000
        expect(alpha.locator("button[data-copy-answer]")).to_have_count(0)
        expect(beta.locator(".cut-note")).to_have_count(0)
        expect(beta.locator("button[data-copy-answer]")).to_have_count(1)

        alpha.locator("button[data-open-whole]").click()
        expect(alpha.locator(".answer")).to_contain_text("the very end")
        expect(alpha).to_be_focused()  # the answer opened, for the keys (U, N, C) to act on
        expect(alpha.locator(".cut-note")).to_have_count(0)
        expect(ask.locator("button.open-whole")).to_have_count(0)
        expect(alpha.locator("button[data-copy-answer]")).to_have_count(1)
        for verdict, useful in (("useful", True), ("not_useful", False)):  # given, then changed
            alpha.locator(f'button[data-verdict="{verdict}"]').click()
            expect(alpha.locator(".judge-state")).to_contain_text("useful")

            def stored(useful: bool = useful) -> bool:
                seats = b.client.get("/ui/api/asks", params={"head": "1"}).json()["asks"][0]["seats"]
                return any(
                    s["call"] == calls["alpha"] and (s["verdict"] or {}).get("useful") is useful
                    for s in seats
                )

            wait_for(stored)
        page.wait_for_timeout(3_500)  # a poll, and the redraw the verdict's change brought
        expect(alpha.locator(".answer")).to_contain_text("the very end")
        expect(alpha).to_have_class(re.compile(r"\bjudged\b"))
        assert b.watch.take() == []
