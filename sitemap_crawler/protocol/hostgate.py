"""Per-host politeness shared by every worker on every machine: rename tokens and a block file.

There is no coordinator: the shared state dir *is* the coordination.  What was measured on
real shares (../shared/netfs/README.md) rules out O_EXCL, hard links and flock between
machines, and makes clocks and mtimes untrustworthy, so the gate is built from the one
primitive that holds everywhere: ``rename`` of one file to a unique name.

Layout under ``root`` (e.g. ``<state>/hosts/``)::

    <host>/                                     mkdir, a race is harmless
    <host>/slots-<P>/                           P = max parallel requests to the host
    <host>/slots-<P>/slot-<k>.free              token k, nobody holds it
    <host>/slots-<P>/slot-<k>.held.<w>.<nonce>  token k, held by worker <w>
    <host>/block.json                           {seq, id, seconds, reason, consecutive_failures}

Invariants (the protocol):

* G1. For each k exactly one token file ``slot-<k>.*`` exists in ``slots-<P>/``.  The tokens
  are created once, together (G4); after that they are only ever *renamed*, never created,
  copied or deleted.
* G2. Acquire = rename ``slot-<k>.free`` to ``slot-<k>.held.<me>.<nonce>``, a name nobody
  else will use; the win is verified by checking that the destination exists (SMB can report
  success to a loser).  No listdir is needed: it is slow and stale on sshfs.  The order
  in which slots are tried is free: a process tries the slots it gave back last first.
* G3. Release = rename ``slot-<k>.held.<me>.<nonce>`` back to ``slot-<k>.free``.  By G1 the
  name ``slot-<k>.free`` cannot exist while the token is held, so this never renames onto an
  existing name (not atomic on SMB).  If the held name is gone, a reclaimer took the token
  (we were judged dead, G6): do nothing, creating a token would break G1.
* G4. ``slots-<P>/`` is built complete in a private ``.tmp-slots-*`` directory and renamed
  into place.  A non-empty directory cannot be replaced by rename (the loser gets ENOTEMPTY
  on SMB and EPERM on sshfs, measured), so the loser's rename fails and it removes its
  temporary directory; a false success on SMB is caught because the loser's temporary
  directory is still there.  The slots directory is never empty afterwards (G1).
* G5. Spacing: a lease granted at monotonic ``t0`` is handed back no earlier than
  ``t0 + delay``, and a request is only sent while holding a lease (``t0`` is moved to the
  moment the write of the request headers has returned, ``Lease.mark_sent``: a pause of
  ours between starting that write and finishing it, such as a garbage collection, then
  only holds the lease longer).  So the moment one request's headers have been sent and
  the moment the next request to the host starts are at least ``delay`` apart, whichever
  machines sent them, with no clock ever compared.  With ``delay > 0`` only slot 0 is used
  (serial); with ``delay == 0`` any of the P slots (at most P requests at once).  All
  workers must agree on P (they read one config).
* G6. A token ``slot-<k>.held.<w>.<n>`` whose worker ``is_dead(w)`` is renamed back to
  ``slot-<k>.free`` by whoever sees it first (one rename of one source wins).  Stale tokens
  are looked for only after acquiring has failed for ``stale_after`` seconds; a stale listdir
  only makes a reclaim rename fail harmlessly.  A worker wrongly judged dead (paused,
  partitioned) may overlap one request with the new holder; its own release then finds its
  token gone and does nothing (G3).
* G7. The block file holds no absolute time (clocks differ between machines): a block is
  ``seconds`` long counted from when *each reader first saw* its ``(seq, id)``, on that
  reader's monotonic clock.  A late reader waits longer than needed, never shorter.  Writers
  read-modify-write it with ``atomic_write``; two racing writers may lose one update (a
  failure count off by one), which only shifts the patience heuristic.  The file is read at
  most every ``block_ttl`` seconds per host, so the check costs nothing per request.
* G8 (one process, many requests in flight).  In a gate made with ``deferred=True``, a
  lease whose delay has not passed when it is released is handed to the gate's releaser
  thread, which renames the token back at ``t0 + delay`` (G5 holds: the rename happens no
  earlier), so the thread that used it is free for another host at once.  The gate
  remembers, per host, when its token comes back (:meth:`HostGate.free_at`): a scheduler
  sends nobody to wait at a gate that is known to be closed.  A token given back by this
  process wakes this process's waiters at once (no polling delay between two requests of
  one process).  A stop gives a waiting token back within 0.25 s (G5's prompt exit);
  :meth:`HostGate.close` gives the waiting tokens back at their time, or at once on a stop.
"""

from __future__ import annotations

import errno
import hashlib
import heapq
import json
import logging
import os
import random
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from sitemap_crawler.protocol.fsutil import (
    LOST_RACE,
    TMP_PREFIX,
    atomic_write,
    move_exclusive,
    read_bytes,
)

log = logging.getLogger(__name__)

BLOCK_FILE = "block.json"
_SAFE_RE = re.compile(r"[^a-z0-9.-]")
_HELD_RE = re.compile(r"^slot-(\d+)\.held\.(.+)\.([0-9a-f]+)$")


class Interrupted(Exception):
    """The stop event was set while waiting: the caller should give up promptly."""


def host_key(url: str) -> str:
    """The politeness unit: ``host`` or ``host:port`` when the port is not the default."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is None or (parts.scheme, port) in (("http", 80), ("https", 443)):
        return host
    return f"{host}:{port}"


def safe_host(host: str) -> str:
    """``host`` (maybe ``host:port``) as one directory name; a hash keeps mapped names apart."""
    low = host.strip().lower()
    safe = _SAFE_RE.sub("_", low).strip(".") or "_"
    if safe != low:
        safe = f"{safe}-{hashlib.sha1(low.encode()).hexdigest()[:8]}"
    return safe


@dataclass
class _Block:
    """One reading of block.json; ``key`` names the block for first-seen bookkeeping (G7)."""

    seq: int = 0
    id: str = ""
    seconds: float = 0.0
    reason: str = ""
    consecutive_failures: int = 0
    read_at: float = 0.0  # monotonic time of the reading (cache age)

    @property
    def key(self) -> tuple[int, str]:
        return (self.seq, self.id)

    def to_json(self) -> str:
        return json.dumps({"seq": self.seq, "id": self.id, "seconds": self.seconds,
                           "reason": self.reason,
                           "consecutive_failures": self.consecutive_failures}) + "\n"


class Lease:
    """The right to send one request to a host; ``release()`` keeps it until ``t0 + delay``."""

    def __init__(self, gate: HostGate, host: str, slot: int, free: Path, held: Path,
                 delay: float, stop: threading.Event) -> None:
        self.gate, self.host, self.slot = gate, host, slot
        self.free_path, self.held_path = free, held
        self.delay = delay
        self.stop = stop
        self.t0 = time.monotonic()
        self.released = False

    def mark_sent(self) -> None:
        """The request's headers are out: count the delay from here, not from the grant.

        Connecting and building the request take a variable few ms (measured: 1-7 ms on
        loopback, more for TLS), and the write itself can stall: a worker's first request
        once took 17.7 ms from "headers started" to "headers complete" (measured with the
        trace hook; it was a garbage collection: with ``gc`` disabled the stall was gone).
        Counting from the grant, or from the start of the write, would let the server see
        two requests that much closer than ``delay``.  Moving ``t0`` later only holds longer.
        """
        self.t0 = max(self.t0, time.monotonic())

    def release(self) -> None:
        """Hand the token back once ``delay`` has passed since ``t0`` (G5).

        The wait is cut short if ``stop`` is set (Ctrl+C must be prompt); the one request
        after that may then come early for another worker: the price of a prompt exit.
        """
        if self.released:
            return
        self.released = True
        due = self.t0 + self.delay
        self.gate._note_release(self.host, due, self.delay)
        if self.gate.deferred and due > time.monotonic() and not self.stop.is_set():
            self.gate._release_later(self, due)  # G8: this thread goes on at once
            return
        remaining = due - time.monotonic()
        if remaining > 0:
            self.stop.wait(remaining)
        self.gate._give_back(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def sent_trace(lease: object) -> Callable[[str, dict[str, Any]], None]:
    """An httpcore ``trace`` hook (``extensions={"trace": ...}``) that calls
    ``lease.mark_sent()`` once the request headers have been written (G5)."""

    def trace(event: str, _info: dict[str, Any]) -> None:
        if event.endswith(".send_request_headers.complete") and hasattr(lease, "mark_sent"):
            lease.mark_sent()

    return trace


class HostGate:
    """Rename-token gate per host plus a shared block file; see the module invariants G1–G7."""

    def __init__(self, root: Path, worker_id: str, is_dead: Callable[[str], bool], *,
                 stale_after: float = 5.0, block_ttl: float = 0.5,
                 deferred: bool = False) -> None:
        """``deferred``: releases wait in the gate's releaser thread (G8), so the owner must
        :meth:`close` the gate before it exits; else ``release()`` waits out the delay."""
        if not worker_id or "/" in worker_id or worker_id.startswith("."):
            raise ValueError(f"bad worker id {worker_id!r}")
        self.root = Path(root)
        self.worker_id = worker_id
        self.is_dead = is_dead
        self.stale_after = stale_after
        self.block_ttl = block_ttl
        self.deferred = deferred
        self._dirs: set[str] = set()  # host directories known to exist
        self._ready: set[tuple[str, int]] = set()  # (host, P) whose tokens exist
        self._blocks: dict[str, _Block] = {}
        self._first_seen: dict[str, tuple[tuple[int, str], float]] = {}
        self._lock = threading.Lock()
        # G8: tokens to hand back later (due, seq, lease), when each host's token is back,
        # and the delay it was last held for; a condition wakes local waiters and releaser
        self._later: list[tuple[float, int, Lease]] = []
        self._seq = 0
        self._free_at: dict[str, float] = {}
        self._last_delay: dict[str, float] = {}
        self._given_back: dict[str, list[int]] = {}  # host -> slots we freed, last at the end
        self._returned = threading.Condition()
        self._releaser: threading.Thread | None = None
        self._closed = False

    # -- tokens --------------------------------------------------------------------------

    def host_dir(self, host: str) -> Path:
        path = self.root / safe_host(host)
        if host not in self._dirs:
            _mkdir_shared(path)
            self._dirs.add(host)
        return path

    def slots_dir(self, host: str, parallel: int) -> Path:
        return self.host_dir(host) / f"slots-{parallel}"

    def ensure(self, host: str, parallel: int) -> Path:
        """Create the ``parallel`` tokens of ``host`` unless they exist; racing creators make
        exactly one set (G4).  Returns the slots directory."""
        if parallel < 1:
            raise ValueError("parallel must be >= 1")
        slots = self.slots_dir(host, parallel)
        if (host, parallel) in self._ready:
            return slots
        if not slots.is_dir():
            tmp = slots.with_name(f"{TMP_PREFIX}{slots.name}.{self._nonce()}")
            tmp.mkdir()
            try:
                for k in range(parallel):
                    (tmp / f"slot-{k}.free").write_bytes(b"")
                try:
                    os.rename(tmp, slots)
                except OSError as e:
                    if e.errno not in LOST_RACE:
                        raise
                # Lost (error, or a false success that left our directory behind): the
                # winner's set stands.  Our temporary directory must not survive either way.
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            for _ in range(50):  # the winner's directory may take a moment to show here
                if slots.is_dir():
                    break
                time.sleep(0.02)
            else:
                raise OSError(errno.ENOENT, "host token directory did not appear", str(slots))
        self._ready.add((host, parallel))
        return slots

    def acquire(self, host: str, delay: float, parallel: int,
                stop: threading.Event) -> Lease | None:
        """Wait for a token of ``host``; None if ``stop`` was set meanwhile.

        ``delay > 0``: only slot 0 (one request at a time, starts >= delay apart).
        ``delay == 0``: any of ``parallel`` slots.
        """
        slots = self.ensure(host, parallel)
        candidates = [0] if delay > 0 else list(range(parallel))
        started = time.monotonic()
        next_stale_check = started + self.stale_after
        pause = 0.005
        while not stop.is_set():
            random.shuffle(candidates)
            nonce = self._nonce()  # one per scan: each slot's held name is still unique (G2)
            for k in self._likely_free(host, candidates):
                free = slots / f"slot-{k}.free"
                held = slots / f"slot-{k}.held.{self.worker_id}.{nonce}"
                if move_exclusive(free, held):
                    self._taken(host, k)
                    return Lease(self, host, k, free, held, delay, stop)
            now = time.monotonic()
            if now >= next_stale_check:
                self.reclaim_stale(host, parallel)
                next_stale_check = now + self.stale_after
            # jittered polling: 5-25 ms at first, growing to ~100 ms; a token given back
            # by this process wakes us at once (G8)
            with self._returned:
                self._returned.wait(random.uniform(pause, pause * 5))
            pause = min(pause * 1.5, 0.02)
        return None

    def _likely_free(self, host: str, candidates: list[int]) -> list[int]:
        """``candidates`` with the slots this process gave back last tried first: with
        P slots and one free, a random order tried (P+1)/2 renames (each a failed rename
        and a stat) before the one this process had just handed back.  Only an order: the
        rename still decides (G2)."""
        if len(candidates) < 2:
            return candidates
        with self._returned:
            first = [k for k in reversed(self._given_back.get(host, [])) if k in candidates]
        return first + [k for k in candidates if k not in first] if first else candidates

    def _taken(self, host: str, k: int) -> None:
        """Slot ``k`` is no longer a hint (taken by us, or moved to the end)."""
        with self._returned:  # (a Condition's lock is reentrant: _give_back holds it)
            back = self._given_back.get(host)
            if back and k in back:
                back.remove(k)

    # -- G8: deferred release, free_at -------------------------------------------------

    def free_at(self, host: str) -> float:
        """Monotonic time at which this process last saw ``host``'s token come back (or
        will: a deferred release); 0 when it holds no knowledge.  Another process may hold
        it still: this only says when it is *not* worth trying earlier."""
        return self._free_at.get(host, 0.0)

    def last_delay(self, host: str) -> float:
        """The delay the last lease of ``host`` in this process was held for (robots.txt
        Crawl-delay included), or -1 when none was taken yet."""
        return self._last_delay.get(host, -1.0)

    def _note_release(self, host: str, due: float, delay: float) -> None:
        self._free_at[host] = due
        self._last_delay[host] = delay

    def _release_later(self, lease: Lease, due: float) -> None:
        with self._returned:
            if self._closed:
                later = False
            else:
                self._seq += 1
                heapq.heappush(self._later, (due, self._seq, lease))
                if self._releaser is None:
                    self._releaser = threading.Thread(target=self._release_loop,
                                                      name="gate-releaser", daemon=True)
                    self._releaser.start()
                self._returned.notify_all()
                later = True
        if not later:
            self._give_back(lease)

    def _release_loop(self) -> None:
        while True:
            with self._returned:
                while not self._closed and not self._due_now():
                    wait = self._later[0][0] - time.monotonic() if self._later else None
                    # a stop gives tokens back early (G5's prompt exit): look every 0.25 s
                    self._returned.wait(None if wait is None else min(wait, 0.25))
                if self._closed:
                    return
                ready = [t for t in self._later
                         if t[0] <= time.monotonic() or t[2].stop.is_set()]
                self._later = [t for t in self._later if t not in ready]
                heapq.heapify(self._later)
            for _due, _seq, lease in ready:
                try:
                    self._give_back(lease)
                except OSError as e:  # the token stays held; G6 takes it back when we are gone
                    log.warning("could not give token %s back: %s", lease.held_path.name, e)

    def _due_now(self) -> bool:
        now = time.monotonic()
        return any(due <= now or lease.stop.is_set() for due, _s, lease in self._later)

    def close(self, stop: threading.Event | None = None) -> None:
        """Give every token still waiting for its delay back: at its time (G5 holds after
        we are gone too), or at once when ``stop`` is set (then or meanwhile)."""
        with self._returned:
            last = max((due for due, _s, _l in self._later), default=0.0)
        while stop is not None and not stop.is_set() and time.monotonic() < last:
            stop.wait(min(0.25, last - time.monotonic()))
        with self._returned:
            self._closed = True
            pending, self._later = self._later, []
            self._returned.notify_all()
        for _due, _seq, lease in sorted(pending, key=lambda t: t[0]):
            if stop is not None and not stop.is_set():
                # (the releaser has stopped: the last ones are given back here, on time)
                wait = _due - time.monotonic()
                if wait > 0:
                    stop.wait(wait)
            try:
                self._give_back(lease)
            except OSError as e:
                log.warning("could not give token %s back: %s", lease.held_path.name, e)

    def _give_back(self, lease: Lease) -> None:
        """G3: rename our held token back to ``free``; if it is gone, it was reclaimed."""
        for attempt in range(20):
            try:
                os.rename(lease.held_path, lease.free_path)
                with self._returned:
                    self._taken(lease.host, lease.slot)  # (then last in the hint)
                    back = self._given_back.setdefault(lease.host, [])
                    back.append(lease.slot)
                    del back[:-4]  # a hint, not a record: a few are enough
                    self._returned.notify_all()
                return
            except FileNotFoundError:
                log.warning("token %s was taken back while held (judged dead?)",
                            lease.held_path.name)
                return
            except OSError as e:
                # EBUSY/EACCES: SMB while someone has the file open (a listdir/stat); retry.
                if e.errno not in LOST_RACE or attempt == 19:
                    raise
                time.sleep(0.01 * (attempt + 1))

    def reclaim_stale(self, host: str, parallel: int) -> int:
        """G6: give back tokens held by dead workers; returns how many this call took back."""
        slots = self.slots_dir(host, parallel)
        try:
            names = os.listdir(slots)
        except FileNotFoundError:
            return 0
        taken = 0
        for name in names:
            m = _HELD_RE.match(name)
            if not m or m.group(2) == self.worker_id:
                continue
            try:
                dead = self.is_dead(m.group(2))
            except Exception:  # a broken liveness check must not take tokens
                log.exception("is_dead(%r) failed", m.group(2))
                dead = False
            if not dead:
                continue
            try:
                os.rename(slots / name, slots / f"slot-{m.group(1)}.free")
            except OSError as e:
                if e.errno not in LOST_RACE:
                    raise
                continue
            log.info("took back token %s of dead worker %s", name, m.group(2))
            taken += 1
        return taken

    # -- block file (G7) ----------------------------------------------------------------

    def _read_block(self, host: str, fresh: bool = False) -> _Block:
        now = time.monotonic()
        with self._lock:
            cached = self._blocks.get(host)
        if cached is not None and not fresh and now - cached.read_at < self.block_ttl:
            return cached
        raw = read_bytes(self.host_dir(host) / BLOCK_FILE)
        block = _Block(read_at=now)
        if raw:
            try:
                data: dict[str, Any] = json.loads(raw)
                block = _Block(seq=int(data.get("seq", 0)), id=str(data.get("id", "")),
                               seconds=float(data.get("seconds", 0.0)),
                               reason=str(data.get("reason", "")),
                               consecutive_failures=int(data.get("consecutive_failures", 0)),
                               read_at=now)
            except (ValueError, TypeError, AttributeError):
                log.warning("ignoring unreadable %s of %s", BLOCK_FILE, host)
        self._remember(host, block, now)
        return block

    def _remember(self, host: str, block: _Block, now: float) -> None:
        with self._lock:
            self._blocks[host] = block
            seen = self._first_seen.get(host)
            if seen is None or seen[0] != block.key:
                self._first_seen[host] = (block.key, now)

    def _remaining(self, host: str, block: _Block) -> float:
        if block.seconds <= 0:
            return 0.0
        with self._lock:
            seen = self._first_seen.get(host)
        first = seen[1] if seen is not None and seen[0] == block.key else time.monotonic()
        return max(0.0, first + block.seconds - time.monotonic())

    def _write_block(self, host: str, block: _Block) -> None:
        now = time.monotonic()
        block.read_at = now
        self._remember(host, block, now)  # this worker obeys it even if the write fails
        try:
            atomic_write(self.host_dir(host) / BLOCK_FILE, block.to_json())
        except OSError as e:
            log.warning("could not write %s for %s: %s", BLOCK_FILE, host, e)

    def blocked_for(self, host: str) -> float:
        """Seconds this worker must still wait before sending anything to ``host``."""
        return self._remaining(host, self._read_block(host))

    def block_reason(self, host: str) -> str:
        """Why ``host`` is blocked (what `status` and tests read; "" when it is not)."""
        return self._read_block(host).reason

    def failures(self, host: str) -> int:
        """Consecutive URLs of ``host`` that ended retryable after all retries (patience)."""
        return self._read_block(host).consecutive_failures

    def block(self, host: str, seconds: float, reason: str) -> None:
        """Block ``host`` for every worker for ``seconds`` (a longer block in force stays)."""
        current = self._read_block(host, fresh=True)
        if self._remaining(host, current) >= seconds:
            return
        self._write_block(host, _Block(seq=current.seq + 1, id=self._nonce(), seconds=seconds,
                                       reason=reason,
                                       consecutive_failures=current.consecutive_failures))

    def record_failure(self, host: str) -> int:
        """One more URL of ``host`` ended retryable; returns the shared consecutive count."""
        current = self._read_block(host, fresh=True)
        current.consecutive_failures += 1
        self._write_block(host, current)
        return current.consecutive_failures

    def record_success(self, host: str) -> None:
        """Reset the consecutive failure count; free (no I/O) when it is already zero."""
        if self._read_block(host).consecutive_failures == 0:
            return
        current = self._read_block(host, fresh=True)
        if current.consecutive_failures:
            current.consecutive_failures = 0
            self._write_block(host, current)

    @staticmethod
    def _nonce() -> str:
        return secrets.token_hex(4)


def _mkdir_shared(path: Path) -> None:
    """mkdir -p that tolerates a racing creator (EEXIST, or EPERM on sshfs)."""
    for attempt in range(50):
        try:
            path.mkdir(parents=True, exist_ok=True)
            return
        except OSError as e:
            if e.errno not in LOST_RACE:
                raise
            if path.is_dir():
                return
            if attempt == 49:
                raise
            time.sleep(0.02)


__all__ = ["BLOCK_FILE", "HostGate", "Interrupted", "Lease", "host_key", "safe_host",
           "sent_trace"]


def clear_blocks(root: Path) -> int:
    """Forget every host block (G7) — only when no worker of this state dir is running.

    A block is counted from when each reader first sees it, so without this a block written
    by the last run (a give-up lasts ``max_backoff``) would be served in full again to the
    next one.  The caller (``work``) clears them only when no heartbeat file exists.
    """
    n = 0
    try:
        hosts = list(os.scandir(root))
    except FileNotFoundError:
        return 0
    for h in hosts:
        if h.is_dir():
            try:
                os.unlink(os.path.join(h.path, BLOCK_FILE))
                n += 1
            except FileNotFoundError:
                pass
    return n
