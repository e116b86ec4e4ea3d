"""Liveness of workers without trusting anybody's clock.

Protocol (measured on real shares, ../shared/netfs/README.md):

* H1. A worker announces itself by writing ``workers/<worker-id>.lock`` *before* it claims
  anything, then rewrites the file's *content* every ``heartbeat_interval`` seconds: a counter
  that always changes, plus what it holds (ticket, pid, host, and its journal's position,
  journal.py J3) for people reading ``status``.
  The file is rewritten in place with a fixed size: a reader that catches a half-written
  record sees bytes that differ from the last ones, which correctly counts as "alive".
* H2. An observer judges a worker dead when the content it reads has not changed for
  ``heartbeat_timeout`` seconds of the *observer's own* monotonic clock. File mtimes are never
  compared with the local clock: clocks differ between machines, ``touch`` is whole-second on
  shares, and attribute caches lie.  A fresh observer therefore needs ``heartbeat_timeout``
  seconds of watching before it may call a remote worker dead.
* H3. Shortcut on the observer's own machine: a worker *proven* to run on this machine
  (its id carries the same host name and the same machine token: machine id, boot id and pid
  namespace, state.machine_token) whose pid is not running, is a zombie (state Z), or runs a
  different process (start time differs) is dead at once.  A host name alone proves nothing
  (two machines may share one), and a pid that runs proves nothing either (the process may
  be paused): then H2 decides.
* H4. A worker named in a claimed ticket but with no heartbeat file is watched the same way
  (its file may not be visible yet: sshfs shows new files to the other mount after ~20 s).
* H5. A worker that was declared dead finds its file gone or renamed to ``.dead`` when it next
  beats: it says so in the log and writes its file anew (it is alive after all), and sets
  ``buried``.  Its tickets were taken back; T2 (tickets.py) makes it drop them without
  writing anything more.  It takes no new ticket (commands/worker.py, after the beat that
  follows each claim): its journal may be merged and deleted already (H7), and a record
  appended to a deleted journal would be lost.
* H6. A heartbeat that cannot be written is retried; after ``FAIL_AFTER`` failures in a row the
  worker is told to stop (``on_fail``) and the error is logged: a worker that cannot prove it
  is alive would soon see its tickets taken back and would repeat work for nothing.
* H7 (pruning). ``workers/<w>.dead`` and ``workers/<w>.lock`` of a dead worker are deleted by
  the index merge (index.py J2) once no ticket is claimed under ``w`` and its journal is
  gone: by then nothing of it is left to reclaim or merge, and every later merge and
  ``status`` would otherwise read them again, for ever.  A ``.dead`` file without a
  ``.lock`` beside it is what a reclaimer leaves after judging ``w`` dead (H2 over
  ``heartbeat_timeout``, or H3): the merge counts ``w`` gone on that, whatever machine it
  ran on (a fresh observer cannot judge a remote worker: it has not watched it), so its
  merged journal goes too.
* H8 (waking). A worker whose last beat is older than two intervals was paused (SIGSTOP, a
  frozen VM, a stalled share) and may have been buried meanwhile: it beats before it starts
  any new URL (commands/worker.py), so it notices H5 before it fetches a URL that another
  worker took back.  Without it the fetch threads and the heartbeat thread wake together,
  and a fetch may start first (the soak's SIGSTOP trials on SMB found 2 unexplained
  refetches in 39 before this and a fix of the soak's own stamps; none in 72 after).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitemap_crawler.protocol.fsutil import atomic_write, read_bytes
from sitemap_crawler.protocol.state import (
    UNKNOWN_MACHINE,
    WorkerIdParts,
    hostname,
    machine_token,
    parse_worker_id,
)

log = logging.getLogger(__name__)
FAIL_AFTER = 3  # H6: heartbeat writes failing in a row before the worker is stopped

RECORD_SIZE = 1024  # fixed size: in-place rewrites never change the file's length


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pid_start_time(pid: int) -> str | None:
    """The process start time from /proc (clock ticks since boot), to detect pid reuse."""
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def pid_alive(pid: int, start: str | None = None) -> bool:
    """Is ``pid`` a running (or paused) process, the one started at ``start`` if given?

    A killed process stays a zombie (state Z) until its parent reaps it, and its pid still
    answers ``kill(pid, 0)``: a zombie is dead (H3).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _proc_stat(pid)
    if fields is None:
        return True  # no /proc: cannot tell more
    if fields[0] in ("Z", "X"):
        return False
    return start is None or len(fields) <= 19 or fields[19] == start


def is_local(parts: WorkerIdParts) -> bool:
    """H3: the worker provably runs where our pids mean the same processes."""
    mine = machine_token()
    return parts.machine == mine and mine != UNKNOWN_MACHINE and parts.host == hostname()


def proven_dead(worker_id: str) -> bool:
    """True only if ``worker_id`` ran on this machine and its pid is gone or a zombie.

    Without a start time to compare, a reused pid counts as alive: never a false "dead".
    """
    parts = parse_worker_id(worker_id)
    return parts is not None and is_local(parts) and not pid_alive(parts.pid)


class Heartbeat:
    """Background thread that proves this worker is alive (H1) and notices being buried (H5)."""

    def __init__(self, workers_dir: Path, worker_id: str, interval: float,
                 on_fail: Callable[[], None] | None = None) -> None:
        self.path = workers_dir / f"{worker_id}.lock"
        self.worker_id = worker_id
        self.interval = interval
        self.counter = 0
        self.info: dict[str, Any] = {}
        self.on_fail = on_fail
        self.failed = threading.Event()  # H6: set when the heartbeat could not be written
        self.buried = threading.Event()  # H5: set when it found itself judged dead
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._lock = threading.Lock()
        self._pid_start = pid_start_time(os.getpid())
        self.last_beat = time.monotonic()  # H8: when a beat was last written

    def _record(self) -> bytes:
        rec = {"worker_id": self.worker_id, "host": hostname(), "pid": os.getpid(),
               "pid_start": self._pid_start, "counter": self.counter,
               "beat_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **self.info}
        data = json.dumps(rec, separators=(",", ":")).encode()
        if len(data) > RECORD_SIZE - 1:
            rec = {k: rec[k] for k in ("worker_id", "host", "pid", "counter")}
            data = json.dumps(rec).encode()
        return data.ljust(RECORD_SIZE - 1) + b"\n"

    def start(self) -> Heartbeat:
        """Write the first beat synchronously, so no ticket is ever claimed before it exists."""
        atomic_write(self.path, self._record())
        self.last_beat = time.monotonic()
        self._thread.start()
        return self

    def update(self, **info: Any) -> None:
        with self._lock:
            self.info.update(info)

    def beat(self) -> None:
        with self._lock:
            self.counter += 1
            data = self._record()
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:
            # H5: somebody judged us dead and took our tickets back (T2 drops them here).
            log.warning("worker %s was judged dead by another process (paused or cut off?); "
                        "it drops any ticket that was taken back and claims no more",
                        self.worker_id)
            self.buried.set()
            atomic_write(self.path, data)
            self.last_beat = time.monotonic()
            return
        try:
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)
        self.last_beat = time.monotonic()

    def confirm(self) -> bool:
        """H8: False once this worker knows it was buried; a worker that was paused beats
        first (a write that fails is H6's business, not this URL's)."""
        if time.monotonic() - self.last_beat > 2 * self.interval:
            with contextlib.suppress(OSError):
                self.beat()
        return not self.buried.is_set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval if failures == 0 else
                                  min(self.interval, 0.2 * failures)):
            try:
                self.beat()
                failures = 0
            except OSError as e:  # H6: retried; then the worker is stopped, loudly
                failures += 1
                if failures < FAIL_AFTER:
                    continue
                log.error("worker %s cannot write its heartbeat %s (%s); stopping it",
                          self.worker_id, self.path, e.strerror or e)
                self.failed.set()
                if self.on_fail is not None:
                    self.on_fail()
                return

    def stop(self, remove: bool = True) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 1)
        if remove:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


@dataclass
class _Seen:
    content: bytes | None
    since: float  # observer's monotonic time when this content was first seen


@dataclass
class Observer:
    """Judges liveness from heartbeat files as described in H2–H4."""

    workers_dir: Path
    timeout: float
    _seen: dict[str, _Seen] = field(default_factory=dict)

    def read(self, worker_id: str) -> bytes | None:
        return read_bytes(self.workers_dir / f"{worker_id}.lock")

    def observe(self, worker_id: str) -> float:
        """Seconds (observer's clock) for which this worker's heartbeat has not changed."""
        now = time.monotonic()
        content = self.read(worker_id)
        seen = self._seen.get(worker_id)
        if seen is None or seen.content != content:
            self._seen[worker_id] = _Seen(content, now)
            return 0.0
        return now - seen.since

    def local_verdict(self, worker_id: str) -> bool | None:
        """H3: True/False if the worker provably runs on this machine, else None."""
        parts = parse_worker_id(worker_id)
        if parts is None or not is_local(parts):
            return None
        start = None
        content = self.read(worker_id)
        if content:
            with contextlib.suppress(ValueError, AttributeError):
                start = json.loads(content).get("pid_start")
        return pid_alive(parts.pid, start)

    def is_dead(self, worker_id: str) -> bool:
        # H3 only ever shortens the wait: a local pid that still runs may be paused (SIGSTOP),
        # so "alive" is still judged by the heartbeat's content (H2).
        if self.local_verdict(worker_id) is False:
            return True
        return self.observe(worker_id) >= self.timeout

    def known_workers(self) -> list[str]:
        try:
            names = os.listdir(self.workers_dir)
        except FileNotFoundError:
            return []
        return [n[:-5] for n in names if n.endswith(".lock")]

    def bury(self, worker_id: str) -> None:
        """Mark a dead worker's heartbeat as such (kept for `status`; H5 for the worker)."""
        src = self.workers_dir / f"{worker_id}.lock"
        with contextlib.suppress(OSError):
            os.rename(src, self.workers_dir / f"{worker_id}.dead")
        self._seen.pop(worker_id, None)


def read_heartbeat(path: Path) -> dict[str, Any] | None:
    data = read_bytes(path)
    if not data:
        return None
    try:
        rec = json.loads(data)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None
