"""A stand-alone process that exercises the ticket protocol, for tests that race real processes.

    python protocol_agent.py drain STATE_DIR OUT_FILE [HOLD_SECONDS]

claims tickets until none is left, appending "ticket_id worker_id" to OUT_FILE for each
ticket it completed.  Each process is a separate interpreter with its own worker id, as a
worker on another machine would be; STATE_DIR may be on a network share.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sitemap_crawler.protocol.heartbeat import Heartbeat
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


if __name__ == "__main__":
    cmd, root, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    hold = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    if cmd == "drain":
        drain(root, out, hold)
