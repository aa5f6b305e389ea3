"""A reasoning model's `<think>` block in a real browser (headless Chromium):
local models (DeepSeek-R1, QwQ through Ollama) and some free tiers write
their reasoning into the answer's text, which the seat card showed as if it
were the answer. Now a leading block is a closed "Reasoning" disclosure with
its length, the answer below it as markdown; while the seat is still inside
the block the card says it is thinking; a `<think>` elsewhere is text.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.testing import FakeModel, FakeProvider, script
from tests.dashboard.test_browser_judging import answers, bench, card
from tests.test_reasoning import LEADING, NONE

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

THINKING = "I weigh Lyon against Paris; the seat of government decides."
ELSEWHERE = "Write <think>…</think> around reasoning; <b>bold</b> is no tag here."


def test_a_leading_think_block_is_folded_while_written_and_after(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [
        FakeModel("alpha", answer=answers(capital="It is **Paris**.")),
        FakeModel("beta", answer=answers(capital=ELSEWHERE)),
    ]
    with bench(browser, home, fake_provider, models, keep_text=True) as b:
        page = b.page
        # Onboarded (its probes answered plainly): from now on alpha reasons in its text,
        # and waits, three words in, until the test has looked at its card.
        release = threading.Event()
        watchdog = threading.Timer(60, release.set)
        watchdog.start()
        alpha = fake_provider.models["alpha"]
        alpha.thinking, alpha.think_tag, alpha.hold, alpha.hold_after = THINKING, "think", release, 3
        try:
            b.ask("The capital of France?")
            seat = card(page, "alpha")
            expect(seat.locator(".status")).to_have_text("thinking…")
            folded = seat.locator(".answer > details.reasoning")
            expect(folded.locator("summary")).to_have_text("Reasoning · 7 characters, still thinking…")
            expect(folded).not_to_have_attribute("open", "")
            expect(folded.locator(".reasoning-text")).to_be_hidden()
            assert "weigh" not in seat.locator(".answer").inner_text()  # nothing of it shows as the answer
            folded.locator("summary").click()  # opened to watch it: it stays open as it grows
            expect(folded.locator(".reasoning-text")).to_have_text("I weigh")
            assert not release.is_set()
        finally:
            release.set()
            watchdog.cancel()
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(seat.locator(".status").first).to_have_text("ok")
        expect(folded.locator("summary")).to_have_text(f"Reasoning · {len(THINKING)} characters")
        expect(folded.locator(".reasoning-text")).to_have_text(THINKING)
        expect(folded).to_have_attribute("open", "")
        expect(seat.locator(".answer > p")).to_have_text("It is Paris.")
        expect(seat.locator(".answer > p strong")).to_have_text("Paris")  # the answer is markdown, as ever
        # A `<think>` not at the start is the answer's own text, and no tag is made of it.
        other = card(page, "beta").locator(".answer")
        expect(other.locator("details")).to_have_count(0)
        expect(other).to_have_text(ELSEWHERE)
        assert page.evaluate("document.querySelectorAll('#conversation think, #conversation b').length") == 0
        # Copy gives the answer, not the reasoning folded above it.
        seat.get_by_role("button", name="Copy").click()
        assert page.evaluate("navigator.clipboard.readText()") == "It is **Paris**."
        page.screenshot(path=str(artifacts / "reasoning-folded.png"), full_page=True)

        # Recent asks draws the kept answer the same way, its disclosure closed.
        page.goto(b.base + "/collections")
        kept = page.locator('#asks article.ask .seat-card[data-alias="alpha"] .answer')
        expect(kept.locator("details.reasoning summary")).to_have_text(
            f"Reasoning · {len(THINKING)} characters"
        )
        expect(kept.locator("details.reasoning")).not_to_have_attribute("open", "")
        expect(kept.locator(":scope > p")).to_have_text("It is Paris.")
        assert b.watch.take() == []


def test_a_reasoning_merger_s_answer_is_folded_and_its_report_still_read(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Every model of the panel reasons in its text, the merger too: its
    merged answer folds as a seat's does, and its report, JSON after a think
    block, is still read (`output_check.unwrapped`)."""
    report = {**script.PLAIN_REPORT, "consensus": ["both say Paris"]}
    models = [
        FakeModel(alias, answer=script.merger(answers(capital="It is Paris."), report))
        for alias in ("alpha", "beta")
    ]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        for alias in ("alpha", "beta"):
            fake_provider.models[alias].thinking = f"{alias} weighs it."
            fake_provider.models[alias].think_tag = "think"
        page.check("#f-merged")
        b.ask("The capital of France?")
        page.locator("#ask-state >> text=Done.").wait_for()
        merged = page.locator("#conversation .merged-card")
        expect(merged.locator(".answer > details.reasoning summary")).to_contain_text("Reasoning · ")
        expect(merged.locator(".answer > p")).to_have_text("It is Paris.")
        expect(merged.locator(".merge-report")).to_contain_text("both say Paris")
        for alias in ("alpha", "beta"):
            expect(card(page, alias).locator(".answer > p")).to_have_text("It is Paris.")
        assert b.watch.take() == []


def test_the_page_reads_a_think_block_by_the_same_rules_as_the_server(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """`bw.reasoning` against the table `benchwarmers.reasoning` is tested on,
    and `bw.thinking` on a stream's first pieces (an opening tag half written)."""
    with bench(browser, home, fake_provider, [FakeModel("alpha", answer=answers())]) as b:
        split = "(texts) => texts.map((t) => Object.values(bw.reasoning(t)))"  # [reasoning, answer, closed]
        read = b.page.evaluate(split, [text for text, _ in LEADING] + NONE)
        expected = [[s.reasoning, s.answer, s.closed] for _, s in LEADING] + [[None, t, True] for t in NONE]
        assert read == expected
        writing = ["<", " <thi", "<think", "<thinking", "<think>so far", "<think>a</think>b", "<b>", "Hi", ""]
        assert b.page.evaluate("(texts) => texts.map((t) => bw.thinking(t))", writing) == [
            True, True, True, True, True, False, False, False, False,
        ]  # fmt: skip
