"""Waiting in a test for something to happen (a file, a record, a line), never for a fixed time.

The limit is only a safety net, far above the normal wait: passing it fails the test, saying what never came.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import pytest


def wait_for(happened: Callable[[], bool], what: str, limit_s: float, child: subprocess.Popen | None = None) -> None:
    """Return as soon as `happened()` is true; fail naming `what` if `child` exits first or `limit_s` passes."""
    deadline = time.monotonic() + limit_s
    while not happened():
        if child is not None and child.poll() is not None:
            pytest.fail(f"the child process exited (code {child.returncode}) before {what}", pytrace=False)
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {limit_s:.0f} s (a safety net, far above the normal wait)", pytrace=False)
        time.sleep(0.02)


def line_count(path) -> int:
    """The complete lines of a file that may not exist yet (an events.jsonl written as a run goes)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0
