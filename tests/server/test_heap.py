"""`serve`'s collector settings (server/heap.py), checked in a child
process so this one's collector stays as the other tests expect."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.unit

CHILD = textwrap.dedent(
    """
    import gc, weakref
    from benchwarmers.server.heap import settle_for_serving

    built_before = [object() for _ in range(1000)]  # alive when serving starts
    settle_for_serving()
    print("threshold", gc.get_threshold())
    print("frozen at least", gc.get_freeze_count() >= 1000)

    class Node:
        pass

    # A cycle made while serving is garbage only the collector can free:
    # it must still be freed, without anyone calling gc.collect().
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    kept = [[] for _ in range(15_000)]  # more new objects than the young generation holds
    print("cycle freed", gone() is None)
    """
)


def test_serving_freezes_the_built_heap_and_still_collects_cycles() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout
    assert "threshold (10000, 20, 20)" in out
    assert "frozen at least True" in out
    assert "cycle freed True" in out
