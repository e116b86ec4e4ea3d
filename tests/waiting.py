"""``wait_until``: wait for a condition instead of sleeping a guessed time.

A fixed ``time.sleep(x)`` before checking that something happened is either too short on a
loaded machine (a flaky failure) or longer than needed everywhere else.  Polling the condition
itself is as fast as the thing it waits for and fails only after a generous timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60, step: float = 0.02,
               what: str = "the condition") -> T:
    """The first truthy value of ``predicate()``; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(step)
