"""Bookkeeping cost per URL: tickets + journal + index merge, without fetching or converting.

    python bench/bench_bookkeeping.py [--urls 5000] [--ticket-size 100] [--dir DIR]

Runs exactly the state operations a worker performs for each URL and ticket — claim (rename
+ verify), ownership check per URL (stat), one journal record per URL (pwrite of a JSON
line), journal fsync and completion per ticket (rename + rewrite), then the index merge at
the end — and reports the wall time per URL.  ``--dir`` may point at a network share.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=5000)
    ap.add_argument("--ticket-size", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(dir=a.dir))
    try:
        r = run(base / "state", a.urls, a.ticket_size)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
