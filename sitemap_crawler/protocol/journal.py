"""Per-worker, append-only result journals: how url-index.json is updated without lost updates.

Every worker appends one JSON line per finished URL to ``journal/<worker-id>.jsonl``; nobody
else writes that file, so no lock is needed on any share, and the cost per URL is one
``write`` no matter how large the index is.  Journals are folded into url-index.json by
index.merge().  A torn last line (crash mid-write) is skipped by readers; the journal is
fsynced before a ticket is completed, and its directory entry when it is created (fsutil D),
so a completed ticket's results survive a power loss.  A worker that ends cleanly renames its
journal to ``<worker-id>.closed.jsonl``.  Journals are deleted only by the merge, and only as
index.py J2 allows: never while a ticket is claimed under their worker's id.

J3 (cheap readers). A live worker publishes in its heartbeat (heartbeat.py H1) the pair
``journal: [records, bytes]``: its journal's first ``bytes`` bytes hold ``records`` complete
records.  A reader that only counts (``status``) reads the bytes after that offset, not the
whole journal, so its cost is what was written since the last beat, not the whole run; the
speed is taken from the journals' tails (:func:`tail_records`).  A journal without that
pair (closed, or of a dead worker) is counted in full: it exists only until the next merge.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.protocol.fsutil import fsync_dir


class Journal:
    def __init__(self, journal_dir: Path, worker_id: str) -> None:
        self.path = journal_dir / f"{worker_id}.jsonl"
        self.closed_path = journal_dir / f"{worker_id}.closed.jsonl"
        # Not O_APPEND: on smbnetfs an O_APPEND open fails with EIO and leaves the whole mount
        # answering EIO until it is remounted (measured here).  There is one writer per
        # journal, so keeping the offset ourselves is just as safe.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        self._offset = os.fstat(self._fd).st_size
        # J3: records counted from an empty file only (a worker id is new in every process)
        self.records: int | None = 0 if self._offset == 0 else None
        self._lock = threading.Lock()
        fsync_dir(journal_dir)

    def append(self, record: dict[str, Any]) -> None:
        data = encode(record)
        with self._lock:  # the threads of one worker process share its journal
            self._append(data)

    def _append(self, data: bytes) -> None:
        written = os.pwrite(self._fd, data, self._offset)
        while written < len(data):  # short writes are legal; finish the line
            written += os.pwrite(self._fd, data[written:], self._offset + written)
        self._offset += len(data)
        if self.records is not None:
            self.records += 1

    def position(self) -> list[int] | None:
        """J3: ``[records, bytes]`` for the heartbeat, or None when not counted."""
        return None if self.records is None else [self.records, self._offset]

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd < 0:
            return
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        os.rename(self.path, self.closed_path)
        fsync_dir(self.path.parent)


def encode(record: dict[str, Any]) -> bytes:
    """One journal line.  orjson: 0.5 us against json's 35 us for a page's record; what
    it refuses (a lone surrogate, an int beyond 64 bits, a float subclass) is written by
    json as before.  (A NaN becomes null, which orjson's readers can parse, where json's
    ``NaN`` made the merge skip the line.)"""
    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except (orjson.JSONEncodeError, TypeError):
        return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """Records of one journal; a torn or garbled line is skipped, not fatal."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below; ENOENT is normal
    except FileNotFoundError:
        return
    with f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # torn last line of a killed writer
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "url" in rec:
                yield rec


class JournalTail:
    """The records after byte ``offset``, one at a time (a merge of 100,000 records must not
    hold them all: parsed with the standard json, a list of them took 260 MiB), and after
    iterating, ``end``: the offset to start from next time, the end of the last line that
    was whole and parsed with no bad line before it.  A garbled line (on a share, a reader
    may see a line whose bytes have not all arrived) stops ``end``, so it is read again next
    time instead of being lost; records after it are yielded now too (folding a record twice
    is harmless).  A missing file has nothing new."""

    def __init__(self, path: Path, offset: int) -> None:
        self.path = path
        self.end = offset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed by the with below; ENOENT is normal
        except FileNotFoundError:
            return
        pos = self.end
        clean = True
        with f:
            f.seek(pos)
            for line in f:
                if not line.endswith(b"\n"):
                    break  # torn or still being written: next time
                pos += len(line)
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    clean = False
                    continue
                if clean:
                    self.end = pos
                if isinstance(rec, dict) and "url" in rec:
                    yield rec


def journal_files(journal_dir: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(journal_dir))
    except FileNotFoundError:
        return []
    return [journal_dir / n for n in names if n.endswith(".jsonl") and not n.startswith(".")]


def owner_of(path: Path) -> str:
    name = path.name
    return name.removesuffix(".jsonl").removesuffix(".closed")


def ticket_progress(journal_dir: Path, worker_id: str, ticket_id: str) -> dict[str, str]:
    """url → final outcome for ``ticket_id`` from a (dead) worker's journal (tickets T5)."""
    done: dict[str, str] = {}
    for p in (journal_dir / f"{worker_id}.jsonl", journal_dir / f"{worker_id}.closed.jsonl"):
        for rec in read_journal(p):
            if rec.get("ticket") == ticket_id and rec.get("final"):
                done[rec["url"]] = rec.get("outcome", "ok")
    return done


_BLOCK = 1 << 16


def count_records(path: Path, start: int = 0, records: int = 0) -> int:
    """Complete lines in ``path`` after byte ``start`` plus ``records`` (J3); 0 if gone."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below; ENOENT is normal
    except FileNotFoundError:
        return 0
    with f:
        size = os.fstat(f.fileno()).st_size
        if start > size:  # a share's client may serve an older size for a moment
            return records
        f.seek(start)
        while chunk := f.read(1 << 20):
            records += chunk.count(b"\n")
    return records


def tail_records(path: Path, since: Callable[[list[dict[str, Any]]], bool],
                 block: int = _BLOCK) -> list[dict[str, Any]]:
    """The last records of a journal, read backwards in growing blocks until ``since`` (given
    the records read so far, oldest first) says enough were read, or the file's start (J3)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below; ENOENT is normal
    except FileNotFoundError:
        return []
    with f:
        size = os.fstat(f.fileno()).st_size
        while True:
            start = max(0, size - block)
            f.seek(start)
            data = f.read(size - start)
            if start > 0:
                data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
            recs: list[dict[str, Any]] = []
            for line in data.split(b"\n")[:-1]:  # a torn last line has no newline
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and "url" in rec:
                    recs.append(rec)
            if start == 0 or since(recs):
                return recs
            block *= 4
