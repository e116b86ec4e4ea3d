"""One worker process: the tickets of every site at once, many URLs of many hosts in flight.

A process runs one :class:`~sitemap_crawler.commands.worker.Worker` per site (its heartbeat,
journal and tickets live in that site's state directory) and one pool of fetch threads that
they share.  The dispatcher (this module, on the process's main thread, and on a fetch
thread whose request just ended: D9) decides which URL goes to a thread next; the worker
does the URL (fetch, convert, write, journal).

Why threads and not an event loop: what a URL waits on is not only sockets.  The host gate
is a rename on what may be a network share (hostgate.py; 1-20 ms on SMB/sshfs), the ticket
and journal moves are file system calls, and conversion is CPU work in lxml.  In an event
loop each of those would stall every request in flight unless sent to a thread anyway; a
thread per URL in flight keeps the tested synchronous fetch, gate and robots code as it
is, and the GIL is released while a thread waits on a socket or a file.

Invariants (D1-D9, with tickets.py T1-T9, hostgate.py G1-G8, journal.py J1-J4):

* D1 (no sleeping on a closed gate).  A URL goes to a thread only when its host has room in
  this process: fewer than :meth:`Dispatcher.cap` of its URLs running (1 when the host has a
  delay, else ``max_parallel_per_host`` split over the local worker processes; 1 as well
  until a URL of the host came back without a failure, and while it fails: a host that is
  down gets one URL at a time, so patience gives it up as early as before; a host whose
  robots.txt answered (D7) but no page yet gets at most ``patience`` at once, as many as
  patience would spend on it anyway) and its
  token known to be back (``HostGate.free_at``, G8).  So while host A's delay runs, the
  threads fetch from B, C, ...; the gate still decides every request (F1), across
  processes and machines.
* D2 (claiming).  A ticket is claimed while a thread is free, or, with every thread busy,
  while fewer than ``UNSTARTED`` held tickets wait for their first URL (a process whose
  threads are all busy converting would else start no new host, and the hosts it did not
  start become the crawl's tail: their delays run after everyone else's).  Best host
  first by its id alone (T9): a host this process holds no ticket of; else one whose held
  tickets have nothing left to start (the tail of a delay-0 host); a ticket of a host that
  already waits here is never claimed (another process is better placed).  Sites are tried
  in turn; a site whose ``pending/`` was empty is looked at again after ``IDLE_RECHECK``.
* D3 (completion).  A ticket completes (T3) when each of its URLs has run, or is handed
  back (T4) with the progress of the URLs that ran; each URL's journal record is written
  before the URL counts as run, and the journal is synced before the ticket moves (J1).
* D4 (a kill).  After a kill -9 the URLs that were in flight have no journal record: the
  reclaimer hands their tickets back with every other URL's progress (T5), so each URL that
  was in flight is fetched once more, and no other.
* D6 (a pause).  A process that was frozen past ``PAUSED_AFTER`` waits ``SETTLE`` and checks
  that it still owns each held ticket (T2) before it starts another URL; the URLs it had in
  flight are caught by W1 after their fetch, as before.  In flight includes a request that
  passed W1 and was frozen before it left (httpx builds it in 1-3 ms): it leaves on the
  wake and its page is fetched twice, once at most, as after a kill (D4).
* D7 (longest first; robots.txt on its own).  Free threads go first to the held ticket
  with the most URLs left: with a delay per host, a crawl ends when its longest chain of
  delays does.  A host's first turn in a process asks its robots.txt alone, so the thread
  is free again when robots.txt answered, instead of waiting out the delay that request
  began for the page behind it (F2: the page's own fetch uses the cached answer).
* D8 (the end).  When the work is over the sites close first (each journal synced and
  closed, J2), the runner is told (``finished``), and only then do the gates wait for
  their last delays (G5) and give the tokens back: the runner folds the journals
  meanwhile instead of after them (200 polite hosts: a delay's time at the end of a
  crawl).  The process still ends only when its tokens are back.
* D9 (the fast path).  When a URL's requests are over, its fetch thread does the loop's
  part itself if it can take the dispatcher's lock at once and no stop or pause is
  pending: the host's count (D1), then that host's next URLs to threads (what the end of
  a request frees is a place at its host; a host with a delay has none before its token
  is back).  Else, or when that started nothing, it tells the loop as before.  Every
  change of the dispatcher's state is made under that lock, by whichever thread, so D1-D8
  hold as written.  Why: the loop's wake-up between an answer and the next request of its
  host was 1.5-2 ms of the ~7 ms turnaround measured on one host with delay 0 (100 ms
  answers, 8 at once).
* D5 (a stop).  On a stop no URL is started; running ones end promptly (gate and backoff
  waits are ``stop.wait``, F5) and every held ticket is handed back with its progress.
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitemap_crawler.commands.worker import TicketLost, Worker
from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer
from sitemap_crawler.protocol.hostgate import HostGate, host_key
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import Claimed, TicketName, ticket_host

log = logging.getLogger(__name__)
IDLE_RECHECK = 1.0  # seconds before a site whose pending/ was empty is listed again
MAX_WAIT = 0.2  # the dispatcher looks around at least this often
IDLE_POLL, IDLE_POLL_SITES = 0.05, 8  # an idle process of few sites waits on others' tickets
PAUSED_AFTER = 3.0  # seconds between two turns of the loop that mean we were frozen (D6)
SETTLE = 1.0  # seconds to let a share show the others' renames after such a pause
HELD_PER_THREAD = 8  # tickets held per fetch thread: a host with a delay needs a thread
# for a fraction of its time only, so many more hosts than threads can be kept busy
UNSTARTED = 2  # new tickets a process with every thread busy keeps ready (D2)


@dataclass
class _Held:
    """A claimed ticket: the URLs not yet started, and how many are running."""

    worker: Worker
    c: Claimed
    todo: deque[tuple[dict[str, Any], str]]  # (URL entry, its host key), in ticket order
    tag: str | None
    running: int = 0
    lost: bool = False
    started: bool = False  # a URL (or its host's robots.txt) was given to a thread


def _left(h: _Held) -> int:
    return len(h.todo)


class PauseWatch:
    """D6: tells whether this process was just frozen, from any thread.

    A thread ticks every ``TICK`` seconds.  :meth:`settle` sees a pause either way round
    after a SIGCONT: the tick is older than ``PAUSED_AFTER`` (the ticker has not run yet),
    or the ticker saw the gap and noted when we woke; then it waits until ``SETTLE`` after
    the wake, so that what others renamed meanwhile shows on a share, and returns True."""

    TICK = 0.1

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.tick = time.monotonic()
        self.woke = self.tick - SETTLE
        self._done = threading.Event()
        threading.Thread(target=self._run, name="pause-watch", daemon=True).start()

    def close(self) -> None:
        self._done.set()

    def _run(self) -> None:
        while not self._done.wait(self.TICK):
            now = time.monotonic()
            if now - self.tick > PAUSED_AFTER:
                self.woke = now
            self.tick = now

    def calm(self) -> bool:
        """No pause seen lately (D9: a fetch thread may dispatch); never waits."""
        now = time.monotonic()
        return now - self.tick <= PAUSED_AFTER and now - self.woke >= SETTLE

    def settle(self) -> bool:
        now = time.monotonic()
        if now - self.tick > PAUSED_AFTER:
            self.woke = max(self.woke, now)
        if now - self.woke >= SETTLE:
            return False
        log.info("this worker was frozen: waiting %.1f s for the share before going on",
                 SETTLE)
        self.stop.wait(self.woke + SETTLE - now)
        return True


@dataclass(eq=False)
class _Job:
    """One URL on a fetch thread; ``fetched`` once its host no longer counts it busy.
    A ``robots`` job asks the host's robots.txt only (D7), for the URL still in todo."""

    h: _Held
    host: str
    fetched: bool = False
    robots: bool = False
    answered: bool = False  # a robots job: the host answered it (D1 counts that as proof)


@dataclass
class _Gate:
    """The process's gate on one shared gate directory, and the heartbeat that tells
    other processes that the tokens it holds are held by a live worker (G6)."""

    gate: HostGate
    heartbeat: Heartbeat


class Dispatcher:
    """Many sites, many hosts, ``max_in_flight`` URLs at once; see D1-D8."""

    def __init__(self, workers: list[Worker], stop: threading.Event, *, max_in_flight: int,
                 local_workers: int = 1,
                 finished: Callable[[dict[str, Counter[str]]], None] | None = None) -> None:
        """``finished``: told each site's totals once the work is over and every journal is
        closed, before the last tokens' delays run out (D8)."""
        self.workers = workers
        self.finished = finished
        self.stop = stop
        self.max_in_flight = max(1, max_in_flight)
        self.local_workers = max(1, local_workers)
        self.held: list[_Held] = []
        self.running: set[_Job] = set()
        self._events: queue.SimpleQueue[tuple[_Job, str, BaseException | None]] = \
            queue.SimpleQueue()
        self.busy: Counter[str] = Counter()  # host key -> URLs of it running here
        self.fatal: BaseException | None = None
        self._gates: dict[Path, _Gate] = {}
        self._gate_lock = threading.Lock()
        self._idle: dict[str, float] = {}  # site -> when its pending/ was seen empty
        self._held_tags: dict[str | None, bool] = {}
        self._turn = 0  # the site tried first for the next claim (round robin)
        self._proven: set[str] = set()  # hosts that answered a URL without a failure
        self._robots_ok: set[str] = set()  # hosts whose robots.txt answered here (D1)
        self._unstarted = 0  # held tickets none of whose URLs went to a thread yet (D2)
        self._robots_asked: set[str] = set()  # hosts whose robots.txt had a job (D7)
        self.watch = PauseWatch(stop)  # D6
        self._lock = threading.RLock()  # D9: the state above, between the loop and threads
        for w in workers:
            w.settle = self.watch.settle  # W1 right before a request waits for it too

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> dict[str, Counter[str]]:
        """Work until no site has work left, or a stop; each site's totals."""
        self._executor = ThreadPoolExecutor(self.max_in_flight, thread_name_prefix="fetch")
        try:
            self._open_all()
            self._loop()
        except BaseException as e:
            self.fatal = self.fatal or e
            self.stop.set()
        finally:
            try:
                self._drain()
            finally:
                self._executor.shutdown(wait=True)
                self._close()
        if self.fatal is not None:
            raise self.fatal
        return {w.site.name: w.stats for w in self.workers}

    def _loop(self) -> None:
        while not self.stop.is_set() and self.fatal is None:
            with self._lock:
                self._after_a_pause()
                self._dispatch()
                if self._wants_tickets() and self._claim():
                    continue  # dispatch from it at once
                busy = bool(self.running or self.held)
                timeout = self._next_ready() if busy else 0.0
            if busy:
                self._wait(timeout)
                continue
            if any(w.opened and w.housekeeping() for w in self.workers):
                continue
            if not any(w.queue.has_work() for w in self.workers):
                return
            # Others hold tickets: look again soon (they may finish, or die and need
            # reclaiming, which needs our heartbeat in that site first: H1).
            for w in self.workers:
                if not w.opened and w.queue.has_work():
                    self._open(w)
            self._idle.clear()
            # A few sites: look often, since this is how a process learns that the others'
            # last tickets are done (one host, delay 0: up to MAX_WAIT after the last page
            # was 1 % of the crawl); many sites: a listing each costs more than it saves.
            self.stop.wait(IDLE_POLL if len(self.workers) <= IDLE_POLL_SITES else MAX_WAIT)

    def _after_a_pause(self) -> None:
        """D6: after this process was frozen (SIGSTOP, a suspended VM), start nothing until
        the share shows what others did meanwhile (SMB shows a rename to another mount
        within 0.7 s), then drop the tickets that were taken back: else every free thread
        would start a URL of a ticket that is no longer ours on a stale view."""
        if not self.watch.settle():
            return
        for h in list(self.held):
            if not h.lost and not h.worker.queue.owned(h.c):
                h.lost = True
                h.todo.clear()
                self._started(h)
                if h.running == 0:
                    self.held.remove(h)
                    h.worker.complete(h.c, lost=True)

    # -- D1 ----------------------------------------------------------------------------------
    def cap(self, w: Worker, host: str) -> int:
        """URLs of ``host`` this process may run at once (D1)."""
        s = w.s
        if s.request_delay > 0 or w.gate.last_delay(host) > 0:
            return 1
        if w.gate.failures(host) > 0:
            return 1  # a host that fails gets one URL at a time (patience)
        share = max(1, math.ceil(s.max_parallel_per_host / self.local_workers))
        if host in self._proven:
            return share
        # slow start: robots.txt answered (a static file may answer while the pages fail),
        # or nothing yet
        return min(share, s.patience or 1) if host in self._robots_ok else 1

    def _dispatch(self, only: str | None = None) -> int:
        """Give free threads the URLs whose hosts have room (D1, D7), or only those of the
        host ``only`` (D9); how many went."""
        if len(self.running) >= self.max_in_flight:
            return 0
        sent = len(self.running)
        now = time.monotonic()
        held = self.held if only is None else \
            [h for h in self.held if h.todo and h.todo[0][1] == only]
        # D7: the ticket with the most URLs left first (stable: else the oldest claim)
        for h in sorted(held, key=_left, reverse=True):
            while h.todo and not h.lost and len(self.running) < self.max_in_flight:
                entry, host = h.todo[0]
                if self.busy[host] >= self.cap(h.worker, host) or \
                        h.worker.gate.free_at(host) > now:
                    break
                self._started(h)
                if host not in self._robots_asked and h.worker.robots_first(entry["url"]):
                    self._robots_asked.add(host)
                    self._submit(_Job(h, host, robots=True), entry)
                    break
                h.todo.popleft()
                h.running += 1
                self._submit(_Job(h, host), entry)
        return len(self.running) - sent

    def _started(self, h: _Held) -> None:
        """``h`` no longer waits for its first URL (D2 counts those that do)."""
        if not h.started:
            h.started = True
            self._unstarted -= 1

    def _submit(self, job: _Job, entry: dict[str, Any]) -> None:
        self.busy[job.host] += 1
        self.running.add(job)
        self._executor.submit(self._job, job, entry)

    def _next_ready(self) -> float:
        """Seconds until a held host's token is known to be back (D1), at most MAX_WAIT."""
        if len(self.running) >= self.max_in_flight:
            # no thread to give it to: wait for a thread's word (else a ready host made
            # this loop spin, taking the GIL from the threads converting pages)
            return MAX_WAIT
        now = time.monotonic()
        soonest = MAX_WAIT
        for h in self.held:
            if h.todo and not h.lost:
                host = h.todo[0][1]
                if self.busy[host] < self.cap(h.worker, host):
                    soonest = min(soonest, max(0.0, h.worker.gate.free_at(host) - now))
        return soonest

    def _job(self, job: _Job, entry: dict[str, Any]) -> None:
        """On a fetch thread: one URL; the dispatcher hears when its request is over (the
        host has room again while the page converts) and when the URL is done."""
        try:
            if job.robots:
                job.answered = job.h.worker.fetcher.prefetch_robots(entry["url"])
            else:
                job.h.worker.run_one(job.h.c, entry, fetched=lambda: self._fetched(job))
        except BaseException as e:
            self._events.put((job, "done", e))
        else:
            self._events.put((job, "done", None))

    def _fetched(self, job: _Job) -> None:
        """On the fetch thread, when ``job``'s requests are over: D9's fast path, or a word
        to the loop."""
        if self._lock.acquire(blocking=False):
            try:
                self._collect(job, "fetched", None)
                if not self.stop.is_set() and self.fatal is None and self.watch.calm() \
                        and self._dispatch(only=job.host):
                    return
            except BaseException as e:  # a bug of ours stops the process, as on the loop;
                self.fatal = self.fatal or e  # it is not this URL's failure
                self.stop.set()
            finally:
                self._lock.release()
        self._events.put((job, "fetched", None))  # (a second "fetched" changes nothing)

    def _wait(self, timeout: float) -> None:
        """Take what the fetch threads said (waiting up to ``timeout``: the next gate
        opening)."""
        if not self.running:
            self.stop.wait(timeout)
            return
        try:
            event = self._events.get(timeout=timeout) if timeout > 0 else \
                self._events.get_nowait()
        except queue.Empty:
            return
        with self._lock:
            while True:
                self._collect(*event)
                try:
                    event = self._events.get_nowait()
                except queue.Empty:
                    return

    def _collect(self, job: _Job, what: str, error: BaseException | None) -> None:
        h = job.h
        if not job.fetched:  # the host's request is over either way
            job.fetched = True
            self.busy[job.host] -= 1
            if job.host not in self._proven and h.worker.gate.failures(job.host) == 0:
                if not job.robots:
                    self._proven.add(job.host)
                elif job.answered:
                    self._robots_ok.add(job.host)
        if what == "fetched":
            return
        self.running.discard(job)
        if job.robots:  # its URL is still in todo; a bug there stops us as any would
            if error is not None:
                self.fatal = self.fatal or error
                self.stop.set()
            return
        h.running -= 1
        if isinstance(error, TicketLost):
            h.lost = True
            h.todo.clear()
        elif error is not None:  # WorkerFatal, or a bug outside a URL: stop this process
            self.fatal = self.fatal or error
            self.stop.set()
        if h.running == 0 and (h.lost or not h.todo):
            self.held.remove(h)
            h.worker.complete(h.c, lost=h.lost)
            if h.worker.found_work:  # its link fold wrote tickets: no idle wait for them
                h.worker.found_work = False
                self._idle.pop(h.worker.site.name, None)

    # -- D2 ----------------------------------------------------------------------------------
    def _wants_tickets(self) -> bool:
        """D2: claim while a thread is free, and also while every thread is busy but fewer
        than ``UNSTARTED`` held tickets wait for their first URL: the threads' next turns
        go to new tickets first (D7), so a busy process keeps starting hosts."""
        return len(self.running) < self.max_in_flight or self._unstarted < UNSTARTED

    def _claim(self) -> bool:
        """Claim one ticket worth having (D2); True if one was claimed."""
        if len(self.held) >= self.max_in_flight * HELD_PER_THREAD:
            return False
        # per host held here: whether a ticket of it still has URLs to start (for _rank)
        self._held_tags.clear()
        for h in self.held:
            self._held_tags[h.tag] = self._held_tags.get(h.tag, False) or bool(h.todo)
        n = len(self.workers)
        now = time.monotonic()
        for i in range(n):
            w = self.workers[(self._turn + i) % n]
            if now - self._idle.get(w.site.name, -IDLE_RECHECK) < IDLE_RECHECK:
                continue
            if not w.opened:
                if w.queue.pending_at_most(0):
                    self._idle[w.site.name] = now
                    continue
                self._open(w)
            c = w.claim(self._rank)
            if c is None:
                if not w.queue.view.size:  # listed empty just now (T10), not merely unwanted
                    self._idle[w.site.name] = now
                continue
            self._turn = (self._turn + i + 1) % n
            todo = deque((e, host_key(e["url"])) for e in c.remaining())
            if not todo:  # every URL done before a crash (T5 progress): finish it now
                w.complete(c)
                return True
            self.held.append(_Held(w, c, todo, ticket_host(c.ticket_id)))
            self._unstarted += 1
            return True
        return False

    def _rank(self, name: TicketName) -> int | None:
        """0: a host this process holds no ticket of; 1: no host in the id (T9); 2: a host
        whose held tickets have nothing left to start; None: a host already waiting here."""
        tag = ticket_host(name.ticket_id)
        if tag is None:
            return 1
        waiting = self._held_tags.get(tag)
        if waiting is None:
            return 0
        return None if waiting else 2

    # -- opening and closing -----------------------------------------------------------------
    def _open(self, w: Worker) -> None:
        state = StateDir(w.site.state_dir)
        root = state.gate_root
        with self._gate_lock:  # _open_all opens sites on several threads
            g = self._gates.get(root) or self._new_gate(w, state)
        w.open(g.gate)

    def _new_gate(self, w: Worker, state: StateDir) -> _Gate:
        """The process's gate on ``state``'s shared gate directory, with its heartbeat."""
        root = state.gate_root
        s = w.s.crawl_state
        state.ensure()
        for d in (root, state.gate_workers):
            d.mkdir(parents=True, exist_ok=True)
        observer = Observer(state.gate_workers, s.heartbeat_timeout)
        hb = Heartbeat(state.gate_workers, w.wid, s.heartbeat_interval,
                       on_fail=self.stop.set).start()
        gate = HostGate(root, w.wid, observer.is_dead, deferred=True)
        g = self._gates[root] = _Gate(gate, hb)
        return g

    def _open_all(self) -> None:
        """Open every site with pending tickets at once, on the fetch threads: opening is a
        few file creations and fsyncs per site (heartbeat, journal), and one after another
        they held back the first request of the 200th host by seconds."""
        todo = [w for w in self.workers if not w.opened and not w.queue.pending_at_most(0)]
        if len(todo) < 2:
            return
        for fut in [self._executor.submit(self._open, w) for w in todo]:
            fut.result()

    def _drain(self) -> None:
        """D5: let running URLs end, then hand every held ticket back with its progress."""
        while self.running:
            event = self._events.get()
            with self._lock:
                self._collect(*event)
        for h in list(self.held):
            self.held.remove(h)
            if h.lost:
                h.worker.complete(h.c, lost=True)
                continue
            with contextlib.suppress(OSError):
                h.worker.hand_back(h.c)

    def _close(self) -> None:
        """D8: the sites first (journals closed: the runner may fold them now), then the
        gates, whose last tokens go back when their delays are over."""
        self.watch.close()

        def close(w: Worker) -> BaseException | None:
            try:
                w.close()
            except BaseException as e:
                return e
            return None

        # Side by side, as _open_all opens them: each site closes its journal (an fsync and
        # a rename) and its heartbeat; one after another, 200 sites took ~1 s at the end.
        with ThreadPoolExecutor(min(16, len(self.workers) or 1)) as pool:
            errors = [e for e in pool.map(close, self.workers) if e is not None]
        if errors and self.fatal is None:
            self.fatal = errors[0]
        try:
            if self.fatal is None and self.finished is not None:
                self.finished({w.site.name: w.stats for w in self.workers})
        finally:
            for g in self._gates.values():
                g.gate.close(self.stop)  # a normal end keeps the last delays (G5); a stop not
            for g in self._gates.values():
                with contextlib.suppress(OSError):
                    g.heartbeat.stop(remove=True)


__all__ = ["Dispatcher", "PauseWatch"]
