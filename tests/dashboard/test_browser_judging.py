"""The judging loop in a real browser (headless Chromium): ask a panel,
watch the answers being written, read them as markdown, stop a slow seat,
judge in place and in pairs by mouse and by keyboard, blind, follow up,
and the leaderboard. Each test saves a screenshot of what it shows.

The bench is set up over the dashboard's JSON (as `test_api.py` does): the
browser part is the judging, not the onboarding `test_browser.py` walks.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import httpx
import pytest
from sqlalchemy import update

from benchwarmers.dashboard import auth
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.testing import FakeModel, FakeProvider, script
from benchwarmers.testing.live_server import live_server, settle_logs
from benchwarmers.testing.script import FakeRequest
from tests.conftest import capable
from tests.dashboard.test_browser import WAIT, Watch
from tests.waiting import wait_for

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

MARKDOWN = """## Plan

Some **bold**, some *emphasis* and `inline code`.

- first
- second with [a link](https://example.org/docs)
- [a trap](javascript:alert(1))

```python
print("copied")
```

<script>window.__owned = 1</script> and <img src=x onerror="window.__owned = 2">
"""


def answers(**by_word: str) -> Callable[[FakeRequest], str]:
    """A model's answer: the text keyed by the first word of `by_word` found in
    the question, else what `capable` says (the onboarding probes pass)."""

    def answer(request: FakeRequest) -> str:
        prompt = request.messages[-1].text if request.messages else ""
        for word, text in by_word.items():
            if word in prompt:
                return text
        return capable(request)

    return answer


@dataclass
class Bench:
    base: str
    client: httpx.Client
    page: Any
    watch: Watch

    def ask(self, question: str) -> None:
        self.page.fill("#f-prompt", question)
        self.page.click("#ask-form button[type=submit]")

    def answered(self, question: str, aliases: tuple[str, ...]) -> dict[str, str]:
        """Ask, wait until every seat is done, and each seat's call id by alias."""
        self.ask(question)
        self.page.locator("#ask-state >> text=Done.").wait_for()
        return {a: card(self.page, a).get_attribute("data-call") for a in aliases}


@contextmanager
def bench(
    browser: Any,
    home: Path,
    fake: FakeProvider,
    models: list[FakeModel],
    *,
    aliases: tuple[str, ...] = (),
    viewport: tuple[int, int] = (1280, 900),
    **collection: Any,
) -> Iterator[Bench]:
    """A server with `models` onboarded (Quick + ad hoc) in collection `trio`, and a page on Ask:
    under `aliases` where given (in the models' order), else the alias each one's id gives."""
    for model in models:
        fake.add(model)
    with live_server(home) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        body = {"name": "fake", "api": "openai", "base_url": fake.openai_base, "keyless": True}
        assert client.post("/ui/api/endpoints", json=body).status_code == 200
        served = [m.served for m in models]
        named: list[Any] = served
        if aliases:
            named = [{"served": m, "alias": a} for m, a in zip(served, aliases, strict=True)]
        onboard = {"endpoint": "fake", "models": named, "mode": "quick_ad_hoc"}
        queued = client.post("/ui/api/onboard", json=onboard)
        assert queued.status_code == 200, queued.text
        wait_for(lambda: not (q := client.get("/ui/api/queue").json())["running"] and not q["queued"], 90)
        members = list(aliases) or served
        made = client.post("/ui/api/collections", json={"name": "trio", "members": members, **collection})
        assert made.status_code == 200, made.text
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page = context.new_page()
        page.set_default_timeout(WAIT)
        watch = Watch(page)
        page.goto(server.url + "/ask")
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        try:
            yield Bench(server.url, client, page, watch)
        finally:
            context.close()


def card(page: Any, alias: str) -> Any:
    return page.locator(f'#conversation .seat-card[data-alias="{alias}"]')


def logged_aliases(home: Path) -> dict[str, str]:
    """Each seat's model by call id, from the call log (a blind ask's JSON names none till judged)."""
    settle_logs()
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return dict(db.execute("SELECT id, alias FROM calls WHERE kind = 'seat'").fetchall())


def stop_while_writing(page: Any, writing: str, answered: tuple[str, ...] = ("alpha", "beta")) -> None:
    """Once `answered` are done and `writing` is half way through its words, Stop."""
    for alias in answered:
        expect(card(page, alias)).to_have_class(re.compile(r"\bs-ok\b"))
    card(page, writing).locator(".answer >> text=/word1/").wait_for()
    page.click("#ask-stop")
    expect(page.locator("#ask-state")).to_contain_text("Stopped")


def test_answers_are_markdown_and_model_html_shows_as_text(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [FakeModel("alpha", answer=answers(markdown=MARKDOWN)), FakeModel("beta", answer=capable)]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        b.ask("Answer in markdown, please")
        page.locator("#ask-state >> text=Done.").wait_for()
        answer = card(page, "alpha").locator(".answer")
        expect(answer.locator("h4")).to_have_text("Plan")
        expect(answer.locator("strong")).to_have_text("bold")
        expect(answer.locator("em")).to_have_text("emphasis")
        expect(answer.locator("p code")).to_have_text("inline code")
        assert answer.locator("li").count() == 3
        assert answer.locator("a").count() == 1
        assert answer.locator("a").get_attribute("href") == "https://example.org/docs"
        expect(answer.locator("li").nth(2)).to_have_text("[a trap](javascript:alert(1))")
        # The model's HTML is characters on the page: no element, nothing ran.
        text = answer.inner_text()
        assert "<script>window.__owned = 1</script>" in text
        assert '<img src=x onerror="window.__owned = 2">' in text
        assert answer.locator("script, img").count() == 0
        assert page.evaluate("window.__owned") is None
        # A code block with its own copy button; the answer's Copy takes the whole text.
        expect(answer.locator(".code-block code")).to_have_text('print("copied")')
        answer.locator(".code-block button[data-copy-code]").click()
        assert page.evaluate("navigator.clipboard.readText()") == 'print("copied")'
        card(page, "alpha").locator("button[data-copy-answer]").click()
        assert page.evaluate("navigator.clipboard.readText()") == MARKDOWN
        page.screenshot(path=str(artifacts / "ask-markdown.png"), full_page=True)

        # A merged answer stands beside the seats it merged.
        page.check("#f-merged")
        b.ask("One answer from both, please")
        page.locator("#ask-state >> text=Done.").wait_for()
        merged = page.locator("#conversation .merged-card")
        expect(merged).to_be_visible()
        expect(merged).to_contain_text("Merged from Seat A, Seat B")
        seats_box = page.locator("#conversation .panel-row .seats").bounding_box()
        merged_box = merged.bounding_box()
        assert seats_box and merged_box and merged_box["x"] >= seats_box["x"] + seats_box["width"] - 1
        merged.locator('button[data-merge-verdict="useful"]').click()
        expect(merged.locator(".judge-state")).to_contain_text("useful")
        page.screenshot(path=str(artifacts / "ask-merged.png"), full_page=True)
        record = b.client.get("/bench/record", params={"collection": "bench/trio"}).json()
        assert record["merged"]["useful"] == 1
        assert b.watch.take() == []

        # On a phone, in the dark: one column, nothing wider than the screen.
        phone = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
        small = phone.new_page()
        small.goto(b.base + "/ask")
        small.locator('body[data-ready="Ask"]').wait_for(state="attached")
        small.fill("#f-prompt", "Answer in markdown, please")
        small.click("#ask-form button[type=submit]")
        small.locator("#ask-state >> text=Done.").wait_for()
        small.screenshot(path=str(artifacts / "ask-phone-dark.png"), full_page=True)
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the Ask page is {width}px wide on a 390px phone"
        phone.close()


def test_judging_in_place_by_mouse_and_by_keyboard(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [FakeModel(name, answer=capable) for name in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        calls = b.answered("Which is best?", ("alpha", "beta", "gamma"))

        # Mouse: a note, then Useful; the answer stays where it was, the note shows under it.
        alpha = card(page, "alpha")
        alpha.locator("input.note").fill("clear and right")
        alpha.locator('button[data-verdict="useful"]').click()
        expect(alpha.locator(".judge-state")).to_contain_text("useful — “clear and right”")
        expect(alpha.locator(".answer")).to_have_text("An answer from alpha.")
        assert alpha.locator('button[data-verdict="useful"]').get_attribute("aria-pressed") == "true"

        # Keyboard: 2 goes to the second answer (beta), N says not useful; E, a note, Enter.
        page.locator("body").press("2")
        assert page.evaluate("document.activeElement.dataset.alias") == "beta"
        page.keyboard.press("n")
        expect(card(page, "beta").locator(".judge-state")).to_contain_text("not useful")
        page.keyboard.press("e")
        page.keyboard.type("too short")
        page.keyboard.press("Enter")
        expect(card(page, "beta").locator(".judge-state")).to_contain_text("“too short”")
        record = b.client.get("/bench/record", params={"collection": "bench/trio"}).json()["aliases"]
        assert (record["alpha"]["useful"], record["beta"]["notUseful"]) == (1, 1)

        # Pairs by mouse: alpha (A) over beta (B).
        compare = page.locator("section.compare").last
        compare.locator('select[data-side="a"]').select_option(calls["alpha"])
        compare.locator('select[data-side="b"]').select_option(calls["beta"])
        compare.locator("input.note").fill("alpha is clearer")
        compare.locator('button[data-pair="a"]').click()
        expect(compare.locator(".pairs li")).to_have_count(1)
        expect(compare.locator(".pairs li").first).to_contain_text("alpha better than")
        expect(compare.locator(".pairs li").first).to_contain_text("“alpha is clearer”")
        # By keyboard: the bar moved on to a pair not judged yet; T calls it a tie.
        chosen = {compare.locator(f'select[data-side="{s}"]').input_value() for s in "ab"}
        assert chosen != {calls["alpha"], calls["beta"]}
        page.locator("body").press("t")
        expect(compare.locator(".pairs li")).to_have_count(2)
        expect(compare.locator(".pairs li").nth(1)).to_contain_text("tie")

        # Best of the panel by keyboard: 3 goes to gamma, P puts it over both others.
        page.locator("body").press("3")
        page.keyboard.press("p")
        expect(compare.locator(".pairs li")).to_have_count(3)
        stored = b.client.get("/ui/api/asks").json()["asks"][0]["pairs"]
        outcomes = {(p["betterAlias"], p["worseAlias"], p["outcome"]) for p in stored}
        assert outcomes == {
            ("alpha", "beta", "better"),
            ("gamma", "alpha", "better"),
            ("gamma", "beta", "better"),
        }
        page.screenshot(path=str(artifacts / "ask-judged.png"), full_page=True)

        # The leaderboard counts the new pairs: alpha beat beta and lost to gamma.
        page.locator("header nav").get_by_role("link", name="Leaderboard", exact=True).click()
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        row = page.locator('#leaderboard tr[data-alias="alpha"]')
        expect(row.locator(".pairs")).to_have_text("1 won, 1 lost, 0 tied")
        expect(row.locator(".verdicts")).to_have_text("1 useful, 0 not")
        matrix = page.locator("#win-matrix")
        expect(matrix.locator('tr[data-alias="alpha"] td[data-against="beta"]')).to_contain_text("1–0")
        expect(matrix.locator('tr[data-alias="gamma"] td[data-against="alpha"]')).to_contain_text("1–0")
        assert row.get_attribute("data-settled") == "no"
        expect(row.locator(".band-label")).to_contain_text("we don't know yet")
        expect(page.locator("#next-reasons li").first).to_be_visible()
        board = b.client.get("/ui/api/leaderboard", params={"collection": "bench/trio"}).json()
        assert board["matrix"]["gamma"]["beta"]["wins"] == 1
        page.screenshot(path=str(artifacts / "leaderboard.png"), full_page=True)

        # The notes again, on the models' pages.
        page.goto(b.base + "/models/alpha")
        expect(page.locator("#notes")).to_contain_text("clear and right")
        page.goto(b.base + "/models/beta")
        expect(page.locator('#notes li[data-kind="pair"]')).to_contain_text("worse than alpha")
        expect(page.locator('#notes li[data-kind="pair"]')).to_contain_text("alpha is clearer")
        expect(page.locator('#notes li[data-kind="verdict"]')).to_contain_text("too short")
        page.screenshot(path=str(artifacts / "model-notes.png"), full_page=True)
        assert b.watch.take() == []


def test_b_is_better_by_keyboard_and_both_bad_by_mouse_are_stored_as_shown(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """The two pair choices the test above leaves out: B over A (the bar's
    sides swapped in the body), and both bad (neither side the better)."""
    models = [FakeModel(name, answer=capable) for name in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        calls = b.answered("Compare these two ways", ("alpha", "beta", "gamma"))
        compare = page.locator("section.compare").last

        # Keyboard: B is better, with alpha as A and gamma as B.
        compare.locator('select[data-side="a"]').select_option(calls["alpha"])
        compare.locator('select[data-side="b"]').select_option(calls["gamma"])
        page.locator("body").press("b")
        expect(compare.locator(".pairs li")).to_have_count(1)
        expect(compare.locator(".pairs li").first).to_have_text("Seat C · gamma better than Seat A · alpha")

        # Mouse: both bad, beta and gamma.
        compare.locator('select[data-side="a"]').select_option(calls["beta"])
        compare.locator('select[data-side="b"]').select_option(calls["gamma"])
        compare.locator('button[data-pair="both_bad"]').click()
        expect(compare.locator(".pairs li")).to_have_count(2)
        expect(compare.locator(".pairs li").nth(1)).to_contain_text(": both bad")
        stored = b.client.get("/ui/api/asks").json()["asks"][0]["pairs"]
        outcomes = {(p["outcome"], p["betterAlias"], p["worseAlias"]) for p in stored}
        assert ("better", "gamma", "alpha") in outcomes and len(outcomes) == 2
        ((both_bad, *sides),) = [o for o in outcomes if o[0] != "better"]
        assert (both_bad, set(sides)) == ("both_bad", {"beta", "gamma"})
        page.screenshot(path=str(artifacts / "ask-pairs-b-and-both-bad.png"), full_page=True)

        # The leaderboard counts them: gamma won one; both bad is a loss for neither, said apart.
        page.locator("header nav").get_by_role("link", name="Leaderboard", exact=True).click()
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        for alias, record in (
            ("alpha", "0 won, 1 lost, 0 tied"),
            ("beta", "0 won, 0 lost, 0 tied, 1 both bad"),
            ("gamma", "1 won, 0 lost, 0 tied, 1 both bad"),
        ):
            expect(page.locator(f'#leaderboard tr[data-alias="{alias}"] .pairs')).to_have_text(record)
        # Beta and gamma met in that pair, though neither won it: the matrix says so, not "not met".
        matrix = page.locator("#win-matrix")
        for row, column in (("beta", "gamma"), ("gamma", "beta")):
            cell = matrix.locator(f'tr[data-alias="{row}"] td[data-against="{column}"]')
            expect(cell).to_have_text("0–0 1 both bad")
        expect(matrix.locator('tr[data-alias="beta"] td[data-against="alpha"]')).to_have_text("not met")
        board = b.client.get("/ui/api/leaderboard", params={"collection": "bench/trio"}).json()
        assert board["bothBad"] == {"beta": {"gamma": 1}, "gamma": {"beta": 1}}
        # Judged in pairs alone, a model has a record on the Bench page: not "not judged yet".
        page.goto(b.base + "/models")
        gamma = page.locator('tr[data-alias="gamma"] td[data-label="Record"]')
        expect(gamma).to_contain_text("in pairs")
        expect(gamma).not_to_contain_text("not judged yet")
        assert b.watch.take() == []


def test_a_pairs_note_stays_when_its_verdict_is_changed_later(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """A seat's note box keeps its note, so a changed verdict keeps it; the
    pair's box was emptied after each save, so changing "A is better" to a
    tie later stored the pair with no note (gone from the model's page)."""
    models = [FakeModel(name, answer=capable) for name in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        calls = b.answered("Which is clearer?", ("alpha", "beta", "gamma"))
        compare = page.locator("section.compare").last
        note = compare.get_by_label("Note on the pair (optional)")

        def choose(a: str, b: str) -> None:
            compare.locator('select[data-side="a"]').select_option(calls[a])
            compare.locator('select[data-side="b"]').select_option(calls[b])

        choose("alpha", "beta")
        note.fill("alpha cites its source")
        compare.get_by_role("button", name="A is better").click()
        expect(compare.locator(".pairs li")).to_have_count(1)
        expect(note).to_have_value("")  # moved on to a pair not judged yet
        note.fill("typed for the next pair")
        choose("beta", "alpha")  # words typed by hand are not replaced
        expect(note).to_have_value("typed for the next pair")
        note.fill("")
        choose("alpha", "gamma")
        choose("beta", "alpha")  # the judged pair again: its note is back
        expect(note).to_have_value("alpha cites its source")
        compare.get_by_role("button", name="Tie").click()
        expect(compare.locator(".pairs li").first).to_contain_text(": tie")
        (pair,) = b.client.get("/ui/api/asks").json()["asks"][0]["pairs"]
        assert (pair["outcome"], pair["note"]) == ("tie", "alpha cites its source")
        assert b.watch.take() == []


def test_a_long_unbroken_note_wraps_in_its_card_and_on_the_models_page(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """A note of one long word (a URL, a path: up to 2,000 characters) ran
    out of its card over the next one and made the Ask page and the model's
    page scroll sideways 15,000 pixels; it wraps where it stands, as an
    answer does, and stays text."""
    models = [FakeModel(name, answer=capable) for name in ("alpha", "beta")]
    wide = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    long_note = "<b>see</b> https://example.org/" + "x" * 1900
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=7) as b:
        page = b.page
        b.answered("Which is clearer?", ("alpha", "beta"))
        alpha = card(page, "alpha")
        alpha.locator("input.note").fill(long_note)
        alpha.locator('button[data-verdict="useful"]').click()
        expect(alpha.locator(".judge-state")).to_contain_text("xxxx”")
        compare = page.locator("section.compare").last
        compare.locator("input.note").fill("y" * 1900)
        compare.get_by_role("button", name="A is better").click()
        expect(compare.locator(".pairs li")).to_have_count(1)
        assert page.evaluate(wide) == 0
        page.goto(b.base + "/models/alpha")
        expect(page.locator('#notes li[data-kind="verdict"] q')).to_have_text(long_note)
        assert page.evaluate(wide) == 0
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        ask = page.locator("#asks article.ask").first
        expect(ask.locator('.seat-card[data-alias="alpha"] .judge-state')).to_contain_text("<b>see</b>")
        assert page.evaluate(wide) == 0
        assert b.watch.take() == []


def test_the_leaderboard_per_kind_of_question_with_its_trend_and_a_model_that_left(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """The Leaderboard as a stranger reads it: short questions judged three
    days ago and today draw a trend line; the code board is reached from the
    page by keyboard and ranks as its JSON does; a member taken off the
    collection keeps its record, tagged "not a member" (it read "explorer")."""
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        old = b.answered("Which is best?", ("alpha", "beta", "gamma"))
        assert b.client.post("/ui/api/verdict", json={"best": old["beta"]}).status_code == 200

        async def three_days_back() -> None:
            async with Runtime.open(home) as runtime, runtime.store.write() as session:
                await session.execute(
                    update(schema.PairVerdict).values(at=datetime.now(UTC) - timedelta(days=3))
                )

        with ThreadPoolExecutor(1) as other:  # Playwright's loop runs in this thread
            other.submit(asyncio.run, three_days_back()).result()
        today = b.answered("Which is best, again?", ("alpha", "beta", "gamma"))
        assert b.client.post("/ui/api/verdict", json={"best": today["beta"]}).status_code == 200
        code = b.answered("Fix this python function:\n```python\ndef f(:\n```", ("alpha", "beta", "gamma"))
        assert b.client.post("/ui/api/verdict", json={"best": code["gamma"]}).status_code == 200
        left = b.client.post("/ui/api/collections/trio", json={"members": ["beta", "gamma"]})
        assert left.status_code == 200, left.text

        page.goto(b.base + "/leaderboard?collection=bench/trio&shape=short")
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        expect(page.locator("#leaderboard caption")).to_contain_text("short questions")
        beta = page.locator('#leaderboard tr[data-alias="beta"]')
        expect(beta.locator(".rank")).to_have_text("1")
        expect(beta.locator(".pairs")).to_have_text("4 won, 0 lost, 0 tied")
        expect(beta.locator(".trend svg.spark polyline")).to_have_count(1)  # two days: a line
        alpha = page.locator('#leaderboard tr[data-alias="alpha"]')
        expect(alpha.locator(".tag")).to_have_text("not a member")
        expect(page.locator("#next-panel")).not_to_contain_text("alpha")
        board = b.client.get("/bench/leaderboard", params={"collection": "trio", "shape": "short"}).json()
        (trend,) = [m["trend"] for m in board["models"] if m["alias"] == "beta"]
        assert len(trend) == 2 and trend[0]["day"] < trend[1]["day"]
        page.screenshot(path=str(artifacts / "leaderboard-short.png"), full_page=True)

        # To the code board by keyboard: its link, Enter.
        page.get_by_role("navigation", name="Kinds of question").get_by_role("link", name="code").focus()
        page.keyboard.press("Enter")
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        expect(page.locator("#leaderboard caption")).to_contain_text("code questions")
        asked = {"collection": "bench/trio", "shape": "code"}  # the name as the model field spells it
        board = b.client.get("/bench/leaderboard", params=asked).json()
        assert board["models"][0]["alias"] == "gamma"
        for model in board["models"]:
            row = page.locator(f'#leaderboard tr[data-alias="{model["alias"]}"]')
            expect(row.locator(".rank")).to_have_text(str(model["rank"]))
        gamma_on_beta = page.locator('#win-matrix tr[data-alias="gamma"] td[data-against="beta"]')
        expect(gamma_on_beta).to_contain_text("1–0")
        page.screenshot(path=str(artifacts / "leaderboard-code.png"), full_page=True)
        assert b.watch.take() == []


def test_blind_mode_hides_the_names_until_judged_then_reveals_them(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    names = ("alpha", "beta", "gamma")
    models = [FakeModel(name, answer=answers(capital="It is Paris.")) for name in names]
    with bench(browser, home, fake_provider, models, blind=True) as b:
        page = b.page
        # The collection's setting ticks the page's toggle (which can untick it for one ask).
        assert page.is_checked("#f-blind")
        assert b.client.get("/ui/api/collections").json()["collections"][0]["blind"] is True
        b.ask("What is the capital of France?")
        page.locator("#ask-state >> text=Done.").wait_for()
        cards = page.locator("#conversation .seat-card")
        assert cards.count() == 3
        labels = [cards.nth(i).get_attribute("data-label") for i in range(3)]
        assert labels == ["Seat A", "Seat B", "Seat C"]
        shown = page.inner_text("#conversation") + page.inner_text("#follow-up")
        assert not any(name in shown for name in names), shown
        assert page.locator("#conversation .seat-card[data-alias]").count() == 0
        # Nor the server's numbering ("Seat 1" is the first member as the collection lists them).
        assert not re.search(r"Seat \d", page.inner_html("#conversation"))
        page.screenshot(path=str(artifacts / "ask-blind.png"), full_page=True)

        # Judged one by one (by keyboard): the names stay hidden until the last verdict.
        for key, verdict in (("1", "u"), ("2", "n")):
            page.locator("body").press(key)
            page.keyboard.press(verdict)
            expect(cards.nth(int(key) - 1).locator(".judge-state")).to_contain_text("useful")
        assert page.locator("#conversation .seat-card[data-alias]").count() == 0
        page.locator("body").press("3")
        page.keyboard.press("u")
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(3)
        revealed = {cards.nth(i).get_attribute("data-alias") for i in range(3)}
        assert revealed == set(names)
        assert {cards.nth(i).get_attribute("data-seat") for i in range(3)} == {"Seat 1", "Seat 2", "Seat 3"}
        for i in range(3):
            expect(cards.nth(i).locator(".who")).to_have_text(cards.nth(i).get_attribute("data-alias") or "")
        page.screenshot(path=str(artifacts / "ask-blind-revealed.png"), full_page=True)

        # Recent asks is blind too: a new ask (from a client) hides its names, the judged one shows them.
        chat = {"model": "bench/trio", "messages": [{"role": "user", "content": "The capital again?"}]}
        again = httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60)
        assert again.status_code == 200
        # One of its three answers judged (as on the Ask page, that names nobody yet).
        first = again.json()["bench"]["seats"][0]["call"]
        assert b.client.post("/ui/api/verdict", json={"call": first, "useful": True}).status_code == 200
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        asks = page.locator("#asks article.ask")
        asks.nth(1).wait_for()
        expect(asks.nth(0).locator(".seat-card")).to_have_count(3)
        assert asks.nth(0).locator(".seat-card[data-alias]").count() == 0
        assert not any(name in asks.nth(0).inner_text() for name in names)
        expect(asks.nth(1).locator(".seat-card[data-alias]")).to_have_count(3)
        page.screenshot(path=str(artifacts / "collections-blind.png"), full_page=True)
        assert b.watch.take() == []


def test_blind_a_failed_seats_message_names_no_model_until_judged(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """A seat whose model failed showed the upstream's message, which may
    name the model (or ours, naming its alias): blind, the card says it
    failed and keeps the message, out of the page, until the names are
    shown; then it is there in full. The same on Recent asks. A panel with
    nothing to judge (every seat failed) has nothing to hide: named at once."""
    names = ("alpha", "beta", "gamma")
    models = [FakeModel(name, answer=answers(capital="It is Paris.")) for name in names]
    with bench(browser, home, fake_provider, models, blind=True) as b:
        page = b.page
        models[2].error = script.FakeError(status=400, message="gamma-upstream refused the ask")
        b.ask("What is the capital of France?")
        page.locator("#ask-state >> text=Done.").wait_for()
        cards = page.locator("#conversation .seat-card")
        failed = page.locator("#conversation .seat-card.s-error")
        expect(failed).to_have_count(1)
        expect(failed.locator(".answer .error")).to_contain_text("shown once the names are")
        assert not any(name in page.content() for name in names), page.inner_text("#conversation")
        assert "upstream refused" not in page.content()
        page.screenshot(path=str(artifacts / "ask-blind-failed.png"), full_page=True)
        for index in range(3):  # the two answers that can be judged, each by its seat's digit
            if "s-error" not in (cards.nth(index).get_attribute("class") or ""):
                page.locator("body").press(str(index + 1))
                page.keyboard.press("u")
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(3)
        expect(failed.locator(".answer .error")).to_contain_text("gamma-upstream refused the ask")
        assert cards.count() == 3

        # Recent asks: an ask from a client hides its failed seat's message; the judged one shows it.
        chat = {"model": "bench/trio", "messages": [{"role": "user", "content": "The capital again?"}]}
        assert httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60).status_code == 200
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        asks = page.locator("#asks article.ask")
        asks.nth(1).wait_for()
        expect(asks.nth(0).locator(".seat-card.s-error .error")).to_contain_text("shown once the names are")
        assert asks.nth(0).locator(".seat-card[data-alias]").count() == 0
        newest = asks.nth(0).evaluate("e => e.outerHTML")
        assert not any(name in newest for name in names) and "upstream refused" not in newest, newest
        expect(asks.nth(1).locator(".seat-card.s-error .error")).to_contain_text("gamma-upstream refused")

        # Every seat failed: nothing to judge, nothing to hide.
        for model in models:
            model.error = script.FakeError(status=400, message=f"{model.served}-upstream refused the ask")
        page.goto(b.base + "/ask")
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        b.ask("And now?")
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(3)
        for name in names:
            expect(card(page, name).locator(".error")).to_contain_text(f"{name}-upstream refused")
        assert b.watch.take() == []


def test_blind_a_failed_merges_message_names_no_merger_until_judged(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """The merger is "merger" on a blind page: its failure's message (which
    may name it, and it may be a member) is hidden alike, until judged."""
    models = [FakeModel(name, answer=answers(Merge="It is Paris.")) for name in ("alpha", "beta", "gamma")]
    members = {"members": ["alpha", "beta"], "reply": "merged", "merger": "gamma"}
    with bench(browser, home, fake_provider, models, blind=True, **members) as b:
        page = b.page
        models[2].error = script.FakeError(status=400, message="gamma-upstream refused to merge")
        b.ask("Merge this")
        page.locator("#ask-state >> text=Done.").wait_for()
        merged = page.locator("#conversation .merged-card")
        expect(merged.locator(".error")).to_contain_text("shown once the names are")
        html = page.content()
        assert not [name for name in ("alpha", "beta", "gamma") if name in html], page.inner_text("main")
        for key in ("1", "2"):
            page.locator("body").press(key)
            page.keyboard.press("u")
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(2)
        expect(merged.locator(".error")).to_contain_text("gamma-upstream refused to merge")
        assert b.watch.take() == []


def test_judging_a_blind_ask_in_recent_asks_moves_no_record_row_until_the_names_show(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Recent asks sits above the collection's record table, which followed
    each verdict: blind, judging Seat A turned "No verdicts yet" into a row
    "alpha 1 0 1" while the card still said "name hidden". The table waits
    for the verdict that shows the names, then has them all."""
    names = ("alpha", "beta")
    models = [FakeModel(name, answer=capable) for name in names]
    with bench(browser, home, fake_provider, models, blind=True) as b:
        page = b.page
        chat = {"model": "bench/trio", "messages": [{"role": "user", "content": "Who is who?"}]}
        assert httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60).status_code == 200
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        ask = page.locator("#asks article.ask").first
        cards = ask.locator(".seat-card")
        expect(cards).to_have_count(2)
        rows = page.locator('table[data-record="trio"] tbody tr')
        cards.nth(0).get_by_role("button", name="Useful", exact=True).click()
        expect(cards.nth(0).locator(".judge-state")).to_contain_text("useful")
        page.wait_for_timeout(300)  # the table followed at once, when it did
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_class("none")
        assert ask.locator(".seat-card[data-alias]").count() == 0
        assert not any(name in page.inner_text("#recent") for name in names)
        assert not any(name in page.inner_text('table[data-record="trio"]') for name in names)
        cards.nth(1).get_by_role("button", name="Not useful", exact=True).click()
        expect(ask.locator(".seat-card[data-alias]")).to_have_count(2)
        expect(page.locator('table[data-record="trio"] tbody tr[data-alias]')).to_have_count(2)
        expect(page.locator('table[data-record="trio"] tr[data-alias] td.judged')).to_have_text(["1", "1"])
        assert b.watch.take() == []


def test_one_answer_offers_no_best_of_the_panel_nor_a_pair(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Best of the panel is better than every other answer: with one answer
    there is none, so neither the button nor its key asks the server (which
    refused it with a 400 the card showed)."""
    with bench(browser, home, fake_provider, [FakeModel("alpha", answer=capable)]) as b:
        page = b.page
        b.answered("Only one?", ("alpha",))
        alpha = card(page, "alpha")
        expect(alpha.get_by_role("button", name="Useful", exact=True)).to_be_visible()
        expect(alpha.locator("button[data-best]")).to_be_hidden()
        expect(page.locator("section.compare")).to_be_hidden()
        page.locator("body").press("1")
        page.keyboard.press("p")
        page.keyboard.press("u")
        expect(alpha.locator(".judge-state")).to_contain_text("useful")
        assert "only seat" not in alpha.inner_text()
        assert b.client.get("/ui/api/asks").json()["asks"][0]["pairs"] == []
        assert b.watch.take() == []


def test_a_blind_follow_up_names_no_model_in_the_page_and_reaches_the_chosen_seat(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Blind, the follow-up's choices were the models' names as their
    values ("only Seat B" was `<option value="beta">`): in the page for
    anyone to read before judging. They name the seat now, and still reach it."""
    names = ("alpha", "beta", "gamma")
    said = answers(First="The same answer.", Second="Again the same.")
    models = [FakeModel(name, answer=said) for name in names]
    with bench(browser, home, fake_provider, models, blind=True) as b:
        page = b.page
        b.ask("First question")
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(page.get_by_label("Send to")).to_be_visible()
        assert not any(name in page.content() for name in names)
        call_b = page.locator('#conversation .seat-card[data-label="Seat B"]').get_attribute("data-call")
        alias_b = logged_aliases(home)[call_b]  # the page's JSON names no model either, till judged
        before = {name: fake_provider.calls[name] for name in names}
        page.get_by_label("Send to").select_option(label="only Seat B")
        page.get_by_label("Follow-up").fill("Second question, to B")
        page.get_by_role("button", name="Send follow-up").click()
        page.locator("#conversation section.turn >> nth=1").wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        moved = {name: fake_provider.calls[name] - before[name] for name in names}
        assert moved == {name: int(name == alias_b) for name in names}
        assert [(m.role, m.text) for m in fake_provider.last(alias_b).messages] == [
            ("user", "First question"),
            ("assistant", "The same answer."),
            ("user", "Second question, to B"),
        ]
        assert not any(name in page.content() for name in names)
        assert b.watch.take() == []


def test_a_blind_conversation_is_named_once_each_turn_is_judged_not_one_follow_up(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """A verdict on a one-seat follow-up named every model of the
    conversation, Seat A and Seat C too, whose first answers nobody had
    judged. The names wait for each turn's judging (every answer, a pair or
    the best), as one turn's do."""
    names = ("alpha", "beta", "gamma")
    models = [FakeModel(name, answer=answers(First="An answer.", Second="Another.")) for name in names]
    with bench(browser, home, fake_provider, models, blind=True) as b:
        page = b.page
        b.ask("First question")
        page.locator("#ask-state >> text=Done.").wait_for()
        page.get_by_label("Send to").select_option(label="only Seat B")
        page.get_by_label("Follow-up").fill("Second question, to B")
        page.get_by_role("button", name="Send follow-up").click()
        second = page.locator("#conversation section.turn").nth(1)
        second.wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        second.locator(".seat-card").get_by_role("button", name="Useful", exact=True).click()
        expect(second.locator(".judge-state")).to_contain_text("useful")
        page.wait_for_timeout(300)
        assert page.locator("#conversation .seat-card[data-alias]").count() == 0
        assert not any(name in page.content() for name in names)
        # The first turn judged (best of the panel): now every turn is, and the names show.
        first = page.locator("#conversation section.turn").first
        first.locator('.seat-card[data-label="Seat A"]').get_by_role(
            "button", name="Best of the panel"
        ).click()
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(4)
        assert b.watch.take() == []


def test_three_seats_stream_their_text_as_it_is_written(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    words = " ".join(f"word{i}" for i in range(30))
    names = ("alpha", "beta", "gamma")
    models = [FakeModel(n, answer=answers(stream=f"{n} says {words}"), tokens_per_second=4) for n in names]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        b.ask("Please stream slowly")
        # Each seat shows some of its words while it is still writing...
        for name in names:
            card(page, name).locator(f".answer >> text=/{name} says word0/").wait_for()
            expect(card(page, name)).to_have_class(re.compile(r"\bs-writing\b"))
            assert "word29" not in card(page, name).inner_text()
        page.screenshot(path=str(artifacts / "ask-streaming.png"), full_page=True)
        # ...and all of them once done.
        page.locator("#ask-state >> text=Done.").wait_for()
        for name in names:
            expect(card(page, name).locator(".answer")).to_have_text(f"{name} says {words}")
            expect(card(page, name)).to_have_class(re.compile(r"\bs-ok\b"))
        assert b.watch.take() == []


def test_the_ask_page_is_reached_by_its_labels_and_button_names(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """What a person (or a screen reader, or a test written from outside)
    finds by name: one box labelled Question (the follow-up's is its own),
    and buttons named by their words, the key beside them announced as a
    shortcut rather than read into the name ("Useful", not "Useful U")."""
    models = [FakeModel(name, answer=capable) for name in ("alpha", "beta")]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        page.get_by_label("Question").fill("Which is best?")
        page.get_by_role("button", name="Ask", exact=True).click()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(page.get_by_label("Question")).to_have_count(1)
        expect(page.get_by_label("Follow-up")).to_be_visible()
        for words, key in (("Useful", "U"), ("Not useful", "N"), ("Best of the panel", "P"), ("Copy", "C")):
            named = page.get_by_role("button", name=words, exact=True)
            expect(named).to_have_count(2)
            assert named.first.get_attribute("aria-keyshortcuts") == key
        for words in ("A is better", "B is better", "Tie", "Both bad"):
            expect(page.get_by_role("button", name=words, exact=True)).to_have_count(1)
        card(page, "alpha").get_by_role("button", name="Useful", exact=True).click()
        expect(card(page, "alpha").locator(".judge-state")).to_contain_text("useful")
        page.get_by_role("button", name="A is better", exact=True).click()
        expect(page.locator("section.compare .pairs li")).to_have_count(1)
        assert b.watch.take() == []


def test_stop_cancels_the_slow_seat_and_the_upstream_sees_it_hang_up(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    long = " ".join(f"word{i}" for i in range(400))
    models = [
        FakeModel("alpha", answer=capable),
        FakeModel("beta", answer=capable),
        FakeModel("slow", answer=answers(stop=long), tokens_per_second=5),
    ]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        b.ask("Will you stop?")
        stop_while_writing(page, "slow")
        expect(card(page, "slow")).to_have_class(re.compile(r"\bs-cancelled\b"))
        expect(card(page, "slow").locator("button[data-verdict]")).to_have_count(0)
        # The cut seat is no choice in the compare bar; the two that answered are.
        options = page.locator('section.compare select[data-side="a"] option').all_inner_texts()
        assert sorted(o.split(" · ")[-1] for o in options) == ["alpha", "beta"]
        wait_for(lambda: ("closed", "slow") in fake_provider.timeline)
        logged = wait_for(lambda: [a for a in b.client.get("/ui/api/asks").json()["asks"] if a["seats"]])
        statuses = {s["alias"]: s["status"] for s in logged[0]["seats"]}
        assert statuses == {"alpha": "ok", "beta": "ok", "slow": "cancelled"}
        # The page's Stop is the person's, told from a gateway client hanging up.
        assert {s["alias"]: s["error"] for s in logged[0]["seats"]}[
            "slow"
        ] == "stopped by the person who asked"
        page.screenshot(path=str(artifacts / "ask-stopped.png"), full_page=True)
        # The one failed request is the stream the Stop aborted.
        assert b.watch.take_after(page, 1) == [f"failed: POST {b.base}/ui/api/ask net::ERR_ABORTED"]


def test_a_merged_collection_merges_by_default_and_stop_cuts_the_merge_being_written(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """The Merged answer box starts as the collection replies (as Blind
    does); a Stop while the merger writes shows the merge cancelled, not
    still writing, and it is logged cancelled."""
    long = " ".join(f"word{i}" for i in range(400))
    merging = script.merger(answers(mergestop=long), script.PLAIN_REPORT)
    models = [
        FakeModel("alpha", answer=capable),
        FakeModel("beta", answer=capable),
        FakeModel("merger", answer=merging, tokens_per_second=5),
    ]
    merged = {"members": ["alpha", "beta"], "reply": "merged", "merger": "merger"}
    with bench(browser, home, fake_provider, models, **merged) as b:
        page = b.page
        expect(page.locator("#f-merged")).to_be_checked()
        expect(page.locator("#f-merged")).to_be_disabled()  # the collection merges every ask
        b.ask("Will you mergestop?")
        page.locator(".merged-card .answer >> text=/word1/").wait_for()
        page.click("#ask-stop")
        expect(page.locator("#ask-state")).to_contain_text("Stopped")
        merge = page.locator(".merged-card")
        expect(merge).to_have_class(re.compile(r"\bs-cancelled\b"))
        expect(merge.locator(".status")).to_have_text("cancelled")
        expect(merge).to_contain_text("it costs no verdict")
        expect(merge.locator("button")).to_have_count(0)
        wait_for(lambda: ("closed", "merger") in fake_provider.timeline)

        def merge_logged() -> list[dict[str, Any]]:
            asks = b.client.get("/ui/api/asks").json()["asks"]
            return [a for a in asks if any(s["seat"] == "merged" for s in a["seats"])]

        logged = wait_for(merge_logged)
        statuses = {s["seat"]: (s["alias"], s["status"]) for s in logged[0]["seats"]}
        assert statuses["merged"] == ("merger", "cancelled")
        assert {statuses[seat][1] for seat in ("Seat 1", "Seat 2")} == {"ok"}
        page.screenshot(path=str(artifacts / "ask-merge-stopped.png"), full_page=True)
        assert b.watch.take_after(page, 1) == [f"failed: POST {b.base}/ui/api/ask net::ERR_ABORTED"]


def first_turn_best(b: Bench, alias: str) -> None:
    """ "First question" asked and answered by three seats, `alias`'s answer judged best of the panel."""
    b.ask("First question")
    b.page.locator("#ask-state >> text=Done.").wait_for()
    card(b.page, alias).locator("button[data-best]").click()
    expect(b.page.locator("section.compare .pairs li")).to_have_count(2)


def test_a_follow_up_goes_to_the_same_seats_with_the_history_or_to_one(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    names = ("alpha", "beta", "gamma")
    models = [FakeModel(n, answer=capable) for n in names]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        # Beta's answer is the one to carry on with: best of the panel.
        first_turn_best(b, "beta")
        assert page.locator("#f-carry").input_value() == "beta"
        page.fill("#f-follow", "Second question")
        page.click("#follow-up button[type=submit]")
        page.locator("#conversation section.turn >> nth=1").wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        second = page.locator("#conversation section.turn").nth(1)
        expect(second.locator(".seat-card.s-ok")).to_have_count(3)
        for name in names:
            asked = [(m.role, m.text) for m in fake_provider.last(name).messages]
            assert asked == [
                ("user", "First question"),
                ("assistant", "An answer from beta."),
                ("user", "Second question"),
            ], name
        # One chosen seat: only gamma is asked, with gamma's own answers as the history.
        before = {n: fake_provider.calls[n] for n in names}
        page.select_option("#f-to", "gamma")
        page.fill("#f-follow", "Third, to gamma only")
        page.click("#follow-up button[type=submit]")
        page.locator("#conversation section.turn >> nth=2").wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        third = page.locator("#conversation section.turn").nth(2)
        expect(third.locator(".seat-card")).to_have_count(1)
        assert third.locator(".seat-card").get_attribute("data-alias") == "gamma"
        assert {n: fake_provider.calls[n] - before[n] for n in names} == {"alpha": 0, "beta": 0, "gamma": 1}
        assert [(m.role, m.text) for m in fake_provider.last("gamma").messages] == [
            ("user", "First question"),
            ("assistant", "An answer from gamma."),
            ("user", "Second question"),
            ("assistant", "An answer from gamma."),
            ("user", "Third, to gamma only"),
        ]
        page.screenshot(path=str(artifacts / "ask-follow-up.png"), full_page=True)
        assert b.watch.take() == []


def test_a_follow_up_where_each_seat_continues_its_own_thread(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """ "each seat its own answers" (arena style): every seat is asked the
    earlier questions each followed by its own answer, not the one carried
    for all. It is offered first, but the pick stays chosen (beta, best of
    the panel), and only for the same seats (one chosen seat carries its own already)."""
    names = ("alpha", "beta", "gamma")
    models = [
        FakeModel(n, answer=answers(First=f"{n} on the first", Second=f"{n} on the second")) for n in names
    ]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        first_turn_best(b, "beta")
        carry = page.locator("#f-carry")
        each = carry.locator("option").first
        expect(each).to_have_text("each seat its own answers")
        assert carry.input_value() == "beta"
        page.select_option("#f-to", "gamma")
        expect(each).to_be_disabled()
        page.select_option("#f-to", "")
        expect(each).to_be_enabled()
        # Each seat is asked the earlier questions, each followed by its own answer, then the new one.
        own = {"First question": "on the first", "Second question": "on the second"}
        for turn, question in enumerate(("Second question", "Third question"), start=1):
            carry.select_option(label="each seat its own answers")
            page.fill("#f-follow", question)
            page.click("#follow-up button[type=submit]")
            page.locator(f"#conversation section.turn >> nth={turn}").wait_for()
            page.locator("#ask-state >> text=Done.").wait_for()
            for name in names:
                earlier = [(q, f"{name} {own[q]}") for q in list(own)[:turn]]
                thread = [said for q, a in earlier for said in (("user", q), ("assistant", a))]
                asked = [(m.role, m.text) for m in fake_provider.last(name).messages]
                assert asked == [*thread, ("user", question)], name
        assert b.watch.take() == []


def test_a_merged_conversation_merges_its_follow_up_to_the_same_seats(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Merged answer ticked for the first turn, and judged by keyboard: a follow-up to the same seats
    is merged too (it was not, the box read only by the first turn), with
    the merged answer as the history by default (a seat's was carried); one
    to a chosen seat is that seat's answer alone."""
    merging = script.merger(answers(), script.PLAIN_REPORT)
    models = [
        FakeModel("alpha", answer=capable),
        FakeModel("beta", answer=capable),
        FakeModel("gamma", answer=merging),
    ]
    with bench(browser, home, fake_provider, models, members=["alpha", "beta"], merger="gamma") as b:
        page = b.page
        expect(page.locator("#f-merged")).not_to_be_checked()  # a panel collection
        expect(page.locator("#f-merged")).to_be_enabled()
        page.check("#f-merged")
        b.ask("First question")
        page.locator("#ask-state >> text=Done.").wait_for()
        turns = page.locator("#conversation section.turn")
        expect(turns.nth(0).locator(".merged-card.s-ok")).to_have_count(1)
        merged_text = turns.nth(0).locator(".merged-card .answer").inner_text().strip()
        # The merged answer judged by keyboard, one key each, as a seat's: M, N, E and a note, Enter.
        page.keyboard.press("m")
        merge = turns.nth(0).locator(".merged-card")
        expect(merge).to_be_focused()
        expect(merge.get_by_role("button", name="Useful", exact=True)).to_have_attribute(
            "aria-keyshortcuts", "U"
        )
        page.keyboard.press("n")
        expect(merge.locator(".judge-state")).to_have_text("✗ not useful")
        page.keyboard.press("e")
        page.keyboard.type("too vague")
        page.keyboard.press("Enter")
        expect(merge.locator(".judge-state")).to_have_text("✗ not useful — “too vague”")
        page.keyboard.press("Escape")
        expect(merge).to_be_focused()
        page.keyboard.press("u")
        expect(merge.locator('button[data-merge-verdict="useful"]')).to_have_attribute("aria-pressed", "true")
        call = merge.get_attribute("data-call")
        recent = b.client.get("/ui/api/asks").json()["asks"][0]["seats"]
        assert [s["verdict"] for s in recent if s["call"] == call] == [
            {"useful": True, "note": "too vague", "at": ANY}
        ]
        # The history carries what was read: the merged answer (its own choice), not a seat's.
        assert page.locator("#f-carry option:checked").inner_text() == "the merged answers"
        page.fill("#f-follow", "Second question")
        page.click("#follow-up button[type=submit]")
        turns.nth(1).wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(turns.nth(1).locator(".seat-card.s-ok:not(.merged-card)")).to_have_count(2)
        expect(turns.nth(1).locator(".merged-card.s-ok")).to_have_count(1)
        for name in ("alpha", "beta"):
            asked = [(m.role, m.text) for m in fake_provider.last(name).messages]
            assert asked == [
                ("user", "First question"),
                ("assistant", merged_text),
                ("user", "Second question"),
            ]
        page.select_option("#f-to", "beta")
        page.fill("#f-follow", "Third, to beta only")
        page.click("#follow-up button[type=submit]")
        turns.nth(2).wait_for()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(turns.nth(2).locator(".seat-card")).to_have_count(1)
        assert turns.nth(2).locator(".merged-card").count() == 0
        assert b.watch.take() == []


MARKDOWN_CASES = [
    ("# T", '<h3 class="md-h1">T</h3>'),
    ("### Three ###", '<h5 class="md-h3">Three</h5>'),
    ("1. a\n2. b", '<ol class="md-list"><li>a</li><li>b</li></ol>'),
    ("3. a", '<ol class="md-list" start="3"><li>a</li></ol>'),
    # A blank line between items (as models write steps) keeps one loose list, not three.
    ("1. a\n\n2. b\n\n3. c", '<ol class="md-list"><li><p>a</p></li><li><p>b</p></li><li><p>c</p></li></ol>'),
    ("- a\n\n- b\n\npara", '<ul class="md-list"><li><p>a</p></li><li><p>b</p></li></ul><p>para</p>'),
    ("1. a\n\n- b", '<ol class="md-list"><li>a</li></ol><ul class="md-list"><li>b</li></ul>'),
    # An image is never loaded: a safe one is a link named by its alt text, no stray "!".
    (
        "![chart](https://x.org/c.png)",
        '<p><a class="md-image" href="https://x.org/c.png" rel="noopener noreferrer nofollow" '
        'target="_blank">image: chart</a></p>',
    ),
    ("![s](data:image/svg+xml;base64,PHN2Zz4=)", "<p>![s](data:image/svg+xml;base64,PHN2Zz4=)</p>"),
    ("- a\n  - b\n- c", '<ul class="md-list"><li>a<ul class="md-list"><li>b</li></ul></li><li>c</li></ul>'),
    ("> quote", "<blockquote><p>quote</p></blockquote>"),
    # Code indented four spaces (or a tab) after a blank line is code; in a paragraph it continues it.
    (
        "Run:\n\n    pip install x\n      --pre\n\n\tls <dir>\n\nDone.",
        '<p>Run:</p><div class="code-block"><div class="code-bar"><span class="code-lang">code</span>'
        '<button class="small copy" type="button" data-copy-code="" aria-label="Copy the code">Copy</button>'
        "</div><pre><code>pip install x\n  --pre\n\nls &lt;dir&gt;</code></pre></div><p>Done.</p>",
    ),
    ("a\n    b", "<p>a\n    b</p>"),
    ("- [ ] to do\n- [x] done", '<ul class="md-list"><li>☐ to do</li><li>☑ done</li></ul>'),
    ("snake_case_name and _em_", "<p>snake_case_name and <em>em</em></p>"),
    ("\\*not em\\*", "<p>*not em*</p>"),
    ("a **b *c* d** e", "<p>a <strong>b <em>c</em> d</strong> e</p>"),
    ("~~gone~~", "<p><del>gone</del></p>"),
    ("`<b>`", "<p><code>&lt;b&gt;</code></p>"),
    ("---", "<hr>"),
    ("[x](JAVASCRIPT:alert(1))", "<p>[x](JAVASCRIPT:alert(1))</p>"),
    ("[x](data:text/html,hi)", "<p>[x](data:text/html,hi)</p>"),
    ("<javascript:alert(1)>", "<p>&lt;javascript:alert(1)&gt;</p>"),
    (
        "[a](https://x.org/a_(b))",
        '<p><a href="https://x.org/a_(b)" rel="noopener noreferrer nofollow" target="_blank">a</a></p>',
    ),
    ("<b onmouseover=x>hi</b>", "<p>&lt;b onmouseover=x&gt;hi&lt;/b&gt;</p>"),
    (
        "| a | b |\n|---|--:|\n| *x* | 1 |",
        '<div class="table-wrap"><table class="md-table"><thead><tr><th>a</th><th align="right">b</th></tr>'
        '</thead><tbody><tr><td><em>x</em></td><td align="right">1</td></tr></tbody></table></div>',
    ),
]


def markdown_drawn(browser: Any, home: Path, texts: list[str], what: str) -> list[Any]:
    """For each text, `what` (a JS expression of `box`, the text drawn by
    `bw.markdown` into a div) as the Ask page's renderer gives it."""
    with live_server(home) as server:
        page = browser.new_page()
        page.goto(server.url + "/ask")
        page.locator("body[data-ready]").wait_for(state="attached")
        drawn: list[Any] = page.evaluate(
            f"""texts => texts.map(text => {{
                const box = document.createElement('div');
                box.append(bw.markdown(text));
                return {what};
            }})""",
            texts,
        )
        page.close()
    return drawn


def test_the_markdown_renderer_draws_what_it_knows_and_nothing_else(browser: Any, home: Path) -> None:
    drawn = markdown_drawn(browser, home, [text for text, _ in MARKDOWN_CASES], "box.innerHTML")
    assert list(zip([t for t, _ in MARKDOWN_CASES], drawn, strict=True)) == MARKDOWN_CASES


ENTITY_CASES = [
    # (markdown, the text drawn, the elements drawn)
    ("&lt;b&gt;x&lt;/b&gt; &amp; &#39;a&#39; &#x27;b&#X27; &copy;", "<b>x</b> & 'a' 'b' \u00a9", ["P"]),
    ("&lt;img src=x onerror=alert(1)&gt;", "<img src=x onerror=alert(1)>", ["P"]),
    ("`&lt;b&gt;` and &lt;", "&lt;b&gt; and <", ["P", "CODE"]),
    ("```\n&amp; &#39;\n```", "codeCopy&amp; &#39;", ["DIV", "DIV", "SPAN", "BUTTON", "PRE", "CODE"]),
    (
        "&nosuch; &ampx; &#0; &#xD800; &#99999999; \\&amp;",
        "&nosuch; &ampx; \ufffd \ufffd &#99999999; &amp;",
        ["P"],
    ),
    ("&#42;not em&#42; **&quot;strong&quot;**", '*not em* "strong"', ["P", "STRONG"]),
    ("# &lt;h&gt;\n\n- &gt; item", "<h>> item", ["H3", "UL", "LI"]),
    ("[a](javascript&#58;alert(1))", "[a](javascript&#58;alert(1))", ["P"]),
    ("[a](https://x.org/?a=1&amp;b=2)", "a", ["P", "A https://x.org/?a=1&b=2"]),
]


def test_entities_show_as_their_characters_and_never_as_markup(browser: Any, home: Path) -> None:
    """`&lt;b&gt;` is the characters `<b>` (text, not an element), `&amp;`
    is `&`, numbers decoded; in code they stay as written, an unknown name
    or a number out of range as CommonMark says, and a link's destination
    is checked decoded (`javascript&#58;` is no link)."""
    texts = [text for text, _, _ in ENTITY_CASES]
    # Each element drawn: its tag, and a link's href after it.
    elements = (
        "[...box.querySelectorAll('*')].map((e) => `${e.tagName} ${e.getAttribute('href') || ''}`.trim())"
    )
    drawn = markdown_drawn(browser, home, texts, f"[box.textContent, {elements}]")
    assert [(t, [c, e]) for t, c, e in ENTITY_CASES] == list(zip(texts, drawn, strict=True))


def test_unmatched_brackets_and_markers_render_in_linear_time(browser: Any, home: Path) -> None:
    """An answer full of `[` or `_` with nothing to close them is drawn in one
    pass, not one scan of the rest per opener (100,000 brackets took some 13 s
    a frame, redrawn every frame while the seat streams). The bound is many
    times what the pass takes, and far below what the scans did."""
    with live_server(home) as server:
        page = browser.new_page()
        page.goto(server.url + "/ask")
        page.locator("body[data-ready]").wait_for(state="attached")
        took = page.evaluate(
            """() => ['['.repeat(100000), '_a '.repeat(30000), '*a '.repeat(30000), '~~a '.repeat(25000)]
              .map((t) => {
                const started = performance.now();
                const box = document.createElement('div');
                box.append(bw.markdown(t));
                return [performance.now() - started, box.textContent === t.trim()];
            })"""
        )
        page.close()
    assert all(ms < 3000 for ms, _ in took), took
    assert all(same for _, same in took), took


def test_an_unclosed_fence_is_code_so_far_as_a_stream_leaves_it(browser: Any, home: Path) -> None:
    with live_server(home) as server:
        page = browser.new_page()
        page.goto(server.url + "/ask")
        page.locator("body[data-ready]").wait_for(state="attached")
        code = page.evaluate(
            """() => {
                const box = document.createElement('div');
                box.append(bw.markdown('x\\n```js\\nlet a = 1;'));
                return ['p', 'code', '.code-lang'].map((part) => box.querySelector(part).textContent);
            }"""
        )
        page.close()
    assert code == ["x", "let a = 1;", "js"]


def test_kept_text_shows_in_recent_asks_and_is_judged_later(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta")]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=7) as b:
        page = b.page
        b.ask("Keep this question")
        page.locator("#ask-state >> text=Done.").wait_for()
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        form = page.locator('section[data-collection="trio"] form')
        assert form.locator('input[name="keep_text"]').is_checked()
        assert form.locator('input[name="keep_days"]').input_value() == "7"
        ask = page.locator("#asks article.ask").first
        expect(ask.locator(".question")).to_contain_text("Keep this question")
        expect(ask.locator('.seat-card[data-alias="beta"] .answer')).to_have_text("An answer from beta.")
        # Judged later, where it stands.
        ask.locator('.seat-card[data-alias="beta"] button[data-verdict="not_useful"]').click()
        page.locator('table[data-record="trio"] tr[data-alias="beta"] td.not-useful >> text=1').wait_for()
        # And changed later: the record follows, one verdict still.
        ask.locator('.seat-card[data-alias="beta"] button[data-verdict="useful"]').click()
        page.locator('table[data-record="trio"] tr[data-alias="beta"] td.useful >> text=1').wait_for()
        expect(page.locator('table[data-record="trio"] tr[data-alias="beta"] td.judged')).to_have_text("1")
        expect(ask.locator('.seat-card[data-alias="beta"] [data-copy-answer]')).to_have_count(1)
        page.screenshot(path=str(artifacts / "collections-kept.png"), full_page=True)
        # Turned off, the text goes: the seats remain, the answers are no longer there.
        edited = {"members": ["alpha", "beta"], "keep_text": False}
        assert b.client.post("/ui/api/collections/trio", json=edited).status_code == 200
        page.reload()
        ask = page.locator("#asks article.ask").first
        expect(ask.locator('.seat-card[data-alias="beta"] .answer')).to_contain_text("answer not kept")
        assert ask.locator(".question").count() == 0
        # No text, nothing to copy: no Copy button, and C on the card does nothing.
        beta = ask.locator('.seat-card[data-alias="beta"]')
        expect(beta.locator("[data-copy-answer]")).to_have_count(0)
        beta.focus()
        page.keyboard.press("c")
        assert b.watch.take() == []


def test_recent_asks_are_judged_by_keyboard_only_with_the_keys_the_page_lists(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Recent asks said "keys as on the Ask page: U, N, E, P, M, A, B, T, X":
    not the digits that reach an answer, nor C. Each key it lists now works
    there, on the newest ask, no mouse: 1 U, 2 N E note Enter, A, 3 C, 3 P.

    With the verdict slow to come back (a server across a network), a note
    begun at once is kept: its Enter before the verdict's answer saved no
    note ("Now Useful or Not useful saves the note"), and the answer's
    redraw mid-note dropped the letters typed and made keys of the rest."""
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models, keep_text=True) as b:
        page = b.page
        b.answered("Judge me later", ("alpha", "beta", "gamma"))
        page.goto(b.base + "/collections")
        page.locator('body[data-ready="Collections"]').wait_for(state="attached")
        listed = page.locator("#recent .hint").first.locator("kbd").all_inner_texts()
        assert listed == ["1", "9", "U", "N", "E", "Enter", "P", "C", "M", "A", "B", "T", "X", "O"]
        ask = page.locator("#asks article.ask").first
        expect(ask.locator(".seat-card")).to_have_count(3)
        seat = {a: ask.locator(f'.seat-card[data-alias="{a}"]') for a in ("alpha", "beta", "gamma")}
        page.evaluate(
            """() => { const sent = window.fetch; window.fetch = async (url, init) => {
                if (String(url).includes('/ui/api/verdict')) await new Promise((r) => setTimeout(r, 400));
                return sent(url, init); }; }"""
        )
        page.keyboard.press("1")
        expect(seat["alpha"]).to_be_focused()
        page.keyboard.press("u")
        page.keyboard.press("e")
        page.keyboard.type("ok")
        page.keyboard.press("Enter")  # before U's answer: saved after it, with the note
        expect(seat["alpha"].locator(".judge-state")).to_have_text("✓ useful — “ok”")
        page.keyboard.press("Escape")
        page.keyboard.press("2")
        page.keyboard.press("n")
        page.keyboard.press("e")
        page.keyboard.type("th")
        page.wait_for_timeout(700)  # N's answer redraws the card meanwhile
        page.keyboard.type("in")
        page.keyboard.press("Enter")
        expect(seat["beta"].locator(".judge-state")).to_have_text("✗ not useful — “thin”")
        page.keyboard.press("Escape")
        page.keyboard.press("a")
        expect(ask.locator(".pairs li")).to_have_count(1)
        page.keyboard.press("3")
        page.keyboard.press("c")
        expect(seat["gamma"].locator("[data-copy-answer]")).to_contain_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == "An answer from gamma."
        page.keyboard.press("p")
        expect(ask.locator(".pairs li")).to_have_count(3)
        stored = b.client.get("/ui/api/asks").json()["asks"][0]
        assert {s["alias"]: (s["verdict"] or {}).get("note") for s in stored["seats"]} == {
            "alpha": "ok",
            "beta": "thin",
            "gamma": None,
        }
        assert {p["outcome"] for p in stored["pairs"]} == {"better"}  # no letter of a note became T
        assert {(p["betterAlias"], p["worseAlias"]) for p in stored["pairs"]} == {
            ("alpha", "beta"),
            ("gamma", "alpha"),
            ("gamma", "beta"),
        }
        page.screenshot(path=str(artifacts / "collections-keyboard.png"), full_page=True)
        assert b.watch.take() == []


def test_older_kept_asks_page_back_and_are_judged_in_place_and_in_pairs_blind(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta")]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=7, blind=True) as b:
        page = b.page
        # More asks than a page (20), from a client: the first is the one paged back to.
        for n in range(23):
            chat = {"model": "bench/trio", "messages": [{"role": "user", "content": f"Question {n:02d}"}]}
            assert httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60).status_code == 200
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        expect(page.locator("#asks article.ask")).to_have_count(20)
        expect(page.locator("#asks article.ask").first.locator(".question")).to_contain_text("Question 22")
        # With no ask in focus, a key acts on the latest ask, the top one (it went to the bottom one).
        page.keyboard.press("1")
        expect(page.locator("#asks article.ask").first.locator(".seat-card").first).to_be_focused()
        page.locator("body").focus()
        older = page.get_by_role("button", name="Older asks")
        older.focus()
        page.keyboard.press("Enter")  # by keyboard: a button
        asks = page.locator("#older-asks article.ask")
        expect(asks).to_have_count(3)
        expect(page.locator("#older-state")).to_contain_text("3 older asks shown; none older")
        expect(older).to_be_hidden()
        shown = [q.inner_text() for q in page.locator("#recent article.ask .question").all()]
        numbers = [re.findall(r"Question (\d\d)", s) for s in shown]
        assert numbers == [[f"{n:02d}"] for n in range(22, -1, -1)]  # no gap, no repeat
        oldest = asks.last
        expect(oldest.locator(".question")).to_contain_text("Question 00")
        # Blind as the first page: no names until judged.
        expect(oldest.locator(".seat-card")).to_have_count(2)
        assert oldest.locator(".seat-card[data-alias]").count() == 0
        # (the fake answers name their model; the page does not)
        expect(oldest.locator(".seat-card .who")).to_have_count(2)
        assert {w.inner_text() for w in oldest.locator(".seat-card .who").all()}.isdisjoint({"alpha", "beta"})
        # In place by mouse: both answers judged, the names show (the Ask page's rule).
        cards = oldest.locator(".seat-card")
        cards.nth(0).locator('button[data-verdict="useful"]').click()
        expect(cards.nth(0).locator(".judge-state")).to_contain_text("useful")
        assert oldest.locator(".seat-card[data-alias]").count() == 0
        cards.nth(1).locator('button[data-verdict="not_useful"]').click()
        expect(oldest.locator(".seat-card[data-alias]")).to_have_count(2)
        # A pair by keyboard, in that ask (the focus is in its turn): A is better.
        page.keyboard.press("a")
        compare = oldest.locator("section.compare")
        expect(compare.locator(".pairs li")).to_have_count(1)
        page.screenshot(path=str(artifacts / "collections-older.png"), full_page=True)
        ask_id = oldest.get_attribute("data-ask")
        last = b.client.get("/ui/api/asks", params={"before": asks.nth(1).get_attribute("data-ask")}).json()
        (stored,) = [a for a in last["asks"] if a["ask"] == ask_id]
        assert sorted(s["verdict"] is not None for s in stored["seats"]) == [True, True]
        assert len(stored["pairs"]) == 1 and last["next"] is None
        # New asks push the first page's oldest out: they show above the older ones, none twice.
        for n in (23, 24):
            chat = {"model": "bench/trio", "messages": [{"role": "user", "content": f"Question {n:02d}"}]}
            assert httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60).status_code == 200
        expect(page.locator("#recent article.ask")).to_have_count(25)
        expect(page.locator("#asks article.ask").first.locator(".question")).to_contain_text("Question 24")
        shown = [q.inner_text() for q in page.locator("#recent article.ask .question").all()]
        numbers = [re.findall(r"Question (\d\d)", s) for s in shown]
        assert numbers == [[f"{n:02d}"] for n in range(24, -1, -1)]
        expect(oldest.locator(".seat-card[data-alias]")).to_have_count(2)  # the judged older ask as it was
        assert b.watch.take() == []


def test_recent_asks_show_what_was_judged_elsewhere_after_a_verdict_given_there(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Once a seat was judged in Recent asks, the focus stays on its card,
    and the poll redrew nothing while the focus was in the list: a verdict
    given since through the API (the CLI, an agent), a pair judged in another
    tab and a new ask never showed, nor did the record table move, until
    the person clicked elsewhere. A note typed and not saved is kept, and so
    is the focus, when the list is redrawn."""
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models, keep_text=True) as b:
        page = b.page
        calls = b.answered("Judge me here and elsewhere", ("alpha", "beta", "gamma"))
        page.goto(b.base + "/collections")
        page.locator('body[data-ready="Collections"]').wait_for(state="attached")
        ask = page.locator("#asks article.ask").first
        beta = ask.locator('.seat-card[data-alias="beta"]')
        beta.locator('button[data-verdict="useful"]').click()
        expect(beta.locator(".judge-state")).to_have_text("✓ useful")
        gamma_note = ask.locator('.seat-card[data-alias="gamma"] input.note')
        gamma_note.fill("half typed")  # not saved: no verdict given with it yet
        beta.focus()
        # Elsewhere: a verdict through the API, a pair from another tab, a new ask.
        said = {"call": calls["alpha"], "useful": False, "note": "from the API"}
        assert b.client.post("/ui/api/verdict", json=said).status_code == 200
        paired = {"tie": [calls["beta"], calls["gamma"]], "note": "same"}
        assert b.client.post("/ui/api/verdict", json=paired).status_code == 200
        b.client.post(
            "/v1/chat/completions",
            json={"model": "bench/trio", "messages": [{"role": "user", "content": "A second question"}]},
        )
        expect(page.locator("#asks article.ask")).to_have_count(2, timeout=10_000)
        ask = page.locator("#asks article.ask").nth(1)
        alpha = ask.locator('.seat-card[data-alias="alpha"]')
        expect(alpha.locator(".judge-state")).to_have_text("✗ not useful — “from the API”")
        tie = re.compile(r"^Seat [BC] · (beta|gamma) and Seat [BC] · (beta|gamma): tie — “same”$")
        expect(ask.locator(".pairs li")).to_have_text([tie])  # a tie's two in call-id order
        record = page.locator('table[data-record="trio"]')
        expect(record.locator('tr[data-alias="alpha"] td.not-useful')).to_have_text("1")
        expect(record.locator('tr[data-alias="beta"] td.useful')).to_have_text("1")
        # What the person had in hand is still there: the focus, and the note not saved.
        expect(ask.locator('.seat-card[data-alias="beta"]')).to_be_focused()
        expect(ask.locator('.seat-card[data-alias="gamma"] input.note')).to_have_value("half typed")
        page.keyboard.press("n")  # the keys still act on the card in focus
        expect(ask.locator('.seat-card[data-alias="beta"] .judge-state')).to_have_text("✗ not useful")
        page.screenshot(path=str(artifacts / "collections-judged-elsewhere.png"), full_page=True)
        assert b.watch.take() == []


def test_older_asks_show_what_was_judged_elsewhere_and_an_idle_poll_costs_no_body(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Older asks were drawn once: a verdict, a changed note or a pair given
    since through the API (the CLI, an agent, another tab) never showed
    there, and a person acting on that card judged against what they could
    not see. They are read again as the first page is, and shown; while
    nothing changes, each poll is a 304 with no body (the first page can
    hold megabytes of kept answers)."""
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta")]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=7) as b:
        page = b.page
        for n in range(21):  # one more than a page: the first is the older one
            chat = {"model": "bench/trio", "messages": [{"role": "user", "content": f"Question {n:02d}"}]}
            assert httpx.post(b.base + "/v1/chat/completions", json=chat, timeout=60).status_code == 200
        polls: list[int] = []
        page.on("response", lambda r: polls.append(r.status) if "/ui/api/asks" in r.url else None)
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        expect(page.locator("#asks article.ask")).to_have_count(20)
        page.get_by_role("button", name="Older asks").click()
        oldest = page.locator("#older-asks article.ask")
        expect(oldest).to_have_count(1)
        expect(oldest.locator(".question")).to_contain_text("Question 00")
        first = b.client.get("/ui/api/asks").json()["next"]
        (stored,) = b.client.get("/ui/api/asks", params={"before": first}).json()["asks"]
        calls = {s["alias"]: s["call"] for s in stored["seats"]}
        # Elsewhere: a verdict with a note, then the note changed; a pair.
        for said in (
            {"call": calls["alpha"], "useful": True, "note": "first thought"},
            {"call": calls["alpha"], "useful": True, "note": "second thought"},
            {"better": calls["beta"], "worse": calls["alpha"], "note": "beta wins"},
        ):
            assert b.client.post("/bench/verdict", json=said).status_code == 200
        alpha = oldest.locator('.seat-card[data-alias="alpha"]')
        expect(alpha.locator(".judge-state")).to_have_text("✓ useful — “second thought”", timeout=10_000)
        expect(oldest.locator(".pairs li")).to_have_count(1)
        expect(oldest.locator(".pairs li")).to_contain_text("beta wins")
        # The record table follows a verdict on an older ask too.
        record = page.locator('table[data-record="trio"]')
        expect(record.locator('tr[data-alias="alpha"] td.useful')).to_have_text("1")
        # Acted on here afterwards, the card judges from what the store holds.
        alpha.locator('button[data-verdict="not_useful"]').click()
        expect(alpha.locator(".judge-state")).to_contain_text("✗ not useful")
        (after,) = b.client.get("/ui/api/asks", params={"before": first}).json()["asks"]
        assert {s["alias"]: s["verdict"]["useful"] for s in after["seats"] if s["verdict"]} == {
            "alpha": False
        }
        # Idle: the polls of both lists come back 304, no body.
        polls.clear()
        for _ in range(60):  # Playwright's events are handed over only while it runs
            if polls.count(304) >= 4:
                break
            page.wait_for_timeout(500)
        assert 200 not in polls[-3:], polls
        page.screenshot(path=str(artifacts / "collections-older-judged-elsewhere.png"), full_page=True)
        assert b.watch.take() == []


def test_the_ask_page_shows_a_verdict_and_a_pair_given_elsewhere_on_its_answers(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """A panel asked on the Ask page, judged elsewhere (the API, the CLI, the
    Collections page in another tab): the page showed its answers unjudged
    until reloaded, and a person judging there judged against what they
    could not see. It looks again (a 304 while nothing changed) and shows
    the verdict, its note and the pair; a note being typed is left alone."""
    models = [FakeModel(n, answer=capable) for n in ("alpha", "beta", "gamma")]
    with bench(browser, home, fake_provider, models, keep_text=True) as b:
        page = b.page
        calls = b.answered("Judge me in two tabs", ("alpha", "beta", "gamma"))
        card(page, "gamma").locator("input.note").fill("typing here")
        card(page, "gamma").locator("input.note").focus()
        for said in (
            {"call": calls["alpha"], "useful": False, "note": "from the API"},
            {"call": calls["gamma"], "useful": True},
            {"better": calls["beta"], "worse": calls["alpha"], "note": "beta better"},
        ):
            assert b.client.post("/bench/verdict", json=said).status_code == 200
        alpha = card(page, "alpha")
        expect(alpha.locator(".judge-state")).to_have_text("✗ not useful — “from the API”", timeout=10_000)
        expect(page.locator("#conversation .pairs li")).to_have_count(1)
        expect(page.locator("#conversation .pairs li")).to_contain_text("beta better")
        # The card in use waits: the note typed there is not lost.
        expect(card(page, "gamma").locator("input.note")).to_have_value("typing here")
        page.evaluate("document.activeElement.blur()")
        expect(card(page, "gamma").locator(".judge-state")).to_have_text("✓ useful", timeout=10_000)
        # Judged here afterwards: the card and the store agree.
        alpha.locator('button[data-verdict="useful"]').click()
        expect(alpha.locator(".judge-state")).to_contain_text("✓ useful")
        (stored,) = b.client.get("/ui/api/asks").json()["asks"]
        assert {s["alias"]: s["verdict"] and s["verdict"]["useful"] for s in stored["seats"]}["alpha"] is True
        # A pair's note being typed: a pair given elsewhere meanwhile waits, the words stay.
        pair_note = page.locator("#conversation section.compare input.note")
        pair_note.fill("mine, half typed")
        pair_note.focus()
        tie = {"tie": [calls["alpha"], calls["gamma"]], "note": "a tie from the API"}
        assert b.client.post("/bench/verdict", json=tie).status_code == 200
        page.wait_for_timeout(7000)  # two looks at least
        expect(pair_note).to_have_value("mine, half typed")
        expect(page.locator("#conversation .pairs li")).to_have_count(1)
        page.evaluate("document.activeElement.blur()")
        expect(page.locator("#conversation .pairs li")).to_have_count(2, timeout=10_000)
        expect(pair_note).to_have_value("mine, half typed")
        page.screenshot(path=str(artifacts / "ask-judged-elsewhere.png"), full_page=True)
        assert b.watch.take() == []


def test_the_ask_page_shows_a_merge_judged_elsewhere(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """The merged answer on the Ask page follows a verdict given on it
    elsewhere (the API, another tab), as the seats' cards do."""
    models = [
        FakeModel("alpha", answer=capable),
        FakeModel("beta", answer=capable),
        FakeModel("merger", answer=script.merger("the merged answer", script.PLAIN_REPORT)),
    ]
    merged = {"members": ["alpha", "beta"], "reply": "merged", "merger": "merger"}
    with bench(browser, home, fake_provider, models, **merged) as b:
        page = b.page
        b.ask("Merge this, then judge it elsewhere")
        page.locator("#ask-state >> text=Done.").wait_for()
        merge = page.locator(".merged-card")
        call = merge.get_attribute("data-call")
        said = {"call": call, "useful": False, "note": "merge judged elsewhere"}
        assert b.client.post("/bench/verdict", json=said).status_code == 200
        expect(merge.locator(".judge-state")).to_have_text(
            "✗ not useful — “merge judged elsewhere”", timeout=10_000
        )
        expect(merge.locator('button[data-merge-verdict="not_useful"]')).to_have_attribute(
            "aria-pressed", "true"
        )
        assert b.watch.take() == []
