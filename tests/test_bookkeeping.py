"""Bookkeeping that stays flat: retention by name (tickets.py T7), status reading only the
active work (status.py ST1, journal.py J3), and nothing piling up in .crawl-state across runs.

Opens are observed with a real audit hook (``sys.addaudithook``: every ``open`` of this
process), bytes read with the kernel's own counter (``/proc/self/io`` rchar).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sites import cli, doc_site, popen_cli, write_config
from waiting import wait_until

from sitemap_crawler.commands.status import site_status
from sitemap_crawler.config import load_config
from sitemap_crawler.protocol.heartbeat import Heartbeat
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketName, TicketQueue

AGENT = Path(__file__).parent / "protocol_agent.py"
_OPENED: list[str] | None = None


def _hook(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_hook)


@contextmanager
def opens() -> Iterator[list[str]]:
    """Every path this process opens inside the block."""
    global _OPENED
    _OPENED = seen = []
    try:
        yield seen
    finally:
        _OPENED = None


def rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def make_tickets(state: StateDir, n: int, prefix: str = "t") -> None:
    q = TicketQueue(state, "prepare")
    for i in range(n):
        q.add({"ticket_id": f"{prefix}-{i:04d}", "site": "s", "gen": 0,
               "urls": [{"url": f"https://h/{prefix}/{i}"}]})


def finish_all(state: StateDir, wid: str) -> list[str]:
    q = TicketQueue(state, wid)
    names = []
    while (c := q.claim()) is not None:
        c.done = {u["url"]: "ok" for u in c.urls}
        assert q.finish(c) == "completed"
        names.append(c.ticket_id)
    return names


def test_finish_names_the_ticket_with_its_time_and_leaves_no_bare_name(tmp_path):
    state = StateDir(tmp_path)
    state.ensure()
    make_tickets(state, 3)
    wid = new_worker_id()
    before = time.time()
    finish_all(state, wid)
    names = sorted(os.listdir(state.ticket_dir("completed")))
    assert len(names) == 3
    for name in names:
        n = TicketName.parse(name)
        assert n is not None and n.owner == wid and n.done_at is not None
        data = json.loads((state.ticket_dir("completed") / name).read_bytes())
        assert data["completed_at"].replace("-", "").replace(":", "") == n.done_at
        assert data["progress"]["success"] == 1
        assert n.done_at >= time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(before - 1))


def test_retention_opens_only_names_without_a_stamp(tmp_path):
    """T7: 500 stamped tickets, 200 of them old, are pruned without one open; only the
    bare names are read: one being finished (kept, read each time), one of an older version
    (read once, then renamed to its stamped name), and a T3 leftover (deleted unread)."""
    state = StateDir(tmp_path)
    state.ensure()
    make_tickets(state, 500)
    wid = new_worker_id()
    finish_all(state, wid)
    done = state.ticket_dir("completed")
    old_stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - 10 * 86400))
    for name in sorted(os.listdir(done))[:200]:
        n = TicketName.parse(name)
        assert n is not None
        os.rename(done / name, done / n.file(n.owner, done_at=old_stamp))
    busy = done / f"busy-1.0_{wid}.json"  # T3's first step done, its final file not yet
    busy.write_text(json.dumps({"ticket_id": "busy-1", "urls": [], "completed_at": None}))
    legacy = done / f"legacy-1.0_{wid}.json"  # finished by an older version, 2 days ago
    at = time.gmtime(time.time() - 2 * 86400)
    legacy.write_text(json.dumps({"ticket_id": "legacy-1", "urls": [],
                                  "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", at)}))
    twin = sorted(os.listdir(done))[-1]  # a stamped ticket whose bare name was left behind
    tn = TicketName.parse(twin)
    assert tn is not None and tn.done_at
    leftover = done / tn.file(tn.owner)
    leftover.write_text("{}")
    q = TicketQueue(state, "prepare")
    with opens() as seen:
        pruned = q.prune_completed(7 * 86400)
    read = sorted(Path(p).name for p in seen if Path(p).parent == done)
    assert read == sorted([busy.name, legacy.name]), read
    assert pruned == 200
    assert busy.exists() and not leftover.exists() and not legacy.exists()
    migrated = done / f"legacy-1.0_{wid}_{time.strftime('%Y%m%dT%H%M%SZ', at)}.json"
    assert json.loads(migrated.read_bytes())["ticket_id"] == "legacy-1"
    assert len(os.listdir(done)) == 300 + 1 + 1  # 300 recent, busy, migrated legacy
    with opens() as seen:
        assert q.prune_completed(7 * 86400) == 0
    assert [Path(p).name for p in seen if Path(p).parent == done] == [busy.name]
    # six days on (by the pruner's clock) the legacy ticket is past retention; eight days
    # on, every finished one is; the one being finished stays whatever the clock says
    assert q.prune_completed(7 * 86400, now=time.time() + 6 * 86400) == 1
    assert q.prune_completed(7 * 86400, now=time.time() + 8 * 86400) == 300
    assert os.listdir(done) == [busy.name]


@pytest.mark.netfs
def test_finishing_on_one_mount_while_the_other_prunes(share, tmp_path):
    """T3 + T7 on a real share: 3 processes on mount A finish 60 tickets while mount B
    prunes everything finished (keep 0 s) in a loop; each ticket is completed once and
    deleted once, and neither side sees an error or leaves a file behind."""
    a, b, kind = share
    state_a = StateDir(a)
    state_a.ensure()
    make_tickets(state_a, 60)
    wait_until(lambda: len(os.listdir(StateDir(b).ticket_dir("pending"))) == 60, 60)
    out = tmp_path / "out.txt"
    procs = [subprocess.Popen([sys.executable, str(AGENT), "drain", str(a), str(out), "0.05"])
             for _ in range(3)]
    q_b = TicketQueue(StateDir(b), "pruner-b")
    pruned = 0
    while any(p.poll() is None for p in procs):
        pruned += q_b.prune_completed(0)
        time.sleep(0.1)
    assert all(p.wait() == 0 for p in procs)
    lines = out.read_text().split("\n")[:-1]
    assert len(lines) == 60 and len({ln.split()[0] for ln in lines}) == 60
    time.sleep(1.1)  # stamps have whole seconds: every ticket is now older than 0 s
    q_a = TicketQueue(state_a, "pruner-a")
    pruned += q_a.prune_completed(0)
    assert pruned == 60, f"{kind}: {pruned} deletions for 60 tickets"
    assert os.listdir(state_a.ticket_dir("completed")) == []


def test_status_counts_completed_unopened_and_reads_journals_from_the_last_beat(tmp_path):
    """ST1/J3: with 400 completed tickets and a 40,000-record journal, status opens no
    completed ticket and reads a small fraction of the journal, and its figures are exact."""
    cfg = load_config(write_config(tmp_path, "http://127.0.0.1:9/sitemap.xml"))
    site = cfg.site("docs")
    state = StateDir(site.state_dir)
    state.ensure()
    make_tickets(state, 400)
    finish_all(state, new_worker_id())
    make_tickets(state, 3, prefix="left")  # active work: 3 pending URLs
    wid = new_worker_id()
    journal = Journal(state.journal, wid)
    t0 = time.time() - 4000
    pad = "x" * 150
    for i in range(40_000):  # one record every 0.1 s
        journal.append({"url": f"https://h/p/{i}", "ticket": "t", "final": True,
                        "outcome": "new", "pad": pad,
                        "last_crawled": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(t0 + i / 10))})
    size = journal.position()
    assert size is not None and size[0] == 40_000 and size[1] > 7_000_000
    hb = Heartbeat(state.workers, wid, 60).start()
    try:
        hb.update(journal=journal.position())
        hb.beat()
        for i in range(40_000, 40_010):  # written after the last beat
            journal.append({"url": f"https://h/p/{i}", "ticket": "t", "final": True,
                            "last_crawled": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                          time.gmtime(t0 + i / 10))})
        before = rchar()
        with opens() as seen:
            st = site_status(site)
        read = rchar() - before
        assert st["urls_done_unmerged"] == 40_010
        assert st["tickets"] == {"completed": 400, "claimed": 0, "failed": 0, "pending": 3}
        assert st["urls_remaining"] == 3
        assert 9.5 <= st["pages_per_second"] <= 10.5, st["pages_per_second"]
        assert not [p for p in seen if Path(p).parent == state.ticket_dir("completed")]
        assert read < 1_000_000, f"status read {read} bytes of a {size[1]}-byte journal"
    finally:
        hb.stop()
    journal.close()  # closed: no beat says where its count stands, so it is read whole
    before = rchar()
    st = site_status(site)
    assert st["urls_done_unmerged"] == 40_010
    assert rchar() - before > size[1]


def _state_files(state: Path) -> dict[str, int]:
    """Files per top-level part of .crawl-state, completed tickets apart."""
    out: dict[str, int] = {}
    for root, _dirs, files in os.walk(state):
        rel = Path(root).relative_to(state)
        key = "/".join(rel.parts[:3])
        if files:
            out[key] = out.get(key, 0) + len(files)
    return out


def test_many_work_runs_leave_a_bounded_state(server, tmp_path):
    """Six rounds of prepare + work (one runner killed with SIGKILL mid-crawl): journals,
    heartbeats, .dead files and locks of finished workers are cleaned up, and completed
    tickets are only those within keep_completed (1 s: the round's own); apart from them
    the state's file count is the same after every round."""
    doc_site(server, 20, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"keep_completed": "1s"})
    state = tmp_path / "out" / ".crawl-state" / "docs"
    counts: list[dict[str, int]] = []
    for run in range(6):
        time.sleep(1.1)  # the previous round's tickets are now past keep_completed
        began = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - 1))
        cli(cfg, "prepare", "docs", "--full")
        if run == 2:
            p = popen_cli(cfg, "work", "docs", "--workers", "2")
            wait_until(lambda: any(state.joinpath("journal").glob("*.jsonl"))
                       and os.listdir(state / "tickets" / "completed"), 60)
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
            wait_until(lambda: not any(state.joinpath("workers").glob("*.lock")), 30)
            continue
        cli(cfg, "work", "docs", "--workers", "2")
        assert os.listdir(state / "journal") == []
        assert os.listdir(state / "workers") == []
        assert [n for n in os.listdir(state / "locks") if not n.endswith(".free")] == []
        assert os.listdir(state / "tickets" / "pending") == []
        assert os.listdir(state / "tickets" / "claimed") == []
        # only this round's tickets are left in completed/: the older ones were pruned
        names = [TicketName.parse(n) for n in os.listdir(state / "tickets" / "completed")]
        assert names and all(n is not None and n.done_at and n.done_at >= began
                             for n in names), (began, names)
        c = _state_files(state)
        c.pop("tickets/completed")
        counts.append(c)
    # 20 URLs / ticket_size 5 = 4 tickets a round; everything else the same after each round
    assert counts[1:] == counts[:1] * (len(counts) - 1), counts
    # file name claims (protocol/names.py): one per page and folder written, never more
    claims = sum(n for k, n in counts[-1].items() if k.startswith("names/"))
    assert claims <= 20 + 3, counts[-1]
    assert sum(counts[-1].values()) - claims < 30, counts[-1]
