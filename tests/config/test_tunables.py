"""The index of tunable defaults (`config/tunables.py`): each is held by the
constant it names, which takes its value from the index (not a copy), and
each says why it is what it is. Read from the modules' source, not by
importing them (the front ends' SDKs are no business of a unit test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchwarmers.config import tunables

pytestmark = pytest.mark.unit

SRC = Path(tunables.__file__).parents[1]


@pytest.mark.parametrize("tunable", tunables.TUNABLES, ids=lambda t: t.where)
def test_each_tunable_is_read_from_the_index_where_it_says(tunable: tunables.Tunable[float]) -> None:
    module_name, _, constant = tunable.where.rpartition(".")
    index_name = next(name for name, value in vars(tunables).items() if value is tunable)
    source = (SRC / (module_name.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    assert re.search(rf"^{constant} = tunables\.{index_name}\.value$", source, re.MULTILINE), tunable.where
    assert len(tunable.reason) > 20 and tunable.unit


def test_every_tunable_is_listed_once() -> None:
    defined = [value for value in vars(tunables).values() if isinstance(value, tunables.Tunable)]
    assert len(defined) == len(tunables.TUNABLES) == len({t.where for t in tunables.TUNABLES})
