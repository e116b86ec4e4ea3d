"""What prepare needs of the url-index, compact: "new, due, fresh, removed" in bounded memory.

The url-index of a million-page site is ~680 MB of JSON and was ~3.6 GB as Python dicts.
Prepare's judgement of a listed URL reads only a few of an entry's fields, so the index is
streamed once (protocol/index.py ``merged_stream``) into flat arrays, ~41 bytes per URL:

* the URL's ``hash()`` (salted per process, like discover/urls.py ``UrlSet``), found through
  an open-addressing table of slot numbers (4 bytes, at most half full: no sort, whose
  Python ints cost ~76 bytes a URL for a moment); two URLs sharing a hash (~n²/2⁶⁵) get
  the first one's fields in this prepare only: the next process has another salt;
* ``last_crawled`` parsed (NaN: the planner's "new"), ``change_frequency``, ``size``, and
  flags (an entry at all, removed, failed, crawled since the unfinished round began);
* the hash of the URL's normalised form, to tell which index URLs the sources no longer list.

The fields a ticket carries (``prior``) are read again only for the URLs that get a ticket
(:func:`fill_priors`, one more streaming pass), and the URLs to remove likewise
(:func:`urls_of`).  The judgement itself is ``Planner.decide_at``, which ``Planner.decide``
also uses: one rule for both forms.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from sitemap_crawler.commands.plan import Decision, Planner
from sitemap_crawler.timestamps import parse_ts

_ANY, _REMOVED, _FAILED, _IN_ROUND = 1, 2, 4, 8


class KnownUrls:
    """The url-index's URLs, by hash, with the fields of the due judgement (module doc)."""

    __slots__ = ("_cf", "_crawled", "_flags", "_keys", "_mask", "_norm", "_size", "_table")

    def __init__(self) -> None:
        self._keys = array("q")
        self._crawled = array("d")
        self._cf = array("d")
        self._size = array("q")
        self._flags = array("B")
        self._norm = array("q")
        self._table = array("i", [0])  # slot + 1 by hash, 0: empty
        self._mask = 0

    @classmethod
    def build(cls, entries: Iterable[tuple[str, dict[str, Any]]], round_at: str | None,
              normalize: Callable[[str], str]) -> KnownUrls:
        """From ``(url, entry)`` pairs; ``round_at``: when the unfinished round's prepare ran
        (R1), compared as the strings the index holds, as prepare always did."""
        k = cls()
        keys, crawled, cf, size, flags, norm = (k._keys, k._crawled, k._cf, k._size,
                                                k._flags, k._norm)
        for url, e in entries:
            keys.append(hash(url))
            norm.append(hash(normalize(url)))
            lc = e.get("last_crawled")
            f = (_ANY if e else 0) | (_REMOVED if e.get("removed") else 0) \
                | (_FAILED if e.get("failed") else 0) \
                | (_IN_ROUND if round_at is not None and (lc or "") >= round_at else 0)
            flags.append(f)
            t = parse_ts(lc) if e and lc and not e.get("removed") else None
            crawled.append(math.nan if t is None else t)
            cf.append(_number(e.get("change_frequency"), float))
            size.append(_number(e.get("size"), int))
        k._index()
        return k

    def _index(self) -> None:
        size = 2
        while size < 2 * len(self._keys):
            size *= 2
        table = array("i", bytes(4 * size))
        mask = size - 1
        for slot, h in enumerate(self._keys, 1):
            j = h & mask
            while table[j]:
                j = (j + 1) & mask
            table[j] = slot
        self._table, self._mask = table, mask

    def __len__(self) -> int:
        return len(self._keys)

    def find(self, url: str) -> int | None:
        """The URL's slot, or None if the index does not hold it."""
        h = hash(url)
        table, keys, mask = self._table, self._keys, self._mask
        j = h & mask
        while slot := table[j]:
            if keys[slot - 1] == h:
                return slot - 1
            j = (j + 1) & mask
        return None

    def empty(self, slot: int) -> bool:
        """An entry with no fields at all (prepare's ``if prior:`` is false for it)."""
        return not self._flags[slot] & _ANY

    def done_in_round(self, slot: int) -> bool:
        return bool(self._flags[slot] & _IN_ROUND)

    def decide(self, planner: Planner, lastmod: str | None, changefreq: str | None,
               priority: float | None, slot: int) -> Decision:
        t = self._crawled[slot]
        return planner.decide_at(lastmod, changefreq, priority, None if math.isnan(t) else t,
                                 self._cf[slot], bool(self._flags[slot] & _FAILED))

    def size(self, slot: int) -> int:
        return self._size[slot]

    def unlisted(self, listed: Callable[[int], bool]) -> set[int]:
        """Hashes of the URLs not removed whose normalised form ``listed`` does not hold."""
        return {k for k, f, nk in zip(self._keys, self._flags, self._norm, strict=True)
                if not f & _REMOVED and not listed(nk)}


def _number(v: Any, kind: type) -> Any:
    """A field as the planner reads it (``float(v or 0)``); one that is not a number: 0."""
    try:
        return kind(v or 0)
    except (TypeError, ValueError, OverflowError):
        return kind(0)
