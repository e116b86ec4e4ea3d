"""One worker: claim a ticket, fetch its URLs politely, write markdown, journal the results.

This module ties the parts together and owns no protocol of its own: claiming and handing
back are tickets.py (T1–T6), liveness is heartbeat.py (H1–H5), politeness is hostgate.py and
fetch.py, results go to journal.py and the markdown files (output.py).  The one rule it adds:
**W1** — ownership of the ticket is checked (T2) after every fetch and *before* anything is
written, so a worker that was paused past the heartbeat timeout and lost its ticket writes
nothing more for it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sitemap_crawler.config import Site
from sitemap_crawler.convert.markdown import (
    html_to_markdown,
    normalized_hash,
    parse_robots_directives,
    render_document,
    text_document,
    text_title,
)
from sitemap_crawler.convert.output import OutputLayout
from sitemap_crawler.convert.removal import remove_output, tombstone
from sitemap_crawler.discover.urls import host_of, normalize_url
from sitemap_crawler.fetch.charset import decode_html
from sitemap_crawler.fetch.client import Fetcher, FetchResult
from sitemap_crawler.frontmatter import read_front_matter
from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer
from sitemap_crawler.protocol.hostgate import HostGate
from sitemap_crawler.protocol.journal import Journal, ticket_progress
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import Claimed, TicketQueue
from sitemap_crawler.timestamps import parse_ts, utcnow

log = logging.getLogger(__name__)
# One record per URL, for --log-file (JSON lines); kept off the console unless --verbose.
events = logging.getLogger("sitemap_crawler.events")

HTML_TYPES = {"text/html", "application/xhtml+xml"}
EMA_ALPHA = 0.3  # weight of the newest observation in change_frequency (seed 002, phase 4)


def reclaim_dead(state: StateDir, queue: TicketQueue, observer: Observer) -> list[str]:
    """Hand the tickets of dead workers back to pending with their progress (tickets T5),
    then mark those workers dead for ``status`` (heartbeat H5)."""
    dead = queue.reclaim(observer.is_dead,
                         lambda w, t: ticket_progress(state.journal, w, t))
    for w in dead:
        log.warning("worker %s is dead: its tickets went back to pending", w,
                    extra={"worker": queue.worker_id})
        observer.bury(w)
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
                 report: Callable[[Counter[str]], None] | None = None) -> None:
        self.site = site
        self.s = site.settings
        self.wid = worker_id
        self.stop = stop
        self.report = report
        self.state = StateDir(site.state_dir)
        self.stats: Counter[str] = Counter()
        self._pending_report: Counter[str] = Counter()
        self._last_report = time.monotonic()

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> Counter[str]:
        s = self.s
        self.state.ensure()
        self.heartbeat = Heartbeat(self.state.workers, self.wid,
                                   s.crawl_state.heartbeat_interval,
                                   on_fail=self.stop.set).start()
        self.observer = Observer(self.state.workers, s.crawl_state.heartbeat_timeout)
        self.queue = TicketQueue(self.state, self.wid)
        self.journal = Journal(self.state.journal, self.wid)
        self.layout = OutputLayout(self.site.base_dir, s.output, self.site.name)
        hosts = {host_of(src) for src in self.site.sources}
        hosts |= {h[4:] if h.startswith("www.") else "www." + h for h in hosts}
        self.gate = HostGate(self.state.hosts, self.wid, self.observer.is_dead)
        self.fetcher = Fetcher(s, gate=self.gate, stop=self.stop, allowed_hosts=hosts)
        try:
            self._loop()
        except OSError as e:  # e.g. reclaiming a dead worker's ticket onto a full disk
            if e.errno in FATAL_ERRNOS:
                raise _fatal(e) from e
            raise
        finally:
            self.fetcher.close()
            # Each ticket's journal records were synced before it completed; a failure to
            # close now must not hide the error that stopped us.
            with contextlib.suppress(OSError):
                self.journal.close()
            with contextlib.suppress(OSError):
                self.heartbeat.stop(remove=True)
            self._flush_report(force=True)
        return self.stats

    def _loop(self) -> None:
        while not self.stop.is_set():
            c = self.queue.claim()
            if c is not None:
                self._run_ticket(c)
                continue
            dead = reclaim_dead(self.state, self.queue, self.observer)
            self.stats["reclaimed_from_dead"] += len(dead)
            if dead:
                continue
            if not self.queue.has_work():
                return
            # Others still hold tickets: look again soon (they may finish, or die and need
            # reclaiming); a listdir of two small directories costs next to nothing.
            self.stop.wait(min(0.2, self.s.crawl_state.heartbeat_interval))

    def _run_ticket(self, c: Claimed) -> None:
        self.heartbeat.update(ticket=c.ticket_id, urls_done=self.stats["urls"])
        self.heartbeat.beat()  # `status` shows the ticket now, not an interval later
        ctx = {"worker": self.wid, "ticket": c.ticket_id}
        try:
            for entry in list(c.remaining()):
                if self.stop.is_set():
                    self.journal.sync()
                    self.queue.hand_back(c)
                    log.info("handed ticket %s back with %d/%d done", c.ticket_id,
                             len(c.done), len(c.urls), extra=ctx)
                    return
                try:
                    self._run_url(c, entry)
                except (TicketLost, WorkerFatal):
                    raise
                except OSError as e:
                    if e.errno in FATAL_ERRNOS:
                        raise _fatal(e) from e
                    self._internal_error(c, entry, e)
                except Exception as e:  # a bug must cost one URL, not the crawl
                    self._internal_error(c, entry, e)
            self.journal.sync()
            if any(u["url"] not in c.failures for u in c.remaining()):
                # Interrupted during its last URL(s): not finished, so it goes back (T4).
                self.queue.hand_back(c)
                return
            state = self.queue.finish(c)
            if state is None:
                raise TicketLost(c.ticket_id)
            self.stats[f"tickets_{state}"] += 1
            self._count(Counter({f"tickets_{state}": 1}))
        except WorkerFatal:
            with contextlib.suppress(OSError):
                self.queue.hand_back(c)
            raise
        except OSError as e:
            # A full disk while syncing the journal or moving the ticket on: stop this worker
            # (the ticket goes back if it is still ours; a finished one stays finished).
            if e.errno not in FATAL_ERRNOS:
                raise
            with contextlib.suppress(OSError):
                self.queue.hand_back(c)
            raise _fatal(e) from e
        except TicketLost:
            self.stats["tickets_lost"] += 1
            log.warning("ticket %s was taken back while this worker was away; dropped it",
                        c.ticket_id, extra=ctx)
        finally:
            self.heartbeat.update(ticket=None)

    def _internal_error(self, c: Claimed, entry: dict[str, Any], e: BaseException) -> None:
        url = entry["url"]
        log.error("%s: internal error %s: %s", url, type(e).__name__, e,
                  exc_info=True, extra={"worker": self.wid, "ticket": c.ticket_id, "url": url})
        c.failures[url] = f"internal:{type(e).__name__}"
        self.stats["failed"] += 1
        self._count(Counter({"urls": 1, "failed": 1}))

    # -- one URL -----------------------------------------------------------------------------
    def _run_url(self, c: Claimed, entry: dict[str, Any]) -> None:
        url = entry["url"]
        prior: dict[str, Any] = entry.get("prior") or {}
        r = self.fetcher.fetch(url, etag=prior.get("etag"),
                               last_modified=prior.get("last_modified"))
        if r.outcome == "interrupted":
            return
        if not self.queue.owned(c):  # W1
            raise TicketLost(c.ticket_id)
        now = utcnow()
        rec: dict[str, Any] = {
            "url": url, "ticket": c.ticket_id, "worker": self.wid, "final": True,
            "last_crawled": now, "status_code": r.status or None,
            "first_seen": prior.get("first_seen") or now,
            "bytes": r.bytes_received, "elapsed": round(r.elapsed, 4),
        }
        if r.final_url != url:
            rec["final_url"] = r.final_url
        for k in ("lastmod", "changefreq", "priority"):
            if entry.get(k) is not None:
                rec[k] = entry[k]
        kind, done = self._classify(r, url, entry, prior, rec)
        rec["outcome"] = kind
        if done is None:  # retryable: not final, the ticket goes to failed/ for `resume`
            rec["final"] = False
            rec["failed"] = True
            c.failures[url] = r.reason or "error"
        else:
            c.done[url] = done
            rec.pop("failed", None)
        if kind == "unchanged_304":
            # a 304 saved the whole body: its size is what the last 200 brought
            rec["size"] = prior.get("size")
            saved = int(prior.get("size") or 0)
        else:
            saved = 0
            if r.outcome == "ok":
                rec["size"] = len(r.body)
        self.journal.append(rec)
        delta = Counter({"urls": 1, kind: 1, "bytes": r.bytes_received, "bytes_saved": saved})
        self.stats.update(delta)
        self._count(delta)
        events.info("%s %s", kind, url, extra={"worker": self.wid, "ticket": c.ticket_id,
                                               "url": url, "status": r.status,
                                               "outcome": kind, "elapsed": rec["elapsed"]})

    def _classify(self, r: FetchResult, url: str, entry: dict[str, Any],
                  prior: dict[str, Any], rec: dict[str, Any]) -> tuple[str, str | None]:
        """What happened to this URL: (kind for stats, outcome for the ticket or None)."""
        carry = {k: prior[k] for k in ("content_hash", "raw_hash", "file_path", "last_changed",
                                       "changes_detected", "change_frequency") if k in prior}
        if r.outcome == "not_modified":
            rec.update(carry)
            rec["etag"] = r.etag or prior.get("etag")
            rec["last_modified"] = r.last_modified or prior.get("last_modified")
            rec["status_code"] = 304
            return "unchanged_304", "not_modified"
        if r.outcome == "ok":
            return self._store(r, url, entry, prior, rec, carry)
        if r.outcome == "permanent":
            if r.status in (404, 410):
                self._remove(prior, rec)
                return ("removed" if prior.get("file_path") else "gone"), f"permanent:{r.reason}"
            rec.update(carry)
            return "failed_permanent", f"permanent:{r.reason}"
        if r.outcome == "skipped":
            rec.update(carry)
            rec["skipped"] = r.reason
            return f"skipped:{r.reason}", f"skipped:{r.reason}"
        rec.update(carry)
        rec["error"] = r.reason
        return "failed", None

    def _store(self, r: FetchResult, url: str, entry: dict[str, Any], prior: dict[str, Any],
               rec: dict[str, Any], carry: dict[str, Any]) -> tuple[str, str | None]:
        rec["etag"], rec["last_modified"] = r.etag, r.last_modified
        raw_hash = "sha256:" + hashlib.sha256(r.body).hexdigest()
        rec["raw_hash"] = raw_hash
        meta = {"etag": r.etag, "last_modified": r.last_modified}
        fm = self.s.front_matter
        if r.content_type in HTML_TYPES:
            text, _enc = decode_html(r.body, r.headers.get("content-type"))
            page = html_to_markdown(text, r.final_url)
            noindex = page.noindex or parse_robots_directives(r.headers.get("x-robots-tag", ""))[0]
            if noindex:
                rec.update(carry)
                return "skipped:noindex", "skipped:noindex"
            if page.canonical and normalize_url(page.canonical) not in (
                    normalize_url(url), normalize_url(r.final_url)) \
                    and host_of(page.canonical) == host_of(url):
                rec.update(carry)
                rec["canonical"] = page.canonical
                return "skipped:non_canonical", "skipped:non_canonical"
            if page.text_chars < self.s.min_content_chars:
                rec.update(carry)
                return "skipped:too_short", "skipped:too_short"
            content_hash = page.content_hash
            title = page.title or entry.get("title") or ""

            def render() -> str:
                return render_document(page, url=url, final_url=r.final_url, status=r.status,
                                       fetched_at=rec["last_crawled"],
                                       extra={k: v for k, v in meta.items() if v},
                                       front_matter_enabled=fm)
        else:
            text = r.body.decode("utf-8", errors="replace")
            content_hash = normalized_hash(text)
            title = entry.get("title") or text_title(text)

            def render() -> str:
                return text_document(text, url=url, final_url=r.final_url, status=r.status,
                                     fetched_at=rec["last_crawled"], title=title,
                                     extra={k: v for k, v in meta.items() if v},
                                     front_matter_enabled=fm)
        rec["content_hash"] = content_hash
        rec["title"] = title
        path = self._path_for(url, prior)
        rec["file_path"] = path.as_posix()
        full = self.site.base_dir / path
        old_hash = prior.get("content_hash")
        if old_hash == content_hash and full.exists():
            rec.update({k: carry[k] for k in ("last_changed", "changes_detected",
                                              "change_frequency") if k in carry})
            return "unchanged_hash", "unchanged"
        if old_hash and prior.get("etag") and r.etag == prior.get("etag"):
            log.warning("%s: the ETag did not change but the content did; trusting the content",
                        url, extra={"worker": self.wid, "url": url})
            rec["validators_lie"] = True
        self.layout.write_if_changed(path, render())  # refuses paths outside base_dir
        if not old_hash:
            rec["last_changed"] = rec["last_crawled"]
            rec["changes_detected"] = 0
            rec["change_frequency"] = 0.0
            return "new", "ok"
        self._track_change(prior, rec)
        return "changed", "ok"

    def _track_change(self, prior: dict[str, Any], rec: dict[str, Any]) -> None:
        rec["changes_detected"] = int(prior.get("changes_detected") or 0) + 1
        rec["last_changed"] = rec["last_crawled"]
        freq = float(prior.get("change_frequency") or 0.0)
        last = parse_ts(prior.get("last_crawled"))
        now = parse_ts(rec["last_crawled"])
        if last is not None and now is not None and now > last:
            observed = 86400.0 / (now - last)  # changes per day over this period
            freq = EMA_ALPHA * observed + (1 - EMA_ALPHA) * freq
        rec["change_frequency"] = round(freq, 6)

    def _path_for(self, url: str, prior: dict[str, Any]) -> Path:
        if prior.get("file_path"):
            return Path(prior["file_path"])
        path = self.layout.path_for(url)
        return self.layout.resolve_collision(path, url, self._owner_of)

    def _owner_of(self, rel: Path) -> str | None:
        """The URL a markdown file was written for, from its front matter (collisions)."""
        meta = read_front_matter(self.site.base_dir / rel)
        url = meta.get("url") if meta else None
        return url if isinstance(url, str) else None

    def _remove(self, prior: dict[str, Any], rec: dict[str, Any]) -> None:
        """A 404/410: remove (or move aside) the markdown and keep a tombstone in the index."""
        tombstone(rec, rec["last_crawled"], f"http_{rec.get('status_code')}")
        if prior.get("file_path"):
            rec["file_path"] = prior["file_path"]
            remove_output(self.layout, prior["file_path"], self.s.on_removed)

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
            self.heartbeat.update(urls_done=self.stats["urls"])
