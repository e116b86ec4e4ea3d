"""url-index.json and its segments: what the last crawls learnt about every URL.

Format (roadmap v0.4.0, extended): a **base** file and **segments** beside it::

    url-index.json        one entry per line (JSONL, like the segments; issue 22):
                          {"url": "https://host/page", "last_modified": "...",
                           "etag": "\\"abc\\"", "content_hash": "sha256:...",
                           "status_code": 200, "last_crawled": "2026-11-21T12:00:00Z",
                           "file_path": "host/page.md", "outcome": "new", ...}
    url-index.d/00000007-<writer>.jsonl   one record per line: {"url": ..., <entry fields>}
    url-index.segments.json   {"segments": ["00000007-<writer>.jsonl", ...], "sizes": {...},
                               "base_entries": N,
                               "base_bytes": B, "base_hash": "<blake2b>",
                               "base_id": "<new with each base>", "journals": {...}}
    url-index.keys        the base's URLs as sorted 64-bit keys (``count``)
    url-index.fields      the base as prepare judges it, binary (fields.py, I7-I8)

The index is the base with every segment's records folded over it in name order, each
through :func:`apply` (the newest crawl of a URL wins, fields merge), exactly as the journals
used to be folded into the one file.  Why segments: a single file rewritten on every merge
made a crawl that changed 1,000 pages of a 1,000,000-URL site pay for the whole index (about
250 MB) in time, memory and bytes over NFS/SMB.  Now a merge writes only what the crawl
learnt, and the base is rewritten (**compacted**) only when the segments reach half its size
(so the cost per record stays constant, amortised), when there are more than
:data:`MAX_SEGMENTS` of them (they are then combined into one segment, not into the base),
or when a change that is not a crawl result (:func:`update`) needs it; prepare's tombstones
are a segment (:func:`update_some`).  Every file is JSON lines a person can read; ``export``
gives the folded view.

One reader (I6): the base is read by :func:`iter_entries` only, a line at a time, and the
folded view by :func:`_stream_view`, which streams the base and holds of the segments only
where each record is (:class:`_Later`).  Prepare (commands/known.py), export, status and a
compaction (:func:`write_base_stream`) go through it, so none holds the index whole; a
worker's fold for link following and :func:`update` still do (``_read_view``).

Workers never write the index: they append to their own journals (journal.py), and
:func:`merge` folds the journals in under a cross-machine RenameLock.  A corrupt base found
at start is reported and rebuilt from what survives (the journals, the segments and the
front matter of the markdown files), never silently dropped.

Invariants:

* I1. The index (base and segments) is written only under the index RenameLock (fsutil
  L1-L4), every file atomically (tmp + rename), and each write is abandoned if the lock was
  lost meanwhile (``before_replace=lock.check``): a merge slower than ``heartbeat_timeout``
  keeps its lock because the lock beats (L2), and a holder that was paused past it and lost
  the lock fails with one line instead of overwriting a newer index.  Even with no journal to
  fold, the index is read under the lock by writers: on SMB a replace is not atomic, and an
  index read as "missing" between the two steps would look like a first crawl.
* I2. A segment is deleted only after a base or a combined segment holding its records is in
  place, and only a segment that the writer *read* (a name another machine's listing does not
  show yet is never deleted unread).  A crash in between leaves records folded twice, which
  :func:`apply` makes harmless (the same record again changes nothing).
* I3. Readers without the lock (export, status, ``--dry-run``) read the segment list, the
  base, then the segments; a segment gone meanwhile means a compaction replaced the base under
  them, and the whole read starts again.
* I4. Which segments exist is what ``url-index.segments.json`` says, never a directory
  listing: on sshfs another mount's listing shows a new name ~20 s late (and a deleted one
  as long), so a listing could hide a segment (a view without its records, the frontier
  ticketing a link twice) or show one that a compaction already folded.  The list is replaced
  atomically and read by path (S1), so it is as fresh as the base.  A segment is written
  before the list names it and taken off the list before it is deleted; an unlisted file is
  the leftover of a killed writer, deleted by the next compaction.
* I5. The list records each segment's byte size, and a segment is read until it has that
  size: a share's client that serves a stale (shorter) size could cut it at a line's end,
  which parses and would silently drop the lines after it.
* I6. A base written by an earlier version (one JSON object, url -> entry) is read whole by
  the same reader, and rewritten as JSONL by the next writer that reads the whole view
  (prepare, a compaction, :func:`update`): once, with its memory then.  A base that no list
  describes (a crash between base and list, or an earlier version) is rewritten by the
  next prepare too, so ``status`` counts from the list.  A base line cut short (no newline
  at the end) is corruption, rebuilt like any corrupt base; a cut exactly at a line's end
  is caught on a share by the digest check of ``_settled_base``, not by ``load``.
* I9. A writer or reader that reads the base whole (:func:`_read_view`) takes it only with
  the digest the segment list records for it (:func:`_load_base`): on a share a client's
  stale size can cut the new base at a line's end, which parses.  ``_settled_base`` does
  the same for the streaming readers.
* J2. A journal is deleted only after the segment holding its records is in place, when its
  worker is gone (closed journal, or ``is_gone``), **and while no ticket is claimed under
  that worker's id** (``claimed/*_<w>.json``): the reclaimer (tickets.py T5) reads the
  progress of a dead worker's ticket from its journal, so deleting it first would make the
  next owner fetch every finished URL again.  The claimed directory is listed after the
  index is written; on sshfs a new name shows in another mount's listing ~20 s late, so
  ``heartbeat_timeout`` must stay above that (it is 60 s by default).
* J4. The segment list records how far each journal is folded (byte offset of the end of its
  last whole, well-formed line, written in the same atomic replace as the segment's name),
  so a merge reads only what the journals gained: workers keep their journals for the whole
  run and link following folds hundreds of times.  A crash before the list leaves the offset
  where it was (the records are read again); a rebuilt base reads every journal from 0.
* I10. A merge writes what it folds in segments of about ``SEGMENT_PART`` bytes, each listed
  with how far each journal is folded once its last record is in (J4: a journal read up
  to a record of its middle is at that record's end): the merge holds one part, not every
  record since the last merge (a first crawl of 1,000,000 pages: 580 MB of journals, and
  the runner peaked at 762 MiB at the end).  A crash between two parts leaves the parts
  written listed with the offsets they hold: the rest is read again, nothing twice.
* H7 (heartbeat.py). With its journal, the ``workers/<w>.dead`` (and the ``.lock`` of a
  worker that is gone) are deleted once no ticket is claimed under ``w``: N crashes leave
  no files behind once their tickets are reclaimed and merged.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import logging
import os
import secrets
import tempfile
import time
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import orjson

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.frontmatter import read_front_matter
from sitemap_crawler.protocol import fields
from sitemap_crawler.protocol.frontier import Frontier
from sitemap_crawler.protocol.fsutil import (
    STALE_SIZE_WINDOW,
    RenameLock,
    atomic_write,
    fsync_dir,
    on_network_fs,
    read_settled,
    real_dir,
    replace_file,
    tmp_name,
    unlink_quiet,
)
from sitemap_crawler.protocol.heartbeat import proven_dead
from sitemap_crawler.protocol.journal import JournalTail, journal_files, owner_of
from sitemap_crawler.protocol.keysort import sorted_keys, sorted_pairs
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import claimed_owners
from sitemap_crawler.protocol.untrusted import QUARANTINE, segment_name_ok
from sitemap_crawler.timestamps import utcnow

log = logging.getLogger(__name__)

Entry = dict[str, Any]
Index = dict[str, Entry]
T = TypeVar("T")

# Fields a journal record carries that are about the crawl, not about the URL.
_TRANSIENT = {"ticket", "final", "worker", "elapsed", "attempts", "links"}

SEGMENT_DIR = "url-index.d"
LIST_FILE = "url-index.segments.json"
# The base's URLs as sorted 64-bit hashes, after a line naming the base's digest: count()
# tells a segment's URL that is new from one the base holds without reading the base (8 MB
# for a million URLs against ~350 MB).
KEYS_FILE = "url-index.keys"
# More segments than this are combined into one (a bound on the files a long run leaves).
MAX_SEGMENTS = 32
SEGMENT_PART = 64 << 20  # I10: bytes of a merge's segment held at once
_READ_TRIES = 20


def load(path: Path) -> Index:
    """The base file; raises CrawlError (one line) if it exists but is not a valid index."""
    try:
        return read_settled(path, lambda raw: parse_base(path, raw))  # S1: a stale size
    except FileNotFoundError:
        return {}
    except ValueError as e:
        raise CrawlError(f"{path}: corrupt url-index ({e})") from None


class _Replaced(FileNotFoundError):
    """The base was replaced after the list was read: the whole read starts again (I3)."""


def _load_base(state: StateDir, listed: dict[str, Any]) -> Index:
    """The base the segment list ``listed`` describes, whole (I9).

    On a share, a client that wrote or read the base within its attribute cache's time
    (sshfs: 20 s) may serve the next base cut at the old file's size; with JSON lines a
    cut at a line's end parses, so a size check of the content cannot see it, and a writer
    that folded such a read would write a base without another machine's entries (seen on
    the sshfs mounts: a lost update).  So the bytes must have the digest the list records;
    read again until they do, for at most S1's window.  A list that names another base
    by now means a compaction replaced it: the whole read starts again.  A mismatch that
    stays is a crash between base and list (I6) and the base is taken as it is.  A local
    disk has no stale cache: read as it is, with no digest pass (as ``_settled_base``)."""
    path = state.index_path
    want = listed.get("base_hash")
    if not want or not on_network_fs(path):  # an earlier version's base, or a local disk
        return load(path)
    deadline = time.monotonic() + STALE_SIZE_WINDOW
    pause = 0.1
    while True:
        try:
            raw: bytes | None = path.read_bytes()
        except FileNotFoundError:
            raw = None  # a share's cached "missing" looks the same as a replace under way
        if raw is not None and _digest(raw) == want:
            break
        if _read_list(state).get("base_id") != listed.get("base_id"):
            raise _Replaced(path)
        if time.monotonic() >= deadline:
            if raw is None:
                return {}
            break
        time.sleep(pause)
        pause = min(pause * 2, 2.0)
    try:
        return parse_base(path, raw)
    except ValueError as e:
        raise CrawlError(f"{path}: corrupt url-index ({e})") from None


def segment_dir(state: StateDir) -> Path:
    return state.root / SEGMENT_DIR


def _read_list(state: StateDir) -> dict[str, Any]:
    """The segment list (I4); missing: an index without segments (or none at all)."""
    path = state.root / LIST_FILE
    try:
        data = read_settled(path, orjson.loads)
    except FileNotFoundError:
        return {"segments": []}
    except orjson.JSONDecodeError as e:
        raise CrawlError(f"{path}: corrupt url-index segment list ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise CrawlError(f"{path}: corrupt url-index segment list")
    return data


def segment_files(state: StateDir) -> list[Path]:
    """The live segments, oldest first, as the segment list names them (never a listing)."""
    return [p for p, _ in _live(state)]


def _write_list(state: StateDir, segments: list[Path], check: Callable[[], None],
                base: tuple[int, int, str] | None = None,
                journals: dict[str, int] | None = None,
                new_size: tuple[str, int] | None = None) -> None:
    """``base``: (entries, bytes, digest) of a base just written; ``journals``: how far each
    journal is folded now (J4).  Either is kept as it was if None.  ``new_size``: the name
    and byte size of a segment just written (every listed segment's size is kept, I5)."""
    old = _read_list(state)
    fresh = base is not None  # a new base: a new identity (_FoldCache)
    sizes = dict(old.get("sizes") or {})
    if new_size is not None:
        sizes[new_size[0]] = new_size[1]
    data = {"segments": [p.name for p in segments],
            "sizes": {p.name: sizes[p.name] for p in segments if p.name in sizes},
            "base_entries": base[0] if base is not None else old.get("base_entries"),
            "base_bytes": base[1] if base is not None else old.get("base_bytes"),
            "base_hash": base[2] if base is not None else old.get("base_hash"),
            "base_id": secrets.token_hex(8) if fresh else old.get("base_id"),
            "journals": old.get("journals") or {} if journals is None else journals,
            "updated_at": utcnow()}
    atomic_write(state.root / LIST_FILE, orjson.dumps(data), before_replace=check)


class _CutShort(ValueError):
    """A read shorter than the size the list recorded (S1: a client's stale size)."""

    def __init__(self, n: int) -> None:
        super().__init__("shorter than its listed size")
        self.pos = n  # read_settled reads again: the data ended early


def _live(state: StateDir, listed: dict[str, Any] | None = None,
          ) -> list[tuple[Path, int | None]]:
    """The live segments with the byte sizes the list recorded for them (I5)."""
    listed = _read_list(state) if listed is None else listed
    sizes = listed.get("sizes") or {}
    if not isinstance(sizes, dict):
        sizes = {}
    d = segment_dir(state)
    names = listed["segments"]
    bad = [n for n in names if not segment_name_ok(n)]
    if bad:  # never opened, never deleted; the next list written leaves them out
        log.error("%s: %d segment name(s) that index.py never writes, ignored: %s",
                  state.root / LIST_FILE, len(bad), str(bad[0])[:120])
    return [(d / n, sz if isinstance(sz := sizes.get(n), int) else None)
            for n in names if n not in bad]


def iter_segment(path: Path, size: int | None = None) -> Iterator[dict[str, Any]]:
    """A segment's records, parsed one line at a time (a compaction of 100,000 records holds
    the file's bytes and the index, not a list of them too).  ``size``: what the list says
    the file holds (I5): a shorter read is S1's stale size and is read again, since a cut at
    a line's end would parse and lose the lines after it.  FileNotFoundError passes (a
    compaction took it, I3)."""
    def whole(raw: bytes) -> bytes:
        if size is not None and len(raw) < size:
            raise _CutShort(len(raw))
        if size is not None and len(raw) > size:
            raise ValueError(f"{len(raw)} bytes, the list says {size}")
        return raw
    try:
        raw = read_settled(path, whole)
    except ValueError as e:  # written atomically by us: a bad one was not written by us
        raise CrawlError(f"{path}: corrupt url-index segment ({e})") from None
    for line in raw.splitlines():
        if line.strip():
            yield _record(path, line)


def read_segment(path: Path, size: int | None = None) -> list[dict[str, Any]]:
    """A segment's records as a list (small segments, tests)."""
    return list(iter_segment(path, size))


def apply(idx: Index, rec: dict[str, Any]) -> None:
    """Fold one record in: the newest crawl of a URL wins (records are idempotent)."""
    url = rec["url"]
    old = idx.get(url)
    if old is not None and (old.get("last_crawled") or "") > (rec.get("last_crawled") or ""):
        return
    entry = {k: v for k, v in rec.items() if k not in _TRANSIENT and k != "url"}
    if old:
        merged = dict(old)
        merged.update(entry)
        if old.get("depth") is not None and entry.get("depth") is not None:
            merged["depth"] = min(old["depth"], entry["depth"])  # the shortest path (F4)
        entry = merged
    idx[url] = entry


@dataclass
class _View:
    """The folded index and what it was folded from (I2: only these segments may go)."""
    idx: Index
    segments: list[Path] = field(default_factory=list)
    rebuilt: bool = False  # the base was corrupt and rebuilt: it must be written


def _consistently(state: StateDir, read: Callable[[], T]) -> T:
    """I3: ``read`` (list, then base, then segments) again from the start when a segment it
    was told of is gone: a compaction replaced the base meanwhile."""
    for _ in range(_READ_TRIES):
        try:
            return read()
        except FileNotFoundError:
            time.sleep(0.05)
    raise CrawlError(f"{state.root}: the url-index kept changing while it was read")


def _read_view(state: StateDir, output_dir: Path | None, *, rebuild: bool) -> _View:
    """Base + segments, read consistently (I3); ``rebuild``: a corrupt base is set aside and
    rebuilt (writers, under the lock) instead of raising."""
    def read() -> _View:
        listed = _read_list(state)
        live = _live(state, listed)
        rebuilt = False
        if rebuild:
            idx, rebuilt = _load_or_rebuild(state, output_dir, listed)
        else:
            idx = _load_base(state, listed)
        for path, size in live:
            for rec in iter_segment(path, size):
                apply(idx, rec)
        return _View(idx, [p for p, _ in live], rebuilt)
    return _consistently(state, read)


def load_view(state: StateDir) -> Index:
    """The whole index (base + segments) for a reader that does not hold the lock."""
    return _read_view(state, None, rebuild=False).idx


def load_or_rebuild(state: StateDir, output_dir: Path | None) -> Index:
    """The whole index, or — if the base is corrupt — a rebuild, with a warning."""
    return _read_view(state, output_dir, rebuild=True).idx


def _load_or_rebuild(state: StateDir, output_dir: Path | None,
                     listed: dict[str, Any]) -> tuple[Index, bool]:
    try:
        return _load_base(state, listed), False
    except CrawlError as e:
        log.warning("%s; rebuilding it from the markdown files' front matter and the journals", e)
        aside = state.index_path.with_name(f"url-index.corrupt.{os.getpid()}.json")
        os.replace(state.index_path, aside)
        idx = rebuild_from_outputs(output_dir) if output_dir else {}
        log.warning("rebuilt %d entries; the corrupt file was kept as %s", len(idx), aside.name)
        return idx, True


def rebuild_from_outputs(output_dir: Path) -> Index:
    """Recover url → entry from the YAML front matter every markdown file starts with."""
    idx: Index = {}
    if not output_dir.is_dir():
        return idx
    for path in output_dir.rglob("*.md"):
        meta = read_front_matter(path)
        if meta is None or not isinstance(meta.get("url"), str):
            continue
        idx[meta["url"]] = {
            "etag": meta.get("etag"), "last_modified": meta.get("last_modified"),
            "content_hash": meta.get("content_hash"), "status_code": meta.get("status"),
            "last_crawled": str(meta.get("fetched_at") or ""),
            "file_path": path.relative_to(output_dir).as_posix(),
        }
    return idx


def merge(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
          is_gone: Callable[[str], bool], output_dir: Path | None = None,
          frontier: Frontier | None = None, *, lock_timeout: float = 60.0,
          prune: bool = True) -> int:
    """Fold every journal into a new segment; delete what J2 and H7 allow (nothing when not
    ``prune``: a link fold during a crawl leaves every journal to the crawl's report).

    Without a frontier the base is not even read: the cost is that of the journals.
    ``is_gone(worker)`` says a journal will not grow any more (its worker is dead), so it can
    be deleted once merged and its tickets reclaimed.  ``is_dead`` is kept for callers; the
    lock is broken by L3 (fsutil), with ``lock_timeout`` the config's heartbeat_timeout.
    With a ``frontier`` (link following), the records' links become tickets in the same
    fold (protocol/frontier.py, F1-F2).  Returns the number of journal records applied.
    """
    return _merge(state, worker_id, is_gone if prune else None, output_dir, lock_timeout,
                  frontier)[0]


def merged_index(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
                 output_dir: Path | None = None, frontier: Frontier | None = None, *,
                 lock_timeout: float = 60.0) -> Index:
    """The index with every journal folded in, read (and parsed) once, under the lock (I1)."""
    idx = _merge(state, worker_id, is_dead, output_dir, lock_timeout, frontier, view=True)[1]
    assert idx is not None
    return idx


def _merge(state: StateDir, worker_id: str, is_gone: Callable[[str], bool] | None,
           output_dir: Path | None, lock_timeout: float, frontier: Frontier | None = None,
           *, view: bool = False, then: Callable[[RenameLock], T] | None = None,
           ) -> tuple[int, Any]:
    """``then``: run under the same lock hold after the merge; its result is returned."""
    with _index_lock(state, worker_id, lock_timeout) as lock:
        v: _View | None = None
        cached = None
        if frontier is not None and not view:  # a worker's repeated folds: keep the view
            cached = _FoldCache.take(state, output_dir, frontier.key)
            v = cached.view
        elif view:
            v = _read_view(state, output_dir, rebuild=True)
        # J4: only what the journals gained since the last merge (a rebuilt base: all of it)
        folded = {} if v is not None and v.rebuilt else _read_list(state).get("journals") or {}
        files = journal_files(state.journal)
        replayed = frontier.replay(v.idx) if frontier is not None and v is not None else []
        known = cached.known if cached is not None else None
        if known is not None and frontier is not None:
            known.update(frontier.key(u["url"]) for it in replayed for u in it["urls"])
        # The new segment, serialised as read into one buffer: a list of 100,000 small
        # orjson.dumps results held 800 MiB (each keeps its over-allocated block), this 45 MB.
        # I10: at most SEGMENT_PART of it at once.
        seg = bytearray()
        linked: list[dict[str, Any]] = []
        upto: dict[str, int] = {owner_of(p): int(folded.get(owner_of(p)) or 0) for p in files}
        parts = 0
        applied = 0
        for path in files:
            owner = owner_of(path)
            tail = JournalTail(path, int(folded.get(owner) or 0))
            for rec in tail:
                applied += 1
                seg += orjson.dumps({k: x for k, x in rec.items() if k not in _TRANSIENT})
                seg += b"\n"
                if len(seg) >= SEGMENT_PART:
                    _write_segment(state, worker_id, seg, lock.check,
                                   journals={**upto, owner: max(tail.end, upto[owner])})
                    seg.clear()
                    parts += 1
                if v is not None:
                    apply(v.idx, rec)
                    if known is not None and frontier is not None:
                        known.add(frontier.key(rec["url"]))
                    if frontier is not None and rec.get("links"):
                        linked.append(rec)
            upto[owner] = max(tail.end, upto.get(owner, 0))
        intent = None
        if v is not None:
            if frontier is not None:
                intent = frontier.fold(v.idx, linked, known)
            for it in [*replayed, intent]:  # the queued marks F1 made: part of the index too
                for u in (it or {}).get("urls") or ():
                    seg += orjson.dumps({"url": u["url"], **v.idx[u["url"]]})
                    seg += b"\n"
            for url in frontier.shallower if frontier is not None else ():  # F4: depth lowered
                seg += orjson.dumps({"url": url, **v.idx[url]}) + b"\n"
        if seg:
            _write_segment(state, worker_id, seg, lock.check, journals=upto)
        elif parts:  # how far the journals are folded: where the last record of all ended
            _write_list(state, segment_files(state), lock.check, journals=upto)
        del seg  # a compaction below may need the memory
        if frontier is not None:  # F2: tickets only once the index holding them is written
            for done in replayed:
                frontier.commit(done, replay=True)
            if intent is not None:
                frontier.commit(intent)
        _maintain(state, output_dir, lock.check, v)
        if is_gone is not None:
            prune_journals(state, files, is_gone, lock.check)
        if cached is not None:
            cached.keep()  # only after every write succeeded: else the next fold reads anew
        if then is not None:
            return applied, then(lock)
        return applied, (v.idx if v is not None else None)


def merged_stream(state: StateDir, worker_id: str, is_gone: Callable[[str], bool],
                  output_dir: Path | None, consume: Callable[[Iterator[tuple[str, Entry]]], T],
                  *, lock_timeout: float = 60.0, fast: Callable[[], T | None] | None = None,
                  ) -> T:
    """Fold the journals in, then ``consume`` the index streamed under the same lock hold
    (I1): prepare's compact form, without the whole index in memory.  A base of an earlier
    version is migrated first (I6); a corrupt base is rebuilt as ``merged_index``
    does, and ``consume`` is given the rebuilt index (it must start afresh each call).
    ``fast``: tried first, under the same hold; None from it: the view is streamed."""
    def stream(lock: RenameLock) -> T:
        if _size(state.index_path) and (old_format(state.index_path)
                                        or not _read_list(state).get("base_id")):
            # I6: an earlier version's base, or one no list describes (status counts it
            # from the list): rewritten once
            _compact(state, output_dir, lock.check, None, segment_files(state))
        try:
            if fast is not None and (done := fast()) is not None:
                return done
            return consume(_stream_view(state))
        except CrawlError:
            v = _read_view(state, output_dir, rebuild=True)  # raises again unless the base
            if not v.rebuilt:                                 # was what was corrupt
                raise
            _rewrite(state, output_dir, lock.check, v)
            return consume(iter(v.idx.items()))
    return _merge(state, worker_id, is_gone, output_dir, lock_timeout, then=stream)[1]


def _rewrite(state: StateDir, output_dir: Path | None, check: Callable[[], None],
             v: _View | None = None, fn: Callable[[Index], None] | None = None) -> None:
    """The whole view (``v``, or read now) as a new base, ``fn`` applied first; every segment
    it held goes (I2)."""
    if v is None:
        v = _read_view(state, output_dir, rebuild=True)
    if fn is not None:
        fn(v.idx)
    write_base(state, v.idx, check)
    _drop(v.segments, check)
    _drop_orphans(state, check)


class _FoldCache:
    """The folded view (and its frontier keys) a worker keeps between its folds, so a fold
    costs the segments written since the last one, not a parse of the whole base and a
    normalisation of every URL in it (link following on a large site folds hundreds of
    times).  Valid while the list names the same base (``base_id``) and starts with the
    segments already applied; anything else (a compaction, a combine, another process's
    update) reads the view anew.  Kept only after a fold whose writes all succeeded."""

    _by_root: ClassVar[dict[Path, _FoldCache]] = {}

    def __init__(self, state: StateDir, view: _View, known: set[str],
                 base_id: str | None, applied: list[str]) -> None:
        self.state, self.view, self.known = state, view, known
        self.base_id, self.applied = base_id, applied

    @classmethod
    def take(cls, state: StateDir, output_dir: Path | None,
             key: Callable[[str], str]) -> _FoldCache:
        c = cls._by_root.pop(state.root, None)  # out until keep(): an error drops it
        listed = _read_list(state)
        names = [str(n) for n in listed["segments"]]
        sizes = listed.get("sizes") or {}
        base_id = listed.get("base_id")
        if (c is not None and base_id is not None and c.base_id == base_id
                and names[:len(c.applied)] == c.applied):
            d = segment_dir(state)
            for name in names[len(c.applied):]:
                for rec in iter_segment(d / name, sizes.get(name)):
                    apply(c.view.idx, rec)
                    c.known.add(key(rec["url"]))
            c.applied = names
            c.view = _View(c.view.idx, [d / n for n in names])
            return c
        v = _read_view(state, output_dir, rebuild=True)
        return cls(state, v, {key(u) for u in v.idx}, None, [])

    def keep(self) -> None:
        """Remember the view as of the list now (which holds this fold's own segment)."""
        listed = _read_list(self.state)
        self.base_id = listed.get("base_id")
        self.applied = [str(n) for n in listed["segments"]]
        if self.base_id is not None and not self.view.rebuilt:
            _FoldCache._by_root[self.state.root] = self


def _write_segment(state: StateDir, worker_id: str, data: bytes | bytearray,
                   check: Callable[[], None], *, replaces: list[Path] | None = None,
                   journals: dict[str, int] | None = None) -> Path:
    """One new segment, then the list naming it (I4): a crash between the two leaves an
    unlisted file that nobody reads (the journals it came from are still there, J2) and the
    next compaction deletes.  ``replaces``: segments it combines, taken off the list."""
    d = real_dir(segment_dir(state), state.root / QUARANTINE)
    live = segment_files(state)
    seq = max((int(p.name[:8]) for p in live if p.name[:8].isdigit()), default=0) + 1
    path = d / f"{seq:08d}-{worker_id}-{secrets.token_hex(3)}.jsonl"
    atomic_write(path, data, before_replace=check)
    gone = set(replaces or ())
    _write_list(state, [p for p in live if p not in gone] + [path], check, journals=journals,
                new_size=(path.name, len(data)))
    return path


def _maintain(state: StateDir, output_dir: Path | None, check: Callable[[], None],
              v: _View | None) -> None:
    """Compact into the base when the segments reach half its size (or the base was rebuilt);
    combine segments when there are too many.  ``v``, when given, is the view read under this
    lock hold, already holding the records of the segments just written."""
    listed = _read_list(state)
    live = _live(state, listed)
    segs = [p for p, _ in live]
    base_bytes = _size(state.index_path)
    # An index of an earlier version has no list naming its base: migrate it once, when the
    # whole view is in memory anyway (prepare), so status and export get its figures.
    migrate = v is not None and base_bytes > 0 and (not listed.get("base_id")
                                                    or old_format(state.index_path))
    if not segs and not migrate and not (v is not None and v.rebuilt):
        return
    seg_bytes = sum(size or _size(p) for p, size in live)  # I5: no stat on a share
    if (v is not None and v.rebuilt) or migrate or seg_bytes * 2 > base_bytes:
        _compact(state, output_dir, check, v, segs)
    elif len(segs) > MAX_SEGMENTS:
        data = bytearray()
        for p, size in live:
            for rec in iter_segment(p, size):
                data += orjson.dumps(rec)
                data += b"\n"
        _write_segment(state, "combined", data, check, replaces=segs)
        _drop(segs, check)


def _compact(state: StateDir, output_dir: Path | None, check: Callable[[], None],
             v: _View | None, segs: list[Path]) -> None:
    """Base + ``segs`` into a new base: ``v`` if given, else the view streamed (never in
    memory whole); an earlier version's base or a corrupt one is read whole (I6)."""
    if v is None and not old_format(state.index_path):
        try:
            write_base_stream(state, _stream_view(state), check)
        except CrawlError:  # a corrupt base (rebuilt below) or segment (raised again)
            v = _read_view(state, output_dir, rebuild=True)
    elif v is None:  # an earlier version's base: read whole once, rewritten as JSONL
        v = _read_view(state, output_dir, rebuild=True)
    if v is not None:
        write_base(state, v.idx, check)
    _drop(segs, check)
    _drop_orphans(state, check)


def write_base(state: StateDir, idx: Index, check: Callable[[], None]) -> None:
    """The base from a whole index, sorted by URL (:func:`write_base_stream`)."""
    write_base_stream(state, ((u, idx[u]) for u in sorted(idx)), check)


def write_base_stream(state: StateDir, entries: Iterable[tuple[str, Entry]],
                      check: Callable[[], None]) -> None:
    """The base, one JSON line per URL, written as ``entries`` come (a compaction streams
    the view into it: a MiB of it in memory, and ~50 bytes a URL for the keys and fields
    files, written after the base and before the list, fields.py I7), then an empty
    segment list with its entry count (status reads that, not a 680 MB file).  Every
    segment listed before is now in the base (I2).  Atomic like atomic_write (I1)."""
    target = state.index_path
    tmp = tmp_name(target)
    h = hashlib.blake2b(digest_size=16)
    judged = fields.Fields()  # prepare's form of the base (fields.py I7)
    size = 0
    done = False
    try:
        with open(tmp, "wb") as f:
            buf = bytearray()
            for url, entry in entries:
                judged.add(url_key(url), size + len(buf), entry)
                buf += orjson.dumps({"url": url, **entry})
                buf += b"\n"
                if len(buf) >= _CHUNK:
                    h.update(buf)
                    f.write(buf)
                    size += len(buf)
                    buf.clear()
            h.update(buf)
            f.write(buf)
            size += len(buf)
            f.flush()
            os.fsync(f.fileno())
        check()
        fields.drop(state.root)  # I7: never beside a base it was not written for
        replace_file(tmp, target)
        done = True
        fsync_dir(target.parent)
    finally:
        if not done:
            unlink_quiet(tmp)
    digest = h.hexdigest()
    fields.write(state.root, judged, target, digest, size, check)
    keys = judged.keys
    del judged  # the other columns, before the sort
    atomic_write(state.root / KEYS_FILE,
                 digest.encode() + b"\n" + sorted_keys(keys).tobytes(),
                 before_replace=check)
    _write_list(state, [], check, base=(len(keys), size, digest))


def url_key(url: str) -> int:
    """A URL's 64-bit key, the same in every process (the keys and fields files)."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "little")


def _base_keys(state: StateDir, listed: dict[str, Any]) -> array[int] | None:
    """The sorted keys (:func:`url_key`) of the base the list describes, from the keys file
    (None: no keys file for this base: an earlier version's, or a crash between base and
    list)."""
    try:
        raw = read_settled(state.root / KEYS_FILE, lambda b: b)
    except FileNotFoundError:
        return None
    head, _, body = raw.partition(b"\n")
    if not listed.get("base_hash") or head.decode("ascii", "replace") != listed["base_hash"] \
            or len(body) % 8:
        return None
    keys = array("Q")
    keys.frombytes(body)
    return keys


def _holds(keys: array[int], k: int) -> bool:
    i = bisect.bisect_left(keys, k)
    return i < len(keys) and keys[i] == k


def _drop(segments: list[Path], check: Callable[[], None]) -> None:
    for p in segments:
        check()
        unlink_quiet(p, busy_ok=True)


def _drop_orphans(state: StateDir, check: Callable[[], None]) -> None:
    """Segment files no list names: a merge killed between its segment and its list (I4)."""
    listed = {p.name for p in segment_files(state)}
    d = segment_dir(state)
    if not os.path.lexists(d):
        return
    real_dir(d, state.root / QUARANTINE)  # a symlink would list (and delete) another folder
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return
    _drop([d / n for n in names if n not in listed], check)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def count(state: StateDir) -> int:
    """URLs in the index, exactly, for ``status``: the base's count from the segment list,
    plus the segments' URLs that the base does not hold (by the keys file, so O(segments)
    bytes are read; without one the base's URLs are streamed once).  The segments' URLs are
    held as sorted 64-bit keys, 8 bytes each, not as strings: segments grow to half the
    base before a compaction."""
    def read() -> int:
        listed = _read_list(state)
        n = listed.get("base_entries")
        keys = array("Q")
        for path, size in _live(state, listed):
            keys.extend(url_key(r["url"]) for r in iter_segment(path, size))
        if isinstance(n, int) and not keys:
            return n  # the base alone: its count is in the list
        seg = _unique_sorted(keys)
        del keys
        base = _base_keys(state, listed) if isinstance(n, int) else None
        if base is not None:
            extra = sum(1 for k in seg if not _holds(base, k))
        else:
            in_base = bytearray(len(seg))
            n = 0
            for u, _ in iter_entries(state.index_path):
                n += 1
                k = url_key(u)
                i = bisect.bisect_left(seg, k)
                if i < len(seg) and seg[i] == k:
                    in_base[i] = 1
            extra = in_base.count(0)
        if _read_list(state).get("base_id") != listed.get("base_id"):
            raise FileNotFoundError  # a compaction meanwhile: read again (I3)
        return n + extra
    return _consistently(state, read)


def _unique_sorted(keys: array[int]) -> array[int]:
    """``keys`` sorted, each once."""
    out = array("Q")
    prev = None
    for k in sorted_keys(keys):
        if k != prev:
            out.append(k)
            prev = k
    return out


def prune_journals(state: StateDir, merged: list[Path], is_gone: Callable[[str], bool],
                   check: Callable[[], None]) -> int:
    """J2 and H7: delete merged journals, then heartbeat files, of workers that are gone and
    hold no claimed ticket.  ``check`` raises if the index lock was lost.  Returns files
    deleted."""
    held = claimed_owners(state)
    try:
        names = os.listdir(state.workers)
    except FileNotFoundError:
        names = []
    # H7: a worker buried by a reclaimer (judged dead over heartbeat_timeout, or proven
    # dead here) that has not beaten since: gone, on whatever machine it ran
    buried = ({n[:-5] for n in names if n.endswith(".dead")}
              - {n[:-5] for n in names if n.endswith(".lock")})
    n = 0
    for path in merged:
        owner = owner_of(path)
        if owner in held:
            continue
        if path.name.endswith(".closed.jsonl") or owner in buried or is_gone(owner):
            check()
            n += unlink_quiet(path, busy_ok=True)
    left = {owner_of(p) for p in journal_files(state.journal)}
    for name in names:
        wid, dot, kind = name.rpartition(".")
        if not dot or kind not in ("dead", "lock") or wid in held or wid in left:
            continue
        if kind == "dead" or is_gone(wid):
            n += unlink_quiet(state.workers / name, busy_ok=True)
    return n


def update(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
           fn: Callable[[Index], None],
           output_dir: Path | None = None, *, lock_timeout: float = 60.0) -> None:
    """Apply ``fn`` to the index under the index lock and write it back as a new base
    (folding the segments in).

    For changes that are not crawl results (tombstones of URLs gone from the sitemap); a
    crawl's results always go through the journals.
    """
    with _index_lock(state, worker_id, lock_timeout) as lock:
        _rewrite(state, output_dir, lock.check, fn=fn)


def update_some(state: StateDir, worker_id: str, urls: set[str],
                fn: Callable[[str, Entry], bool], output_dir: Path | None = None, *,
                lock_timeout: float = 60.0) -> int:
    """``update`` for a few URLs of a large index: ``fn(url, entry)`` changes the entry in
    place (True: it did), under the index lock; the changed entries are written as one
    segment, each with its own ``last_crawled``, so :func:`apply` folds it over the entry as
    the change (a newer crawl of the URL still wins).  The index is streamed, never held.
    Returns the number of entries changed."""
    with _index_lock(state, worker_id, lock_timeout) as lock:
        if old_format(state.index_path):
            _rewrite(state, output_dir, lock.check)  # migrated first (I6)
        seg = bytearray()
        n = 0
        for url, entry in _stream_view(state, urls.__contains__):
            if fn(url, entry):
                seg += orjson.dumps({"url": url, **entry}) + b"\n"
                n += 1
        if seg:
            _write_segment(state, worker_id, seg, lock.check)
        _maintain(state, output_dir, lock.check, None)
        return n


@contextlib.contextmanager
def _index_lock(state: StateDir, worker_id: str, timeout: float) -> Iterator[RenameLock]:
    """The cross-machine lock every writer of the index holds (I1; fsutil L1-L4)."""
    lock = RenameLock(state.locks, "index", worker_id, timeout=timeout, local_dead=proven_dead)
    if not lock.acquire():
        raise CrawlError(f"{state.locks}: could not take the index lock (held by a live worker)")
    try:
        yield lock
    except BaseException:
        with contextlib.suppress(OSError, CrawlError):  # the error in flight is reported
            lock.release()
        raise
    lock.release()  # raises LockLost (a CrawlError) if the lock was taken meanwhile


def iter_view(state: StateDir, want: Callable[[str], bool] | None = None,
              ) -> Iterator[tuple[str, Entry]]:
    """``(url, entry)`` of the whole index (or of the URLs ``want`` takes), streaming the
    base (export of a million URLs): memory holds ~16 bytes per segment record (where it
    is, :class:`_Later`) and a line of the base (I3 as for load_view)."""
    return _stream_view(state, want)


def base_fields(state: StateDir) -> fields.Fields | None:
    """Prepare's form of the base the segment list describes, if fields.py I7 holds."""
    return fields.read(state.root, state.index_path, _read_list(state))


def fold_over(state: StateDir, base_entry: Callable[[str], Entry | None],
              want: Collection[str] | None = None) -> Iterator[tuple[str, Entry]]:
    """``(url, entry)`` of each URL the segments hold (or of each URL of ``want`` that
    the index holds): ``base_entry(url)`` (the base's entry, None if it has none, read by
    offset: fields.py) with the segments' records folded over it, as :func:`_stream_view`
    folds them, without streaming the base (I3 for the segments as there)."""
    later = _consistently(state, lambda: _Later(_live(state),
                                                None if want is None else want.__contains__))
    try:
        for url in want or ():
            entry, recs = base_entry(url), later.take(url)
            if entry is not None or recs:
                yield url, _folded(url, entry, recs)
        for url, recs in later.rest():
            yield url, _folded(url, base_entry(url), recs)
    finally:
        later.close()


def _folded(url: str, entry: Entry | None, recs: list[dict[str, Any]]) -> Entry:
    one: Index = {} if entry is None else {url: entry}
    for rec in recs:
        apply(one, rec)
    return one[url]


def _stream_view(state: StateDir, want: Callable[[str], bool] | None = None,
                 ) -> Iterator[tuple[str, Entry]]:
    """Base + segments folded, the base streamed in its (sorted) order, then the URLs only
    the segments hold.  The segments' records are not held: where each one is (a
    :class:`_Later`), read back when the base reaches its URL."""
    later = _consistently(state, lambda: _Later(_live(state), want))
    try:
        with _settled_base(state) as base:
            if not later.keys:  # no segment records: the base as it is
                yield from iter_entries(base, want)
                return
            for url, entry in iter_entries(base, want):
                recs = later.take(url)
                if recs:
                    one = {url: entry}
                    for rec in recs:
                        apply(one, rec)
                    entry = one[url]
                yield url, entry
        for url, recs in later.rest():
            one: Index = {}
            for rec in recs:
                apply(one, rec)
            yield url, one[url]
    finally:
        later.close()


class _Later:
    """The segments' records by URL hash: (hash, where) in flat arrays, ~16 bytes a record
    instead of the record (segments grow to half the base before a compaction, so holding
    them was not bounded).  ``where`` is the segment's number << 40 | the line's offset; the
    files stay open, so a compaction that deletes them meanwhile (I3) changes nothing read.
    On a network share an open handle does not keep a deleted file readable (seen on
    smbnetfs: ENOENT on a later read), so there each segment is read from a local copy.
    Stable sorting keeps each URL's records in fold order (segment, then line); it sorts by
    the hash's top byte first, so its Python ints are a 256th of the records at a time
    (keysort.py)."""

    def __init__(self, live: list[tuple[Path, int | None]],
                 want: Callable[[str], bool] | None) -> None:
        self.files: list[Any] = []
        self.tmp: tempfile.TemporaryDirectory[str] | None = None
        self.paths = [path for path, _ in live]
        keys, where = array("q"), array("q")
        try:
            for n, (path, size) in enumerate(live):
                self.files.append(self._scan(path, size, n, want, keys, where))
        except BaseException:
            self.close()
            raise
        self.keys, self.where = sorted_pairs(keys, where)
        self.taken = bytearray(len(self.keys))

    def _open(self, path: Path, n: int) -> Any:
        """``path`` open for reading, kept open until close(): the file itself on a local
        disk, a local copy of it on a share."""
        if not on_network_fs(path):
            return open(path, "rb")
        if self.tmp is None:
            self.tmp = tempfile.TemporaryDirectory(prefix="sitemap-crawler-segments-")
        copy = Path(self.tmp.name) / str(n)
        _copy(path, copy)  # FileNotFoundError: compacted meanwhile, read again (I3)
        return open(copy, "rb")

    def _scan(self, path: Path, size: int | None, n: int,
              want: Callable[[str], bool] | None, keys: array[int], where: array[int]) -> Any:
        """Open ``path`` and note its records; I5: a read shorter than the listed size is
        S1's stale size on a share (read again for a while), else corruption."""
        deadline = time.monotonic() + STALE_SIZE_WINDOW
        while True:
            f = self._open(path, n)
            start, pos = len(keys), 0
            try:
                for line in f:
                    if line.strip():
                        url = _record(path, line)["url"]
                        if want is None or want(url):
                            keys.append(hash(url))
                            where.append(n << 40 | pos)
                    pos += len(line)
            except BaseException:
                f.close()
                raise
            if size is None or pos == size:
                return f
            f.close()
            del keys[start:], where[start:]
            if pos > size or not on_network_fs(path) or time.monotonic() >= deadline:
                what = "shorter than its listed size" if pos < size else \
                    f"{pos} bytes, the list says {size}"
                raise CrawlError(f"{path}: corrupt url-index segment ({what})")
            time.sleep(0.2)

    def _read(self, i: int) -> dict[str, Any]:
        w = self.where[i]
        f = self.files[w >> 40]
        f.seek(w & ((1 << 40) - 1))
        return _record(self.paths[w >> 40], f.readline())

    def take(self, url: str) -> list[dict[str, Any]]:
        """The records of ``url``, in fold order (none: [])."""
        h = hash(url)
        i = bisect.bisect_left(self.keys, h)
        out = []
        while i < len(self.keys) and self.keys[i] == h:
            if not self.taken[i] and (rec := self._read(i))["url"] == url:
                self.taken[i] = 1
                out.append(rec)
            i += 1
        return out

    def rest(self) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """The records not taken, by URL (URLs in hash order)."""
        i, n = 0, len(self.keys)
        while i < n:
            j = i
            group: dict[str, list[dict[str, Any]]] = {}
            while j < n and self.keys[j] == self.keys[i]:
                if not self.taken[j]:
                    rec = self._read(j)
                    group.setdefault(rec["url"], []).append(rec)
                j += 1
            yield from group.items()
            i = j

    def close(self) -> None:
        for f in self.files:
            f.close()
        if self.tmp is not None:
            self.tmp.cleanup()


def _record(path: Path, line: bytes) -> dict[str, Any]:
    """One segment line, checked."""
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise CrawlError(f"{path}: corrupt url-index segment ({e})") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("url"), str):
        raise CrawlError(f"{path}: corrupt url-index segment (not a record)")
    return rec


@contextlib.contextmanager
def _settled_base(state: StateDir) -> Iterator[Path]:
    """The base to stream from.  On a network share, a local copy with the digest the segment
    list records for the base, the list naming the same base before and after the copy: S1
    for a streaming reader, which cannot take back entries it has yielded.  Seen on sshfs
    while a compaction replaced the base: a client that still believed the old file's size
    cut the read short at exactly the size the list still gave (the base is written before
    the list), so a size check is not enough.  After the S1 window the copy is used as it
    is, and a bad one fails with one line."""
    path = state.index_path
    if not on_network_fs(path):
        yield path
        return
    deadline = time.monotonic() + STALE_SIZE_WINDOW
    with tempfile.TemporaryDirectory(prefix="sitemap-crawler-index-") as tmp:
        copy = Path(tmp) / path.name
        while True:
            before = _read_list(state)
            try:
                digest = _copy(path, copy)
            except FileNotFoundError:
                copy.unlink(missing_ok=True)
                break
            after = _read_list(state)  # a base replaced during the copy: copy again
            if before.get("base_id") == after.get("base_id"):
                want = after.get("base_hash")
                if want == digest if want else _parses(copy):
                    break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        yield copy


_CHUNK = 1 << 20


def _copy(src: Path, dst: Path) -> str:
    """Copy ``src``; its digest as :func:`_digest` gives it."""
    h = hashlib.blake2b(digest_size=16)
    with open(src, "rb") as i, open(dst, "wb") as o:
        while chunk := i.read(_CHUNK):
            h.update(chunk)
            o.write(chunk)
    return h.hexdigest()


def _digest(data: bytes | bytearray) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _parses(path: Path) -> bool:
    """A base written by an earlier version (no digest in the list): whole, if it parses."""
    try:
        for _ in iter_entries(path):
            pass
    except CrawlError:
        return False
    return True


def iter_entries(path: Path, want: Callable[[str], bool] | None = None,
                 ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(url, entry)`` of the base one at a time: the one reader of the base (I6).  A JSONL
    base is read a line at a time (one entry and a buffer in memory); a base of an earlier
    version (one JSON object) is parsed whole, once, before a writer migrates it.  ``want``:
    lines of other URLs are skipped without parsing them.  A missing base has no entries; a
    corrupt one raises CrawlError (one line)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    with f:
        head = f.read(len(_JSONL_HEAD))
        f.seek(0)
        if head and head != _JSONL_HEAD:
            try:
                old = _parse_old(path, f.read())
            except orjson.JSONDecodeError as e:
                raise CrawlError(f"{path}: corrupt url-index ({e})") from None
            for url, entry in old.items():
                if want is None or want(url):
                    yield url, entry
            return
        for line in f:
            if not line.endswith(b"\n"):  # every line ends with one: a torn file
                raise CrawlError(f"{path}: corrupt url-index (ends within a line)")
            if want is not None and (u := _line_url(line)) is not None and not want(u):
                continue
            url, entry = _parse_line(path, line)
            if url is not None and (want is None or want(url)):
                yield url, entry


# A base line as write_base writes it starts with its URL; a base of an earlier version is
# one JSON object whose first key is a URL (or, pretty-printed, a newline).
_JSONL_HEAD = b'{"url":'


def _line_url(line: bytes) -> str | None:
    """The URL of a base line without parsing it (None if it is not plainly there)."""
    end = line.find(b'"', 8)
    raw = line[8:end]
    if end < 0 or not line.startswith(b'{"url":"') or b"\\" in raw:
        return None  # an escape, or not ours: parsed in full
    return raw.decode("utf-8", "replace")


def _parse_line(path: Path, line: bytes) -> tuple[str | None, dict[str, Any]]:
    if not line.strip():
        return None, {}
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise CrawlError(f"{path}: corrupt url-index ({e})") from None
    if not isinstance(rec, dict) or not isinstance(url := rec.pop("url", None), str):
        raise CrawlError(f"{path}: corrupt url-index (not a record)")
    return url, rec


def _parse_old(path: Path, raw: bytes) -> Index:
    """A base of an earlier version: one JSON object, url -> entry."""
    data = orjson.loads(raw)  # a JSONDecodeError (a ValueError) at the end: S1, read again
    if not isinstance(data, dict) or not all(isinstance(e, dict) for e in data.values()):
        raise CrawlError(f"{path}: corrupt url-index (not url -> object)")
    return data


def parse_base(path: Path, raw: bytes) -> Index:
    """A whole base's bytes as a dict, in either format."""
    if raw[:len(_JSONL_HEAD)] not in (_JSONL_HEAD, b""):
        return _parse_old(path, raw)
    if raw and not raw.endswith(b"\n"):
        raise _CutShort(len(raw))  # every line ends with one: S1's stale size, read again
    idx: Index = {}
    for line in raw.splitlines():
        url, entry = _parse_line(path, line)
        if url is not None:
            idx[url] = entry
    return idx


def old_format(path: Path) -> bool:
    """A base written by an earlier version (one JSON object): rewritten once (migration)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_JSONL_HEAD))
    except FileNotFoundError:
        return False
    return bool(head) and head != _JSONL_HEAD
