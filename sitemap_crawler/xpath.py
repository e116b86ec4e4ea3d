"""An lxml XPath compiled once per thread: a base module every room may use.

A worker process converts pages on many threads at once (commands/dispatch.py).  One
``etree.XPath`` object shared by them serialises every call on the object's lock, and the
threads queueing for it (and for the GIL behind it) cost more CPU than the work: a 5,000-page
crawl measured 19-20 ms of CPU a page with shared objects.  Each thread gets its own.
"""

from __future__ import annotations

import threading
from typing import Any

from lxml import etree


class XPath:
    """``etree.XPath(expr)``, one compiled copy per thread; called the same way."""

    def __init__(self, expr: str, **kw: Any) -> None:
        self.expr, self.kw = expr, kw
        self._local = threading.local()

    def __call__(self, el: Any, **variables: Any) -> Any:
        f = getattr(self._local, "f", None)
        if f is None:
            f = self._local.f = etree.XPath(self.expr, **self.kw)
        return f(el, **variables)
