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
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.frontmatter import read_front_matter
from sitemap_crawler.protocol.frontier import Frontier
from sitemap_crawler.protocol.fsutil import RenameLock, atomic_write, unlink_quiet
from sitemap_crawler.protocol.journal import journal_files, owner_of, read_journal
from sitemap_crawler.protocol.state import StateDir

log = logging.getLogger(__name__)

# Fields a journal record carries that are about the crawl, not about the URL.
_TRANSIENT = {"ticket", "final", "worker", "elapsed", "attempts", "links"}


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The index; raises CrawlError (one line) if the file exists but is not a valid index."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        data = orjson.loads(raw)
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
          frontier: Frontier | None = None) -> int:
    """Fold every journal into url-index.json; delete the journals of workers that are gone.

    ``is_dead`` breaks a merge lock held by a dead worker; ``is_gone(worker)`` says a journal
    will not grow any more (closed, or its worker is dead), so it can be deleted once merged.
    With a ``frontier`` (link following), the records' links become tickets in the same
    fold (protocol/frontier.py, F1-F2).  Returns the number of journal records applied.
    """
    return _merge(state, worker_id, is_dead, is_gone, output_dir, frontier)[0]


def merged_index(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
                 output_dir: Path | None = None,
                 frontier: Frontier | None = None) -> dict[str, dict[str, Any]]:
    """The index with every journal folded in, read (and parsed) once."""
    _applied, idx = _merge(state, worker_id, is_dead, is_dead, output_dir, frontier)
    return idx if idx is not None else load_or_rebuild(state, output_dir)


def _merge(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
           is_gone: Callable[[str], bool], output_dir: Path | None,
           frontier: Frontier | None = None,
           ) -> tuple[int, dict[str, dict[str, Any]] | None]:
    files = journal_files(state.journal)
    if not files and (frontier is None or not frontier.has_intents()):
        return 0, None
    with _index_lock(state, worker_id, is_dead):
        idx = load_or_rebuild(state, output_dir)
        if frontier is not None:
            frontier.replay(idx)
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
        atomic_write(state.index_path, orjson.dumps(idx, option=orjson.OPT_SORT_KEYS))
        if intent is not None:
            frontier.commit(intent)  # type: ignore[union-attr]
        for path in files:
            if path.name.endswith(".closed.jsonl") or is_gone(owner_of(path)):
                unlink_quiet(path)
        return applied, idx


def update(state: StateDir, worker_id: str, is_dead: Callable[[str], bool],
           fn: Callable[[dict[str, dict[str, Any]]], None],
           output_dir: Path | None = None) -> None:
    """Apply ``fn`` to the index under the index lock and write it back atomically.

    For changes that are not crawl results (tombstones of URLs gone from the sitemap); a
    crawl's results always go through the journals.
    """
    with _index_lock(state, worker_id, is_dead):
        idx = load_or_rebuild(state, output_dir)
        fn(idx)
        atomic_write(state.index_path, orjson.dumps(idx, option=orjson.OPT_SORT_KEYS))


@contextlib.contextmanager
def _index_lock(state: StateDir, worker_id: str,
                is_dead: Callable[[str], bool]) -> Iterator[None]:
    """The cross-machine lock every writer of url-index.json holds (a RenameLock)."""
    lock = RenameLock(state.locks, "index", worker_id)
    if not lock.acquire(is_dead):
        raise CrawlError(f"{state.locks}: could not take the index lock (held by a live worker)")
    try:
        yield
    finally:
        lock.release()
