"""The dashboard against hostile content, in a real browser (headless
Chromium): what a model writes (its answer, an upstream error's body), and
what a person or a client writes that the pages show again (a note, a pair's
note, a kept question), never becomes markup, a script, a link to anywhere
but http(s) or mailto, nor a page that stops answering.

Every payload here sets `window.__pwned` or opens a dialog if it ever runs;
each test asserts neither happened.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import update

from benchwarmers.dashboard import auth
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.conftest import capable
from tests.dashboard.test_browser import WAIT, Watch
from tests.dashboard.test_browser_judging import answers, bench, card

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

# Each runs `window.__pwned = N` (or a dialog) if any of it ever becomes markup, a handler or a link.
PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "<svg onload=window.__pwned=3>",
    '<iframe src="javascript:window.__pwned=4"></iframe>',
    "<style>body { display: none }</style>",
    '"><img src=x onerror=window.__pwned=5>',
    "'><svg/onload=alert(6)>",
    "[a](javascript:window.__pwned=7)",
    "[a](JaVaScRiPt:alert(8))",
    "[a]( javascript:alert(9))",
    "[a](jav&#x09;ascript:alert(10))",
    "[a](&#106;avascript:alert(11))",
    "[a](jav\tascript:alert(12))",
    "[a](vbscript:msgbox(13))",
    "[a](data:text/html,<script>alert(14)</script>)",
    "[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxNSk8L3NjcmlwdD4=)",
    "<javascript:alert(16)>",
    '<https://x.org/" onmouseover="alert(17)>',
    '[a](https://x.org/ "t\\" onmouseover=alert(18) x=\\"")',
    "[a](<javascript:alert(19)>)",
    "[ref]: javascript:alert(20)\n\n[x][ref] [ref]",
    "[a](//evil.example/x) [b](/relative)",
    "[![i](https://x.org/a.png)](javascript:alert(21))",
    "![x](javascript:alert(22))",
    '![x" onerror="alert(23)](https://x.org/a.png)',
    "[[[a](javascript:alert(24))](https://x.org)](https://y.org)",
    "- <img src=x onerror=alert(25)>\n  > <script>alert(26)</script>",
    "| <b onclick=alert(27)>x</b> | y |\n|---|---|\n| <svg/onload=alert(28)> | z |",
    "`` ` <script>alert(29)</script> ` ``",
    '```"><img src=x onerror=alert(30)>\ncode\n```',
    "&lt;script&gt;alert(31)&lt;/script&gt; &#60;img src=x onerror=alert(32)&#62;",
    "<!-- <script>alert(33)</script> --> <![CDATA[<script>alert(34)</script>]]>",
    "{{constructor.constructor('alert(35)')()}} ${alert(36)} {% raw %}",
    "\u202eevil\u202c zero\u200bwidth 👍🏽 👨‍👩‍👧",
]
HOSTILE = "\n\n".join(PAYLOADS)

# What the renderer may make, and the only attributes it may set.
TAGS = "P A CODE PRE DIV SPAN BUTTON STRONG EM DEL UL OL LI BLOCKQUOTE H3 H4 H5 H6 HR BR"
TAGS += " TABLE THEAD TBODY TR TD TH"
ATTRIBUTES = "class href rel target align start type title aria-label data-copy-code"

DRAWN = f"""texts => texts.map((text) => {{
    const box = document.createElement('div');
    box.append(bw.markdown(text));
    document.body.append(box); // in the page, as an answer is: anything that would run, runs
    const tags = new Set('{TAGS}'.split(' '));
    const attributes = new Set('{ATTRIBUTES}'.split(' '));
    const wrong = [];
    for (const e of box.querySelectorAll('*')) {{
      if (!tags.has(e.tagName)) wrong.push(`element ${{e.tagName}}`);
      for (const a of e.attributes) if (!attributes.has(a.name)) wrong.push(`${{e.tagName}}[${{a.name}}]`);
      const href = e.getAttribute('href');
      if (href !== null && !/^(https?:\\/\\/|mailto:)/i.test(href)) wrong.push(`href ${{href}}`);
      const safeRel = /\\bnoopener\\b/.test(e.rel) && /\\bnoreferrer\\b/.test(e.rel);
      if (e.target && !safeRel) wrong.push('target without rel noopener noreferrer');
    }}
    return wrong;
}})"""


# No element a payload would make, and no handler attribute on any (the Leaderboard draws its own SVG).
NO_MARKUP_OF_THEIRS = """() =>
    document.querySelectorAll('main script, main img, main iframe, main style, main object').length === 0
    && ![...document.querySelectorAll('main *')].some(
        (e) => [...e.attributes].some((a) => a.name.startsWith('on')))"""


def ask_page(browser: Any, base: str) -> tuple[Any, list[str]]:
    """A page on Ask (its scripts ready), and the dialogs it opens (dismissed)."""
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(base + "/ask")
    page.locator("body[data-ready]").wait_for(state="attached")
    return page, dialogs


def assert_nothing_ran(page: Any, dialogs: list[str]) -> None:
    page.wait_for_timeout(300)  # an image's onerror, a frame's load: after the task that drew them
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []


def test_no_payload_becomes_an_element_a_handler_or_an_unsafe_link(browser: Any, home: Path) -> None:
    """Each payload alone, then all of them in one answer: only the elements
    the renderer makes, only its attributes, links only to http(s) and
    mailto, each with rel noopener noreferrer, and nothing ran."""
    with live_server(home) as server:
        page, dialogs = ask_page(browser, server.url)
        wrong = page.evaluate(DRAWN, [*PAYLOADS, HOSTILE])
        assert dict(zip([*PAYLOADS, "all"], wrong, strict=True)) == {p: [] for p in [*PAYLOADS, "all"]}
        assert_nothing_ran(page, dialogs)
        # The payloads are characters on the page.
        text = page.evaluate(
            "(t) => { const b = document.createElement('div'); b.append(bw.markdown(t)); "
            "return b.textContent; }",
            HOSTILE,
        )
        for shown in (
            "<script>window.__pwned = 1</script>",
            "[a](javascript:window.__pwned=7)",
            "<svg onload=window.__pwned=3>",
        ):
            assert shown in text
        page.close()


# (what, a JS expression making the text): each overflowed the stack (the seat showed nothing),
# crashed the tab, or took the page from seconds to minutes before markdown.js bounded it.
HEAVY = [
    ("links nested 10,000 deep", "'['.repeat(10000) + 'a' + '](https://x.org)'.repeat(10000)"),
    ("emphasis in links 10,000 deep", "'[*'.repeat(10000) + 'x' + '*](https://x.org)'.repeat(10000)"),
    ("200,000 code spans", "'`a` '.repeat(200000)"),
    ("100,000 links", "'[a](https://x.org) '.repeat(100000)"),
    ("200,000 headings", "'# h\\n'.repeat(200000)"),
    ("100,000 line breaks", "'a  \\n'.repeat(100000)"),
    ("a quote of 200,000 lines", "'> a\\n'.repeat(200000)"),
    ("a paragraph of 2 MB in 25,000 lines", "('word '.repeat(15) + '\\n').repeat(25000)"),
    ("unclosed backtick runs", "Array.from({length: 1500}, (_, i) => '`'.repeat(i + 1)).join('x')"),
    ("a table of 200,000 columns", "'|' + 'a|'.repeat(200000) + '\\n|' + '-|'.repeat(200000)"),
    ("200,000 made-up entities", "Array.from({length: 200000}, (_, i) => '&q' + i + ';').join(' ')"),
    ("quotes 10,000 deep", "'>'.repeat(10000) + ' x'"),
    ("lists 10,000 deep", "'- '.repeat(10000) + 'x'"),
    # A reasoning model's think block (`bw.answer`, drawn as a seat still writing it).
    ("a think block of 2 MB", "'<think>' + 'hmm '.repeat(500000) + '</think>an answer'"),
    ("200,000 opening tags, none closed", "'<think>'.repeat(200000)"),
    ("200,000 closing tags", "'</thinking>'.repeat(200000)"),
    ("a MB of spaces before half a tag", "' '.repeat(1000000) + '<thin'"),
]


def test_deep_and_huge_answers_are_drawn_whole_without_an_error(browser: Any, home: Path) -> None:
    """Each is drawn (its text all there), with no error, and laid out in
    seconds: the bound is many times what it takes now, and far below what
    it took (a tab crashed, minutes, or an error and nothing drawn)."""
    with live_server(home) as server:
        page, dialogs = ask_page(browser, server.url)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        for what, made in HEAVY:
            took, error, whole = page.evaluate(
                f"""() => {{
                    const text = {made};
                    const started = performance.now();
                    const box = document.createElement('div');
                    let error = null;
                    try {{ box.append(bw.answer(text, true)); }} catch (e) {{ error = String(e); }}
                    document.body.append(box);
                    box.getBoundingClientRect();
                    const took = performance.now() - started;
                    const drawn = box.textContent.replace(/\\s+/g, '');
                    box.remove();
                    return [took, error, drawn.length > 0];
                }}"""
            )
            assert (what, error, whole) == (what, None, True)
            assert took < 10_000, (what, took)
        assert errors == []
        assert_nothing_ran(page, dialogs)
        page.close()


def test_hidden_and_bidi_characters_in_code_show_as_marks_and_copy_as_written(
    browser: Any, home: Path
) -> None:
    """A right-to-left override or a zero-width space in code shows what
    the code does not (Trojan Source): each is shown as a mark naming it, in
    a code block and in inline code; Copy gives the code exactly as written."""
    code = 'access = "user\u202e \u2066// admin\u2069\u2066"\nok\u200b = 1'
    with live_server(home) as server:
        context = browser.new_context()
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page = context.new_page()
        page.goto(server.url + "/ask")
        page.locator("body[data-ready]").wait_for(state="attached")
        page.evaluate(
            """(code) => {
                const box = document.createElement('div');
                box.id = 'drawn';
                box.className = 'answer md';
                const prose = 'and `x\\u202ey` inline, prose \\u202eas is\\u202c';
                box.append(bw.markdown('```py\\n' + code + '\\n```\\n\\n' + prose));
                document.querySelector('main').append(box);
            }""",
            code,
        )
        block = page.locator("#drawn .code-block code")
        shown = block.inner_text()
        assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b]", shown)
        assert shown == 'access = "user⟨U+202E⟩ ⟨U+2066⟩// admin⟨U+2069⟩⟨U+2066⟩"\nok⟨U+200B⟩ = 1'
        assert page.locator("#drawn p code").inner_text() == "x⟨U+202E⟩y"
        # Prose keeps them (Arabic and Hebrew text needs them): as written.
        assert "\u202eas is\u202c" in page.locator("#drawn p").inner_text()
        page.locator("#drawn button[data-copy-code]").click()
        assert page.evaluate("navigator.clipboard.readText()") == code
        context.close()


def test_every_page_sends_a_policy_that_runs_no_inline_script(browser: Any, home: Path) -> None:
    """The backstop if anything slipped: every page's Content-Security-Policy
    runs only our own files (no inline script, no handler attribute, no
    plugin, no `<base>`), and Chromium holds markup put in the page to it."""
    strict = ("script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'")
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        paths = ["/endpoints", "/models", "/onboard", "/collections", "/ask", "/leaderboard", "/quotas"]
        paths += ["/settings", "/login", "/models/nobody", "/signin/nowhere"]
        for path in paths:
            headers = client.get(path).headers
            policy = headers["content-security-policy"]
            assert all(part in policy for part in strict), (path, policy)
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, path
            assert headers["x-content-type-options"] == "nosniff", path
        page, dialogs = ask_page(browser, server.url)
        page.evaluate(
            """() => {
                const slipped = document.createElement('div');
                slipped.innerHTML = '<img src=x onerror="window.__pwned = 1">'
                  + '<a id=j href="javascript:window.__pwned=2">j</a>';
                document.body.append(slipped);
                const script = document.createElement('script');
                script.textContent = 'window.__pwned = 3';
                document.body.append(script);
                document.getElementById('j').click();
            }"""
        )
        assert_nothing_ran(page, dialogs)
        page.close()


def test_a_hostile_model_and_hostile_notes_run_nothing_on_any_page(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """A model answers every payload (and code spans that once overflowed the
    stack), another fails with them as its error's body; the question (kept)
    and the notes carry them too. On the Ask page, Recent asks, the model's
    page, the Bench and the Leaderboard, they are text, and nothing ran."""
    heavy = "`a`-" * 150_000  # one word: the fake streams it as one piece
    hostile_answer = answers(hostile=HOSTILE + "\n\n" + heavy)
    models = [FakeModel("alpha", answer=hostile_answer), FakeModel("beta", answer=capable)]
    with bench(browser, home, fake_provider, models, keep_text=True, keep_days=1) as b:
        page = b.page
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        fake_provider.add(FakeModel("beta", error=FakeError(500, HOSTILE)))
        question = "hostile " + PAYLOADS[1] + " " + PAYLOADS[7]
        b.ask(question)
        page.locator("#ask-state >> text=Done.").wait_for()
        alpha, beta = card(page, "alpha"), card(page, "beta")
        expect(alpha).to_have_class(re.compile(r"\bs-ok\b"))
        expect(alpha.locator(".answer")).to_contain_text("<script>window.__pwned = 1</script>")
        expect(alpha.locator(".answer")).to_contain_text("a-a-a-")  # the code spans, drawn
        expect(beta).to_have_class(re.compile(r"\bs-error\b"))
        expect(beta.locator(".answer .error")).to_contain_text('<img src=x onerror="window.__pwned = 2">')
        safe = "(a) => /^https?:|^mailto:/.test(a.getAttribute('href')) && /noopener noreferrer/.test(a.rel)"
        assert page.locator("#conversation a[href]").evaluate_all(f"links => links.every({safe})")
        alpha.locator(".answer").evaluate("(answer) => { answer.drawn = 'once'; }")
        alpha.locator("input.note").fill(PAYLOADS[1] + " " + PAYLOADS[5] + " \u202eton")
        alpha.locator('button[data-verdict="useful"]').click()
        expect(alpha.locator(".judge-state")).to_contain_text(PAYLOADS[1], timeout=WAIT)
        # The verdict redrew the card around the answer, not the answer (megabytes, laid out again).
        assert alpha.locator(".answer").evaluate("(answer) => answer.drawn") == "once"
        # The answer's Copy gives it as written, payloads and all.
        alpha.locator("button[data-copy-answer]").click()
        assert page.evaluate("navigator.clipboard.readText()") == HOSTILE + "\n\n" + heavy
        assert_nothing_ran(page, dialogs)
        page.screenshot(path=str(artifacts / "hostile-ask.png"))

        # A pair's note from a client (the API), shown on the model's page and in Recent asks.
        calls = {a: card(page, a).get_attribute("data-call") for a in ("alpha", "beta")}
        pair = {"tie": [calls["alpha"], calls["beta"]], "note": PAYLOADS[2] + " " + PAYLOADS[3]}
        sent = b.client.post("/bench/verdict", json=pair)
        if sent.status_code >= 400:  # a failed seat is no pair: the note goes on a verdict instead
            note = {"call": calls["alpha"], "useful": True, "note": pair["note"]}
            sent = b.client.post("/bench/verdict", json=note)
        assert sent.status_code < 400, sent.text

        page.goto(b.base + "/collections")
        page.locator("body[data-ready]").wait_for(state="attached")
        kept = page.locator("#asks article.ask").first
        expect(kept.locator(".question")).to_contain_text(question, timeout=WAIT)  # megabytes to draw
        expect(kept.locator('.seat-card[data-alias="alpha"] .answer')).to_contain_text(
            "<svg onload=window.__pwned=3>"
        )
        assert_nothing_ran(page, dialogs)

        for path, shows in (
            ("/models/alpha", PAYLOADS[2]),
            ("/models", "alpha"),
            ("/leaderboard?collection=trio", "alpha"),
        ):
            page.goto(b.base + path)
            page.locator("body[data-ready]").wait_for(state="attached")
            expect(page.locator("main")).to_contain_text(shows)
            assert page.evaluate(NO_MARKUP_OF_THEIRS), path
            assert_nothing_ran(page, dialogs)
        page.screenshot(path=str(artifacts / "hostile-model-page.png"), full_page=True)
        problems = [p for p in b.watch.take() if "500" not in p and "Failed to load resource" not in p]
        assert problems == []


def test_the_login_page_and_an_unknown_model_echo_nothing_as_markup(browser: Any, home: Path) -> None:
    """What a link can put in the address (a model's name, the page to go
    back to after signing in) is shown as text."""
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        watch = Watch(page)
        for path in (
            "/models/%3Cimg%20src=x%20onerror=alert(1)%3E",
            "/login?next=javascript:alert(2)",
            "/leaderboard?collection=%22%3E%3Csvg%20onload=alert(3)%3E",
        ):
            page.goto(server.url + path)
            assert page.evaluate(NO_MARKUP_OF_THEIRS), path
            assert_nothing_ran(page, dialogs)
        assert [p for p in watch.take() if not p.startswith(("404", "console error: Failed"))] == []
        page.close()


def test_an_endpoint_listing_150000_models_and_hostile_ids_is_listed_as_text(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """What an endpoint lists is its to say: 150,000 models overflowed the
    stack and the Onboard list stayed empty under "150000 model(s)"; an id
    carrying markup is its characters."""
    hostile = 'x"><img src=x onerror="window.__pwned=1">'
    fake_provider.add(FakeModel(hostile, answer="x"))
    for number in range(150_000):
        fake_provider.add(FakeModel(f"m{number}", answer="x"))
    with live_server(home) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        body = {"name": "fake", "api": "openai", "base_url": fake_provider.openai_base, "keyless": True}
        assert client.post("/ui/api/endpoints", json=body).status_code == 200
        page = browser.new_page()
        page.set_default_timeout(WAIT)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        watch = Watch(page)
        page.goto(server.url + "/onboard?endpoint=fake")
        expect(page.locator("#listed-state")).to_contain_text("150001 model(s)", timeout=WAIT)
        boxes = page.locator("#listed li input[name=models]")
        expect(boxes).to_have_count(150_001)
        assert boxes.evaluate_all("(all, id) => all.filter((box) => box.value === id).length", hostile) == 1
        expect(page.locator("#listed")).to_contain_text(hostile)
        assert_nothing_ran(page, dialogs)
        assert watch.take() == []
        page.close()


def test_a_mergers_right_to_left_override_turns_none_of_our_words_around(browser: Any, home: Path) -> None:
    """The merger's points stand before our attribution on a line ("— Seat A,
    judged right"): each is isolated (`<bdi>`), so an override in it ends
    with it, and our words read as written."""
    with live_server(home) as server:
        page, dialogs = ask_page(browser, server.url)
        isolated = page.evaluate(
            """() => {
                const box = document.createElement('div');
                document.querySelector('main').append(box);
                const names = bw.seatNames(false);
                const turn = new bw.Turn(box, { collection: 'trio', names, question: 'q' });
                const seats = [
                  { seat: 'Seat 1', alias: 'alpha', call: 'c1' },
                  { seat: 'Seat 2', alias: 'beta', call: 'c2' },
                ];
                turn.start(seats);
                for (const seat of seats) turn.done({ ...seat, status: 'ok', seconds: 1, content: 'x' });
                const evil = 'point \\u202e';
                turn.merged({ status: 'ok', call: '', alias: 'alpha', seconds: 1, content: 'm',
                  agreement: [], report: { confidence: 0.5, consensus: [evil], gaps: [],
                    contradictions: [{ point: evil, sides: [{ position: evil, seats: ['Seat 1'] }] }],
                    unique: [{ point: evil, seat: 'Seat 2', right: true }] } });
                const ours = [...box.querySelectorAll('.merge-report small')];
                const before = (small) => small.previousSibling.previousSibling; // their words, a space, ours
                return [ours.length, ours.every((small) => before(small).tagName === 'BDI'
                  && before(small).textContent === evil)];
            }"""
        )
        assert isolated == [2, True]
        assert_nothing_ran(page, dialogs)
        page.close()


ODD_ALIASES = ("a%2Fb", "q?probe=1", "h#frag", "two words", "ünï/ködé", "x/../../settings")


def test_odd_aliases_stored_before_the_rule_get_buttons_that_address_them(
    browser: Any, home: Path, fake_provider: FakeProvider
) -> None:
    """Aliases an owner typed before the rule (`/..`, `%2F`, `?`, `#`, a space, unicode), stored
    as they are: each one's link (the Bench page's, the Leaderboard's) opens its own page, and
    its buttons (Retire, Restore) act on it, never on a path the alias changed."""

    async def store_them() -> None:
        async with Runtime.open(home) as runtime:
            await add_endpoint(runtime.store, "hub", fake_provider.openai_base, needs_key=False)
            for n, alias in enumerate(ODD_ALIASES):
                await add_model(runtime.store, f"m{n}", "hub", f"m{n}")
                async with runtime.store.write() as session:
                    model = schema.Model.alias == f"m{n}"
                    await session.execute(update(schema.Model).where(model).values(alias=alias))
            await add_collection(runtime.store, "odd", list(ODD_ALIASES))

    with ThreadPoolExecutor(1) as thread:  # the browser's loop runs on this one
        thread.submit(asyncio.run, store_them()).result()
    with live_server(home) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        page = browser.new_page()
        page.set_default_timeout(WAIT)
        page.on("dialog", lambda dialog: dialog.accept())
        watch = Watch(page)
        for alias in ODD_ALIASES:
            api = "/ui/api/models/" + quote(alias, safe="")
            page.goto(server.url + "/models")
            row = page.locator(f'tr[data-alias="{alias}"]')
            link = row.locator("th a")
            assert link.get_attribute("href") == "/models/" + quote(alias, safe="")
            link.click()
            expect(page.locator("h1")).to_have_text(alias)
            page.go_back()
            row.locator('button[data-post$="/retire"]').click()
            expect(row.locator('button[data-post$="/restore"]')).to_be_visible()
            assert client.get(api).json()["model"]["status"] == "retired", alias
            row.locator('button[data-post$="/restore"]').click()
            expect(row.locator('button[data-post$="/retire"]')).to_be_visible()
            assert client.get(api).json()["model"]["status"] == "available", alias
        board = page.goto(server.url + "/leaderboard?collection=odd")
        assert board is not None and board.ok
        for alias in ODD_ALIASES:
            link = page.locator(f'tr[data-alias="{alias}"] th a')
            assert link.get_attribute("href") == "/models/" + quote(alias, safe="")
        statuses = {m["alias"]: m["status"] for m in client.get("/ui/api/models").json()["models"]}
        assert statuses == {**{a: "available" for a in ODD_ALIASES}}, statuses
        assert watch.take() == []
        page.close()
