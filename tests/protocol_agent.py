"""A stand-alone process that exercises the ticket protocol, for tests that race real processes.

    python protocol_agent.py drain STATE_DIR OUT_FILE [HOLD_SECONDS]

claims tickets until none is left, appending "ticket_id worker_id" to OUT_FILE for each
ticket it completed; ``drain-prune`` also asks ``pending_at_most`` after every claim (which
skips buckets it found empty for a while, tickets.py T14) and hands every fifth new
ticket back once.

    python protocol_agent.py feed STATE_DIR FIRST N

adds tickets t-FIRST.. (N of them) into pending/'s buckets in waves, as a prepare would.

    python protocol_agent.py hold-index STATE_DIR TAG HOLD_SECONDS LOCK_TIMEOUT

changes url-index.json under the index lock (index.update), taking HOLD_SECONDS inside it,
and adds the entry "https://h/TAG"; prints "holding" once it holds the lock, then "done", or
"lost: <one line>" and exits 3 if the lock was taken from it.

Each process is a separate interpreter with its own worker id, as a worker on another
machine would be; STATE_DIR may be on a network share.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index
from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketQueue


def drain(root: Path, out: Path, hold: float, prune: bool = False) -> None:
    """``prune``: also ask ``pending_at_most`` after every claim, which skips the buckets
    it found empty for a while (tickets.py T14), and hand back every fifth new ticket."""
    state = StateDir(root)
    wid = new_worker_id()
    hb = Heartbeat(state.workers, wid, 0.5).start()
    q = TicketQueue(state, wid)
    misses = 0
    with open(out, "a") as f:
        while misses < 3:
            c = q.claim()
            if prune:
                q.pending_at_most(0)
            if c is None:
                misses += 1
                time.sleep(0.05)
                continue
            misses = 0
            if prune and c.name.gen == 0 and int(c.ticket_id[2:]) % 5 == 0:
                assert q.hand_back(c)
                continue
            for u in c.urls:
                c.done[u["url"]] = "ok"
            time.sleep(hold)
            if q.finish(c) == "completed":
                f.write(f"{c.ticket_id} {wid}\n")
                f.flush()
    hb.stop()


def feed(root: Path, first: int, n: int) -> None:
    """Add tickets t-<first>.. into buckets (T13) in waves, as a prepare beside workers."""
    from sitemap_crawler.protocol.tickets import SHARD_AT

    q = TicketQueue(StateDir(root), new_worker_id())
    q.added = SHARD_AT
    for i in range(first, first + n):
        q.add({"ticket_id": f"t-{i:04d}", "site": "s", "gen": 0,
               "urls": [{"url": f"https://h/{i}/0"}]})
        if i % 10 == 9:
            time.sleep(0.01)


def hold_index(root: Path, tag: str, hold: float, timeout: float) -> int:
    state = StateDir(root)
    state.ensure()

    def change(idx: dict) -> None:
        print("holding", flush=True)
        time.sleep(hold)
        idx[f"https://h/{tag}"] = {"by": tag}

    obs = Observer(state.workers, timeout)
    try:
        index.update(state, new_worker_id(), obs.is_dead, change, lock_timeout=timeout)
    except CrawlError as e:
        print(f"lost: {e}", flush=True)
        return 3
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    cmd, root = sys.argv[1], Path(sys.argv[2])
    if cmd in ("drain", "drain-prune"):
        drain(root, Path(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0,
              prune=cmd == "drain-prune")
    elif cmd == "feed":
        feed(root, int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "hold-index":
        sys.exit(hold_index(root, sys.argv[3], float(sys.argv[4]), float(sys.argv[5])))
