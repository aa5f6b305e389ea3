"""A panel as a new user brings one, on a phone 375 px wide: six seats, model
names that are long and have no place to break (a quantised model pulled from
Hugging Face), and answers that are a deeply nested list, a code block of
long lines, 50 KB of words, only whitespace, nothing. Every page the judging
loop uses stays as wide as the screen, and each card's judge buttons stay
within a screen of its top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchwarmers.testing import FakeModel, FakeProvider, script
from tests.dashboard.test_browser_judging import answers, bench, card

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PHONE, SCREEN = 375, 800
LONG = "hf.co/mradermacher/Qwen2.5_Coder_32B_Instruct_abliterated_GGUF:Q4_K_M_imatrix"
ALIASES = (
    LONG,
    "ollama/llama3.2:3b",
    "openrouter/meta-llama/llama-3.1-8b-instruct:free",
    "qwen2.5-coder:1.5b",
    "gpt-4.1-mini",
    "x@y+z",
)
NESTED = "\n".join("  " * depth + f"- level {depth}" for depth in range(40))
CODE = "```python\n" + "\n".join(f"print({n})  # " + "y" * 200 for n in range(100)) + "\n```"
ODD = (NESTED, CODE, "words " * 8_500, "   \n\t  ", "", "A short one.")
SOURCE = "https://huggingface.co/mradermacher/Qwen2.5_Coder_32B_Instruct_abliterated_GGUF/blob/main/README.md"
REPORT = {**script.PLAIN_REPORT, "consensus": [f"all cite {SOURCE}"]}  # whoever merges


def page_width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_six_seats_with_long_names_and_odd_answers_fit_a_phone(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [
        FakeModel(alias, answer=script.merger(answers(odd=text), REPORT))
        for alias, text in zip(ALIASES, ODD, strict=True)
    ]
    with bench(browser, home, fake_provider, models, aliases=ALIASES, viewport=(PHONE, SCREEN)) as b:
        page = b.page
        b.ask("Something odd, please")
        page.locator("#ask-state >> text=Done.").wait_for()
        long_card = card(page, LONG)
        expect(long_card.locator(".who")).to_have_text(LONG)
        long_card.locator("input.note").fill("the only one that ran")
        long_card.locator('button[data-verdict="useful"]').click()
        expect(long_card.locator(".judge-state")).to_contain_text("useful")
        long_card.focus()
        page.keyboard.press("p")  # best of the panel: five pairs, each naming LONG, with its note
        compare = page.locator("section.compare").last
        expect(compare.locator(".pairs li")).to_have_count(5)
        empty = card(page, "gpt-4.1-mini")  # its answer was nothing: judged all the same
        empty.locator('button[data-verdict="not_useful"]').click()
        expect(empty.locator(".judge-state")).to_contain_text("not useful")
        page.screenshot(path=str(artifacts / "odd-panel-ask-phone.png"), full_page=True)
        assert page_width(page) <= PHONE, "the Ask page is wider than the phone"
        # 50 KB of words scroll inside their answer: each card's buttons are within a
        # screen of its top (they were 35,000 px down, and the pair bar under them).
        for seat in page.locator("#conversation .seat-card").all():
            top, button = seat.bounding_box(), seat.locator('button[data-verdict="useful"]').bounding_box()
            assert top and button and button["y"] - top["y"] < SCREEN, seat.get_attribute("data-alias")
        # Merged, below the seats on a phone: a link in the merge's report wraps too.
        page.check("#f-merged")
        b.ask("Something odd, merged")
        report = page.locator("#conversation .merged-card .merge-report")
        expect(report).to_contain_text(SOURCE, timeout=30_000)  # six seats and a merge: a loaded box is slow
        page.locator("#ask-state >> text=Done.").wait_for()
        assert page_width(page) <= PHONE, "a merged answer is wider than the phone"

        page.goto(b.base + "/leaderboard?collection=trio")
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        assert page_width(page) <= PHONE, "the Leaderboard is wider than the phone"
        page.locator("#leaderboard").get_by_role("link", name=LONG).click()
        expect(page.locator("h1")).to_have_text(LONG)
        page.goto(b.base + "/models/gpt-4.1-mini")  # its notes name LONG
        expect(page.locator("#notes")).to_contain_text(f"worse than {LONG}")
        assert page_width(page) <= PHONE, "a model's page is wider than the phone"

        page.goto(b.base + "/collections")
        expect(page.locator("#asks article.ask")).to_have_count(2)
        page.screenshot(path=str(artifacts / "odd-panel-collections-phone.png"), full_page=True)
        assert page_width(page) <= PHONE, "the Collections page is wider than the phone"
        assert b.watch.take() == []


def test_a_model_caught_in_a_loop_of_list_markers_is_drawn_and_judged(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """A small model caught in a loop writes `- - - - …` or `> - > - …`
    thousands deep. The renderer nested a list (or a quote) per marker until
    the stack overflowed: the seat stayed "writing…" with no buttons, the
    panel never finished (the other seats were cut), and Recent asks threw."""
    looping = {"dashes": "- " * 5000 + "x", "quotes": "> - " * 3000 + "y"}
    models = [FakeModel(alias, answer=answers(loop=text)) for alias, text in looping.items()]
    models.append(FakeModel("sane", answer=answers(loop="A plain answer.")))
    with bench(browser, home, fake_provider, models, keep_text=True) as b:
        page = b.page
        b.ask("Answer in a loop, please")
        page.locator("#ask-state >> text=Done.").wait_for()
        for alias in (*looping, "sane"):
            seat = card(page, alias)
            expect(seat.locator(".status").first).to_have_text("ok")
            expect(seat.locator('button[data-verdict="useful"]')).to_be_visible()
        expect(card(page, "dashes").locator(".answer")).to_contain_text("- - - x")
        card(page, "dashes").locator('button[data-verdict="not_useful"]').click()
        expect(card(page, "dashes").locator(".judge-state")).to_contain_text("not useful")
        page.goto(b.base + "/collections")
        expect(page.locator("#asks article.ask .seat-card")).to_have_count(3)
        expect(page.locator("#asks article.ask .seat-card").first.locator(".answer")).not_to_be_empty()
        assert b.watch.take() == []
