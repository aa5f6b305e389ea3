"""Fetch real-bug tasks from a public SWE-rebench dataset on the Hugging Face Hub.

The local importer (`rebench.py`) needs a JSONL file someone downloaded;
online, the Hugging Face datasets server hands out any slice of a public
dataset's rows as JSON, so the bench can fetch them itself:

    GET {base}/rows?dataset=nebius/SWE-rebench&config=default&split=test&offset=0&length=100
    -> {"features": [...], "rows": [{"row_idx": 0, "row": {...}, "truncated_cells": []}],
        "num_rows_total": 21336, "num_rows_per_page": 100, "partial": false}
    -> on failure, a status >= 400 and {"error": "..."}

Rows are read a page (at most 100) at a time through the runtime's pooled
client, mapped by the local importer's `task_from_row` (one mapping, not
two), and appended to `<home>/tasks/rebench-hub-<dataset>-<split>.json`.
Fetching is idempotent: a row whose task id is already among the user's
tasks (from an earlier fetch or a local import) is counted and left alone.
A row whose `patch` the server truncated is skipped: its file list, and so
its checker, would be wrong.

Privacy: the only request is for public dataset rows; it carries the
dataset name, split and offsets, no key and nothing of the bench's.
`BENCHWARMERS_HF_DATASETS_URL` points it at a mirror (or a test's fake).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchwarmers.bench.suite.rebench import task_from_row
from benchwarmers.bench.suite.tasks import USER_FOLDER, load_tasks
from benchwarmers.config import environment, tunables
from benchwarmers.errors import UserError

HF_DATASETS_URL = "https://datasets-server.huggingface.co"
HF_DATASETS_URL_ENV = environment.HF_DATASETS_URL.name
DEFAULT_DATASET = "nebius/SWE-rebench"
DEFAULT_SPLIT = "test"
DEFAULT_LIMIT = 100
PAGE_MAX = 100  # the rows API's own cap on `length`
PAGE_TIMEOUT = tunables.REBENCH_PAGE_TIMEOUT.value

# (rows read so far, rows this fetch will read): the CLI's progress bar.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Fetched:
    path: Path
    new: int  # tasks written by this fetch
    already: int  # rows whose task was imported before
    skipped: int  # rows that make no task (see `task_from_row`), or whose patch was cut
    available: int  # rows in the split


def datasets_url() -> str:
    return (os.environ.get(HF_DATASETS_URL_ENV, "").strip() or HF_DATASETS_URL).rstrip("/")


async def fetch_tasks(
    http: httpx.AsyncClient,
    home: Path,
    *,
    dataset: str = DEFAULT_DATASET,
    split: str = DEFAULT_SPLIT,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    progress: Progress | None = None,
) -> Fetched:
    """Read up to `limit` rows from `offset`, write the tasks not imported yet."""
    if offset < 0 or limit < 1:
        raise UserError("offset must be 0 or more and limit 1 or more")
    known = {task.id for task in load_tasks(home) if task.source == "user"}
    new: dict[str, dict[str, Any]] = {}
    already = skipped = available = read = 0
    async for rows, available in _pages(http, dataset, split, offset, limit):
        for entry in rows:
            task = _task_of(entry)
            if task is None:
                skipped += 1
            elif task["id"] in known or task["id"] in new:
                already += 1
            else:
                new[task["id"]] = task
        read += len(rows)
        if progress is not None:
            progress(read, min(limit, max(available - offset, 0)))
    if read == 0:
        raise UserError(f"{dataset} ({split}) has {available} rows: none at offset {offset}")
    if not new and not already:
        raise UserError(
            f"{dataset} ({split}): no usable rows (each needs instance_id, problem_statement and a patch)"
        )
    target = home / USER_FOLDER / f"rebench-hub-{_slug(dataset)}-{_slug(split)}.json"
    if new:
        _append(target, list(new.values()))
    return Fetched(target, len(new), already, skipped, available)


async def _pages(
    http: httpx.AsyncClient, dataset: str, split: str, offset: int, limit: int
) -> AsyncIterator[tuple[list[Any], int]]:
    """Each page's rows and the split's row count, until `limit` rows are read or the split ends."""
    base = datasets_url()
    end = offset + limit
    while offset < end:
        params: dict[str, str | int] = {
            "dataset": dataset,
            "config": "default",
            "split": split,
            "offset": offset,
            "length": min(PAGE_MAX, end - offset),
        }
        try:
            response = await http.get(f"{base}/rows", params=params, timeout=PAGE_TIMEOUT)
        except httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__
            raise UserError(
                f"could not reach {base} ({reason}); import a local JSONL with `suite import`"
            ) from exc
        body = _json(response)
        if response.status_code >= 400:
            said = body.get("error")
            raise UserError(
                f"{base} refused {dataset} ({split}): HTTP {response.status_code}"
                + (f": {said}" if isinstance(said, str) and said else "")
            )
        rows, total = body.get("rows"), body.get("num_rows_total")
        if not isinstance(rows, list) or not isinstance(total, int):
            raise UserError(f"{base} did not answer with dataset rows (no `rows` and `num_rows_total`)")
        yield rows, total
        offset += len(rows)
        if not rows or offset >= total:
            return


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _task_of(entry: Any) -> dict[str, Any] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("row"), dict):
        return None
    if "patch" in (entry.get("truncated_cells") or []):
        return None
    return task_from_row(entry["row"])


def _append(target: Path, tasks: list[dict[str, Any]]) -> None:
    """Add to the file an earlier fetch wrote; written whole, then moved into place."""
    existing: list[Any] = []
    if target.is_file():
        try:
            loaded = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{target}: not a readable JSON task file: {exc}") from exc
        existing = loaded if isinstance(loaded, list) else [loaded]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(existing + tasks, indent=1), encoding="utf-8")
    partial.replace(target)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "dataset"
