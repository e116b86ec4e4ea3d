"""url-index.json: what the last crawls learnt about every URL, for incremental re-crawls.

Format (roadmap v0.4.0, extended)::

    {"https://host/page": {"last_modified": "...", "etag": "\\"abc\\"",
                            "content_hash": "sha256:...", "raw_hash": "sha256:...",
                            "status_code": 200, "last_crawled": "2026-11-21T12:00:00Z",
                            "file_path": "host/page.md", "outcome": "new", ...}}

Workers never rewrite this file: they append to their own journals (journal.py), and
:func:`merge` folds the journals in under a cross-machine RenameLock, writes the index
atomically (tmp + rename), and only then deletes journals of workers that are gone.  So the
cost per URL does not grow with the index, two machines never lose each other's updates, and
a crash leaves either the old or the new index, never a torn one.  A corrupt index found at
start is reported and rebuilt from what survives (the journals and the front matter of the
markdown files), never silently dropped.

Invariants:

* I1. url-index.json is read for a merge and written only under the index RenameLock
  (fsutil L1-L4), and the write is abandoned if the lock was lost meanwhile
  (``before_replace=lock.check``): a merge slower than ``heartbeat_timeout`` keeps its lock
  because the lock beats (L2), and a holder that was paused past it and lost the lock fails
  with one line instead of overwriting a newer index.  Even with no journal to fold, the
  index is read under the lock: on SMB a replace is not atomic, and an index read as
  "missing" between the two steps would look like a first crawl.
* J2. A journal is deleted only after the index holding its records is in place, when its
  worker is gone (closed journal, or ``is_gone``), **and while no ticket is claimed under
  that worker's id** (``claimed/*_<w>.json``): the reclaimer (tickets.py T5) reads the
  progress of a dead worker's ticket from its journal, so deleting it first would make the
  next owner fetch every finished URL again.  The claimed directory is listed after the
  index is written; on sshfs a new name shows in another mount's listing ~20 s late, so
  ``heartbeat_timeout`` must stay above that (it is 60 s by default).
* H7 (heartbeat.py). With its journal, the ``workers/<w>.dead`` (and the ``.lock`` of a
  worker that is gone) are deleted once no ticket is claimed under ``w``: N crashes leave
  no files behind once their tickets are reclaimed and merged.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.frontmatter import read_front_matter
from sitemap_crawler.protocol.frontier import Frontier
from sitemap_crawler.protocol.fsutil import RenameLock, atomic_write, read_settled, unlink_quiet
from sitemap_crawler.protocol.heartbeat import proven_dead
from sitemap_crawler.protocol.journal import journal_files, owner_of, read_journal
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import claimed_owners

log = logging.getLogger(__name__)

# Fields a journal record carries that are about the crawl, not about the URL.
_TRANSIENT = {"ticket", "final", "worker", "elapsed", "attempts", "links"}


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The index; raises CrawlError (one line) if the file exists but is not a valid index."""
    try:
        data = read_settled(path, orjson.loads)  # S1: a share may serve a stale size
    except FileNotFoundError:
        return {}
    except orjson.JSONDecodeError as e:
        raise CrawlError(f"{path}: corrupt url-index ({e})") from None
    if not isinstance(data, dict):
        raise CrawlError(f"{path}: corrupt url-index (not a JSON object)")
    return data


def load_or_rebuild(state: StateDir, output_dir: Path | None) -> dict[str, dict[str, Any]]:
    """The index, or — if it is corrupt — a rebuild from front matter, with a warning."""
    try:
        return load(state.index_path)
    except CrawlError as e:
        log.warning("%s; rebuilding it from the markdown files' front matter and the journals", e)
        aside = state.index_path.with_name(f"url-index.corrupt.{os.getpid()}.json")
        os.replace(state.index_path, aside)
        idx = rebuild_from_outputs(output_dir) if output_dir else {}
        log.warning("rebuilt %d entries; the corrupt file was kept as %s", len(idx), aside.name)
        return idx


def rebuild_from_outputs(output_dir: Path) -> dict[str, dict[str, Any]]:
    """Recover url → entry from the YAML front matter every markdown file starts with."""
    idx: dict[str, dict[str, Any]] = {}
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


def apply(idx: dict[str, dict[str, Any]], rec: dict[str, Any]) -> None:
    """Fold one journal record in: the newest crawl of a URL wins (records are idempotent)."""
    url = rec["url"]
    old = idx.get(url)
    if old is not None and (old.get("last_crawled") or "") > (rec.get("last_crawled") or ""):
        return
    entry = {k: v for k, v in rec.items() if k not in _TRANSIENT and k != "url"}
    if old:
        merged = dict(old)
        merged.update(entry)
        entry = merged
    idx[url] = entry


def merge(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
          is_gone: Callable[[str], bool], output_dir: Path | None = None,
          frontier: Frontier | None = None, *, lock_timeout: float = 60.0) -> int:
    """Fold every journal into url-index.json; delete what J2 and H7 allow.

    ``is_gone(worker)`` says a journal will not grow any more (its worker is dead), so it can
    be deleted once merged and its tickets reclaimed.  ``is_dead`` is kept for callers; the
    lock is broken by L3 (fsutil), with ``lock_timeout`` the config's heartbeat_timeout.
    With a ``frontier`` (link following), the records' links become tickets in the same
    fold (protocol/frontier.py, F1-F2).  Returns the number of journal records applied.
    """
    return _merge(state, worker_id, is_gone, output_dir, lock_timeout, frontier)[0]


def merged_index(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
                 output_dir: Path | None = None, frontier: Frontier | None = None, *,
                 lock_timeout: float = 60.0) -> dict[str, dict[str, Any]]:
    """The index with every journal folded in, read (and parsed) once, under the lock (I1)."""
    return _merge(state, worker_id, is_dead, output_dir, lock_timeout, frontier)[1]


def _merge(state: StateDir, worker_id: str, is_gone: Callable[[str], bool],
           output_dir: Path | None, lock_timeout: float, frontier: Frontier | None = None,
           ) -> tuple[int, dict[str, dict[str, Any]]]:
    with _index_lock(state, worker_id, lock_timeout) as lock:
        idx = load_or_rebuild(state, output_dir)
        replayed = frontier.replay(idx) if frontier is not None else []
        files = journal_files(state.journal)
        applied = 0
        linked: list[dict[str, Any]] = []
        for path in files:
            for rec in read_journal(path):
                apply(idx, rec)
                applied += 1
                if frontier is not None and rec.get("links"):
                    linked.append(rec)
        intent = frontier.fold(idx, linked) if frontier is not None else None
        if files or replayed or intent is not None:
            atomic_write(state.index_path, orjson.dumps(idx, option=orjson.OPT_SORT_KEYS),
                         before_replace=lock.check)
        if frontier is not None:  # F2: tickets only once the index holding them is written
            for done in replayed:
                frontier.commit(done, replay=True)
            if intent is not None:
                frontier.commit(intent)
        prune_journals(state, files, is_gone, lock.check)
        return applied, idx


def prune_journals(state: StateDir, merged: list[Path], is_gone: Callable[[str], bool],
                   check: Callable[[], None]) -> int:
    """J2 and H7: delete merged journals, then heartbeat files, of workers that are gone and
    hold no claimed ticket.  ``check`` raises if the index lock was lost.  Returns files
    deleted."""
    held = claimed_owners(state)
    n = 0
    for path in merged:
        owner = owner_of(path)
        if owner in held:
            continue
        if path.name.endswith(".closed.jsonl") or is_gone(owner):
            check()
            n += unlink_quiet(path, busy_ok=True)
    left = {owner_of(p) for p in journal_files(state.journal)}
    try:
        names = os.listdir(state.workers)
    except FileNotFoundError:
        return n
    for name in names:
        wid, dot, kind = name.rpartition(".")
        if not dot or kind not in ("dead", "lock") or wid in held or wid in left:
            continue
        if kind == "dead" or is_gone(wid):
            n += unlink_quiet(state.workers / name, busy_ok=True)
    return n


def update(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
           fn: Callable[[dict[str, dict[str, Any]]], None],
           output_dir: Path | None = None, *, lock_timeout: float = 60.0) -> None:
    """Apply ``fn`` to the index under the index lock and write it back atomically.

    For changes that are not crawl results (tombstones of URLs gone from the sitemap); a
    crawl's results always go through the journals.
    """
    with _index_lock(state, worker_id, lock_timeout) as lock:
        idx = load_or_rebuild(state, output_dir)
        fn(idx)
        atomic_write(state.index_path, orjson.dumps(idx, option=orjson.OPT_SORT_KEYS),
                     before_replace=lock.check)


@contextlib.contextmanager
def _index_lock(state: StateDir, worker_id: str, timeout: float) -> Iterator[RenameLock]:
    """The cross-machine lock every writer of url-index.json holds (I1; fsutil L1-L4)."""
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


_CHUNK = 1 << 20


def iter_entries(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(url, entry)`` of url-index.json one at a time, holding one entry and about a MiB
    of text in memory (export of a million URLs).  A missing index has no entries; a corrupt
    one raises CrawlError (one line)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    dec = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    with f:
        buf, pos, eof = "", 0, False

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            chunk = f.read(_CHUNK)
            eof = not chunk
            buf = buf[pos:] + utf8.decode(chunk, final=eof)
            pos = 0
            return True

        def token(expect: str) -> str:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buf):
                    c = buf[pos]
                    if c not in expect:
                        raise CrawlError(f"{path}: corrupt url-index (unexpected {c!r})")
                    pos += 1
                    return c
                if not more():
                    raise CrawlError(f"{path}: corrupt url-index (ends too early)")

        def value() -> Any:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                try:
                    v, end = dec.raw_decode(buf, pos)
                except json.JSONDecodeError as e:
                    if more():
                        continue
                    raise CrawlError(f"{path}: corrupt url-index ({e})") from None
                if end == len(buf) and not eof:  # a number may go on in the next chunk
                    more()
                    continue
                pos = end
                return v

        token("{")
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos >= len(buf) and not more():
                raise CrawlError(f"{path}: corrupt url-index (ends too early)")
            if buf[pos:pos + 1] == "}":
                return
            url = value()
            token(":")
            entry = value()
            if not isinstance(url, str) or not isinstance(entry, dict):
                raise CrawlError(f"{path}: corrupt url-index (not url -> object)")
            yield url, entry
            if token(",}") == "}":
                return
