"""One worker: claim a ticket, fetch its URLs politely, write markdown, journal the results.

This module ties the parts together and owns no protocol of its own: claiming and handing
back are tickets.py (T1–T8), liveness is heartbeat.py (H1–H7), politeness is hostgate.py and
fetch.py, results go to journal.py and the markdown files (output.py).  The rules it adds:
**W1** — ownership of the ticket is checked (T2) right before each request is sent (with the
gate's lease held) and after every fetch, *before* anything is written, so a worker that
was paused past the heartbeat timeout and lost its ticket sends and writes nothing more
for it.  **W2** — markdown is staged in the state directory's ``tmp/`` (same
file system) and renamed into place, so a kill -9 mid-write leaves nothing in the user's
folder (:func:`staging_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sitemap_crawler.commands.scope import TicketScope
from sitemap_crawler.config import Site
from sitemap_crawler.convert.markdown import (
    html_to_markdown,
    normalized_hash,
    parse_html,
    parse_robots_directives,
    render_document,
    text_document,
    text_title,
)
from sitemap_crawler.convert.output import OutputLayout
from sitemap_crawler.convert.removal import remove_output, revived, tombstone
from sitemap_crawler.convert.soft_errors import soft_error
from sitemap_crawler.discover.links import LinkRules, page_links
from sitemap_crawler.discover.urls import host_of, normalize_url
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.fetch.browser import Browser, BrowserMissing, shell_reason
from sitemap_crawler.fetch.charset import decode_html
from sitemap_crawler.fetch.client import Fetcher, FetchResult, http_time
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.frontier import Frontier
from sitemap_crawler.protocol.fsutil import atomic_write, real_dir, sweep_pid_tmp
from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer, is_local
from sitemap_crawler.protocol.hostgate import HostGate, Interrupted
from sitemap_crawler.protocol.journal import Journal, journal_files, ticket_progress
from sitemap_crawler.protocol.names import NAMES_DIR, NameClaims
from sitemap_crawler.protocol.state import StateDir, folder_refuses, parse_worker_id
from sitemap_crawler.protocol.tickets import Claimed, TicketName, TicketQueue
from sitemap_crawler.protocol.untrusted import QUARANTINE
from sitemap_crawler.timestamps import parse_ts, utcnow

log = logging.getLogger(__name__)
# One record per URL, for --log-file (JSON lines); kept off the console unless --verbose.
events = logging.getLogger("sitemap_crawler.events")

HTML_TYPES = {"text/html", "application/xhtml+xml"}
MARKDOWN_TYPES = {"text/markdown", "text/x-markdown", "text/plain"}
EMA_ALPHA = 0.3  # weight of the newest observation in change_frequency (seed 002, phase 4)


# Index fields a URL keeps when this visit learns nothing new about its content.
_CARRY = ("content_hash", "raw_hash", "file_path", "last_changed", "changes_detected",
          "change_frequency", "rendered", "render_reason")
_HISTORY = ("last_changed", "changes_detected", "change_frequency")
# Skips decided from a page's body: a 304 (the same body) keeps them.
_BODY_SKIPS = ("skipped:noindex", "skipped:non_canonical", "skipped:too_short")
VALIDATORS_LIE = "validators-lie"  # in hosts/<host>/: this host's ETags are not trusted


@dataclass(frozen=True)
class Outcome:
    """What one URL came to, returned by the step that decided it.

    ``kind`` is counted in the stats and logged (new, changed, unchanged_304, removed,
    skipped:<why>, failed, ...); ``progress`` is the ticket's final word for the URL, or None
    when it should be tried again (the ticket then goes to failed/ for ``resume``); ``fields``
    is what url-index.json learns; ``saved`` the bytes a 304 spared; ``written`` the bytes of
    markdown written.
    """

    kind: str
    progress: str | None
    fields: dict[str, Any]
    reason: str | None = None
    saved: int = 0
    written: int = 0  # markdown bytes written (max_total_size)


@dataclass(frozen=True)
class _Document:
    """A page worth a file: its content hash, title and how to render the file."""

    content_hash: str
    title: str
    render: Callable[[], str]
    extra: dict[str, Any] = field(default_factory=dict)  # index fields (rendered: browser)
    root: str = ""  # the element the main content was taken from (convert/content.py)


def frontier_for(site: Site, state: StateDir) -> Frontier:
    """The frontier of a link-following site (protocol/frontier.py)."""
    s = site.settings
    return Frontier(state, site.name, cap=s.max_urls_per_site,
                    ticket_size=s.crawl_state.ticket_size, key=normalize_url)


def fold_links(site: Site, state: StateDir, worker_id: str,
               is_dead: Callable[[str], bool], *, during_crawl: bool = False) -> int:
    """Fold every journal into the index and its links into tickets (F1); the number of new
    URLs.  No live worker's journal is deleted here; ``during_crawl`` (a worker's fold)
    deletes none at all, not even a finished worker's: the crawl's report reads them all at
    its end (commands/report.py)."""
    frontier = frontier_for(site, state)
    url_index.merge(state, worker_id, is_dead, lambda _w: False, site.base_dir, frontier,
                    lock_timeout=site.settings.crawl_state.heartbeat_timeout,
                    prune=not during_crawl)
    return frontier.added


def staging_dir(state: StateDir, base_dir: Path) -> Path | None:
    """W2: where markdown files are written before their rename into place: ``tmp/`` in the
    state directory when it is on the output's file system (a rename cannot cross file
    systems), so a worker killed mid-write leaves its temporary file there, where prepare
    sweeps it, and never in the user's folder.  None: beside the file, as before."""
    probe = base_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if os.stat(probe).st_dev != os.stat(state.root).st_dev:
            return None
        staging = real_dir(state.root / "tmp", state.root / QUARANTINE)  # not a symlink
    except OSError:
        return None
    return staging


def journal_sizes(state: StateDir) -> dict[str, int]:
    """Journal name -> size: a cheap look at whether any worker recorded something new."""
    out: dict[str, int] = {}
    for path in journal_files(state.journal):
        with contextlib.suppress(FileNotFoundError):
            out[path.name] = path.stat().st_size
    return out


def _skip(why: str) -> Outcome:
    return Outcome(f"skipped:{why}", f"skipped:{why}", {}, why)


def _changed(prior: dict[str, Any], now: str) -> dict[str, Any]:
    """Change tracking for a page whose content changed: count, time, frequency (EMA)."""
    freq = float(prior.get("change_frequency") or 0.0)
    last, this = parse_ts(prior.get("last_crawled")), parse_ts(now)
    if last is not None and this is not None and this > last:
        observed = 86400.0 / (this - last)  # changes per day over this period
        freq = EMA_ALPHA * observed + (1 - EMA_ALPHA) * freq
    return {"changes_detected": int(prior.get("changes_detected") or 0) + 1,
            "last_changed": now, "change_frequency": round(freq, 6)}


def reclaim_dead(state: StateDir, queue: TicketQueue, observer: Observer) -> list[str]:
    """Hand the tickets of dead workers back to pending with their progress (tickets T5),
    then mark those workers dead for ``status`` (heartbeat H5)."""
    dead = queue.reclaim(observer.is_dead,
                         lambda w, t: ticket_progress(state.journal, w, t))
    for w in dead:
        log.warning("worker %s is dead: its tickets went back to pending", w,
                    extra={"worker": queue.worker_id})
        observer.bury(w)
        parts = parse_worker_id(w)
        if parts is not None and is_local(parts):  # its pid is this machine's (H3)
            names = state.root / NAMES_DIR
            shards = [names / d for d in os.listdir(names)] if names.is_dir() else []
            sweep_pid_tmp([*state.writable_dirs(), *shards], parts.pid, time.time())
    return dead


class TicketLost(Exception):
    """W1: the ticket was taken back while this worker was paused or cut off."""


class WorkerFatal(Exception):
    """The disk is full or read-only: stop this worker, handing its ticket back."""


FATAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _fatal(e: OSError) -> WorkerFatal:
    return WorkerFatal(f"{e.strerror} ({e.filename or 'output'})")


class Worker:
    def __init__(self, site: Site, worker_id: str, stop: threading.Event,
                 report: Callable[[Counter[str]], None] | None = None,
                 tally: Callable[[Counter[str]], None] | None = None,
                 reload: Callable[[], Site | None] | None = None) -> None:
        """``report`` gets the counts now and then (progress); ``tally`` every URL's counts
        at once (limits); ``reload`` is asked between URLs for newer settings (SIGHUP)."""
        self.site = site
        self.tally, self.reload = tally, reload
        self._clock_warned: set[str] = set()  # hosts whose wrong Date was already logged
        self.s = site.settings
        self.wid = worker_id
        self.stop = stop
        self.report = report
        self.state = StateDir(site.state_dir)
        self.names = NameClaims(self.state.root)  # file names owned once (N1-N4)
        self.stats: Counter[str] = Counter()
        self._pending_report: Counter[str] = Counter()
        self._last_report = time.monotonic()
        self._validator_trust: dict[str, bool] = {}  # host -> its ETags may be believed
        # link following: the rules, the links this process already journaled, and the
        # journal sizes at its last fold (protocol/frontier.py F3)
        self.rules = LinkRules(self.s, site.sources) if self.s.follow_links else None
        self._linked: dict[str, int] = {}  # link -> depth of the page it was journaled from
        self._folded_at: dict[str, int] | None = None
        self.browser: Browser | None = None  # started on the first page that needs it
        # Playwright's sync API belongs to the thread that started it: every browser call
        # of this worker runs on this one thread
        self._browser_thread: ThreadPoolExecutor | None = None
        self._shell_warned: set[str] = set()  # hosts warned about under render: http
        self.queue = TicketQueue(self.state, self.wid)  # listing needs nothing opened
        self.held: dict[str, Claimed] = {}
        self.opened = False
        self.found_work = False  # a link fold wrote new tickets (dispatch.py lists again)
        self.settle: Callable[[], bool] | None = None  # dispatch.py D6, set by the dispatcher
        self._old_fetchers: list[Fetcher] = []  # replaced on SIGHUP, still in use by threads
        self._lock = threading.Lock()  # stats and progress, updated by every fetch thread

    # -- life cycle (commands/dispatch.py drives it) -------------------------------------------
    def open(self, gate: HostGate) -> None:
        """Announce this worker (H1: before any claim) and open what its URLs need; ``gate``
        is the process's gate, shared with its other sites."""
        s = self.s
        self.state.ensure()
        self.heartbeat = Heartbeat(self.state.workers, self.wid,
                                   s.crawl_state.heartbeat_interval,
                                   on_fail=self.stop.set).start()
        self.observer = Observer(self.state.workers, s.crawl_state.heartbeat_timeout)
        self.journal = Journal(self.state.journal, self.wid)
        self.layout = OutputLayout(self.site.base_dir, s.output, self.site.name,
                                   tmp_dir=staging_dir(self.state, self.site.base_dir))
        hosts = {host_of(src) for src in self.site.sources}
        hosts |= {h[4:] if h.startswith("www.") else "www." + h for h in hosts}
        self.scope = TicketScope(self.site, self.state, self.rules)
        self.gate = gate
        self.fetcher = Fetcher(s, gate=self.gate, stop=self.stop, allowed_hosts=hosts,
                               robots_store=self.state.gate_root,  # robots.py R6
                               sources=self.site.sources)  # its address policy (netguard.py)
        self.opened = True

    def close(self) -> None:
        """Close what :meth:`open` opened; the error that stopped us is not hidden."""
        if not self.opened:
            return
        if self._browser_thread is not None:
            if self.browser is not None:
                with contextlib.suppress(Exception):
                    self._browser_thread.submit(self.browser.close).result()
            self._browser_thread.shutdown(wait=True)
        for f in (self.fetcher, *self._old_fetchers):
            f.close()
        # Each ticket's journal records were synced before it completed; a failure to
        # close now must not hide the error that stopped us.
        with contextlib.suppress(OSError):
            self.journal.close()
        with contextlib.suppress(OSError):
            self.heartbeat.stop(remove=True)
        self._flush_report(force=True)
        if self.heartbeat.failed.is_set():  # H6: stopped because it could not prove it lives
            raise WorkerFatal(f"the heartbeat file in {self.state.workers} could not be "
                              "written; tickets were handed back")

    def run(self) -> Counter[str]:
        """This site alone, in this process (api.work with workers=0)."""
        from sitemap_crawler.commands.dispatch import Dispatcher

        Dispatcher([self], self.stop, max_in_flight=self.s.in_flight()).run()
        return self.stats

    def claim(self, rank: Callable[[TicketName], int | None] | None) -> Claimed | None:
        """T1 on a ticket ``rank`` likes; the heartbeat shows it at once (H6: a worker that
        cannot prove it lives must not work)."""
        c = self.queue.claim(rank)
        if c is None:
            return None
        self.held[c.ticket_id] = c
        self._show_held(urls_done=self.stats["urls"],
                        journal=self.journal.position())  # journal.py J3
        try:
            self.heartbeat.beat()
        except OSError as e:
            self.hand_back(c)
            raise WorkerFatal(f"cannot write the heartbeat file: {e.strerror} "
                              f"({e.filename})") from e
        if self.heartbeat.buried.is_set():  # H5: its journal may be gone (H7); none of the
            self.hand_back(c)  # ticket's URLs ran, so its progress is the file's own
            self.stop.set()
            return None
        return c

    def _show_held(self, **info: Any) -> None:
        """The heartbeat says which tickets this worker holds (`status`): one id and how
        many (a fixed-size record has no room for a long list)."""
        first = min(self.held) if self.held else None
        self.heartbeat.update(ticket=first, tickets=len(self.held), **info)

    def run_one(self, c: Claimed, entry: dict[str, Any],
                fetched: Callable[[], None] | None = None) -> None:
        """One URL of ``c``, on a fetch thread: a bug costs the URL, not the crawl.
        ``fetched`` is called once the URL's requests are over (conversion follows)."""
        self._maybe_reload()  # (which may also set stop: a limit another worker hit)
        if not self.heartbeat.confirm():  # H8: woken from a pause, buried: its tickets
            self.stop.set()  # were taken back, and T2 drops them
        if self.stop.is_set():
            return  # stays remaining: handed back with the ticket
        try:
            self._run_url(c, entry, fetched)
        except Interrupted:  # a render or a fetch cut short by a stop: handed back, not failed
            return
        except (TicketLost, WorkerFatal):
            raise
        except OSError as e:
            if e.errno in FATAL_ERRNOS or folder_refuses(e):  # every URL would fail
                raise _fatal(e) from e
            self._internal_error(c, entry, e)
        except Exception as e:  # a bug must cost one URL, not the crawl
            self._internal_error(c, entry, e)

    def complete(self, c: Claimed, lost: bool = False) -> None:
        """Every URL of ``c`` has run (or it was lost, or we stop): T3, or T4 with progress."""
        ctx = {"worker": self.wid, "ticket": c.ticket_id}
        self.held.pop(c.ticket_id, None)
        try:
            if lost:
                raise TicketLost(c.ticket_id)
            self.journal.sync()
            if any(u["url"] not in c.failures for u in c.remaining()):
                # Interrupted during some URL(s): not finished, so it goes back (T4).
                self.queue.hand_back(c)
                log.info("handed ticket %s back with %d/%d done", c.ticket_id,
                         len(c.done), len(c.urls), extra=ctx)
                return
            state = self.queue.finish(c)
            if state is None:
                raise TicketLost(c.ticket_id)
            with self._lock:
                self.stats[f"tickets_{state}"] += 1
                self._count(Counter({f"tickets_{state}": 1}))
        except OSError as e:
            # A full disk while syncing the journal or moving the ticket on: stop this worker
            # (the ticket goes back if it is still ours; a finished one stays finished).
            with contextlib.suppress(OSError):
                self.queue.hand_back(c)
            if e.errno not in FATAL_ERRNOS:
                raise
            raise _fatal(e) from e
        except TicketLost:
            with self._lock:
                self.stats["tickets_lost"] += 1
            log.warning("ticket %s was taken back while this worker was away; dropped it",
                        c.ticket_id, extra=ctx)
        finally:
            self._show_held()
        if self.rules is not None and self.queue.pending_at_most(1):
            self._fold()  # F3: keep the frontier ahead before the queue runs dry

    def hand_back(self, c: Claimed) -> None:
        """T4 with the progress so far (a stop, a fatal error)."""
        self.held.pop(c.ticket_id, None)
        self._show_held()
        with contextlib.suppress(OSError):
            self.journal.sync()
        self.queue.hand_back(c)
        log.info("handed ticket %s back with %d/%d done", c.ticket_id, len(c.done),
                 len(c.urls), extra={"worker": self.wid, "ticket": c.ticket_id})

    def housekeeping(self) -> bool:
        """Nothing to claim: take back dead workers' tickets, fold links into new tickets
        (F3); True if that made work."""
        dead = reclaim_dead(self.state, self.queue, self.observer)
        with self._lock:
            self.stats["reclaimed_from_dead"] += len(dead)
        if dead:
            return True
        return self.rules is not None and self._fold()

    def _internal_error(self, c: Claimed, entry: dict[str, Any], e: BaseException) -> None:
        url = entry["url"]
        log.error("%s: internal error %s: %s", url, type(e).__name__, e,
                  exc_info=True, extra={"worker": self.wid, "ticket": c.ticket_id, "url": url})
        c.failures[url] = f"internal:{type(e).__name__}"
        with self._lock:
            self.stats["failed"] += 1
            self._count(Counter({"urls": 1, "failed": 1}))

    def robots_first(self, url: Any) -> bool:
        """True if ``url`` is one this worker would fetch and its robots.txt is not known
        yet (dispatch.py D7 asks it ahead).  A URL the scope refuses is never fetched, so
        neither is its host's robots.txt; a URL that breaks the check is left to its job."""
        try:
            return not self.scope.refuses(url) and self.fetcher.needs_robots(url)
        except Exception:
            return False

    # -- one URL -----------------------------------------------------------------------------
    # The walk of a URL, top to bottom: fetch -> W1 -> decide (one step returns an Outcome)
    # -> journal record -> ticket progress.  Nothing mutates an Outcome after its step.
    def _run_url(self, c: Claimed, entry: dict[str, Any],
                 fetched: Callable[[], None] | None = None) -> None:
        url = entry["url"]
        prior: dict[str, Any] = entry.get("prior") or {}
        if self.scope.refuses(url):
            # a ticket is input: another host's URL is recorded, never fetched (scope.py)
            r = FetchResult(url, url, outcome="skipped", reason="out_of_scope")
        else:
            r = self._fetch(url, entry, prior, lambda: self._still_ours(c),
                            full=c.data.get("full") is True)
        if fetched is not None:
            fetched()
        if r.outcome == "interrupted":
            if r.reason == "ticket_lost":
                raise TicketLost(c.ticket_id)
            return
        if not self.queue.owned(c):  # W1
            raise TicketLost(c.ticket_id)
        now = self._crawled_at(r, url)
        out = self._decide(r, url, entry, prior, now)
        if out.progress is None:  # retryable: the ticket goes to failed/ for `resume`
            c.failures[url] = out.reason or "error"
        else:
            c.done[url] = out.progress
        rec = self._record(c, entry, prior, r, now, out)
        self.journal.append(rec)
        delta = Counter({"urls": 1, out.kind: 1, "bytes": r.bytes_received,
                         "bytes_saved": out.saved, "written": out.written})
        with self._lock:
            self.stats.update(delta)
            self._count(delta)
        if self.tally is not None:
            self.tally(delta)
        events.info("%s %s", out.kind, url, extra={
            "worker": self.wid, "ticket": c.ticket_id, "url": url, "status": r.status,
            "outcome": out.kind, "reason": out.reason, "elapsed": rec["elapsed"]})

    def _still_ours(self, c: Claimed) -> bool:
        """W1 right before a request: after a pause of this process, first let the share
        show what others did meanwhile (dispatch.py D6)."""
        if self.settle is not None:
            self.settle()
        return self.queue.owned(c)

    def _fetch(self, url: str, entry: dict[str, Any], prior: dict[str, Any],
               ours: Callable[[], bool], *, full: bool = False) -> FetchResult:
        """GET the page, conditionally when its host's validators are trusted and the ticket
        is not of a full round (tickets.py T11: a full round makes the markdown again).  An
        entry with a ``markdown_url`` (an llms.txt ``.md`` twin, discover ``markdown_twins``)
        asks for the twin first and keeps it if it is markdown or text; else the page.
        ``ours`` is W1 right before each request: nothing is sent for a lost ticket."""
        trusted = not full and self._trusts_validators(url, prior)
        twin = entry.get("markdown_url")
        if twin and not self.scope.refuses(twin):  # (a ticket is input: scope.py)
            same = trusted and prior.get("final_url") == twin
            r = self.fetcher.fetch(twin, etag=prior.get("etag") if same else None,
                                   last_modified=prior.get("last_modified") if same else None,
                                   still_ours=ours)
            if r.outcome in ("interrupted", "not_modified") or (
                    r.outcome == "ok" and r.content_type in MARKDOWN_TYPES):
                return r
            trusted = trusted and prior.get("final_url") != twin
        return self.fetcher.fetch(url, etag=prior.get("etag") if trusted else None,
                                  last_modified=prior.get("last_modified") if trusted else None,
                                  still_ours=ours)

    def _decide(self, r: FetchResult, url: str, entry: dict[str, Any], prior: dict[str, Any],
                now: str) -> Outcome:
        """Which step decides this URL, by what the fetch came to."""
        carry = {k: prior[k] for k in _CARRY if k in prior}
        if r.outcome == "not_modified":
            out = Outcome("unchanged_304", "not_modified", {
                **carry, "etag": r.etag or prior.get("etag"),
                "last_modified": r.last_modified or prior.get("last_modified"),
                "status_code": 304, "size": prior.get("size")},
                # a 304 saved the whole body: its size is what the last 200 brought
                saved=int(prior.get("size") or 0))
            kind = str(prior.get("outcome") or "")
            if kind in _BODY_SKIPS:  # the same body: skipped for the same reason
                return replace(out, kind=kind, progress=kind, reason=kind.split(":", 1)[1])
            return out
        if r.outcome == "ok":
            return self._store(r, url, entry, prior, carry, now)
        if r.outcome == "permanent":
            if r.status in (404, 410):
                return self._gone(url, prior, now, f"http_{r.status}", f"permanent:{r.reason}")
            return Outcome("failed_permanent", f"permanent:{r.reason}",
                           {**carry, "error": r.reason}, r.reason)
        if r.outcome == "skipped":
            return Outcome(f"skipped:{r.reason}", f"skipped:{r.reason}",
                           {**carry, "skipped": r.reason}, r.reason)
        return Outcome("failed", None, {**carry, "error": r.reason}, r.reason or "error")

    def _record(self, c: Claimed, entry: dict[str, Any], prior: dict[str, Any],
                r: FetchResult, now: str, out: Outcome) -> dict[str, Any]:
        """The journal line for this URL: the fetch's facts, then what the step learnt."""
        rec: dict[str, Any] = {
            "url": entry["url"], "ticket": c.ticket_id, "worker": self.wid,
            "final": out.progress is not None, "last_crawled": now,
            "status_code": r.status or None, "first_seen": prior.get("first_seen") or now,
            "bytes": r.bytes_received, "elapsed": round(r.elapsed, 4),
        }
        if r.final_url != entry["url"]:
            rec["final_url"] = r.final_url
        for k in ("lastmod", "changefreq", "priority", "depth", "optional"):
            if entry.get(k) is not None:
                rec[k] = entry[k]
        if r.outcome == "ok":
            rec["size"] = len(r.body)
        rec.update(out.fields)
        rec["outcome"] = out.kind
        if out.progress is None:
            rec["failed"] = True
        return rec

    def _gone(self, url: str, prior: dict[str, Any], now: str, why: str,
              progress: str) -> Outcome:
        """A 404/410: remove (or move aside) the markdown and keep a tombstone in the index."""
        fields: dict[str, Any] = {}
        tombstone(fields, now, why)
        if self.layout.owned_path(url, prior.get("file_path")):  # a stored path is input
            fields["file_path"] = prior["file_path"]
            remove_output(self.layout, url, prior["file_path"], self.s.on_removed)
            return Outcome("removed", progress, fields, why)
        return Outcome("gone", progress, fields, why)

    def _store(self, r: FetchResult, url: str, entry: dict[str, Any], prior: dict[str, Any],
               carry: dict[str, Any], now: str) -> Outcome:
        """A 200: convert, refuse what is not a real page, write only what changed."""
        fetched = {"etag": r.etag, "last_modified": r.last_modified,
                   "raw_hash": "sha256:" + hashlib.sha256(r.body).hexdigest()}
        doc, links = self._document(r, url, entry, now)
        if links:
            fetched["links"] = links  # protocol/frontier.py turns them into tickets
        if isinstance(doc, Outcome):
            if doc.progress is None:  # not the page: learn nothing from this answer
                return replace(doc, fields={**carry, **doc.fields})
            return replace(doc, fields={**fetched, **carry, **doc.fields})
        fields: dict[str, Any] = {**fetched, "content_hash": doc.content_hash,
                                  "title": doc.title, **doc.extra, **revived(prior)}
        if doc.root:
            fields["content_root"] = doc.root
        if prior.get("rendered") and "rendered" not in doc.extra:  # no longer a shell
            fields.update(rendered=None, render_reason=None)
        path = self._path_for(url, prior)
        fields["file_path"] = path.as_posix()
        old_hash = prior.get("content_hash")
        if old_hash == doc.content_hash and (self.site.base_dir / path).exists():
            history = {k: carry[k] for k in _HISTORY if k in carry}
            return Outcome("unchanged_hash", "unchanged", {**fields, **history})
        if old_hash and prior.get("etag") and r.etag == prior.get("etag"):
            self._distrust_validators(url)
            fields["validators_lie"] = True
        raw = doc.render().encode("utf-8")  # once: the write and the byte count share it
        written = len(raw) if self.layout.write_if_changed(path, raw) else 0
        if not old_hash:  # (write_if_changed refuses paths outside base_dir)
            return Outcome("new", "ok", {**fields, "last_changed": now, "changes_detected": 0,
                                         "change_frequency": 0.0}, written=written)
        return Outcome("changed", "ok", {**fields, **_changed(prior, now)}, written=written)

    def _document(self, r: FetchResult, url: str, entry: dict[str, Any],
                  now: str) -> tuple[_Document | Outcome, list[str]]:
        """The markdown file to write for a 200 body (or why there is none), and the links
        to follow from it."""
        meta = {k: v for k, v in (("etag", r.etag), ("last_modified", r.last_modified),
                                  ("optional", entry.get("optional"))) if v}
        fm = self.s.front_matter
        if r.content_type not in HTML_TYPES:
            text = r.body.decode("utf-8", errors="replace")
            title = entry.get("title") or text_title(text)
            return _Document(normalized_hash(text), title, lambda: text_document(
                text, url=url, final_url=r.final_url, status=r.status, fetched_at=now,
                title=title, extra=meta, front_matter_enabled=fm)), []
        html, _enc = decode_html(r.body, r.headers.get("content-type"))
        doc = parse_html(html)  # once: the shell check and the conversion share the tree
        rendered, how = self._render(r, url, html, doc)
        if isinstance(how, Outcome):
            return how, []
        meta.update(how)
        if rendered is html:
            # links before conversion: it takes the boilerplate (nav too) out of the tree
            found = self._raw_links(html, r.final_url, entry, doc)
            page = html_to_markdown(html, r.final_url, doc=doc)
        else:
            html = rendered
            found = self._raw_links(html, r.final_url, entry)
            page = html_to_markdown(html, r.final_url)
        header_noindex, header_nofollow = parse_robots_directives(
            r.headers.get("x-robots-tag", ""))
        soft = soft_error(page.title, page.markdown, page.text_chars)
        if soft is not None:
            # Not the page: keep whatever good file there is, and try again later.
            log.warning("%s: answered 200 with a %s, not the page; kept the last good file "
                        "and will retry", url, soft.replace("_", " "),
                        extra={"worker": self.wid, "url": url})
            return Outcome("failed", None, {"error": soft}, soft), []
        links = ([] if page.nofollow or header_nofollow
                 else self._links(found, int(entry.get("depth") or 0)))
        if page.noindex or header_noindex:
            return _skip("noindex"), links
        if page.canonical and normalize_url(page.canonical) not in (
                normalize_url(url), normalize_url(r.final_url)) \
                and host_of(page.canonical) == host_of(url):
            return replace(_skip("non_canonical"), fields={"canonical": page.canonical}), links
        if page.text_chars < self.s.min_content_chars:
            return _skip("too_short"), links
        return _Document(page.content_hash, page.title or entry.get("title") or "",
                         lambda: render_document(page, url=url, final_url=r.final_url,
                                                 status=r.status, fetched_at=now, extra=meta,
                                                 front_matter_enabled=fm),
                         extra=how, root=page.root), links

    # -- long runs: the server's clock, settings reloaded on SIGHUP ---------------------------
    def _crawled_at(self, r: FetchResult, url: str) -> str:
        """The server's Date when it is within ``max_clock_skew`` of ours (seed 000 §10.1:
        lastmod and Last-Modified come from the server's clock, so comparing them with a
        crawl time from the same clock is fair); our clock otherwise, said once per host."""
        local = time.time()
        server = http_time(r.headers.get("date"))
        if server is None:
            return utcnow()
        if abs(server - local) > self.s.max_clock_skew:
            host = host_of(url)
            if host not in self._clock_warned:
                self._clock_warned.add(host)
                log.warning("%s: the server's clock is %+.0f s off ours (more than "
                            "max_clock_skew %.0f s); using our clock for its pages", host,
                            server - local, self.s.max_clock_skew,
                            extra={"worker": self.wid, "url": url})
            return utcnow()
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(server))

    def _maybe_reload(self) -> None:
        """Take newer settings (validated by the runner) for the URLs not yet started."""
        site = self.reload() if self.reload is not None else None
        if site is None:
            return
        self.site, self.s = site, site.settings
        self.rules = LinkRules(self.s, site.sources) if self.s.follow_links else None
        self.layout = OutputLayout(site.base_dir, self.s.output, site.name,
                                   tmp_dir=staging_dir(self.state, site.base_dir))
        old = self.fetcher
        self.fetcher = Fetcher(self.s, gate=self.gate, stop=self.stop,
                               allowed_hosts=old.allowed_hosts,
                               robots_store=self.state.gate_root, sources=site.sources)
        self._old_fetchers.append(old)  # other threads may be using it: closed at the end
        log.info("worker %s took the reloaded settings", self.wid, extra={"worker": self.wid})


    # -- pages that need JavaScript (fetch/browser.py) ---------------------------------------
    def _render(self, r: FetchResult, url: str, html: str,
                doc: Any) -> tuple[str, dict[str, Any] | Outcome]:
        """The HTML to convert: the fetched one (``html`` itself, parsed as ``doc``), or under
        ``render: browser`` (and ``auto`` for a page that is an empty JavaScript shell) the
        DOM a headless browser rendered from it; with what the index and front matter record
        about it."""
        mode = self.s.render
        if mode == "browser":
            why = "render: browser"
        else:
            why = shell_reason(doc, self.s.min_content_chars)
            if why is None:
                return html, {}
            if mode == "http":
                host = host_of(url)
                level = logging.INFO if host in self._shell_warned else logging.WARNING
                self._shell_warned.add(host)
                log.log(level, "%s looks like a JavaScript shell (%s): its text needs a "
                        "browser (set render: auto or render: browser)", url, why,
                        extra={"worker": self.wid, "url": url})
                return html, {}
        if self._browser_thread is None:
            self._browser_thread = ThreadPoolExecutor(1, thread_name_prefix="browser")
        try:
            res = self._browser_thread.submit(self._browse, r, url).result()
        except BrowserMissing as e:
            raise WorkerFatal(str(e)) from None
        if res.outcome == "interrupted":
            raise Interrupted(url)
        if res.outcome != "ok":
            reason = res.reason or "render_error"
            return html, Outcome("failed", None, {"error": reason}, reason)
        return res.html, {"rendered": "browser", "render_reason": why}

    def _browse(self, r: FetchResult, url: str) -> Any:
        """On the browser thread: render ``r``'s bytes (the browser starts on first use)."""
        if self.browser is None:
            self.browser = Browser(self.s, self.fetcher, self.stop,
                                   self.fetcher.allowed_hosts or {host_of(url)})
        return self.browser.render(r.final_url, r.body, r.headers, r.status)

    # -- link following (protocol/frontier.py) -----------------------------------------------
    def _raw_links(self, html: str, base_url: str, entry: dict[str, Any],
                   doc: Any = None) -> list[str]:
        """The page's links when link following wants them (below ``max_depth``); from
        ``doc``, the parsed page, when given."""
        if self.rules is None or int(entry.get("depth") or 0) >= self.s.max_depth:
            return []
        return page_links(html, base_url, doc)

    def _links(self, found: list[str], depth: int) -> list[str]:
        """In-scope links that this process has not journaled yet from a page as shallow
        as this one (``depth``): the frontier dedupes across machines, this only keeps
        journals small, and a shorter path found later must still reach the index."""
        rules = self.rules
        if rules is None:
            return []
        out = []
        for link in found:
            clean = rules.clean(link)
            if clean is None:
                continue
            key = normalize_url(clean)
            if depth < self._linked.get(key, depth + 1):
                self._linked[key] = depth
                out.append(clean)
        return out

    def _fold(self) -> bool:
        """Fold the journals' links into tickets if any journal grew since this worker last
        looked (F3); True if new tickets were written."""
        sizes = journal_sizes(self.state)
        if sizes == self._folded_at:
            return False
        try:
            added = fold_links(self.site, self.state, self.wid, self.observer.is_dead,
                               during_crawl=True)
        except CrawlError as e:  # the index lock is busy for long: look again next round
            log.info("link fold postponed: %s", e, extra={"worker": self.wid})
            return False
        self._folded_at = sizes
        self.found_work = self.found_work or added > 0  # the dispatcher looks at once
        if added:
            with self._lock:  # the progress line's total grows with them (work.py Display)
                self.stats["links_queued"] += added
                self._count(Counter({"links_queued": added}))
            log.info("%d new URL(s) found by following links", added,
                     extra={"worker": self.wid})
        return added > 0

    # -- validators that lie -----------------------------------------------------------------
    def _trusts_validators(self, url: str, prior: dict[str, Any]) -> bool:
        """False once this host was seen sending an unchanged ETag with changed content:
        then every page of it is fetched in full and compared by hash (a 304 from such a
        host could hide a change).  The mark is a file in the host's state directory, so
        every worker on every machine and every later crawl sees it."""
        if prior.get("validators_lie"):
            return False
        host = host_of(url)
        known = self._validator_trust.get(host)
        if known is None:
            known = not (self.state.hosts / host / VALIDATORS_LIE).exists()
            self._validator_trust[host] = known
        return known

    def _distrust_validators(self, url: str) -> None:
        host = host_of(url)
        if self._validator_trust.get(host) is False:
            return
        self._validator_trust[host] = False
        log.warning("%s: the ETag did not change but the content did; %s's validators are no "
                    "longer trusted (pages are fetched in full and compared by hash)", url, host,
                    extra={"worker": self.wid, "url": url})
        (self.state.hosts / host).mkdir(parents=True, exist_ok=True)
        atomic_write(self.state.hosts / host / VALIDATORS_LIE, f"{url}\n".encode())

    def _path_for(self, url: str, prior: dict[str, Any]) -> Path:
        """The URL's file, its name claimed across workers and machines (protocol/names.py);
        a stored path is input, used only if it is the URL's own (owned_path)."""
        owned = self.layout.owned_path(url, prior.get("file_path"))
        return self.layout.claim_path(url, self.names.claim, owned)

    # -- progress ----------------------------------------------------------------------------
    def _count(self, delta: Counter[str]) -> None:
        if self.report is None:
            return
        self._pending_report.update(delta)
        self._flush_report()

    def _flush_report(self, force: bool = False) -> None:
        if self.report is None or not self._pending_report:
            return
        now = time.monotonic()
        if force or now - self._last_report > 0.25:
            self.report(self._pending_report)
            self._pending_report = Counter()
            self._last_report = now
            self.heartbeat.update(urls_done=self.stats["urls"],
                                  journal=self.journal.position())  # journal.py J3
