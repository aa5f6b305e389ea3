"""The data folder: where the SQLite store (and anything else we write) lives.

Resolution order, first that applies wins:

1. `BENCHWARMERS_HOME` in the environment;
2. a `.benchwarmers-home` file in the working directory, naming the folder
   (a relative path is read relative to that file), which `benchwarmers init
   DIR` writes so a checkout keeps its own bench;
3. the platform's user-data folder for "benchwarmers" (platformdirs).

Resolving never creates anything; `ensure_home` creates the folder and proves
it usable, so a bad folder fails once, at start, with one clear line instead
of a database error deep inside a request.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from benchwarmers.config import environment
from benchwarmers.errors import StoreError

HOME_ENV = environment.HOME.name
POINTER_FILE = ".benchwarmers-home"
APP_NAME = "benchwarmers"


def resolve_home(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The data folder this process should use (not created, not checked)."""
    return home_and_source(cwd, environ)[0]


def home_and_source(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """The data folder, and what chose it in words: the variable, the
    pointer file in the working directory (which a command run from
    another project's folder follows), or the user-data default."""
    env = os.environ if environ is None else environ
    named = env.get(HOME_ENV, "").strip()
    if named:
        return Path(named).expanduser().absolute(), HOME_ENV
    pointer = (cwd or Path.cwd()) / POINTER_FILE
    if pointer.exists():
        return read_pointer(pointer), f"{pointer}"
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)), "the user-data default"


def read_pointer(pointer: Path) -> Path:
    try:
        named = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {pointer}: {_reason(exc)}") from exc
    if not named:
        raise StoreError(f"{pointer} is empty: it should name the data folder")
    path = Path(named).expanduser()
    return path if path.is_absolute() else (pointer.parent / path).absolute()


def write_pointer(cwd: Path, home: Path) -> Path:
    """Point the working directory at `home` (absolute, so moving the checkout
    does not silently switch benches)."""
    pointer = cwd / POINTER_FILE
    try:
        pointer.write_text(f"{home.absolute()}\n", encoding="utf-8")
    except OSError as exc:
        raise StoreError(f"cannot write {pointer}: {_reason(exc)}") from exc
    return pointer


def ensure_home(home: Path) -> Path:
    """Create the data folder if missing and prove we can read and write it."""
    if home.exists() and not home.is_dir():
        raise StoreError(f"the data folder {home} is a file, not a folder")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the data folder {home}: {_reason(exc)}") from exc
    if not os.access(home, os.R_OK | os.X_OK):
        raise StoreError(f"the data folder {home} is not readable")
    try:
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        raise StoreError(f"the data folder {home} is not writable: {_reason(exc)}") from exc
    return home


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)
