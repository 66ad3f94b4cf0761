"""The prefetcher gives the producer's items in order, raises its errors in place, and stops when left early."""

from __future__ import annotations

import threading

import pytest

from lifelong.core.prefetch import prefetched


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_items_come_out_in_order(depth):
    assert list(prefetched(iter(range(50)), depth=depth)) == list(range(50))


def test_the_producer_runs_ahead_on_another_thread():
    made_on = []
    made_all = threading.Event()

    def produce():
        for i in range(3):
            made_on.append(threading.current_thread().name)
            if i == 2:
                made_all.set()
            yield i

    items = prefetched(produce(), depth=2)
    assert next(items) == 0
    assert made_all.wait(timeout=60), "the producer did not make items 1 and 2 ahead (60 s safety net)"
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

    items = prefetched(produce(), depth=2)
    for item in items:
        if item == 3:
            break
    items.close()  # what leaving the loop does once the generator is collected; returns when the producer has ended
    assert not [t for t in threading.enumerate() if t.name == "lifelong-prefetch"]
    assert len(produced) <= 3 + 2 + 2  # with the producer gone, nothing more can be made


def test_a_negative_depth_is_refused():
    with pytest.raises(ValueError, match="depth must be >= 0"):
        list(prefetched([1], depth=-1))
