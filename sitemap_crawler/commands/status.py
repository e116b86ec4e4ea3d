"""What `status` and `list` show: tickets per state, workers alive or dead, speed and ETA.

Reading only: status never changes the state directory.  Liveness of workers on other
machines cannot be judged from one look without trusting clocks (heartbeat.py H2), so status
watches their heartbeats for a moment when it has to (``watch`` seconds).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sitemap_crawler.config import Site
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.heartbeat import Observer, read_heartbeat
from sitemap_crawler.protocol.journal import journal_files, read_journal
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import TicketQueue


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
    rate = 0.0
    for wid in ids:
        hb = read_heartbeat(state.workers / f"{wid}.lock") or {}
        local = obs.local_verdict(wid)
        changed = obs.observe(wid) == 0.0 if watch else None
        alive = local if local is not None else changed
        workers.append({"worker_id": wid, "alive": alive, "ticket": hb.get("ticket"),
                        "urls_done": hb.get("urls_done", 0), "host": hb.get("host")})
    dead = sorted(p.name[:-5] for p in Path(state.workers).glob("*.dead"))
    out["workers"] = workers
    out["dead_workers"] = dead

    # Speed from the journals: URLs finished in the last minute of journal records.
    done = 0
    recent: list[str] = []
    for path in journal_files(state.journal):
        for rec in read_journal(path):
            done += 1
            recent.append(rec.get("last_crawled") or "")
    recent.sort()
    if len(recent) >= 2:
        from sitemap_crawler.timestamps import parse_ts

        t_end = parse_ts(recent[-1]) or 0
        window = [r for r in recent if (parse_ts(r) or 0) >= t_end - 60]
        t_start = parse_ts(window[0]) or t_end
        if t_end > t_start:
            rate = len(window) / (t_end - t_start)
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


def _count_index(state: StateDir) -> int | None:
    """The index's URL count from its figures file and segments, not from parsing a base of
    a million entries (protocol/index.py count)."""
    try:
        return url_index.count(state)
    except CrawlError:
        return None
