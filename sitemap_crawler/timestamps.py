"""UTC timestamps as the state files write them (``YYYY-MM-DDTHH:MM:SSZ``), and back.

A base module: every room may import it; it imports nothing of the package.
"""

from __future__ import annotations

import calendar
import functools
import time


def utcnow() -> str:
    """Now, as the stamp every state file and front matter uses."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def parse_ts(value: str | None) -> float | None:
    """Epoch seconds of an ISO-8601 UTC stamp as we write them (``YYYY-MM-DDTHH:MM:SSZ``).
    Remembered for the last few thousand stamps: strptime costs ~30 us, and a prepare of a
    million URLs reads a million stamps of which a crawl's few thousand seconds repeat."""
    if not value:
        return None
    if isinstance(value, str):
        return _parse_cached(value)
    return _parse(value)


@functools.lru_cache(maxsize=8192)
def _parse_cached(value: str) -> float | None:
    return _parse(value)


def _parse(value: str) -> float | None:
    try:
        return calendar.timegm(time.strptime(value[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        try:
            return calendar.timegm(time.strptime(value[:10], "%Y-%m-%d"))
        except ValueError:
            return None
