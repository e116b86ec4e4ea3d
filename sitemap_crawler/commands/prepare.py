"""prepare: discover a site's URLs, filter, dedupe, plan, and write tickets.

Streaming from end to end so that a 1,000,000-URL sitemap index fits in a small, bounded
amount of memory: entries flow from discovery through the filter and the dedupe set
(:class:`urls.UrlSet`, 64-bit hashes in a flat array) straight into ticket files.  Only URLs
that are due again on a re-crawl are held back, to be ordered by priority after the new ones.

Idempotent: URLs already waiting in pending/claimed/failed tickets are loaded into the dedupe
set first, so running prepare twice adds no duplicate work.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from sitemap_crawler.commands.plan import Planner
from sitemap_crawler.commands.smart import sample_changes
from sitemap_crawler.config import Site
from sitemap_crawler.convert.output import OutputLayout
from sitemap_crawler.convert.removal import remove_output, tombstone
from sitemap_crawler.discover.sitemapcache import SitemapCache
from sitemap_crawler.discover.sources import DiscoveryStats, discover
from sitemap_crawler.discover.urls import UrlFilter, UrlSet, normalize_url
from sitemap_crawler.fetch.decoding import ACCEPT_ENCODING
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.heartbeat import Observer
from sitemap_crawler.protocol.hostgate import HostGate
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketQueue
from sitemap_crawler.timestamps import utcnow

log = logging.getLogger(__name__)

_CARRY = ("etag", "last_modified", "content_hash", "raw_hash", "file_path", "last_crawled",
          "first_seen", "last_changed", "changes_detected", "change_frequency", "size")


@dataclass
class PrepareResult:
    site: str
    found: int = 0
    kept: int = 0
    filtered: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    already_queued: int = 0
    fresh: int = 0
    over_limit: int = 0
    new: int = 0
    due_again: int = 0
    removed: int = 0
    tickets: int = 0
    cross_host: int = 0
    invalid: int = 0
    sitemaps_read: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    dry_run: bool = False
    smart: dict[str, Any] | None = None
    bytes_saved: int = 0  # bodies not downloaded because the sitemap said "not modified"
    sitemaps_not_modified: int = 0  # sitemaps answered 304 and read from the kept copy
    sitemaps_pruned: int = 0  # kept copies of sitemaps the source no longer leads to
    tickets_pruned: int = 0  # completed tickets older than crawl_state.keep_completed

    def summary(self) -> str:
        filt = sum(self.filtered.values())
        verb = "would write" if self.dry_run else "wrote"
        unchanged = (f", {self.sitemaps_not_modified} unchanged since the last read"
                     if self.sitemaps_not_modified else "")
        return (f"{self.site}: found {self.found} URLs in {self.sitemaps_read} file(s)"
                f"{unchanged}; "
                f"{filt} filtered, {self.duplicates} duplicate, {self.cross_host} other-host, "
                f"{self.invalid} invalid, {self.already_queued} already queued, "
                f"{self.fresh} fresh; {verb} {self.tickets} tickets for {self.kept} URLs "
                f"({self.new} new, {self.due_again} due again)"
                + (f"; {self.removed} removed" if self.removed else "")
                + (f"; {self.bytes_saved / 1e6:.1f} MB not downloaded (fresh per the sitemap)"
                   if self.bytes_saved else "")
                + f" in {self.seconds:.1f}s")


def http_client(site: Site) -> httpx.Client:
    s = site.settings
    return httpx.Client(
        headers={"User-Agent": s.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
        timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
        follow_redirects=False,
    )


def prepare(site: Site, *, dry_run: bool = False, full: bool = False,
            progress: Callable[[str], None] | None = None) -> PrepareResult:
    t0 = time.monotonic()
    s = site.settings
    state = StateDir(site.state_dir)
    res = PrepareResult(site=site.name, dry_run=dry_run)
    wid = new_worker_id()
    observer = Observer(state.workers, s.crawl_state.heartbeat_timeout)
    if not dry_run:
        state.ensure()
        idx = url_index.merged_index(state, wid, observer.is_dead, site.base_dir,
                                     lock_timeout=s.crawl_state.heartbeat_timeout)
    else:
        idx = url_index.load_or_rebuild(state, site.base_dir) if state.exists() else {}
    queue = TicketQueue(state, wid)
    if not dry_run and s.crawl_state.keep_completed > 0:
        res.tickets_pruned = queue.prune_completed(s.crawl_state.keep_completed)
    seen = UrlSet()
    queued = UrlSet()
    for u in queue.pending_urls():
        queued.add(normalize_url(u))

    flt = UrlFilter(site.filters.include, site.filters.exclude)
    if s.crawl_mode == "smart" and not full and idx and not dry_run:
        gate = HostGate(state.hosts, wid, observer.is_dead)
        verdict = sample_changes(idx, s, gate)
        full = verdict.ratio > s.smart_threshold
        res.smart = {"sampled": verdict.sampled, "changed": verdict.changed,
                     "mode": "full" if full else "incremental"}
        log.info("smart mode: %d of %d sampled URLs changed -> %s crawl", verdict.changed,
                 verdict.sampled, res.smart["mode"])
    planner = Planner(s, full=full)
    filtering = bool(site.filters.include or site.filters.exclude)
    queued_any = len(queued) > 0
    filtered: Counter[str] = Counter()
    stats = DiscoveryStats()
    now = utcnow()
    run = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    batch: list[dict[str, Any]] = []
    stale: list[tuple[float, dict[str, Any]]] = []
    limit = s.max_urls_per_site or None
    ticket_size = s.crawl_state.ticket_size

    def flush(entries: list[dict[str, Any]]) -> None:
        res.tickets += 1
        ticket = {"ticket_id": f"{run}-{res.tickets:05d}", "site": site.name, "created_at": now,
                  "last_seen": now, "gen": 0, "urls": entries, "size": len(entries),
                  "claimed_by": None,
                  "claimed_at": None, "completed_at": None,
                  "progress": {"total": len(entries), "success": 0, "failed": 0, "skipped": 0}}
        if not dry_run:
            queue.add(ticket)

    cache = (SitemapCache(state.root / "sitemaps")
             if s.cache_sitemaps and not dry_run else None)
    with http_client(site) as client:
        for e in discover(site.sources, s, client, stats, progress, cache):
            res.found += 1
            url = e.url
            if filtering and (reason := flt.check(url)) is not None:
                filtered[reason] += 1
                continue
            key = normalize_url(url)
            if not seen.add(key):
                res.duplicates += 1
                continue
            if queued_any and key in queued:
                res.already_queued += 1
                continue
            prior = idx.get(url) if idx else None
            if prior is None:
                new = True
                score = 0.0
            else:
                d = planner.decide(e.lastmod, e.changefreq, e.priority, prior)
                if not d.due:
                    res.fresh += 1
                    res.bytes_saved += prior.get("size") or 0
                    continue
                new, score = d.new, d.score
            if limit is not None and res.kept >= limit:
                res.over_limit += 1
                continue
            res.kept += 1
            entry: dict[str, Any] = {"url": url}
            if e.lastmod:
                entry["lastmod"] = e.lastmod
            if e.changefreq:
                entry["changefreq"] = e.changefreq
            if e.priority is not None:
                entry["priority"] = e.priority
            if e.title:
                entry["title"] = e.title
            if prior:
                entry["prior"] = {k: prior[k] for k in _CARRY if prior.get(k) is not None}
            if new:
                res.new += 1
                batch.append(entry)
                if len(batch) >= ticket_size:
                    flush(batch)
                    batch = []
            else:
                res.due_again += 1
                stale.append((-score, entry))
    if batch:
        flush(batch)
    complete = not stats.errors and not stats.truncated_files
    if cache is not None and complete:
        res.sitemaps_pruned = cache.prune()
        if res.sitemaps_pruned:
            log.info("%s: dropped %d kept sitemap copies the source no longer leads to",
                     site.name, res.sitemaps_pruned)
    if not dry_run and idx and complete:
        res.removed = _remove_gone(site, state, wid, observer, idx, seen, now)
    elif idx and not complete and not dry_run:
        res.warnings.append("some sitemaps could not be read completely: pages missing from "
                            "them were NOT treated as removed")
    stale.sort(key=lambda t: t[0])
    for i in range(0, len(stale), ticket_size):
        flush([e for _, e in stale[i:i + ticket_size]])

    res.filtered = dict(filtered)
    res.cross_host, res.invalid = stats.cross_host, stats.invalid_urls
    res.sitemaps_read = stats.sitemaps_read
    res.sitemaps_not_modified = stats.not_modified
    res.warnings = list(stats.errors) + res.warnings
    res.seconds = time.monotonic() - t0
    if res.over_limit:
        res.warnings.append(f"max_urls_per_site={limit} reached: {res.over_limit} URLs left out")
    if not dry_run:
        os.sync()  # ticket files were written without per-file fsync; make them durable at once
        manifest = state.read_manifest()
        manifest.update({"site": site.name, "sources": list(site.sources),
                         "base_dir": str(site.base_dir), "updated_at": utcnow()})
        history = manifest.setdefault("prepares", [])
        history.append({k: v for k, v in asdict(res).items() if k != "warnings"}
                       | {"at": now, "run": run, "warnings": res.warnings[:20]})
        del history[:-20]
        state.write_manifest(manifest)
    return res


def _remove_gone(site: Site, state: StateDir, wid: str, observer: Observer,
                 idx: dict[str, dict[str, Any]], seen: UrlSet, now: str) -> int:
    """URLs of the index that the sources no longer list: markdown removed, tombstone kept."""
    gone = [u for u, e in idx.items()
            if not e.get("removed") and normalize_url(u) not in seen]
    if not gone:
        return 0

    layout = OutputLayout(site.base_dir, site.settings.output, site.name)

    def mark(live: dict[str, dict[str, Any]]) -> None:
        for u in gone:
            e = live.get(u)
            if e is None or e.get("removed"):
                continue
            remove_output(layout, e.get("file_path"), site.settings.on_removed)
            tombstone(e, now, "not_in_sitemap")

    url_index.update(state, wid, observer.is_dead, mark, site.base_dir,
                     lock_timeout=site.settings.crawl_state.heartbeat_timeout)
    for u in gone:
        log.info("removed (no longer in the sitemap): %s", u, extra={"url": u})
    return len(gone)
