"""The prefetcher gives the producer's items in order, raises its errors in place, and stops when left early."""

from __future__ import annotations

import threading
import time

import pytest

from lifelong.core.prefetch import prefetched


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_items_come_out_in_order(depth):
    assert list(prefetched(iter(range(50)), depth=depth)) == list(range(50))


def test_the_producer_runs_ahead_on_another_thread():
    made_on = []

    def produce():
        for i in range(3):
            made_on.append(threading.current_thread().name)
            yield i

    items = prefetched(produce(), depth=2)
    assert next(items) == 0
    deadline = time.monotonic() + 5
    while len(made_on) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert made_on == ["lifelong-prefetch"] * 3  # two more made before the consumer asked
    assert list(items) == [1, 2]


def test_a_producer_error_is_raised_at_its_item():
    def produce():
        yield 1
        raise ValueError("corrupt image 7")

    items = prefetched(produce(), depth=2)
    assert next(items) == 1
    with pytest.raises(ValueError, match="corrupt image 7"):
        next(items)


def test_leaving_early_stops_the_producer():
    produced = []

    def produce():
        for i in range(10_000):
            produced.append(i)
            yield i

    for item in prefetched(produce(), depth=2):
        if item == 3:
            break
    count = len(produced)
    time.sleep(0.1)
    assert len(produced) == count <= 3 + 2 + 2  # nothing made after the consumer left
    assert not [t for t in threading.enumerate() if t.name == "lifelong-prefetch"]


def test_a_negative_depth_is_refused():
    with pytest.raises(ValueError, match="depth must be >= 0"):
        list(prefetched([1], depth=-1))
