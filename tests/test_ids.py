"""Random text for ids, drawn ahead from the CSPRNG (`benchwarmers.ids`)."""

from __future__ import annotations

import os
import re

import pytest

from benchwarmers import ids

pytestmark = pytest.mark.unit


def test_tokens_read_as_the_secrets_module_writes_them() -> None:
    assert re.fullmatch(r"[A-Za-z0-9_-]{24}", ids.token_urlsafe(18))
    assert re.fullmatch(r"[A-Za-z0-9_-]{12}", ids.token_urlsafe(9))
    assert re.fullmatch(r"[0-9a-f]{32}", ids.token_hex(16))
    assert len(ids.token_bytes(7)) == 7


def test_no_bytes_are_handed_out_twice_across_draws() -> None:
    count = 3 * ids.DRAW_BYTES // 16  # three draws' worth
    assert len({ids.token_hex(16) for _ in range(count)}) == count
    assert len(ids.token_bytes(ids.DRAW_BYTES * 2)) == ids.DRAW_BYTES * 2  # more than one draw at once


def test_a_forked_child_draws_bytes_of_its_own() -> None:
    ids.token_bytes(1)  # the parent holds a draw with bytes still to hand out
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's side
        os.write(write, ids.token_bytes(32))
        os._exit(0)
    os.close(write)
    try:
        from_child = os.read(read, 32)
    finally:
        os.close(read)
        os.waitpid(child, 0)
    assert from_child != ids.token_bytes(32)
