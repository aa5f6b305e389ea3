"""The Leaderboard of a collection of fourteen members, some with long
names, judged in pairs (headless Chromium): the page says what its JSON
says, and on a 375 px phone each model's record is on screen and the win
matrix is read row by row, its rows' names in view while it scrolls
sideways, by mouse or by keyboard.

The store is filled through its own functions (calls, verdicts, pairs),
as `tests/server/routes/test_decisions.py` does: the browser part is the
reading, not the asking.
"""

from __future__ import annotations

import asyncio
import random
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.calls.pairs import PairJudgement, record_pairs
from benchwarmers.calls.verdicts import record_verdict
from benchwarmers.dashboard.board import interval
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call
from benchwarmers.testing.live_server import live_server
from tests.dashboard.test_browser import Watch
from tests.waiting import wait_for

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PHONE = 375
MEMBERS = [f"provider-{n:02d}/a-model-with-a-long-name" if n % 4 == 0 else f"m{n:02d}" for n in range(14)]


def judged_in_pairs(home: Path) -> None:
    """Collection `many`: the fourteen members on 24 asks, each seat judged
    useful or not and the best of each ask picked (13 pairs an ask)."""

    async def work() -> None:
        chance = random.Random(34)
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            for alias in MEMBERS:
                await add_model(rt.store, alias, "local", alias, price_in=0, price_out=0)
            await add_collection(rt.store, "many", MEMBERS, seats=5, explorer_seats=1)
            now = datetime.now(UTC)
            asks = [[(f"c{ask}-{n}", alias) for n, alias in enumerate(MEMBERS)] for ask in range(24)]
            async with rt.store.write() as session:
                for ask, seats in enumerate(asks):
                    common = {"at": now - timedelta(hours=ask), "ask_id": f"a{ask}", "kind": "seat"}
                    session.add_all(
                        Call(id=call, alias=alias, collection="many", shape="short", status="ok", **common)
                        for call, alias in seats
                    )
            for seats in asks:
                for call, alias in seats:
                    await record_verdict(rt.store, call, chance.random() < 1 - MEMBERS.index(alias) / 20)
                best = max(seats, key=lambda seat: chance.random() - MEMBERS.index(seat[1]) / 10)
                await record_pairs(rt.store, PairJudgement("best", (best[0],)))

    with ThreadPoolExecutor(1) as other:  # Playwright's loop runs in this thread
        other.submit(asyncio.run, work()).result()


def right(box: dict[str, float] | None) -> float:
    assert box is not None
    return box["x"] + box["width"]


def test_a_board_of_fourteen_says_what_its_json_says_and_reads_on_a_phone(
    browser: Any, artifacts: Path, home: Path
) -> None:
    judged_in_pairs(home)
    with live_server(home) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        board = client.get("/bench/leaderboard", params={"collection": "many"}).json()
        assert len(board["models"]) == len(MEMBERS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch = Watch(page)
        page.goto(server.url + "/leaderboard?collection=many")
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        for model in board["models"]:  # field by field
            row = page.locator(f'#leaderboard tr[data-alias="{model["alias"]}"]')
            expect(row.locator(".rank")).to_have_text(str(model["rank"]))
            label = interval(model).label
            expect(row.locator(".band-label")).to_have_text(label)
            # A screen reader reads the band once, as its words (the drawing and its text were both read).
            assert row.aria_snapshot().splitlines()[0].count(label) == 1, row.aria_snapshot()
            verdicts, pairs = model["verdicts"], model["pairs"]
            expect(row.locator(".verdicts")).to_have_text(
                f"{verdicts['useful']} useful, {verdicts['notUseful']} not"
            )
            expect(row.locator(".pairs")).to_contain_text(f"{pairs['wins']} won, {pairs['losses']} lost")
        page.screenshot(path=str(artifacts / "leaderboard-fourteen.png"), full_page=True)

        page.set_viewport_size({"width": PHONE, "height": 800})
        page.reload()
        page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
        # Each model's record on screen: its verdicts and pairs were off it, to the right of the
        # score, and the table's caption cut at the screen's edge.
        assert right(page.locator("#leaderboard caption").bounding_box()) <= PHONE
        for model in board["models"]:
            row = page.locator(f'#leaderboard tr[data-alias="{model["alias"]}"]')
            for cell in (".verdicts", ".pairs", ".trend"):
                assert right(row.locator(cell).bounding_box()) <= PHONE, (model["alias"], cell)
        # The matrix scrolls sideways in its own region, which the keyboard reaches and scrolls;
        # each row's name stays in view as it does (they scrolled away, and the cells with them).
        wrap = page.get_by_role("region", name="Head to head")
        wrap.focus()
        page.keyboard.press("ArrowRight")
        wait_for(lambda: wrap.evaluate("region => region.scrollLeft") > 0, 5)
        wrap.evaluate("region => { region.scrollLeft = region.scrollWidth }")
        page.wait_for_timeout(100)
        for name in page.locator("#win-matrix tbody th").all():
            box = name.bounding_box()
            assert box is not None and box["x"] >= 0 and right(box) <= PHONE / 2, name.text_content()
        last = MEMBERS[-1]
        cell = page.locator(f'#win-matrix tr[data-alias="{MEMBERS[0]}"] td[data-against="{last}"]')
        assert right(cell.bounding_box()) <= PHONE  # the far column, beside the row's name
        page.screenshot(path=str(artifacts / "leaderboard-fourteen-phone.png"), full_page=True)
        assert watch.problems == []
        page.close()


KNOWN = {"ace": 0.9, "bolt": 0.6, "cider": 0.3}


def judged_once_and_never(home: Path) -> None:
    """Collection `few`: ace, bolt and cider judged on 30 asks each, one of
    two seats picked better; `once` given one useful verdict; `never` sat
    and was never judged; tieA beat tieB three times, lost once, tied once,
    and both were bad once."""

    async def work() -> None:
        chance = random.Random(7)
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            members = [*KNOWN, "once", "never", "tieA", "tieB"]
            for alias in members:
                await add_model(rt.store, alias, "local", alias, price_in=0, price_out=0)
            await add_collection(rt.store, "few", members, seats=3, explorer_seats=1)
            asks = (
                [[*KNOWN] for _ in range(30)] + [["once", "ace"], ["never", "bolt"]] + [["tieA", "tieB"]] * 6
            )
            async with rt.store.write() as session:
                for ask, seats in enumerate(asks):
                    session.add_all(
                        Call(
                            id=f"c{ask}-{alias}",
                            alias=alias,
                            collection="few",
                            shape="short",
                            status="ok",
                            at=datetime.now(UTC),
                            ask_id=f"a{ask}",
                            kind="seat",
                        )
                        for alias in seats
                    )
            for ask in range(30):
                for alias, quality in KNOWN.items():
                    await record_verdict(rt.store, f"c{ask}-{alias}", chance.random() < quality)
                await record_pairs(rt.store, PairJudgement("better", (f"c{ask}-ace", f"c{ask}-cider")))
            await record_verdict(rt.store, "c30-once", True, note="the one verdict")
            tie_a_b = [
                PairJudgement("better", ("c32-tieA", "c32-tieB")),
                PairJudgement("better", ("c33-tieA", "c33-tieB")),
                PairJudgement("better", ("c34-tieA", "c34-tieB")),
                PairJudgement("better", ("c35-tieB", "c35-tieA")),
                PairJudgement("tie", ("c36-tieA", "c36-tieB")),
                PairJudgement("both_bad", ("c37-tieA", "c37-tieB")),
            ]
            for judgement in tie_a_b:
                await record_pairs(rt.store, judgement)

    with ThreadPoolExecutor(1) as other:
        other.submit(asyncio.run, work()).result()


def test_a_model_judged_once_or_never_is_ranked_after_the_known_and_the_matrix_reads_three_to_one(
    browser: Any, artifacts: Path, home: Path
) -> None:
    """A model with one useful verdict read "rank 2" above models judged
    thirty times, its band beside it hatched as too wide to rank on; now
    the settled models come first, 1, 2, 3, and the ones we don't know yet
    after them (4 on), as on a phone. tieA, which beat tieB three times,
    lost once, tied once and was bad with it once, reads 3–1 (1 tied), 70%
    (a tie half: 3.5 of 5), with the both-bad pair beside it."""
    judged_once_and_never(home)
    with live_server(home) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        board = client.get("/bench/leaderboard", params={"collection": "few", "shape": "short"}).json()
        models = {m["alias"]: m for m in board["models"]}
        assert models["once"]["verdicts"] == {"useful": 1, "notUseful": 0}
        assert models["once"]["score"] > models["bolt"]["score"]  # its estimate alone would rank it high
        assert [(m["alias"], m["rank"]) for m in board["models"][:3]] == [
            ("ace", 1),
            ("bolt", 2),
            ("cider", 3),
        ]
        for alias in ("once", "never"):
            assert models[alias]["rank"] > 3 and not models[alias]["settled"]
        assert models["tieA"]["pairs"] == {"wins": 3, "losses": 1, "ties": 1, "bothBad": 1}
        assert board["matrix"]["tieA"]["tieB"] == {"wins": 3, "losses": 1, "ties": 1}
        assert board["bothBad"]["tieA"]["tieB"] == 1
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watch = Watch(page)
        for width in (1280, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(server.url + "/leaderboard?collection=few&shape=short")
            page.locator('body[data-ready="Leaderboard"]').wait_for(state="attached")
            rows = page.locator("#leaderboard tbody tr")
            assert [rows.nth(i).get_attribute("data-alias") for i in range(rows.count())] == [
                m["alias"] for m in board["models"]
            ]
            for model in board["models"]:
                row = page.locator(f'#leaderboard tr[data-alias="{model["alias"]}"]')
                expect(row.locator(".rank")).to_have_text(str(model["rank"]))
            once = page.locator('#leaderboard tr[data-alias="once"]')
            expect(once.locator(".rank")).to_be_visible()
            expect(once.locator(".band-label")).to_have_text(
                re.compile(r"^we don't know yet: somewhere between")
            )
            cell = page.locator('#win-matrix tr[data-alias="tieA"] td[data-against="tieB"]')
            expect(cell).to_have_text("3–1 (1 tied) 70% 1 both bad")
            page.screenshot(path=str(artifacts / f"leaderboard-unranked-{width}.png"), full_page=True)
        assert watch.problems == []
        page.close()
