"""Claim cost: does taking a ticket cost what the queue holds?

    python -m bench.bench_claim [--sizes 1000,10000,100000] [--claims 300] [--dirs local,smb]
                                [--pythonpath DIR] [--workdir DIR] [--rounds 2]

For each state location (``local``: a directory under --workdir; ``smb``: the SMB share's
mount A, ../shared/netfs) and each number N of pending tickets (one URL each, spread over
20 host tags as prepare writes them, T9), a fresh process claims ``--claims`` tickets one
after another through ``TicketQueue.claim`` with the dispatcher's kind of rank (a host it
holds is not wanted again), and prints the time of the first claim (which lists ``pending/``),
the mean and median of the others, and the listings of ``pending/`` it made; a process
that drained the queue also times ``pending_at_most(0)`` twice (``drained_ms``).  The tickets
are written once per (dir, N) and put back between rounds.  ``--pythonpath`` runs the
claiming process from another checkout (a before/after comparison at an older commit).
One JSON line per (dir, N, round).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMB = Path("/tmp/netfs/mnt/smb-a")

# Run in the claiming process: claim N tickets, rank like the dispatcher (D2).
CLAIMER = r"""
import json, os, sys, time
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import TicketQueue, ticket_host
from pathlib import Path
state, k = StateDir(Path(sys.argv[1])), int(sys.argv[2])
q = TicketQueue(state, "bench-1-aaaaaa")
held = {}
lists = 0
real = os.scandir
def counting(p):
    global lists
    if str(p).endswith("pending"):  # one per listing of pending/ (and its buckets, T13)
        lists += 1
    return real(p)
os.scandir = counting
def rank(name):
    tag = ticket_host(name.ticket_id)
    return 0 if held.get(tag, 0) < 1 else None
times = []
for i in range(k):
    if i % 20 == 0:
        held.clear()  # as if the dispatcher had finished what it held
    t0 = time.perf_counter()
    c = q.claim(rank)
    times.append(time.perf_counter() - t0)
    if c is None:
        break
    tag = ticket_host(c.ticket_id)
    held[tag] = held.get(tag, 0) + 1
rest = sorted(times[1:])
drained = []  # ran dry: what asking the drained queue costs, twice (tickets.py T14)
for _ in range(2 if c is None else 0):
    t0 = time.perf_counter()
    q.pending_at_most(0)
    drained.append(round(1000 * (time.perf_counter() - t0), 3))
print(json.dumps({"claims": len(times), "first_ms": 1000 * times[0], "drained_ms": drained,
                  "mean_ms": 1000 * sum(times) / len(times),
                  "rest_mean_ms": 1000 * sum(rest) / max(1, len(rest)),
                  "rest_median_ms": 1000 * rest[len(rest) // 2] if rest else None,
                  "max_ms": 1000 * max(times), "listings": lists}))
"""


def write_tickets(root: Path, n: int) -> None:
    from sitemap_crawler.protocol.state import StateDir
    from sitemap_crawler.protocol.tickets import HOST_MARK, TicketQueue, host_tag

    state = StateDir(root)
    state.ensure()
    q = TicketQueue(state, "prep-1-aaaaaa")
    for i in range(n):
        host = f"h{i % 20}.example"
        tid = f"20261126T000000-{i:07d}{HOST_MARK}{host_tag(host)}"
        q.add({"ticket_id": tid, "site": "bench", "created_at": "2026-11-26T00:00:00Z",
               "urls": [{"url": f"https://{host}/p/{i}"}]})


def buckets(root: Path) -> dict[str, str]:
    """Each pending ticket's folder inside pending/ ("" for pending/ itself, T13)."""
    from sitemap_crawler.protocol.tickets import list_pending

    names, _ = list_pending(root / "tickets" / "pending")
    return {n.filename: n.bucket or "" for n in names}


def put_back(root: Path, where: dict[str, str]) -> None:
    """claimed/X.0_<w>.json -> pending/[bucket/]X.0.json: the same N for the next round."""
    claimed, pending = root / "tickets" / "claimed", root / "tickets" / "pending"
    for name in os.listdir(claimed):
        base = name.split("_", 1)[0] + ".json"
        folder = pending / where[base]
        folder.mkdir(exist_ok=True)  # a relist removes a bucket it found empty
        os.rename(claimed / name, folder / base)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--claims", type=int, default=300)
    ap.add_argument("--dirs", default="local,smb")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pythonpath", default=str(ROOT))
    ap.add_argument("--workdir", default=tempfile.gettempdir())
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    env = dict(os.environ, PYTHONPATH=a.pythonpath)
    rows = []
    for where in a.dirs.split(","):
        base = Path(a.workdir) if where == "local" else SMB
        if where == "smb" and not os.path.ismount(SMB):
            print(f"skip smb: {SMB} is not mounted (../shared/netfs)", file=sys.stderr)
            continue
        for n in (int(x) for x in a.sizes.split(",")):
            root = Path(tempfile.mkdtemp(prefix=f"claim-{n}-", dir=base))
            try:
                write_tickets(root, n)
                homes = buckets(root)
                for r in range(a.rounds):
                    out = subprocess.run([sys.executable, "-c", CLAIMER, str(root),
                                          str(a.claims)], env=env, cwd=a.pythonpath,
                                         capture_output=True,
                                         text=True)
                    if out.returncode:
                        sys.exit(f"claimer failed: {out.stderr.strip()[-600:]}")
                    row = {"dir": where, "pending": n, "round": r,
                           "pythonpath": a.pythonpath, **json.loads(out.stdout)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                    put_back(root, homes)
            finally:
                shutil.rmtree(root, ignore_errors=True)
    print("\n| dir | pending | first claim ms | mean ms/claim after it | median | listings |")
    print("|---|---|---|---|---|---|")
    for where in dict.fromkeys(r["dir"] for r in rows):
        for n in dict.fromkeys(r["pending"] for r in rows if r["dir"] == where):
            rs = [r for r in rows if r["dir"] == where and r["pending"] == n]
            def col(key: str, fmt: str = ".2f", rs: list = rs) -> str:
                return ", ".join(format(r[key], fmt) for r in rs)
            print(f"| {where} | {n:,} | {col('first_ms', '.1f')} | {col('rest_mean_ms')} | "
                  f"{col('rest_median_ms')} | {col('listings', 'd')} |")


if __name__ == "__main__":
    main()
