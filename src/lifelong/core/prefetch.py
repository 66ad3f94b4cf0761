"""Prefetching: produce the next items of an iterator on a background thread while the consumer works.

Decoding and augmenting the next batch on the CPU while the GPU trains on this one keeps the GPU fed. The items
come out in the producer's order, so a seeded pipeline gives the same batches with or without prefetching;
an exception in the producer is raised in the consumer, at the item where it happened.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """Yield `items` in order, producing up to `depth` of them ahead on a daemon thread (depth 0: no thread).

    Closing the generator early (a `break` in the consumer) stops the producer after the item it is making.
    """
    if depth < 0:
        raise ValueError(f"prefetch depth must be >= 0, got {depth}")
    if depth == 0:
        yield from items
        return
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                _put(ready, item, stop)
        except BaseException as exc:  # handed to the consumer, raised there
            _put(ready, _Failure(exc), stop)
            return
        _put(ready, _DONE, stop)

    worker = threading.Thread(target=produce, name="lifelong-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                ready.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


def _put(ready: queue.Queue, item: object, stop: threading.Event) -> None:
    """Put `item`, giving up when the consumer has stopped."""
    while not stop.is_set():
        try:
            ready.put(item, timeout=0.05)
            return
        except queue.Full:
            continue


__all__ = ["prefetched"]
