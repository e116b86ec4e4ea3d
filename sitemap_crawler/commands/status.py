"""What `status` and `list` show: tickets per state, workers alive or dead, speed and ETA.

Reading only: status never changes the state directory.  Liveness of workers on other
machines cannot be judged from one look without trusting clocks (heartbeat.py H2), so status
watches their heartbeats for a moment when it has to (``watch`` seconds).

ST1 (cost follows the active work, not the history).  status opens only the files of work
that is live: pending, claimed and failed tickets, heartbeats, and of the journals what
was written since each worker's last beat plus the last minute's tail (journal.py J3).
Completed tickets are counted from the listing of completed/ alone (tickets.py T7 keeps
their number bounded), never opened; on SMB every open is a round trip.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sitemap_crawler.config import Site
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.heartbeat import Observer, read_heartbeat
from sitemap_crawler.protocol.journal import (
    count_records,
    journal_files,
    owner_of,
    tail_records,
)
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import TicketQueue
from sitemap_crawler.timestamps import parse_ts


def failed_urls(q: TicketQueue) -> int:
    """URLs in failed/ tickets that used up their retries (what ``resume`` would retry)."""
    n = 0
    for name in q.names("failed"):
        data = q.read("failed", name)
        if data:
            n += len(data.get("failures") or {})
    return n


def site_status(site: Site, watch: float = 0.0) -> dict[str, Any]:
    state = StateDir(site.state_dir)
    out: dict[str, Any] = {"site": site.name, "state_dir": str(state.root),
                           "output_dir": str(site.base_dir), "prepared": state.exists()}
    if not state.exists():
        return out
    q = TicketQueue(state, "status")
    out["tickets"] = q.counts()
    urls_left = q.remaining_urls()
    out["urls_remaining"] = urls_left
    out["urls_failed"] = failed_urls(q)

    obs = Observer(state.workers, site.settings.crawl_state.heartbeat_timeout)
    workers: list[dict[str, Any]] = []
    ids = obs.known_workers()
    for wid in ids:
        obs.observe(wid)
    if watch and ids:
        time.sleep(watch)
    beats: dict[str, dict[str, Any]] = {}
    for wid in ids:
        hb = beats[wid] = read_heartbeat(state.workers / f"{wid}.lock") or {}
        local = obs.local_verdict(wid)
        changed = obs.observe(wid) == 0.0 if watch else None
        alive = local if local is not None else changed
        workers.append({"worker_id": wid, "alive": alive, "ticket": hb.get("ticket"),
                        "tickets": hb.get("tickets") or (1 if hb.get("ticket") else 0),
                        "urls_done": hb.get("urls_done", 0), "host": hb.get("host")})
    dead = sorted(p.name[:-5] for p in Path(state.workers).glob("*.dead"))
    out["workers"] = workers
    out["dead_workers"] = dead

    # Speed from the journals' tails: URLs finished in the last minute of journal records.
    done, rate = _journal_figures(state, beats)
    out["urls_done_unmerged"] = done
    out["pages_per_second"] = round(rate, 2)
    live = [w for w in workers if w["alive"]]
    out["eta_seconds"] = round(urls_left / rate) if rate > 0 and live else None
    manifest = state.read_manifest()
    out["last_prepare"] = (manifest.get("prepares") or [None])[-1]
    out["last_crawl"] = manifest.get("last_crawl")
    try:
        out["index_urls"] = _count_index(state)
    except OSError:
        out["index_urls"] = None
    return out


def _journal_figures(state: StateDir, beats: dict[str, dict[str, Any]]) -> tuple[int, float]:
    """(journal records not merged yet, pages/s over the last minute of records), reading
    each live journal from its worker's last published position and its tail only (J3)."""
    done = 0
    paths = journal_files(state.journal)
    for path in paths:
        pos = beats.get(owner_of(path), {}).get("journal")
        if (not path.name.endswith(".closed.jsonl") and isinstance(pos, list) and len(pos) == 2
                and all(isinstance(x, int) and x >= 0 for x in pos)):
            done += count_records(path, start=pos[1], records=pos[0])
        else:
            done += count_records(path)
    tails = {p: tail_records(p, lambda _r: True) for p in paths}
    stamps = [t for recs in tails.values() for r in recs if (t := _stamp(r))]
    t_end = parse_ts(max(stamps)) if stamps else None
    if t_end is None:
        return done, 0.0
    # journal stamps are all utcnow()'s fixed format: compared as strings, parsed twice
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_end - 60))

    def enough(recs: list[dict[str, Any]]) -> bool:
        first = next((t for r in recs if (t := _stamp(r))), None)
        return first is not None and first < cutoff

    window: list[str] = []
    for p, recs in tails.items():
        if not enough(recs):
            recs = tail_records(p, enough)
        window += [t for r in recs if (t := _stamp(r)) and t >= cutoff]
    t_start = parse_ts(min(window)) if window else None
    if len(window) < 2 or t_start is None or t_end <= t_start:
        return done, 0.0
    return done, len(window) / (t_end - t_start)


def _stamp(rec: dict[str, Any]) -> str:
    """A record's ``last_crawled`` if it has utcnow()'s format (sortable as text), else ''."""
    at = rec.get("last_crawled")
    return at if isinstance(at, str) and len(at) == 20 and at.endswith("Z") else ""


def _count_index(state: StateDir) -> int | None:
    """The index's URL count from its figures file and segments, not from parsing a base of
    a million entries (protocol/index.py count)."""
    try:
        return url_index.count(state)
    except CrawlError:
        return None
