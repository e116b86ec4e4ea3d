"""prepare: discover a site's URLs, filter, dedupe, plan, and write tickets.

Streaming from end to end so that a 1,000,000-URL sitemap index fits in a small, bounded
amount of memory: entries flow from discovery through the filter and the dedupe set
(:class:`urls.UrlSet`, 64-bit hashes in a flat array) straight into ticket files.  Only URLs
that are due again on a re-crawl are held back, to be ordered by priority after the new ones.

Speed: for a million URLs the XML is not what costs, the Python steps per URL are.  So the
sitemap parser's strict tier hands over whole columns (sitemap.py ``Columns``), and
:meth:`_Prepare._admit_columns` does for them what :meth:`_Prepare._admit` does per entry,
on whole lists: one regex for the URL keys, one loop for the dedupe, ticket entries built
in bulk.  Every URL that is not plainly new (the index knows it, a URL cap, filters, link
following) takes ``_admit``'s own steps.  Tickets are written with plain ``os`` calls
(fsutil ``write_new_file``).  Modules only some prepares need (smart sampling, the link
frontier) are imported when used: their imports were a sixth of the peak memory.

Idempotent: URLs already waiting in pending/claimed/failed tickets are loaded into the dedupe
set first, so running prepare twice adds no duplicate work.

With ``follow_links`` the sources themselves are the depth-0 seeds, the site's sitemaps and
llms.txt (if it has any) add depth-0 URLs, and the URLs found by following links (the index
remembers their depth) are planned again like any other; the frontier (protocol/frontier.py)
finds the rest while the workers run.  Every URL prepare tickets is first marked queued in
the index, so a link to it found meanwhile does not ticket it twice.

Removals need positive evidence (P1): a URL of the index loses its markdown here only when
the sources were read completely (no fetch error, no truncated file, no feed — a feed lists
recent items, not the site) and the URL is no longer *listed* in them.  Listed means in the
sources at all: a URL that a filter, ``max_urls_per_site`` or the dedupe left out is still
listed, so a config change never deletes a file.  ``--dry-run`` reports what would go.

One at a time (P2): a prepare holds the site's ``prepare-lock`` rename token (beating, like
the index lock) from start to end; a second one waits for it, then sees the first one's
tickets as already queued.

Rounds (R1): a prepare that finds the last round unfinished (tickets still pending or
claimed) completes it instead of starting over: URLs crawled since that round's prepare are
not queued again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import orjson

from sitemap_crawler.commands.known import KnownUrls
from sitemap_crawler.commands.plan import Planner
from sitemap_crawler.commands.scope import MANIFEST_HOSTS, MAX_HOSTS, manifest_hosts
from sitemap_crawler.config import Settings, Site
from sitemap_crawler.convert.output import OutputLayout
from sitemap_crawler.convert.removal import remove_output, returning, tombstone
from sitemap_crawler.discover.sitemap import Columns, Entry
from sitemap_crawler.discover.sitemapcache import SitemapCache
from sitemap_crawler.discover.sources import DiscoveryStats, discover, discover_batches
from sitemap_crawler.discover.urls import UrlFilter, UrlSet, normalize_url, normalize_urls
from sitemap_crawler.errors import CrawlError, DiscoveryError
from sitemap_crawler.fetch.decoding import ACCEPT_ENCODING
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.fields import Stale
from sitemap_crawler.protocol.frontier import QUEUED
from sitemap_crawler.protocol.fsutil import (
    RenameLock,
    replace_file,
    sweep_tmp,
    sync_filesystem,
    tmp_name,
)
from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer, proven_dead
from sitemap_crawler.protocol.hostgate import HostGate
from sitemap_crawler.protocol.index import url_key
from sitemap_crawler.protocol.state import EXCLUDED_FILE, StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import HOST_MARK, TicketQueue, by_host
from sitemap_crawler.timestamps import utcnow

if TYPE_CHECKING:
    from sitemap_crawler.discover.links import LinkRules

log = logging.getLogger(__name__)

def frontier_for(site: Site, state: StateDir) -> Any:
    """worker.frontier_for, imported only for link following (see the module docstring)."""
    from sitemap_crawler.commands.worker import frontier_for as frontier

    return frontier(site, state)


def sample_changes(idx: dict[str, dict[str, Any]], s: Any, gate: HostGate,
                   sources: tuple[str, ...] = ()) -> Any:
    """smart.sample_changes, imported only for crawl_mode smart."""
    from sitemap_crawler.commands.smart import sample_changes as sample

    return sample(idx, s, gate, sources=sources)

_CARRY = ("etag", "last_modified", "content_hash", "raw_hash", "file_path", "last_crawled",
          "first_seen", "last_changed", "changes_detected", "change_frequency", "size",
          "validators_lie", "final_url", "rendered")
# Source kinds that list the whole site; a feed lists recent items only (P1).
_COMPLETE_KINDS = {"urlset", "sitemapindex", "llms", "text", "robots"}
LINK_SITE_PROBE = ("/sitemap.xml",)  # what a link-following site is probed for (_seeds)
PREPARE_WAIT = 3600.0  # seconds a prepare waits for another one on the same site (P2)
REMOVAL_SAMPLE = 20  # URLs named in the result (and by --dry-run) of those removed
# The url-index as prepare holds it: a dict where link following or smart sampling need the
# entries themselves, else the compact form (known.py).
Known = dict[str, dict[str, Any]] | KnownUrls


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
    removed_sample: list[str] = field(default_factory=list)
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
    done_in_round: int = 0  # crawled since the unfinished round's prepare: not queued again

    def summary(self) -> str:
        filt = sum(self.filtered.values())
        verb = "would write" if self.dry_run else "wrote"
        unchanged = (f", {self.sitemaps_not_modified} unchanged since the last read"
                     if self.sitemaps_not_modified else "")
        gone = "would be removed" if self.dry_run else "removed"
        read = f" in {_n(self.sitemaps_read, 'file')}" if self.sitemaps_read else ""
        return (f"{self.site}: found {_n(self.found, 'URL')}{read}"
                f"{unchanged}; "
                f"{filt} filtered, {self.duplicates} duplicate, {self.cross_host} other-host, "
                f"{self.invalid} invalid, {self.already_queued} already queued, "
                f"{self.fresh} fresh"
                + (f", {self.done_in_round} done in the unfinished crawl"
                   if self.done_in_round else "")
                + f"; {verb} {_n(self.tickets, 'ticket')} for {_n(self.kept, 'URL')} "
                f"({self.new} new, {self.due_again} due again)"
                + (f"; {self.removed} {gone}" if self.removed else "")
                + (f"; {self.bytes_saved / 1e6:.1f} MB not downloaded (fresh per the sitemap)"
                   if self.bytes_saved else "")
                + f" in {self.seconds:.1f}s")


def _n(count: int, word: str) -> str:
    """``1 URL``, ``2 URLs``: a count a user reads, in the right number."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def http_client(site: Site, gate: HostGate | None = None) -> httpx.Client:
    """The discovery client; with ``gate`` every request takes a lease of the host gate
    that the workers use (fetch/gated.py), so discovery is as polite as pages."""
    from sitemap_crawler.fetch.client import ssl_context
    from sitemap_crawler.fetch.netguard import guarded_transport

    s = site.settings
    # the address policy and request_deadline hold for discovery too (fetch/netguard.py)
    transport: httpx.BaseTransport = guarded_transport(s, site.sources, ssl_context())
    if gate is not None:
        from sitemap_crawler.fetch.gated import GatedTransport

        transport = GatedTransport(transport, gate, s)
    return httpx.Client(verify=ssl_context(),
        headers={"User-Agent": s.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
        timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
        follow_redirects=False, transport=transport,
    )


@contextlib.contextmanager
def shared_gate(state: StateDir, wid: str, s: Settings, *, linger: bool = False,
                ) -> Iterator[HostGate]:
    """The host gate every site of this .crawl-state shares (state.gate_root), with a
    heartbeat that tells others that the tokens ``wid`` holds are held by a live process
    (hostgate.py G6); tokens still waiting for their delay go back when it closes (G8)."""
    cs = s.crawl_state
    for d in (state.gate_root, state.gate_workers):
        d.mkdir(parents=True, exist_ok=True)
    observer = Observer(state.gate_workers, cs.heartbeat_timeout)
    hb = Heartbeat(state.gate_workers, wid, cs.heartbeat_interval).start()
    gate = HostGate(state.gate_root, wid, observer.is_dead, deferred=True)
    try:
        yield gate
    finally:
        if linger:
            threading.Thread(target=_close_gate, args=(gate, hb), name="gate-linger").start()
        else:
            _close_gate(gate, hb)


def _close_gate(gate: HostGate, hb: Heartbeat) -> None:
    gate.close(threading.Event())  # the last delays hold after prepare too (G5)
    with contextlib.suppress(OSError):
        hb.stop(remove=True)


def prepare(site: Site, *, dry_run: bool = False, full: bool = False, linger: bool = False,
            progress: Callable[[str], None] | None = None) -> PrepareResult:
    """Discover ``site``'s URLs and write tickets for those due; see the module docstring.

    ``linger``: for a process that prepares many sites one after another (cli.py's pool):
    the site's last tokens go back on a thread of their own when their delays are over,
    while the process prepares the next site (each prepare waited out its last delay, a
    second per site at the default delay).  Non-daemon: the process joins it at exit."""
    return _Prepare(site, dry_run=dry_run, full=full, linger=linger).run(progress)


class _Tickets:
    """Entries -> ticket files of ``ticket_size`` URLs: new URLs at once, due ones by score.

    With ``hold`` nothing is written before :meth:`close`, which first shows every entry to
    ``before_write`` (link following marks them queued in the index first).
    """

    def __init__(self, site: Site, queue: TicketQueue, res: PrepareResult, now: str, *,
                 hold: bool = False, full: bool = False) -> None:
        self.site, self.queue, self.res, self.now = site, queue, res, now
        self.full = full  # tickets.py T11: the worker sends no validators for these URLs
        self.size = site.settings.crawl_state.ticket_size
        self.run = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
        self.batch: list[dict[str, Any]] = []
        self.stale: list[tuple[float, dict[str, Any]]] = []
        self.hold = hold
        self.hold_counted = False
        self.held: list[list[dict[str, Any]]] = []
        self.later: list[dict[str, Any]] = []  # new URLs whose prior is read at close
        self.written = 0
        self.hosts: set[str] = set()  # of the URLs ticketed (commands/scope.py)

    def add_new(self, entry: dict[str, Any]) -> None:
        self.batch.append(entry)
        if len(self.batch) >= self.size:
            self._write(self.batch)
            self.batch = []

    def add_new_many(self, entries: list[dict[str, Any]]) -> None:
        batch = self.batch
        batch += entries
        size = self.size
        if len(batch) >= size:
            full = len(batch) - len(batch) % size
            for i in range(0, full, size):
                self._write(batch[i:i + size])
            self.batch = batch[full:]

    def add_due(self, score: float, entry: dict[str, Any]) -> None:
        self.stale.append((-score, entry))

    def close(self, before_write: Callable[[list[dict[str, Any]]], None] | None = None,
              fill: Callable[[], None] | None = None) -> None:
        """``fill``: gives the held entries their priors before any of them is written."""
        if fill is not None:
            fill()
        if self.later:
            self.add_new_many(self.later)
            self.later = []
        if self.batch:
            self._write(self.batch)
            self.batch = []
        self.stale.sort(key=lambda t: t[0])
        for i in range(0, len(self.stale), self.size):
            self._write([e for _, e in self.stale[i:i + self.size]])
        self.stale = []
        held, self.held, self.hold = self.held, [], False
        if held and before_write is not None and not self.res.dry_run:
            before_write([e for t in held for e in t])
        self.hold_counted = True  # counted when they were held
        for entries in held:
            self._put(entries)
        self.hold_counted = False

    def _write(self, entries: list[dict[str, Any]]) -> None:
        if self.hold:
            self.res.tickets += len(by_host(entries))
            self.held.append(entries)
        else:
            self._put(entries)

    def _put(self, entries: list[dict[str, Any]]) -> None:
        """One ticket per host among ``entries`` (tickets.py T9)."""
        for tag, group in by_host(entries, None if self.res.dry_run else self.hosts):
            self.written += 1
            if not self.hold_counted:
                self.res.tickets += 1
            if self.res.dry_run:
                continue
            ticket: dict[str, Any] = {
                "ticket_id": f"{self.run}-{self.written:05d}{HOST_MARK}{tag}",
                "site": self.site.name, "created_at": self.now, "last_seen": self.now,
                "gen": 0, "urls": group, "size": len(group), "claimed_by": None,
                "claimed_at": None, "completed_at": None,
                "progress": {"total": len(group), "success": 0, "failed": 0, "skipped": 0}}
            if self.full:
                ticket["full"] = True
            self.queue.add(ticket, to_view=False)  # prepare claims nothing (tickets.py T10)


def _carried(prior: dict[str, Any]) -> dict[str, Any]:
    """What a ticket carries of a URL's index entry to the worker (validators, hashes...)."""
    out = {k: prior[k] for k in _CARRY if prior.get(k) is not None}
    if str(prior.get("outcome") or "").startswith("skipped:"):  # a 304 may keep why
        out["outcome"] = prior["outcome"]
    if prior.get("removed"):  # back in the sources: written again, tombstone lifted
        out = returning(out)
    return out


class _Excluded:
    """URLs prepare leaves out, one JSON line each with the reason, for ``export``.

    Written under a temporary name and renamed over ``excluded.jsonl`` when prepare ends, so
    the file always describes one whole prepare; a dry run writes nothing.
    """

    def __init__(self, state: StateDir, enabled: bool) -> None:
        self.path = state.root / EXCLUDED_FILE
        self.tmp = tmp_name(self.path) if enabled else None
        self.f = open(self.tmp, "wb") if self.tmp else None  # noqa: SIM115 - closed in close()

    def add(self, url: str, reason: str) -> None:
        if self.f is not None:
            self.f.write(orjson.dumps({"url": url, "reason": reason}) + b"\n")

    def close(self, keep: bool) -> None:
        if self.f is None or self.tmp is None:
            return
        self.f.close()
        self.f = None
        if keep:
            replace_file(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


class _Prepare:
    """One prepare run, in the order the module docstring gives: state, plan, admit, remove."""

    def __init__(self, site: Site, *, dry_run: bool, full: bool, linger: bool = False) -> None:
        self.site, self.s, self.full, self.linger = site, site.settings, full, linger
        self.state = StateDir(site.state_dir)
        self.res = PrepareResult(site=site.name, dry_run=dry_run)
        self.wid = new_worker_id()
        self.observer = Observer(self.state.workers, self.s.crawl_state.heartbeat_timeout)
        self.gate: HostGate | None = None  # the shared host gate while discovering
        self.now = utcnow()
        self.seen = UrlSet()  # URLs past the filter so far (dedupe)
        self.queued = UrlSet()  # URLs already waiting in tickets (idempotence)
        self.filter = UrlFilter(site.filters.include, site.filters.exclude)
        self.filtering = bool(site.filters.include or site.filters.exclude)
        # Every URL the sources list, filtered or not (P1); without filters that is ``seen``.
        self.listed = UrlSet() if self.filtering else self.seen
        self.filtered: Counter[str] = Counter()
        self.rules: LinkRules | None = None
        if self.s.follow_links:  # links.py needs lxml: imported only for link following
            from sitemap_crawler.discover.links import LinkRules

            self.rules = LinkRules(self.s, site.sources)
        self.excluded = _Excluded(self.state, enabled=False)
        self.round_at: str | None = None
        self.to_fill: dict[str, dict[str, Any]] = {}  # ticket entries whose prior is read later
        self.compact: KnownUrls | None = None  # the compact index, when prepare uses it

    def run(self, progress: Callable[[str], None] | None) -> PrepareResult:
        if self.res.dry_run:
            return self._run_timed(progress)
        self.state.ensure()
        # P2: one prepare at a time per site, on every machine: two at once would each see
        # the other's URLs as not queued yet and ticket them twice (found by bench/soak.py).
        lock = RenameLock(self.state.prepare_lock, "prepare", self.wid,
                          timeout=self.s.crawl_state.heartbeat_timeout, local_dead=proven_dead)
        if not lock.acquire(timeout=0.5):
            log.info("%s: another prepare is running; waiting for it to finish", self.site.name)
            if not lock.acquire(timeout=PREPARE_WAIT):
                raise CrawlError(f"{self.site.name}: another prepare has held the site for "
                                 f"{PREPARE_WAIT:.0f}s; try again later")
        try:
            return self._run_timed(progress)
        finally:
            with contextlib.suppress(OSError, CrawlError):
                lock.release()

    def _run_timed(self, progress: Callable[[str], None] | None) -> PrepareResult:
        t0 = time.monotonic()
        res, dry_run = self.res, self.res.dry_run
        if not dry_run or self.state.exists():  # known before the index is read (known.py)
            self.round_at = self._unfinished_round(TicketQueue(self.state, self.wid))
        idx = self._load_index()
        self.excluded = _Excluded(self.state, enabled=not dry_run)
        try:
            self._run(idx, progress, res, dry_run)
        except BaseException:
            self.excluded.close(keep=False)
            raise
        self.excluded.close(keep=True)
        res.seconds = time.monotonic() - t0
        return res

    def _run(self, idx: Known, progress: Callable[[str], None] | None,
             res: PrepareResult, dry_run: bool) -> None:
        queue = TicketQueue(self.state, self.wid)
        if not dry_run:  # W2: what killed writers left in the staging directory
            sweep_tmp(self.state.root / "tmp")
        if not dry_run and self.s.crawl_state.keep_completed > 0:
            res.tickets_pruned = queue.prune_completed(self.s.crawl_state.keep_completed)
        for u in queue.pending_urls():
            self.queued.add(normalize_url(u))
        self.queued_any = len(self.queued) > 0
        with contextlib.ExitStack() as stack:
            self.gate = (None if dry_run
                         else stack.enter_context(shared_gate(self.state, self.wid, self.s,
                                                         linger=self.linger)))
            self._discover(idx, progress, res, dry_run, queue)

    def _discover(self, idx: Known,
                  progress: Callable[[str], None] | None, res: PrepareResult, dry_run: bool,
                  queue: TicketQueue) -> None:
        planner = Planner(self.s, full=self._full_crawl(idx))
        tickets = _Tickets(self.site, queue, res, self.now, hold=self.rules is not None,
                           full=self._refetch())
        stats = DiscoveryStats(on_drop=self.excluded.add)
        cache = (SitemapCache(self.state.root / "sitemaps")
                 if self.s.cache_sitemaps and not dry_run else None)
        with http_client(self.site, self.gate) as client:
            ahead = self._robots_ahead(client)
            try:
                if self.rules is not None:
                    for e in self._seeds(client, stats, progress, cache):
                        self._admit(e, idx, planner, tickets)
                else:
                    for batch in discover_batches(self.site.sources, self.s, client, stats,
                                                  progress, cache):
                        if isinstance(batch, Columns):
                            self._admit_columns(batch, idx, planner, tickets)
                        else:
                            for e in batch:
                                self._admit(e, idx, planner, tickets)
            finally:  # also when discovery fails: nothing of prepare's logs after its end
                if ahead is not None:
                    ahead.join()
        if self.rules is not None:
            self._replan_found(idx, planner, tickets)
        # due-again URLs go after the new ones, by score; link following marks them queued
        tickets.close(self._mark_queued if self.rules is not None else None,
                      self._fill_priors)
        complete = not stats.errors and not stats.truncated_files
        if cache is not None and complete:
            res.sitemaps_pruned = cache.prune()
            if res.sitemaps_pruned:
                log.info("%s: dropped %d kept sitemap copies the source no longer leads to",
                         self.site.name, res.sitemaps_pruned)
        partial = [s.url for s in stats.sources if s.kind not in _COMPLETE_KINDS]
        if self.rules is not None:
            pass  # a link-following site has no complete listing: 404/410 is the evidence
        elif idx and complete and not partial:
            self._remove_unlisted(idx)
        elif idx and not complete:
            res.warnings.append("some sitemaps could not be read completely: pages missing "
                                "from them were NOT treated as removed")
        elif idx and partial:
            log.info("%s: %s lists only part of the site (a feed): pages missing from it are "
                     "not treated as removed", self.site.name, partial[0])
        res.filtered = dict(self.filtered)
        res.cross_host, res.invalid = stats.cross_host, stats.invalid_urls
        res.sitemaps_read = stats.sitemaps_read
        res.sitemaps_not_modified = stats.not_modified
        res.warnings = list(stats.errors) + res.warnings
        if res.already_queued and tickets.full:
            res.warnings.append(f"{res.already_queued} URLs were already queued by an earlier "
                                "prepare and are fetched as it said: with validators unless "
                                "it was a full one too")
        if res.over_limit:
            res.warnings.append(f"max_urls_per_site={self.s.max_urls_per_site} reached: "
                                f"{res.over_limit} URLs left out")
        if not dry_run:
            # ticket files were written without per-file fsync: make them durable
            sync_filesystem(self.state.ticket_dir("pending"))
            self._record(tickets.run, tickets.hosts)

    def _load_index(self) -> Known:
        """The index, compact (known.py) unless link following or smart sampling need the
        entries; with the journals folded in first (not for a dry run)."""
        whole = self.rules is not None or self.s.crawl_mode == "smart"
        if self.res.dry_run:
            if not self.state.exists():
                return {}
            if not whole:
                try:
                    return self._known(url_index.iter_view(self.state))
                except CrawlError:
                    pass  # a corrupt base: rebuilt in memory below, as always
            idx = url_index.load_or_rebuild(self.state, self.site.base_dir)
            return idx if whole else self._known(iter(idx.items()))
        self.state.ensure()
        if not whole:
            return url_index.merged_stream(
                self.state, self.wid, self.observer.is_dead, self.site.base_dir, self._known,
                lock_timeout=self.s.crawl_state.heartbeat_timeout, fast=self._known_fields)
        frontier = frontier_for(self.site, self.state) if self.rules is not None else None
        return url_index.merged_index(self.state, self.wid, self.observer.is_dead,
                                      self.site.base_dir, frontier,
                                      lock_timeout=self.s.crawl_state.heartbeat_timeout)

    def _known(self, entries: Iterator[tuple[str, dict[str, Any]]]) -> KnownUrls:
        self.compact = KnownUrls.build(entries, self.round_at)
        return self.compact

    def _known_fields(self) -> KnownUrls | None:
        """The compact index from the fields file a compaction wrote (known.py), or None:
        streamed."""
        self.compact = KnownUrls.load(self.state, self.round_at)
        return self.compact

    def _fill_priors(self) -> None:
        """The priors of the ticket entries judged on the compact index: their base lines
        read by offset (fields file), else one more pass over the index (only those URLs'
        lines are parsed)."""
        need, self.to_fill = self.to_fill, {}
        if not need or self.res.dry_run:
            return
        compact = self.compact
        if compact is not None:
            try:
                for url, prior in compact.view(self.state, need):
                    if prior:  # an entry emptied meanwhile (a rebuild) carries nothing
                        need[url]["prior"] = _carried(prior)
                return
            except Stale:  # I8: read by streaming instead, from scratch
                for entry in need.values():
                    entry.pop("prior", None)
        for url, prior in url_index.iter_view(self.state, want=need.__contains__):
            if prior:  # an entry emptied meanwhile (a rebuild) carries nothing, as before
                need[url]["prior"] = _carried(prior)

    # -- link following ----------------------------------------------------------------------
    def _robots_ahead(self, client: httpx.Client) -> threading.Thread | None:
        """With no delay, the sources' robots.txt is asked beside the sitemaps and kept for
        the workers (robots.py R6): each worker would otherwise ask it first, an answer's
        time before its first page (S2: 0.1 s of 14, and one request per process).  With a
        delay it would only take a turn of the gate the sitemaps need: the workers ask.
        Like the sitemaps, this request does not know robots.txt's Crawl-delay yet; the
        workers' pages keep it (they read the kept copy)."""
        s = self.s
        if self.gate is None or not s.respect_robots_txt or s.delay_for(None) > 0 \
                or s.robots_cache <= 0:
            return None
        from sitemap_crawler.fetch.robots import RobotsCache, origin_of

        try:
            parts = [urlsplit(src) for src in self.site.sources]
            if any(p.path in ("", "/") or p.path.endswith("/robots.txt") for p in parts):
                return None  # discovery reads robots.txt itself (a bare site)
            origins = list(dict.fromkeys(origin_of(src) for src, p in
                                         zip(self.site.sources, parts, strict=True)
                                         if p.scheme in ("http", "https")))[:4]
        except ValueError:  # a source the discovery will report in its own words
            return None
        robots = RobotsCache(client, s, store=self.state.gate_root)

        def ask() -> None:
            for origin in origins:
                try:
                    robots.entry(origin)
                except Exception as e:  # only ahead of time: the workers ask again
                    log.debug("%s: robots.txt ahead of the workers: %s", origin, e)

        t = threading.Thread(target=ask, name="robots-ahead", daemon=True)
        t.start()
        return t

    def _seeds(self, client: httpx.Client, stats: DiscoveryStats,
               progress: Callable[[str], None] | None,
               cache: SitemapCache | None) -> Iterator[Entry]:
        """The sources at depth 0, then the URLs of the site's sitemaps/llms.txt if it has
        any (a site without one is what link following is for: that is not an error)."""
        assert self.rules is not None
        origins: list[str] = []
        for src in self.site.sources:
            url = self.rules.clean(src) or src
            yield Entry(url, None, None, None, source=src)
            p = urlsplit(src)
            origin = f"{p.scheme}://{p.netloc}/"
            listing = p.path.endswith((".xml", ".gz", ".txt"))
            for o in ([src] if listing else [origin]):
                if o not in origins:
                    origins.append(o)
        for o in origins:
            try:
                # robots.txt's Sitemap: lines, /sitemap.xml and /llms.txt only: links find
                # the rest, and each probe costs the host a delay (issue 18)
                for e in discover([o], self.s, client, stats, progress, cache,
                                  probe=LINK_SITE_PROBE):
                    url = self.rules.clean(e.url)
                    if url is not None:
                        yield dataclasses.replace(e, url=url)
            except DiscoveryError as e:
                log.info("%s: %s; following links from the source", self.site.name, e)

    def _replan_found(self, idx: dict[str, dict[str, Any]], planner: Planner,
                      tickets: _Tickets) -> None:
        """URLs found by following links on earlier crawls: due again like any other."""
        for url, e in idx.items():
            if "depth" in e and not e.get("removed") and normalize_url(url) not in self.seen:
                self._admit(Entry(url, None, None, None, source="links"), idx, planner,
                            tickets, depth=int(e["depth"]), discovered=False)

    def _mark_queued(self, entries: list[dict[str, Any]]) -> None:
        """Before their tickets exist: the index knows these URLs, so the frontier does not
        ticket them again when a page links to them (protocol/frontier.py F1)."""
        def mark(live: dict[str, dict[str, Any]]) -> None:
            for e in entries:
                if e["url"] not in live:
                    live[e["url"]] = {"outcome": QUEUED, "depth": e.get("depth", 0),
                                      "first_seen": self.now}

        url_index.update(self.state, self.wid, self.observer.is_dead, mark, self.site.base_dir,
                         lock_timeout=self.s.crawl_state.heartbeat_timeout)

    def _unfinished_round(self, queue: TicketQueue) -> str | None:
        """When the last round still has tickets pending or claimed (a crash, a Ctrl+C, a
        machine still working), when that round's prepare ran; else None (R1).

        A crawl after a crash finishes the round it interrupted: a URL crawled since that
        prepare is not queued again, so the next command redoes at most what was in flight.
        ``--full`` starts a new round regardless.
        """
        if self.full or not queue.has_work():
            return None
        prepares = self.state.read_manifest().get("prepares") or []
        last = prepares[-1] if prepares and isinstance(prepares[-1], dict) else {}
        # the round began with the prepare that started it, not the last one that resumed it
        # (a crawl interrupted twice would fetch the first run's pages again)
        at = last.get("round_at") or last.get("at")
        return at if isinstance(at, str) else None

    def _refetch(self) -> bool:
        """A full round the user asked for (``--full``, ``crawl_mode: full``,
        ``crawl_state.incremental: false``): its URLs are fetched without validators, so
        the markdown is made again (after a converter upgrade, say); a file is still only
        rewritten when its content changed.  A full round that smart mode chose keeps its
        conditional requests: it only queues everything (tickets.py T11)."""
        s = self.s
        return self.full or s.crawl_mode == "full" or not s.crawl_state.incremental

    def _full_crawl(self, idx: Known) -> bool:
        """--full, or crawl_mode smart whose sample says that enough changed."""
        s = self.s
        if self.full or s.crawl_mode != "smart" or not idx or self.res.dry_run \
                or not isinstance(idx, dict):
            return self.full
        verdict = sample_changes(idx, s, self.gate or HostGate(
            self.state.gate_root, self.wid, self.observer.is_dead), self.site.sources)
        full = verdict.ratio > s.smart_threshold
        self.res.smart = {"sampled": verdict.sampled, "changed": verdict.changed,
                          "mode": "full" if full else "incremental"}
        log.info("smart mode: %d of %d sampled URLs changed -> %s crawl", verdict.changed,
                 verdict.sampled, self.res.smart["mode"])
        return full

    def _admit(self, e: Entry, idx: Known, planner: Planner,
               tickets: _Tickets, depth: int = 0, discovered: bool = True) -> None:
        """One discovered URL: filtered, duplicate, queued, fresh, over the cap, or a ticket."""
        res = self.res
        res.found += discovered  # a URL known from earlier link following is not "found"
        url = e.url
        key = normalize_url(url)
        if self.filtering:
            self.listed.add(key)
            if (reason := self.filter.check(url)) is not None:
                self.filtered[reason] += 1
                self.excluded.add(url, "filter")
                return
        if not self.seen.add(key):
            res.duplicates += 1
            self.excluded.add(url, "duplicate")
            return
        if self.queued_any and key in self.queued:
            res.already_queued += 1
            return
        self._plan(e, idx, planner, tickets, depth)

    def _admit_columns(self, cols: Columns, idx: Known, planner: Planner,
                       tickets: _Tickets) -> None:
        """``_admit`` for each entry of ``cols``, in order, with the same outcome; the
        common case (nothing filtered, the index empty, no cap) on whole lists."""
        if self.filtering or self.rules is not None:
            for e in cols:
                self._admit(e, idx, planner, tickets)
            return
        res = self.res
        urls = cols.urls
        res.found += len(urls)
        keys = normalize_urls(urls, cols.origin())
        known = self.seen.add_many(keys)
        queued = self.queued if self.queued_any else None
        judging = bool(idx) or bool(self.s.max_urls_per_site)  # a decision per URL
        if judging or queued is not None or known:
            keep = [True] * len(urls)
            for i in known:
                keep[i] = False
            # the URLs the index calls fresh, found in one loop (KnownUrls.fresh_sizes);
            # not while an unfinished round's done ones are told apart first (R1)
            fresh: list[int | None] | None = None
            if isinstance(idx, KnownUrls) and self.round_at is None \
                    and (rule := planner.fresh_rule()) is not None:
                fresh = idx.fresh_sizes(urls, cols.lastmods, cols.changefreqs, rule)
            for i, new in enumerate(keep):  # in order, as _admit would (excluded.jsonl)
                if not new:
                    res.duplicates += 1
                    self.excluded.add(urls[i], "duplicate")
                elif judging:  # planner, cap
                    if queued is not None and keys[i] in queued:
                        res.already_queued += 1
                    elif fresh is not None and (size := fresh[i]) is not None:
                        res.fresh += 1
                        res.bytes_saved += size
                    elif (judged := self._judge(urls[i], cols.lastmods[i],
                                                cols.changefreqs[i], cols.priorities[i],
                                                idx, planner)) is not None:
                        self._plan(cols.entry(i), idx, planner, tickets, 0, judged)
            if judging:
                return
            if queued is not None:
                for i, new in enumerate(keep):
                    if new and keys[i] in queued:
                        res.already_queued += 1
                        keep[i] = False
            cols = cols.select(keep)
            urls = cols.urls
        lastmods, changefreqs, priorities = cols.lastmods, cols.changefreqs, cols.priorities
        if None not in lastmods and None not in changefreqs and None not in priorities:
            entries = [{"url": u, "lastmod": m, "changefreq": c, "priority": p}
                       for u, m, c, p in zip(urls, lastmods, changefreqs, priorities,
                                             strict=True)]
        else:
            entries = self._entries(urls, lastmods, changefreqs, priorities)
        res.kept += len(entries)
        res.new += len(entries)
        tickets.add_new_many(entries)

    @staticmethod
    def _entries(urls: list[str], lastmods: list[str | None], changefreqs: list[str | None],
                 priorities: list[float | None]) -> list[dict[str, Any]]:
        """Ticket entries of new URLs: the fields the sitemap gave, as ``_plan`` writes them."""
        entries: list[dict[str, Any]] = [{"url": u} for u in urls]
        for name, column in (("lastmod", lastmods), ("changefreq", changefreqs),
                             ("priority", priorities)):
            if None not in column:
                for entry, v in zip(entries, column, strict=True):
                    entry[name] = v
            else:
                for entry, v in zip(entries, column, strict=True):
                    if v is not None:
                        entry[name] = v
        return entries

    def _judge(self, url: str, lastmod: str | None, changefreq: str | None,
               priority: float | None, idx: Known, planner: Planner,
               ) -> tuple[bool, float, dict[str, Any] | bool | None] | None:
        """None if the listed URL is fresh or done in this round (counted); else (new, score,
        prior): the index's entry, or True for one the compact index holds (its prior is
        read when the tickets are written), or None (not in the index, or an empty entry).
        Fields, not an Entry: a million fresh URLs need no Entry made."""
        res = self.res
        if isinstance(idx, KnownUrls):
            slot = idx.find(url)
            if slot is None:
                return True, 0.0, None
            if self.round_at is not None and idx.done_in_round(slot):
                res.done_in_round += 1  # R1: crawled since this round began; not again
                return None
            d = idx.decide(planner, lastmod, changefreq, priority, slot)
            if not d.due:
                res.fresh += 1
                res.bytes_saved += idx.size(slot)
                return None
            return d.new, d.score, not idx.empty(slot) or None
        prior = idx.get(url) if idx else None
        if prior is None:
            return True, 0.0, None
        if self.round_at is not None and (prior.get("last_crawled") or "") >= self.round_at:
            res.done_in_round += 1  # R1: crawled since this round began; not again
            return None
        d = planner.decide(lastmod, changefreq, priority, prior)
        if not d.due:
            res.fresh += 1
            res.bytes_saved += prior.get("size") or 0
            return None
        return d.new, d.score, prior

    def _plan(self, e: Entry, idx: Known, planner: Planner,
              tickets: _Tickets, depth: int,
              judged: tuple[bool, float, dict[str, Any] | bool | None] | None = None) -> None:
        """A listed URL new to this prepare: fresh, done in this round, over the cap, or a
        ticket entry (new, or due again with its score); ``judged``: ``_judge``'s answer
        when the caller has it already."""
        res = self.res
        url = e.url
        if judged is None:
            judged = self._judge(url, e.lastmod, e.changefreq, e.priority, idx, planner)
        if judged is None:
            return
        new, score, prior = judged
        limit = self.s.max_urls_per_site
        if limit and res.kept >= limit:
            res.over_limit += 1
            self.excluded.add(url, "over_limit")
            return
        res.kept += 1
        entry: dict[str, Any] = {"url": url}
        for k in ("lastmod", "changefreq", "priority", "title"):
            if (v := getattr(e, k)) is not None and v != "":
                entry[k] = v
        if e.optional:
            entry["optional"] = True  # llms.txt "## Optional": kept in index and front matter
        if e.markdown_url:
            entry["markdown_url"] = e.markdown_url  # the worker asks for the .md twin first
        if self.rules is not None:
            entry["depth"] = depth
        if prior is True:
            self.to_fill[url] = entry  # _fill_priors gives it its prior
        elif prior:
            entry["prior"] = _carried(prior)
        if new:
            res.new += 1
            if prior is True:
                tickets.later.append(entry)  # written once its prior is there
            else:
                tickets.add_new(entry)
        else:
            res.due_again += 1
            tickets.add_due(score, entry)

    def _remove_unlisted(self, idx: Known) -> None:
        """URLs of the index the sources no longer list: markdown removed, tombstone kept."""
        if isinstance(idx, KnownUrls):  # by key, then their URLs by offset or in one pass
            keys = idx.unlisted()
            urls = idx.urls_of(keys) if keys else []
            entries = (iter([(u, {}) for u in urls]) if urls is not None  # none removed
                       else url_index.iter_view(self.state, want=lambda u: url_key(u) in keys))
        else:
            entries = iter(idx.items())
        gone = [u for u, e in entries
                if not e.get("removed") and normalize_url(u) not in self.listed]
        self.res.removed = len(gone)
        self.res.removed_sample = gone[:REMOVAL_SAMPLE]
        if not gone or self.res.dry_run:
            return
        layout = OutputLayout(self.site.base_dir, self.s.output, self.site.name)

        def mark_one(u: str, e: dict[str, Any] | None) -> bool:
            if e is None or e.get("removed"):
                return False
            remove_output(layout, u, e.get("file_path"), self.s.on_removed)
            tombstone(e, self.now, "not_in_sitemap")
            return True

        def mark(live: dict[str, dict[str, Any]]) -> None:
            for u in gone:
                mark_one(u, live.get(u))

        timeout = self.s.crawl_state.heartbeat_timeout
        if isinstance(idx, KnownUrls):  # tombstones as a segment: the index is not loaded
            url_index.update_some(self.state, self.wid, set(gone), mark_one,
                                  self.site.base_dir, lock_timeout=timeout)
        else:
            url_index.update(self.state, self.wid, self.observer.is_dead, mark,
                             self.site.base_dir, lock_timeout=timeout)
        for u in gone:
            log.info("removed (no longer in the sitemap): %s", u, extra={"url": u})

    def _record(self, run: str, hosts: set[str]) -> None:
        """This prepare's figures in manifest.json (the last 20 are kept), and the hosts
        of the URLs it queued: a worker takes ticket URLs of those only (commands/scope.py)."""
        manifest = self.state.read_manifest()
        manifest.update({"site": self.site.name, "sources": list(self.site.sources),
                         "base_dir": str(self.site.base_dir), "updated_at": utcnow()})
        known = manifest_hosts(manifest)
        if not hosts <= known:
            manifest[MANIFEST_HOSTS] = sorted(known | hosts)[:MAX_HOSTS]
        history = manifest.setdefault("prepares", [])
        history.append({k: v for k, v in asdict(self.res).items()
                        if k not in ("warnings", "removed_sample")}
                       | {"at": self.now, "run": run, "warnings": self.res.warnings[:20],
                          "round_at": self.round_at or self.now})  # R1: when the round began
        del history[:-20]
        self.state.write_manifest(manifest)
