"""url-index.fields: the base's entries as prepare judges them, binary, beside the base.

A prepare of a million-URL site judged every listed URL on a compact form built by parsing
the whole base (~364 MB of JSON lines, 3.6-3.8 s of CPU on every run; issue 22).  A
compaction (index.py ``write_base_stream``) now writes that form as well: for each base
line, in the base's order, the URL's 64-bit key (index.py ``url_key``, as in
``url-index.keys``), the line's byte offset, the fields of the due judgement (known.py),
and the open-addressing table from keys to slots.  Prepare reads the columns with
``array.fromfile``, folds the segments written since over them, and reads the few base
lines it needs whole (the tickets' priors) by offset.

* I7. The fields file is used only for the base it was written for: its header names the
  base's digest, byte size and the digest of its last bytes, and it is trusted only when
  the digest is the one the segment list records, the base file has that size and those
  last bytes, the file is as long as its header says and was written on a machine of the
  same byte order (the columns are raw arrays).  Anything else: ignored, and the
  base is streamed as before (an output directory of an earlier version has none).  It is
  deleted before a new base replaces the old one and written after it, before the list
  (index.py): a crash in between leaves none, or one naming a digest no list records.
* I8. A base line read at an offset the fields file gives is used only if it is a whole
  line of the URL asked for (:class:`Stale` otherwise, and the caller streams the view as
  before): a base replaced since by another machine's compaction, or a 64-bit key shared
  by two URLs, is never read as the entry asked for.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import sys
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.protocol.fsutil import fsync_dir, replace_file, tmp_name, unlink_quiet
from sitemap_crawler.timestamps import parse_ts

FIELDS_FILE = "url-index.fields"
_MAGIC = b"sitemap-crawler url-index.fields 2\n"
_TAIL = 4096  # the base's last bytes, digested in the header (I7)
# flags of an entry
ANY, REMOVED, FAILED, IN_ROUND, ODD_STAMP = 1, 2, 4, 8, 16
# A stamp as utcnow writes it, valid: such stamps sort as strings as they do in time, so
# R1's string comparison (known.py) can be made on the parsed column ``stamp``.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z")
# (name, typecode) of the columns, in file order; the table follows them
_COLUMNS = (("keys", "Q"), ("offsets", "q"), ("crawled", "d"), ("cf", "d"), ("size", "q"),
            ("stamp", "d"), ("flags", "B"))


class Stale(Exception):
    """A base line that is not the one the fields file promised (I8)."""


def judged(entry: dict[str, Any]) -> tuple[int, float, float, int, float]:
    """(flags, last crawl as epoch seconds or NaN, change_frequency, size, stamp) of an
    entry: what the planner reads (plan.py ``decide_at``), and ``last_crawled`` as R1
    compares it (:func:`stamp`).  IN_ROUND is the caller's (known.py)."""
    removed = entry.get("removed")
    flags = (ANY if entry else 0) | (REMOVED if removed else 0) \
        | (FAILED if entry.get("failed") else 0)
    lc = entry.get("last_crawled")
    t = parse_ts(lc) if entry and lc and not removed else None
    st = stamp(lc)
    if st is None:
        flags |= ODD_STAMP
    return (flags, math.nan if t is None else t, _number(entry.get("change_frequency"), float),
            _number(entry.get("size"), int), math.nan if st is None else st)


def stamp(value: Any) -> float | None:
    """``last_crawled`` for R1's ``(lc or "") >= round_at``: epoch seconds of a stamp as
    utcnow writes it, 0.0 for none (``""``: before any stamp), None for any other value
    (its string order is not its time's)."""
    if not value:
        return 0.0
    if not isinstance(value, str) or not _STAMP.fullmatch(value):
        return None
    return parse_ts(value)


def _number(v: Any, kind: type) -> Any:
    """A field as the planner reads it (``float(v or 0)``); one that is not a number: 0."""
    try:
        return kind(v or 0)
    except (TypeError, ValueError, OverflowError):
        return kind(0)


class Fields:
    """The columns (one slot per URL) and the table of slot + 1 by key (0: empty)."""

    def __init__(self) -> None:
        self.keys = array("Q")
        self.offsets = array("q")
        self.crawled = array("d")
        self.cf = array("d")
        self.size = array("q")
        self.stamp = array("d")
        self.flags = array("B")
        self.table = array("I", [0])
        self.mask = 0

    def add(self, key: int, offset: int, entry: dict[str, Any], extra: int = 0) -> None:
        flags, crawled, cf, size, st = judged(entry)
        self.keys.append(key)
        self.offsets.append(offset)
        self.flags.append(flags | extra)
        self.crawled.append(crawled)
        self.cf.append(cf)
        self.size.append(size)
        self.stamp.append(st)

    def set(self, slot: int, entry: dict[str, Any], extra: int = 0) -> None:
        (self.flags[slot], self.crawled[slot], self.cf[slot], self.size[slot],
         self.stamp[slot]) = judged(entry)
        self.flags[slot] |= extra

    def index(self) -> None:
        """The table, at most half full (no sort: its Python ints cost ~76 bytes a URL)."""
        size = 2
        while size < 2 * len(self.keys):
            size *= 2
        table = array("I", bytes(4 * size))
        mask = size - 1
        for slot, h in enumerate(self.keys, 1):
            j = h & mask
            while table[j]:
                j = (j + 1) & mask
            table[j] = slot
        self.table, self.mask = table, mask

    def insert(self, slot: int) -> None:
        """A slot appended after :meth:`index`; the table grows when half full."""
        if 2 * len(self.keys) > len(self.table):
            self.index()
            return
        table, mask = self.table, self.mask
        j = self.keys[slot] & mask
        while table[j]:
            j = (j + 1) & mask
        table[j] = slot + 1

    def find(self, key: int) -> int | None:
        table, keys, mask = self.table, self.keys, self.mask
        j = key & mask
        while slot := table[j]:
            if keys[slot - 1] == key:
                return slot - 1
            j = (j + 1) & mask
        return None


def base_tail(path: Path, size: int) -> str:
    """The digest of a base's last bytes (I7: a base changed by hand, or torn, is told)."""
    with open(path, "rb") as f:
        f.seek(max(0, size - _TAIL))
        return hashlib.blake2b(f.read(_TAIL), digest_size=16).hexdigest()


def write(root: Path, fields: Fields, base: Path, digest: str, size: int,
          check: Callable[[], None]) -> None:
    """The fields file of the base just written (I7), atomically (tmp + rename, as
    fsutil.atomic_write), the columns written from the arrays with no copy of them."""
    fields.index()
    head = orjson.dumps({"order": sys.byteorder, "base_hash": digest, "base_bytes": size,
                         "n": len(fields.keys),
                         "table": len(fields.table), "tail": base_tail(base, size)})
    target = root / FIELDS_FILE
    tmp = tmp_name(target)
    done = False
    try:
        with open(tmp, "wb") as f:
            f.write(_MAGIC + head + b"\n")
            for name, _ in _COLUMNS:
                getattr(fields, name).tofile(f)
            fields.table.tofile(f)
            f.flush()
            os.fsync(f.fileno())
        check()
        replace_file(tmp, target)
        done = True
        fsync_dir(root)
    finally:
        if not done:
            unlink_quiet(tmp)


def drop(root: Path) -> None:
    """Before a new base replaces the old one (I7)."""
    unlink_quiet(root / FIELDS_FILE)


def read(root: Path, base: Path, listed: dict[str, Any]) -> Fields | None:
    """The fields of the base the list describes, or None when I7 does not hold."""
    try:
        f = open(root / FIELDS_FILE, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return None
    with f:
        try:
            if f.read(len(_MAGIC)) != _MAGIC:
                return None
            head = orjson.loads(f.readline())
            n, tsize, size = int(head["n"]), int(head["table"]), int(head["base_bytes"])
            if (head.get("order") != sys.byteorder  # the columns are this machine's
                    or not listed.get("base_hash") or head["base_hash"] != listed["base_hash"]
                    or n != listed.get("base_entries") or size != listed.get("base_bytes")
                    or tsize < 2 or tsize & (tsize - 1) or tsize < 2 * n
                    or os.stat(base).st_size != size or base_tail(base, size) != head["tail"]):
                return None
            out = Fields()
            for name, code in _COLUMNS:
                col = array(code)
                col.fromfile(f, n)  # EOFError: shorter than its header says
                setattr(out, name, col)
            out.table = array("I")
            out.table.fromfile(f, tsize)
            if f.read(1):
                return None  # longer than its header says
        except (OSError, EOFError, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
            return None
    out.mask = tsize - 1
    return out


class BaseLines:
    """The base's lines by offset (I8: only a whole line of the URL asked for is used)."""

    def __init__(self, path: Path) -> None:
        try:
            self.f = open(path, "rb")  # noqa: SIM115 - closed by base_lines
        except FileNotFoundError:  # replaced meanwhile, as a stale line (I8)
            raise Stale(str(path)) from None

    def _rec(self, offset: int) -> dict[str, Any]:
        self.f.seek(offset)
        raw = self.f.readline()
        try:
            rec = orjson.loads(raw) if raw.endswith(b"\n") else None
        except orjson.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("url"), str):
            raise Stale(str(offset))
        return rec

    def entry(self, offset: int, url: str) -> dict[str, Any]:
        """The entry of ``url`` at ``offset``, or Stale."""
        rec = self._rec(offset)
        if rec.pop("url") != url:
            raise Stale(url)
        return rec

    def url_at(self, offset: int) -> str:
        """The URL of the line at ``offset`` (the caller checks its key), or Stale."""
        return self._rec(offset)["url"]


@contextlib.contextmanager
def base_lines(path: Path) -> Iterator[BaseLines]:
    lines = BaseLines(path)
    try:
        yield lines
    finally:
        lines.f.close()
