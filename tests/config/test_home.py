"""Data folder resolution: env, then the pointer file, then the platform folder."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
import pytest

from benchwarmers.config.home import POINTER_FILE, ensure_home, resolve_home, write_pointer
from benchwarmers.errors import StoreError

pytestmark = pytest.mark.unit


def test_environment_wins_over_pointer(tmp_path: Path) -> None:
    (tmp_path / POINTER_FILE).write_text(str(tmp_path / "pointed"))
    env = {"BENCHWARMERS_HOME": str(tmp_path / "from-env")}
    assert resolve_home(tmp_path, env) == tmp_path / "from-env"


def test_pointer_file_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / POINTER_FILE).write_text(f"  {tmp_path / 'pointed'}\n")
    assert resolve_home(tmp_path, {}) == tmp_path / "pointed"


def test_relative_pointer_is_read_from_the_pointer_folder(tmp_path: Path) -> None:
    (tmp_path / POINTER_FILE).write_text("data\n")
    assert resolve_home(tmp_path, {}) == tmp_path / "data"


def test_written_pointer_round_trips(tmp_path: Path) -> None:
    write_pointer(tmp_path, tmp_path / "bench")
    assert resolve_home(tmp_path, {"BENCHWARMERS_HOME": ""}) == tmp_path / "bench"


def test_platform_folder_when_nothing_else(tmp_path: Path) -> None:
    assert resolve_home(tmp_path, {}) == Path(platformdirs.user_data_dir("benchwarmers", appauthor=False))


def test_empty_pointer_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / POINTER_FILE).write_text("\n")
    with pytest.raises(StoreError, match="empty"):
        resolve_home(tmp_path, {})


def test_unreadable_pointer_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / POINTER_FILE).mkdir()
    with pytest.raises(StoreError, match="cannot read"):
        resolve_home(tmp_path, {})


def test_ensure_home_creates_nested_folders(tmp_path: Path) -> None:
    assert ensure_home(tmp_path / "a" / "b").is_dir()


def test_a_file_is_not_a_data_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        ensure_home(tmp_path / "file")


def test_cannot_create_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot create"):
        ensure_home(tmp_path / "file" / "home")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes any folder whatever its mode")
def test_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="not writable"):
            ensure_home(folder)
    finally:
        folder.chmod(0o700)
