"""What prepare needs of the url-index, compact: "new, due, fresh, removed" in bounded memory.

The url-index of a million-page site is ~680 MB of JSON and was ~3.6 GB as Python dicts.
Prepare's judgement of a listed URL reads only a few of an entry's fields, so it works on
flat arrays (protocol/fields.py ``Fields``, ~50 bytes a URL): the URL's 64-bit key
(index.py ``url_key``, the same in every process), found through an open-addressing table,
``last_crawled`` parsed (NaN: the planner's "new"), ``change_frequency``, ``size``, and flags
(an entry at all, removed, failed, crawled since the unfinished round began).

Two ways to get them:

* :meth:`KnownUrls.load`: the fields file a compaction wrote beside the base (fields.py I7),
  read with ``array.fromfile``, with the segments written since folded over it.  A prepare of
  a million URLs no longer parses the 364 MB base (3.6-3.8 s of CPU).  For an unfinished
  round (R1 compares ``last_crawled`` as strings) only when every stamp is as utcnow writes
  it, whose string order is its time's: the file holds them parsed.
* :meth:`KnownUrls.build`: the index streamed once (protocol/index.py ``merged_stream``),
  when there is no fields file for this base, or it is stale, or a base line is (I8).

Which index URLs the sources no longer list: each slot a listed URL was judged on is marked;
the rest (not removed) are the candidates, checked by their normalised form as before.  The
fields a ticket carries (``prior``) are read again only for the URLs that get a ticket
(:meth:`KnownUrls.view`, by offset, or prepare's streaming pass).  The judgement itself is
``Planner.decide_at``, which ``Planner.decide`` also uses: one rule for both forms.  Two
URLs sharing a key (~n²/2⁶⁵) would share fields; a line read by offset is checked (I8).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import Any

from sitemap_crawler.commands.plan import Decision, FreshRule, Planner
from sitemap_crawler.protocol import fields as base_fields
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.fields import FAILED, IN_ROUND, ODD_STAMP, REMOVED, Fields, Stale
from sitemap_crawler.protocol.index import url_key
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.timestamps import parse_ts

Entry = dict[str, Any]


class KnownUrls:
    """The url-index's URLs, by key, with the fields of the due judgement (module doc)."""

    __slots__ = ("_base", "_f", "_listed", "_n_base", "_round", "_urls")

    def __init__(self, f: Fields, base: Path | None = None) -> None:
        self._f = f
        self._base = base  # lines by offset (fields file); None: built from the stream
        self._n_base = len(f.keys)  # slots beyond: URLs only the segments hold
        self._urls: dict[int, str] = {}  # those slots' URLs
        self._listed = bytearray()
        self._round: float | None = None  # R1 on the stamp column (fields file), else flags

    @classmethod
    def build(cls, entries: Iterable[tuple[str, Entry]], round_at: str | None) -> KnownUrls:
        """From ``(url, entry)`` pairs; ``round_at``: when the unfinished round's prepare ran
        (R1), compared as the strings the index holds, as prepare always did."""
        f = Fields()
        for url, e in entries:
            lc = e.get("last_crawled")
            f.add(url_key(url), -1, e,
                  IN_ROUND if round_at is not None and (lc or "") >= round_at else 0)
        f.index()
        k = cls(f)
        k._listed = bytearray(len(f.keys))
        return k

    @classmethod
    def load(cls, state: StateDir, round_at: str | None) -> KnownUrls | None:
        """From the fields file, the segments folded over it; None: I7 or I8 does not hold
        (the caller streams the index), or R1's string comparison with ``round_at`` cannot
        be made on parsed stamps (a stamp not as utcnow writes it).  Under the index lock
        (``merged_stream``)."""
        at = None if round_at is None else base_fields.stamp(round_at)
        if round_at is not None and not at:
            return None
        f = url_index.base_fields(state)
        if f is None:
            return None
        k = cls(f, state.index_path)
        k._round = at
        try:
            with k._lines() as entry:
                for url, e in url_index.fold_over(state, entry):
                    key = url_key(url)
                    slot = f.find(key)
                    if slot is None:
                        slot = len(f.keys)
                        f.add(key, -1, e)
                        f.insert(slot)
                        k._urls[slot] = url
                    else:
                        f.set(slot, e)
        except Stale:
            return None
        if at is not None and any(fl & ODD_STAMP for fl in f.flags):
            return None
        k._listed = bytearray(len(f.keys))
        return k

    @contextlib.contextmanager
    def _lines(self) -> Iterator[Callable[[str], Entry | None]]:
        """``entry(url)``: the base's entry of ``url`` read by offset (None: not in the base)."""
        assert self._base is not None
        f, n = self._f, self._n_base
        with base_fields.base_lines(self._base) as line:
            def entry(url: str) -> Entry | None:
                slot = f.find(url_key(url))
                return None if slot is None or slot >= n else line.entry(f.offsets[slot], url)
            yield entry

    def __len__(self) -> int:
        return len(self._f.keys)

    def find(self, url: str) -> int | None:
        """The slot of a listed URL (marked listed), or None if the index does not hold it.
        ``url_key`` and ``Fields.find`` inline: called once per listed URL."""
        f = self._f
        key = int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "little")
        table, keys, mask = f.table, f.keys, f.mask
        j = key & mask
        while slot := table[j]:
            if keys[slot - 1] == key:
                self._listed[slot - 1] = 1
                return slot - 1
            j = (j + 1) & mask
        return None

    def fresh_sizes(self, urls: list[str], lastmods: list[str | None],
                    changefreqs: list[str | None], rule: FreshRule) -> list[int | None]:
        """Per listed URL, its size if ``rule`` calls it fresh (the planner would say so too,
        plan.py ``FreshRule``), else None: not in the index, due, or for the planner to say.
        Each URL found is marked listed.  ``find`` and the rule inline in one loop: a
        million fresh URLs cost no planner call each (a re-crawl of a 1M-URL site, issue 22)."""
        f = self._f
        table, keys, mask, listed = f.table, f.keys, f.mask, self._listed
        crawled, flags, size = f.crawled, f.flags, f.size
        now, interval, cf_s = rule.now, rule.interval, rule.changefreq_s
        out: list[int | None] = [None] * len(urls)
        for i, url in enumerate(urls):
            key = int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "little")
            j = key & mask
            while slot := table[j]:
                if keys[slot - 1] == key:
                    break
                j = (j + 1) & mask
            else:
                continue  # not in the index: new
            slot -= 1
            listed[slot] = 1
            t = crawled[slot]
            if t != t or flags[slot] & FAILED:  # NaN: never crawled, removed
                continue
            age = now - t if now > t else 0.0
            if age >= interval:
                continue
            if (lm := lastmods[i]) and (v := parse_ts(lm)) is not None:
                if v <= t:
                    out[i] = size[slot]
            elif (s := cf_s.get(changefreqs[i])) is not None and age < s:  # type: ignore[arg-type]
                out[i] = size[slot]
        return out

    def empty(self, slot: int) -> bool:
        """An entry with no fields at all (prepare's ``if prior:`` is false for it)."""
        return not self._f.flags[slot] & base_fields.ANY

    def done_in_round(self, slot: int) -> bool:
        """Crawled since the unfinished round began (R1: ``last_crawled >= round_at`` as
        strings; on the fields file as parsed stamps, which sort alike)."""
        if self._round is not None:
            return self._f.stamp[slot] >= self._round
        return bool(self._f.flags[slot] & IN_ROUND)

    def decide(self, planner: Planner, lastmod: str | None, changefreq: str | None,
               priority: float | None, slot: int) -> Decision:
        f = self._f
        t = f.crawled[slot]
        return planner.decide_at(lastmod, changefreq, priority, None if math.isnan(t) else t,
                                 f.cf[slot], bool(f.flags[slot] & FAILED))

    def size(self, slot: int) -> int:
        return self._f.size[slot]

    def unlisted(self) -> set[int]:
        """Keys of the URLs not removed that no listed URL was judged on: a superset of
        those the sources no longer list (a duplicate, filtered or queued URL is not judged),
        which the caller checks by their normalised form."""
        f = self._f
        return {k for k, fl, m in zip(f.keys, f.flags, self._listed, strict=True)
                if not (fl & REMOVED or m)}

    def urls_of(self, keys: Collection[int]) -> list[str] | None:
        """The URLs of ``keys`` (base order, then the segments'), read by offset; None: built
        from the stream, or a line is stale (I8): the caller streams the index."""
        if self._base is None:
            return None
        f, out = self._f, []
        try:
            with base_fields.base_lines(self._base) as line:
                for slot, k in enumerate(f.keys):
                    if k in keys:
                        if slot >= self._n_base:
                            out.append(self._urls[slot])
                        elif url_key(u := line.url_at(f.offsets[slot])) == k:
                            out.append(u)
                        else:
                            return None
        except Stale:
            return None
        return out

    def view(self, state: StateDir, urls: Collection[str]) -> Iterator[tuple[str, Entry]]:
        """``(url, entry)`` of those of ``urls`` the index holds, base lines read by offset
        with the segments folded over (Stale, I8: the caller streams the index)."""
        if self._base is None:
            raise Stale("")
        with self._lines() as entry:
            yield from url_index.fold_over(state, entry, urls)
