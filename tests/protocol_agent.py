"""A stand-alone process that exercises the ticket protocol, for tests that race real processes.

    python protocol_agent.py drain STATE_DIR OUT_FILE [HOLD_SECONDS]

claims tickets until none is left, appending "ticket_id worker_id" to OUT_FILE for each
ticket it completed.

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


def drain(root: Path, out: Path, hold: float) -> None:
    state = StateDir(root)
    wid = new_worker_id()
    hb = Heartbeat(state.workers, wid, 0.5).start()
    q = TicketQueue(state, wid)
    misses = 0
    with open(out, "a") as f:
        while misses < 3:
            c = q.claim()
            if c is None:
                misses += 1
                time.sleep(0.05)
                continue
            misses = 0
            for u in c.urls:
                c.done[u["url"]] = "ok"
            time.sleep(hold)
            if q.finish(c) == "completed":
                f.write(f"{c.ticket_id} {wid}\n")
                f.flush()
    hb.stop()


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
    if cmd == "drain":
        drain(root, Path(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    elif cmd == "hold-index":
        sys.exit(hold_index(root, sys.argv[3], float(sys.argv[4]), float(sys.argv[5])))
