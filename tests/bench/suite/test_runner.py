"""A suite run against fake members, through the caller: right answers pass,
wrong ones fail (and, said with certainty, count as confidently wrong),
every task is a logged call, results are kept, calls are paced."""

from __future__ import annotations

import time

from sqlalchemy import select

from benchwarmers.bench.suite import load_tasks, next_tasks_for, run_suite, suite_summary
from benchwarmers.bench.suite.runner import tasks_for
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.schema import Call, SuiteResult
from benchwarmers.testing import FakeError, FakeModel, FakeProvider, FakeRequest

PICKED = [
    "general-capital-australia",
    "general-multiply",
    "general-person-json",
    "light-sort-words",
    "code-fizzbuzz",
]
RIGHT = {
    "capital city of Australia": "It is **Canberra**.\nConfidence: 95%",
    "17 multiplied by 23": "17 x 23 = 391\nConfidence: 99%",
    "fictional person": '```json\n{"name": "Ada", "age": 36, "languages": ["English"]}\n```',
    "Sort these words": "apple, fig, pear",
    "fizzbuzz(n)": (
        "```python\ndef fizzbuzz(n):\n    out = []\n    for i in range(1, n + 1):\n"
        "        word = ('Fizz' if i % 3 == 0 else '') + ('Buzz' if i % 5 == 0 else '')\n"
        "        out.append(word or str(i))\n"
        "    return out\n```\nConfidence: 90%"
    ),
}
WRONG = {
    "capital city of Australia": "Sydney, definitely.",
    "17 multiplied by 23": "381\nConfidence: 95%",
    "fictional person": '{"name": "Ada", "age": "old"}\nConfidence: 30%',
    "Sort these words": "pear, fig, apple",
    "fizzbuzz(n)": (
        "```python\ndef fizzbuzz(n):\n    return [str(i) for i in range(1, n + 1)]\n```\nConfidence: 100%"
    ),
}


def script(answers: dict[str, str]):  # type: ignore[no-untyped-def]
    def answer(request: FakeRequest) -> str:
        return next((text for key, text in answers.items() if key in request.prompt), "no idea")

    return answer


def picked() -> list:  # type: ignore[type-arg]
    tasks = {t.id: t for t in load_tasks()}
    return [tasks[i] for i in PICKED]


async def test_right_and_wrong_members_score_and_are_recorded(
    bench: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("sharp-1", answer=script(RIGHT)))
    fake_provider.add(FakeModel("dull-1", answer=script(WRONG)))
    await add_model(bench.store, "sharp", "fake", "sharp-1")
    await add_model(bench.store, "dull", "fake", "dull-1")
    seen: list[tuple[int, int]] = []

    sharp = await run_suite(bench, "sharp", tasks=picked(), gap=0, progress=lambda d, t: seen.append((d, t)))
    dull = await run_suite(bench, "dull", tasks=picked(), gap=0)

    assert [r.passed for r in sharp.results] == [True] * 5, [r.detail for r in sharp.results]
    assert sharp.confidently_wrong == 0
    assert [r.passed for r in dull.results] == [False] * 5
    # Sydney "definitely", 381 at 95%, fizzbuzz at 100%: certain; the JSON at 30% and the sort are not.
    assert [r.confidently_wrong for r in dull.results] == [True, True, False, False, True]
    assert seen == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert fake_provider.calls["sharp-1"] == 5 and fake_provider.calls["dull-1"] == 5
    assert "Confidence: N%" in fake_provider.last("sharp-1").system

    async with bench.store.read() as session:
        calls = (await session.scalars(select(Call).where(Call.kind == "suite"))).all()
        rows = (await session.scalars(select(SuiteResult).order_by(SuiteResult.id))).all()
    assert len(calls) == 10 and {c.alias for c in calls} == {"sharp", "dull"}
    assert {r.call_id for r in rows} == {c.id for c in calls}
    assert sum(r.passed for r in rows) == 5 and sum(r.confidently_wrong for r in rows) == 3
    assert all(r.answer for r in rows)  # our own prompts' answers are kept as evidence
    summary = await suite_summary(bench, "dull")
    assert summary["short"] == {"passed": 0, "total": 4, "confidently_wrong": 2}
    assert summary["code"] == {"passed": 0, "total": 1, "confidently_wrong": 1}


async def test_a_reasoning_models_think_block_is_graded_past(
    bench: Runtime, fake_provider: FakeProvider
) -> None:
    """Reasoning written into the text before the answer (DeepSeek-R1 through
    Ollama): its working, an "Answer:" with a wrong guess in it, is no part
    of the answer graded."""
    working = "Answer: Sydney, or 381? No: check again."  # read as the answer, it was wrong
    plain = {**RIGHT, "capital city of Australia": "Canberra\nConfidence: 95%"}  # the whole answer, exactly
    fake_provider.add(FakeModel("r1-1", answer=script(plain), thinking=working, think_tag="think"))
    await add_model(bench.store, "r1", "fake", "r1-1")
    run = await run_suite(bench, "r1", tasks=picked(), gap=0)
    assert [r.passed for r in run.results] == [True] * 5, [r.detail for r in run.results]
    assert run.confidently_wrong == 0


async def test_a_failing_member_fails_its_tasks(bench: Runtime, fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeModel("down-1", error=FakeError(500, "boom")))
    await add_model(bench.store, "down", "fake", "down-1")
    run = await run_suite(bench, "down", tasks=picked()[:2], gap=0)
    assert [r.passed for r in run.results] == [False, False]
    assert all(r.detail.startswith("error") for r in run.results)


async def test_runs_are_paced_never_a_burst(bench: Runtime, fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeModel("sharp-1", answer=script(RIGHT)))
    await add_model(bench.store, "sharp", "fake", "sharp-1")
    started = time.monotonic()
    await run_suite(bench, "sharp", tasks=picked()[:3], gap=0.15)
    assert time.monotonic() - started >= 0.3  # two gaps between three calls, at least


async def test_next_tasks_skip_done_ones_and_fit_the_role(
    bench: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("sharp-1", answer=script(RIGHT)))
    fake_provider.add(FakeModel("eye-1", answer="It is red."))
    await add_model(bench.store, "sharp", "fake", "sharp-1")
    await add_model(bench.store, "eye", "fake", "eye-1", role="vision")

    every = await tasks_for(bench, "sharp")
    assert all(t.shape != "vision" for t in every)
    first = await next_tasks_for(bench, "sharp", 6)
    assert [t.id for t in first] == [t.id for t in every[:6]]
    await run_suite(bench, "sharp", tasks=first, gap=0)
    second = await next_tasks_for(bench, "sharp", 6)
    assert not {t.id for t in first} & {t.id for t in second}

    eye_tasks = await tasks_for(bench, "eye")
    assert eye_tasks and all(t.shape == "vision" for t in eye_tasks)
    run = await run_suite(bench, "eye", limit=1, gap=0)
    assert run.results[0].task == "vision-red-square" and run.results[0].passed
    assert fake_provider.last("eye-1").messages[-1].images == 1
    assert await next_tasks_for(bench, "eye", 6) == [t for t in eye_tasks if t.id != "vision-red-square"]


async def test_the_suite_is_paced_by_what_the_endpoint_allows(runtime: Runtime) -> None:
    """Issue 40, item 6: the tightest known requests-a-minute limit spread
    over the minute; no gap on this machine without one; else the default."""
    from benchwarmers.bench.suite.runner import DEFAULT_GAP, paced_gap
    from benchwarmers.limits.user_limits import set_limits

    store = runtime.store
    await add_endpoint(store, "here", "http://127.0.0.1:8199/v1", needs_key=False)
    await add_endpoint(store, "far", "https://api.example.org/v1")
    for endpoint in ("here", "far"):
        await add_model(store, f"m-{endpoint}", endpoint, "m")
    assert await paced_gap(store, await get_model(store, "m-here")) == 0.0
    assert await paced_gap(store, await get_model(store, "m-far")) == DEFAULT_GAP
    await set_limits(store, "far", "", {"rpm": 60})
    await set_limits(store, "far", "m", {"rpm": 30})
    assert await paced_gap(store, await get_model(store, "m-far")) == 2.0
    await set_limits(store, "here", "", {"rpm": 120})
    assert await paced_gap(store, await get_model(store, "m-here")) == 0.5
