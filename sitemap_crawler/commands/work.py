"""`work`: start worker processes for a site, show progress, stop them cleanly, merge results.

Signals: the first SIGINT/SIGTERM asks every worker to stop after its in-flight request (cut
after a second's grace, fetch/netguard.py) and hand its ticket back with its progress; a second
one within 3 s ends everything at once (the tickets of the killed workers are taken back by the
next run: nothing is lost or torn, because every file is written by rename).  A worker process
that receives a signal on its own (e.g. a ``kill`` of one pid) stops alone; the others go on
and take over its work.

Long runs: SIGHUP re-reads config.yaml in the runner; a valid config is handed to every
worker, which takes it between two URLs (a bad one is refused with one log line and the old
settings stay).  Workers ignore a SIGHUP of their own (a closed terminal hangs up the whole
group) and stop, handing their tickets back, when the runner is gone, so no worker outlives
it.  ``max_duration`` and ``max_total_size`` stop the workers as the first Ctrl+C does; the
totals then say ``stopped`` and the exit code stays 0 (work is left, nothing failed).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing as mp
import os
import queue as queue_mod
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sitemap_crawler import logs
from sitemap_crawler.commands import report
from sitemap_crawler.commands.worker import fold_links, frontier_for
from sitemap_crawler.config import Site, load_config
from sitemap_crawler.errors import CrawlerError, CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.heartbeat import Observer
from sitemap_crawler.protocol.hostgate import clear_blocks
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketQueue
from sitemap_crawler.timestamps import utcnow

log = logging.getLogger(__name__)
SECOND_SIGNAL_WINDOW = 3.0
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # glibc's mallopt parameters (malloc.h)


def bound_malloc() -> None:
    """Keep a long-running worker's or runner's C heap flat (glibc; elsewhere nothing is done).

    glibc raises its mmap threshold each time a large block is freed; blocks of that size
    then come from the heaps and stay there, one heap per thread (up to 8 a core).  In a
    300,000-page crawl the workers' malloc heaps grew from 14.5 to 19 MiB in 3 minutes while
    Python's own memory stayed flat (bench/RESULTS.md, issue 22).  A fixed threshold hands
    large blocks back to the system when they are freed, and two heaps serve every thread."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 128 * 1024)  # glibc's own starting value, no longer raised
    mallopt(_M_ARENA_MAX, 2)


def _child(sites: list[Site], shared_stop: Any, q: Any, inbox: Any, written: Any,
           parent_pid: int, local_workers: int) -> None:
    """Entry point of a worker process (forked on Linux, spawned elsewhere): every site at
    once (dispatch.py).

    ``inbox`` brings newer settings after a SIGHUP; ``written`` is the markdown bytes all
    workers of this crawl wrote while a max_total_size is set (checked after every URL, not
    a progress report later; what was written before one is set is added at the next URL)."""
    bound_malloc()
    logs.setup_from_env()
    local_stop = threading.Event()
    first: list[float] = []

    def on_signal(signum: int, _frame: Any) -> None:
        now = time.monotonic()
        if first and now - first[0] < SECOND_SIGNAL_WINDOW:
            os._exit(130)
        first[:] = [now]
        local_stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the runner reloads and tells us

    def follow_parent() -> None:
        while not shared_stop.wait(1.0):
            if os.getppid() != parent_pid:  # the runner died (kill -9): no orphan crawls on
                logging.getLogger(__name__).warning(
                    "the runner (pid %d) is gone: this worker stops", parent_pid)
                break
        local_stop.set()

    threading.Thread(target=follow_parent, daemon=True).start()
    from sitemap_crawler.commands.dispatch import Dispatcher
    from sitemap_crawler.commands.worker import Worker, WorkerFatal

    limits = [min_limits(sites)]
    newest: dict[str, Site] = {}
    inbox_lock = threading.Lock()

    def reload_for(name: str) -> Site | None:
        if shared_stop.is_set():  # now, not when follow_parent's thread next runs
            local_stop.set()
        with inbox_lock:
            with contextlib.suppress(queue_mod.Empty, OSError, EOFError):
                while True:
                    for new in inbox.get_nowait():
                        newest[new.name] = new
                        limits[0] = min_limits([*newest.values()])
            return newest.pop(name, None)

    unshared = [0]  # bytes written here and not yet added to the shared count
    unshared_lock = threading.Lock()

    def tally(delta: Counter[str]) -> None:
        """After every URL, on its fetch thread.  The count shared by the crawl's processes
        is a lock across them: taken after every page by 4 x 32 threads, the threads were
        seen waiting on it 40 % of their time late in a 1,000,000-page crawl.  So without a
        max_total_size it is added to only once one is set (a SIGHUP)."""
        if not delta["written"]:
            return
        limit = limits[0][1]
        with unshared_lock:
            unshared[0] += delta["written"]
            if not limit:
                return
            add, unshared[0] = unshared[0], 0
        with written.get_lock():
            written.value += add
            total = written.value
        if total >= limit:
            shared_stop.set()  # every worker stops before its next URL; the runner says why
            local_stop.set()

    wid = new_worker_id()
    workers = [Worker(site, wid, local_stop,
                      report=lambda c, n=site.name: q.put(("progress", n, dict(c))),
                      tally=tally, reload=lambda n=site.name: reload_for(n))
               for site in sites]
    told: list[bool] = []

    def finished(stats: dict[str, Counter[str]]) -> None:
        """Dispatch D8: the runner may fold our closed journals while our last delays run."""
        q.put(("done", "", {k: dict(v) for k, v in stats.items()}))
        told.append(True)

    try:
        Dispatcher(workers, local_stop, max_in_flight=min(s.settings.in_flight() for s in sites),
                   local_workers=local_workers, finished=finished).run()
    except WorkerFatal as e:
        logging.getLogger(__name__).error("worker %s stopped: %s", wid, e)
        if not told:  # the runner counts one word per worker
            q.put(("fatal", "", str(e)))
        sys.exit(1)
    except Exception as e:  # a bug or an I/O error we did not foresee: one line, not a dump
        lg = logging.getLogger(__name__)
        lg.error("worker %s stopped by an unexpected %s: %s; its tickets will be taken back",
                 wid, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        lg.debug("worker %s traceback", wid, exc_info=True)
        sys.exit(1)


def min_limits(sites: list[Site]) -> tuple[float, int]:
    """The run's ``max_duration`` and ``max_total_size``: the smallest a site sets (0: none).
    One run works every site at once, so the first limit reached stops it."""
    durations = [s.settings.max_duration for s in sites if s.settings.max_duration]
    sizes = [s.settings.max_total_size for s in sites if s.settings.max_total_size]
    return (min(durations) if durations else 0.0, min(sizes) if sizes else 0)


class Display:
    """rich progress on a terminal, a plain line every 10 s otherwise.

    The total is what the tickets held at the start plus the URLs link folds queued since
    (``links_queued``), never less than what is done: link following finds its work as it
    goes, so a total fixed at the start read ``278/1 URLs ... ETA -10s``."""

    def __init__(self, site: str, total: int | Callable[[], int]) -> None:
        self.site, self.t0 = site, time.monotonic()
        self.total: int | None = total if isinstance(total, int) else None
        if not isinstance(total, int):  # counted beside the crawl, not before it starts
            threading.Thread(target=self._count, args=(total,), daemon=True).start()
        self.last_line = self.t0
        self.progress = None
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                                     TimeRemainingColumn(), transient=True)
            self.progress.start()
            self.task = self.progress.add_task(site, total=self.total, rate="")

    def _count(self, total: Callable[[], int]) -> None:
        with contextlib.suppress(OSError):
            self.total = total()

    def update(self, totals: Counter[str], workers: int) -> None:
        done = totals["urls"]
        # None while the waiting tickets are still being counted: "?" rather than a guess
        total = None if self.total is None else max(self.total + totals["links_queued"], done)
        dt = max(1e-6, time.monotonic() - self.t0)
        rate = done / dt
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total,
                                 rate=f"{rate:.1f} pages/s, {workers} workers")
        elif time.monotonic() - self.last_line >= 10:
            self.last_line = time.monotonic()
            eta = f"{(total - done) / rate:.0f}s" if rate > 0 and total is not None else "?"
            log.info("%s: %d/%s URLs, %.1f pages/s, %d workers, ETA %s", self.site, done,
                     "?" if total is None else total, rate, workers, eta)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def work_here(site: Site) -> Counter[str]:
    """One worker in this process (``api.work(workers=0)``, a notebook), with the limits
    ``run_sites`` honours: ``max_duration`` and ``max_total_size`` stop it as a Ctrl+C
    would (in-flight URLs finish, tickets go back with their progress) and the totals,
    manifest and report say ``stopped``."""
    from sitemap_crawler.commands.worker import Worker

    limits = min_limits([site])
    max_duration, max_total_size = limits
    stop = threading.Event()
    lock = threading.Lock()
    written = [0]

    def tally(delta: Counter[str]) -> None:  # after every URL, from the fetch threads
        with lock:
            written[0] += delta["written"]
            if max_total_size and written[0] >= max_total_size:
                stop.set()

    timer = threading.Timer(max_duration, stop.set) if max_duration else None
    t0 = time.monotonic()
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        totals = Worker(site, new_worker_id(), stop, tally=tally).run()
    finally:
        if timer is not None:
            timer.cancel()
    totals["seconds"] = round(time.monotonic() - t0, 3)  # type: ignore[assignment]
    stopped = _limit_reached(limits, time.monotonic() - t0, written[0]) if stop.is_set() \
        else ""
    if stopped:
        totals["stopped"] = stopped  # type: ignore[assignment]
        log.warning("%s: %s reached: the rest waits for the next run", site.name, stopped)
    finish_crawl(site, totals, interrupted=False)
    return totals


def run_site(config_path: Path, site: Site, workers: int) -> Counter[str]:
    """Run ``workers`` processes on ``site`` until no work is left (or a stop)."""
    return run_sites(config_path, [site], workers)[site.name]


def run_sites(config_path: Path, sites: list[Site], workers: int) -> dict[str, Counter[str]]:
    """Run ``workers`` processes on every site at once until no work is left (or a stop);
    each site's totals.  Every site's journals are merged at the end (finish_crawl)."""
    # Fork where we can: the children inherit the imported modules instead of paying ~0.4 s
    # of CPU each to import them again (it was 16 % of a 5,000-URL all-304 re-crawl).  No
    # thread runs in this process before the children are started.
    import sitemap_crawler.commands.dispatch  # noqa: F401  (preloaded for the forked children)
    from sitemap_crawler.fetch.client import preload

    # the runner too: its end-of-crawl report and merge free and allocate arrays of up to
    # ~16 MiB in turn (1M pages: merge peak 128 -> 110 MiB, bench/RESULTS.md)
    bound_malloc()
    preload()

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    states = [StateDir(s.state_dir) for s in sites]
    gates = {st.gate_root: st.gate_workers for st in states}
    for root, gate_workers in gates.items():
        if not Observer(gate_workers, 0).known_workers():
            cleared = clear_blocks(root)  # nobody is running: old blocks are history
            if cleared:
                log.info("forgot %d host block(s) left by an earlier run", cleared)
    ctx = mp.get_context(method)
    stop = ctx.Event()
    q = ctx.Queue()
    written = ctx.Value("q", 0)
    inboxes = [ctx.Queue() for _ in range(workers)]

    def total() -> int:  # reads every waiting ticket: on a share, seconds for 10,000 of them
        return sum(TicketQueue(st, "runner").remaining_urls() for st in states)

    procs = [ctx.Process(target=_child, args=(sites, stop, q, inboxes[i], written, os.getpid(),
                                              workers), name=f"worker-{i}")
             for i in range(workers)]
    signals: list[float] = []
    hups: list[int] = []
    current = {s.name: s for s in sites}  # as last reloaded (SIGHUP): the limits in force

    def on_signal(signum: int, _frame: Any) -> None:
        now = time.monotonic()
        if signals and now - signals[0] < SECOND_SIGNAL_WINDOW:
            for p in procs:
                with contextlib.suppress(Exception):
                    p.kill()
            log.warning("stopped at once; unfinished tickets go back to pending on the next run")
            os._exit(130)
        signals[:] = [now]
        stop.set()
        log.warning("stopping: workers finish their in-flight requests and hand their tickets "
                    "back (press Ctrl+C again within 3 s to quit at once)")

    def on_hup(signum: int, _frame: Any) -> None:
        hups.append(signum)  # the loop below reloads: no file I/O in a signal handler

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    old[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    totals: dict[str, Counter[str]] = {s.name: Counter() for s in sites}
    fatal: list[str] = []
    stopped = ""
    t0 = time.monotonic()
    for p in procs:
        p.start()
    label = sites[0].name if len(sites) == 1 else f"{len(sites)} sites"
    display = Display(label, total)  # its refresh thread starts after the fork
    try:
        finished = 0
        while finished < len(procs):
            if hups:
                hups.clear()
                new = [n for n in (reload_site(config_path, s) for s in current.values()) if n]
                if new:
                    current.update({n.name: n for n in new})
                    for inbox in inboxes:
                        inbox.put(new)
            if not stop.is_set():
                stopped = _limit_reached(min_limits([*current.values()]),
                                         time.monotonic() - t0, written.value)
                if stopped:
                    log.warning("%s: %s reached: workers finish their in-flight requests and "
                                "hand their tickets back", label, stopped)
                    stop.set()
            try:
                kind, name, data = q.get(timeout=0.5)
            except queue_mod.Empty:
                alive = sum(p.is_alive() for p in procs)
                if alive == 0:
                    break
                display.update(_sum(totals), alive)
                continue
            if kind == "progress":
                totals[name].update(data)
            else:
                finished += 1
                if kind == "fatal":
                    fatal.append(data)
            display.update(_sum(totals), sum(p.is_alive() for p in procs))
    finally:
        display.close()
        for s, h in old.items():
            signal.signal(s, h)
    seconds = round(time.monotonic() - t0, 3)
    interrupted = bool(signals)
    if stop.is_set() and not interrupted and not stopped:
        # a worker stopped everyone: the shared byte count passed max_total_size
        stopped = _limit_reached(min_limits([*current.values()]), 0.0,
                                 written.value) or "max_total_size"
    # A worker that said "done" may still be giving its last tokens back (dispatch D8): its
    # journals are closed, so the merges below run meanwhile; it is waited for after them.
    died = [p for p in procs if p.exitcode not in (0, None)]
    for site in current.values():
        t = totals[site.name]
        t["seconds"] = seconds  # type: ignore[assignment]
        if interrupted:
            t["interrupted"] = 1
        elif stopped:
            t["stopped"] = stopped  # type: ignore[assignment]
        if died:
            t["workers_died"] = len(died)
    # Each site's merge and report touch only its own state directory; side by side, the
    # fsync waits of one overlap the others' (200 small sites: 19 % of the crawl's CPU and
    # seconds of wall time one after another).
    with ThreadPoolExecutor(min(8, len(current))) as pool:
        for fut in [pool.submit(finish_crawl, site, totals[site.name], interrupted)
                    for site in current.values()]:
            fut.result()
    for p in procs:
        p.join(timeout=30)
    if fatal:
        raise CrawlError(f"{label}: {fatal[0]}; the tickets went back to pending and "
                         "nothing written was lost")
    if died and not stop.is_set():
        log.warning("%s: %d worker process(es) ended abnormally; a live worker takes their "
                    "tickets back (with their progress)", label, len(died))
    return totals


def _sum(totals: dict[str, Counter[str]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for t in totals.values():
        out.update(t)
    return out


def _limit_reached(limits: tuple[float, int], seconds: float, written: int) -> str:
    """Which limit of a crawl is reached, or ''."""
    max_duration, max_total_size = limits
    if max_duration and seconds >= max_duration:
        return "max_duration"
    if max_total_size and written >= max_total_size:
        return "max_total_size"
    return ""


def reload_site(config_path: Path, site: Site) -> Site | None:
    """config.yaml read again on SIGHUP: the site's new settings, or None (and one log line)
    when the file is not valid or moved what must not move during a crawl."""
    try:
        new = load_config(config_path).site(site.name)
    except CrawlerError as e:
        log.error("SIGHUP: config not reloaded, keeping the old settings: %s", e)
        return None
    if (new.state_dir, new.base_dir) != (site.state_dir, site.base_dir):
        log.error("SIGHUP: config not reloaded, keeping the old settings: %s: the output or "
                  "state directory cannot change during a crawl", site.name)
        return None
    log.info("SIGHUP: %s reloaded; workers use it from their next URL", config_path)
    return new


def finish_crawl(site: Site, totals: Counter[str], interrupted: bool) -> None:
    """Fold the journals into url-index.json and add this crawl to the manifest's history."""
    state = StateDir(site.state_dir)
    observer = Observer(state.workers, site.settings.crawl_state.heartbeat_timeout)
    wid = new_worker_id()
    entry = {"finished_at": utcnow(), "run": logs.run_id(), **totals, "interrupted": interrupted}
    rep = report.build(state, site.name, entry)  # before the merge: journals keep timings
    frontier = frontier_for(site, state) if site.settings.follow_links else None
    url_index.merge(state, wid, observer.is_dead, observer.is_dead, site.base_dir, frontier,
                    lock_timeout=site.settings.crawl_state.heartbeat_timeout)
    manifest = state.read_manifest()
    history = manifest.setdefault("crawls", [])
    history.append(entry)
    del history[:-50]
    manifest["last_crawl"] = history[-1]
    state.write_manifest(manifest)
    try:
        report.write(state, rep)
    except OSError as e:  # the crawl's results are safe; only its report is missing
        log.warning("%s: could not write the crawl report: %s", site.name, e)


def summary(site: str, t: Counter[str]) -> str:
    secs = float(t.get("seconds", 0)) or 1e-9
    urls = t["urls"]
    skipped = {k.split(":", 1)[1]: v for k, v in t.items() if k.startswith("skipped:")}
    skip_txt = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) or "none"
    failed = t["failed"] + t["failed_permanent"]
    return (f"{site}: {urls} URLs in {secs:.1f}s ({urls / secs:.1f} pages/s): "
            f"new {t['new']}, changed {t['changed']}, unchanged {t['unchanged_304']} (304) + "
            f"{t['unchanged_hash']} (same content), removed {t['removed']}, "
            f"not found {t['gone']}, "
            f"failed {failed}, skipped {sum(skipped.values())} ({skip_txt}); "
            f"{t['bytes'] / 1e6:.1f} MB downloaded, {t['bytes_saved'] / 1e6:.1f} MB saved by "
            "conditional requests" + (f"; stopped: {t['stopped']} reached, the rest waits for "
                                      "the next run" if t.get("stopped") else "")
            + ("; interrupted: the rest waits for the next run" if t.get("interrupted")
               else ""))


def summary_fields(t: Counter[str]) -> dict[str, Any]:
    """The numbers of :func:`summary`, for the run_summary JSON line."""
    skipped = sum(v for k, v in t.items() if k.startswith("skipped:"))
    return {"urls": t["urls"], "new": t["new"], "changed": t["changed"],
            "unchanged": t["unchanged_304"] + t["unchanged_hash"], "removed": t["removed"],
            "not_found": t["gone"], "failed": t["failed"] + t["failed_permanent"],
            "skipped": skipped, "bytes": t["bytes"], "bytes_saved": t["bytes_saved"],
            "written": t["written"], "seconds": float(t.get("seconds", 0))}


def has_work(site: Site) -> bool:
    """Tickets left to claim; for a link-following site after folding the links that
    workers left in their journals (a worker killed before its last fold, F3)."""
    state = StateDir(site.state_dir)
    if site.settings.follow_links:
        observer = Observer(state.workers, site.settings.crawl_state.heartbeat_timeout)
        fold_links(site, state, new_worker_id(), observer.is_dead)
    return TicketQueue(state, "runner").has_work()
