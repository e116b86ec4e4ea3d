"""Bookkeeping cost per URL: tickets + journal + index merge, without fetching or converting.

    python bench/bench_bookkeeping.py [--urls 5000] [--ticket-size 100] [--dir DIR]
    python bench/bench_bookkeeping.py --history 2000 [--journal 100000] [--dir DIR]

Runs exactly the state operations a worker performs for each URL and ticket — claim (rename
+ verify), ownership check per URL (stat), one journal record per URL (pwrite of a JSON
line), journal fsync and completion per ticket (rename + rewrite), then the index merge at
the end — and reports the wall time per URL.  ``--dir`` may point at a network share.

``--history N`` measures instead what a long history costs the readers: N completed
tickets (none old enough to go) and a live worker's journal of ``--journal`` records, then
the time of prepare's retention pass (``prune_completed``) and of ``status``, each the
median of 3.  Only APIs that older versions have too are used, so the same command run
against an older checkout (``PYTHONPATH``) gives the before figure.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketQueue
from sitemap_crawler.timestamps import utcnow


def run(root: Path, urls: int, ticket_size: int) -> dict[str, float]:
    state = StateDir(root)
    state.ensure()
    q = TicketQueue(state, "prepare")
    for t in range(0, urls, ticket_size):
        q.add({"ticket_id": f"bench-{t:07d}", "site": "bench", "gen": 0,
               "urls": [{"url": f"https://docs.example.org/p/{i}.html",
                         "lastmod": "2026-01-01T00:00:00Z"}
                        for i in range(t, min(urls, t + ticket_size))]})
    wid = new_worker_id()
    q = TicketQueue(state, wid)
    journal = Journal(state.journal, wid)
    t0 = time.perf_counter()
    while (c := q.claim()) is not None:
        for u in c.urls:
            assert q.owned(c)
            rec = {"url": u["url"], "ticket": c.ticket_id, "worker": wid, "final": True,
                   "last_crawled": utcnow(), "status_code": 200, "outcome": "new",
                   "etag": '"5f3c-1a2b3c"', "last_modified": "Tue, 01 Jan 2026 00:00:00 GMT",
                   "content_hash": "sha256:" + "ab" * 32, "raw_hash": "sha256:" + "cd" * 32,
                   "file_path": u["url"].split("//", 1)[1] + ".md", "bytes": 20480}
            journal.append(rec)
            c.done[u["url"]] = "ok"
        journal.sync()
        assert q.finish(c) == "completed"
    t1 = time.perf_counter()
    journal.close()
    applied = url_index.merge(state, wid, lambda w: False, lambda w: True)
    t2 = time.perf_counter()
    assert applied == urls
    return {"urls": urls, "tickets_and_journal_ms_per_url": (t1 - t0) / urls * 1e3,
            "merge_ms_per_url": (t2 - t1) / urls * 1e3,
            "total_ms_per_url": (t2 - t0) / urls * 1e3}


def history(root: Path, tickets: int, records: int) -> dict[str, float]:
    """Seconds of prune_completed and status with ``tickets`` completed tickets and a live
    worker's journal of ``records`` records (tickets.py T7, status.py ST1)."""
    import statistics

    import yaml

    from sitemap_crawler.commands.status import site_status
    from sitemap_crawler.config import load_config
    from sitemap_crawler.protocol.heartbeat import Heartbeat

    cfg = root / "config.yaml"
    cfg.write_text(yaml.safe_dump({"settings": {"base_output_dir": str(root / "out")},
                                   "sites": [{"name": "b", "source": "http://127.0.0.1:9/s.xml",
                                              "base_dir": "md"}]}))
    site = load_config(cfg).site("b")
    state = StateDir(site.state_dir)
    state.ensure()
    q = TicketQueue(state, "prepare")
    for t in range(tickets):
        q.add({"ticket_id": f"h-{t:07d}", "site": "b", "gen": 0, "completed_at": None,
               "urls": [{"url": f"https://docs.example.org/h/{t}/{i}.html"} for i in range(3)]})
    wid = new_worker_id()
    q = TicketQueue(state, wid)
    while (c := q.claim()) is not None:
        c.done = {u["url"]: "ok" for u in c.urls}
        q.finish(c)
    journal = Journal(state.journal, wid)
    t0 = time.time() - records / 50
    for i in range(records):
        journal.append({"url": f"https://docs.example.org/j/{i}.html", "ticket": "t",
                        "worker": wid, "final": True, "outcome": "new", "status_code": 200,
                        "last_crawled": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(t0 + i / 50)),
                        "content_hash": "sha256:" + "ab" * 32, "bytes": 20480})
    hb = Heartbeat(state.workers, wid, 60).start()
    if hasattr(journal, "position"):  # J3 (newer versions): where the count stands
        hb.update(journal=journal.position())
        hb.beat()
    prune, status = [], []
    try:
        for _ in range(3):
            t = time.perf_counter()
            assert q.prune_completed(7 * 86400) == 0
            prune.append(time.perf_counter() - t)
            t = time.perf_counter()
            st = site_status(site)
            status.append(time.perf_counter() - t)
            assert st["tickets"]["completed"] == tickets, st["tickets"]
            assert st["urls_done_unmerged"] == records
    finally:
        hb.stop()
        journal.close()
    return {"completed_tickets": tickets, "journal_records": records,
            "prune_s": statistics.median(prune), "status_s": statistics.median(status)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=5000)
    ap.add_argument("--ticket-size", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--history", type=int, default=0, help="completed tickets (see above)")
    ap.add_argument("--journal", type=int, default=100_000)
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(dir=a.dir))
    try:
        r = (history(base, a.history, a.journal) if a.history else
             run(base / "state", a.urls, a.ticket_size))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
