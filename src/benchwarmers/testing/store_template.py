"""A store migrated once per process, copied into each fresh data folder a
test opens: creating every table costs more than the rest of opening a
runtime, or starting a live server (which uses it too). Its own module, so
the root conftest can use it without importing the server.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from benchwarmers.runtime import Runtime
from benchwarmers.store.db import SQLITE_FILE, sqlite_url

_template_lock = threading.Lock()
_template: Path | None = None


def copy_migrated_store(home: Path) -> None:
    """Give an empty data folder a copy of a store migrated once per
    process: creating every table costs more than the rest of a start (and
    of most tests: the `runtime` fixture and the register helpers use it).
    (Migrating from empty is the store's own tests' business.)"""
    global _template
    target = home / SQLITE_FILE
    if not home.is_dir() or target.exists():
        return  # a store to keep, or a folder Runtime.open should judge
    with _template_lock:
        if _template is None:
            folder = Path(tempfile.mkdtemp(prefix="benchwarmers-template-"))
            atexit.register(shutil.rmtree, folder, True)
            # Its own thread: the caller may be inside a running event loop.
            worker = threading.Thread(target=asyncio.run, args=(_migrate(folder),))
            worker.start()
            worker.join()
            _template = folder / SQLITE_FILE
    shutil.copyfile(_template, target)


async def _migrate(folder: Path) -> None:
    async with Runtime.open(folder, sqlite_url(folder)):
        pass  # closing the last connection folds the WAL into the file
