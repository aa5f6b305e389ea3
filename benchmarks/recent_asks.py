"""Recent asks with megabytes of kept text: how big and how slow the list's
JSON read is, and how long the Collections page takes to draw it in
headless Chromium (Debian's `chromium`, driven by Playwright).

A fresh data folder: one collection keeping text (`keep_text`), `--asks`
asks of three seats each, logged and kept straight into the store (no
model is called), `--big` of them with one seat's answer of `--mb` MB (the
rest a few hundred bytes). Then, on a live server: the list's JSON whole
(as the Collections page read it before `head`) and, with `--head N`, cut
as the page reads it now (`?head=N`), size and median time of `--rounds`
reads; the page's load (until its asks are drawn, every seat
card there) and first contentful paint, median of `--rounds` loads.

    python benchmarks/recent_asks.py --asks 20 --big 3 --mb 2 --head 16000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.kept_asks import kept_ask
from benchwarmers.testing.live_server import live_server
from benchwarmers.types import Request, user

SEATS = ("m1", "m2", "m3")


async def seed(home: Path, asks: int, big: int, mb: float) -> None:
    """`asks` asks of three seats, kept; the newest `big` with a long first answer."""
    start = datetime.now(UTC) - timedelta(hours=1)
    long = ("word " * 16 + "\n") * int(mb * 1_000_000 / 81)
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "hub", "http://127.0.0.1:9/v1", needs_key=False)
        for alias in SEATS:
            await add_model(store, alias, "hub", alias)
        await add_collection(store, "kept", list(SEATS), keep_text=True, keep_days=30)
        for n in range(asks):
            answers = {
                f"c{n:03d}-{k}": (
                    alias,
                    long if k == 0 and n >= asks - big else f"answer {n}/{k}: " + "short " * 50,
                )
                for k, alias in enumerate(SEATS)
            }
            question = Request(messages=(user(f"question {n}?"),))
            await kept_ask(store, "kept", f"a{n:03d}", answers, question, start + timedelta(seconds=n * 10))


def reads(url: str, params: dict[str, str], rounds: int) -> tuple[int, float]:
    """The JSON's size in bytes and the median time of `rounds` reads (ms)."""
    times, size = [], 0
    with httpx.Client(base_url=url, timeout=120) as client:
        for _ in range(rounds):
            started = time.perf_counter()
            answer = client.get("/ui/api/asks", params=params)
            times.append((time.perf_counter() - started) * 1000)
            size = len(answer.content)
    return size, statistics.median(times)


def loads(url: str, rounds: int, seat_cards: int) -> tuple[float, float]:
    """Median (ms) of the Collections page's load until its asks are drawn, and of its first paint."""
    from playwright.sync_api import sync_playwright

    drawn, painted = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
        )
        for _ in range(rounds):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(url + "/collections")
            page.wait_for_function(
                "(n) => document.querySelectorAll('#asks .seat-card').length >= n",
                arg=seat_cards,
                timeout=300_000,
            )
            page.evaluate("new Promise((done) => requestAnimationFrame(() => setTimeout(done)))")
            drawn.append((time.perf_counter() - started) * 1000)
            paint = page.evaluate(
                "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1"
            )
            painted.append(paint)
            page.close()
        browser.close()
    return statistics.median(drawn), statistics.median(painted)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--big", type=int, default=3, help="asks with one answer of --mb MB")
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--head", type=int, default=0, help="also read the list cut to N characters")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bw-recent-") as folder:
        home = Path(folder)
        asyncio.run(seed(home, args.asks, args.big, args.mb))
        with live_server(home) as server:
            cells = [("whole", {})]
            if args.head:
                cells.append((f"head={args.head}", {"head": str(args.head)}))
            for name, params in cells:
                size, took = reads(server.url, params, args.rounds)
                print(f"JSON {name}: {size / 1e6:.2f} MB, median {took:.0f} ms")
            drawn, painted = loads(server.url, args.rounds, min(args.asks, 20) * len(SEATS))
            print(f"page: asks drawn at {drawn:.0f} ms (median), first contentful paint {painted:.0f} ms")


if __name__ == "__main__":
    main()
