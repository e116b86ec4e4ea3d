"""The ticket protocol (tickets.py T1–T6) raced by real processes, on local disk and real shares."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from waiting import wait_until

from sitemap_crawler.protocol.heartbeat import Heartbeat, Observer
from sitemap_crawler.protocol.journal import Journal, ticket_progress
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import TicketName, TicketQueue

AGENT = Path(__file__).parent / "protocol_agent.py"


def make_tickets(root: Path, n: int, size: int = 3) -> StateDir:
    state = StateDir(root)
    state.ensure()
    q = TicketQueue(state, "prepare")
    for i in range(n):
        q.add({"ticket_id": f"t-{i:04d}", "site": "s", "gen": 0,
               "urls": [{"url": f"https://h/{i}/{j}"} for j in range(size)]})
    return state


def race(roots: list[Path], out: Path, procs_per_root: int, hold: float = 0.0,
         mode: str = "drain", feed: tuple[Path, int, int] | None = None) -> list[str]:
    """Drainers on each root (and a feeder adding ``(root, first, n)`` tickets beside them)."""
    procs = [subprocess.Popen([sys.executable, str(AGENT), mode, str(r), str(out), str(hold)])
             for r in roots for _ in range(procs_per_root)]
    if feed is not None:
        procs.append(subprocess.Popen([sys.executable, str(AGENT), "feed",
                                       *(str(x) for x in feed)]))
    for p in procs:
        assert p.wait(timeout=240) == 0
    return out.read_text().split("\n")[:-1] if out.exists() else []


def test_ticket_names_round_trip():
    n = TicketName.parse("20261121T1200ab-00001.3_host-12-abcdef.json")
    assert n == TicketName("20261121T1200ab-00001", 3, "host-12-abcdef")
    assert n.file("host-12-abcdef") == "20261121T1200ab-00001.3_host-12-abcdef.json"
    assert TicketName.parse(".tmp-x.0.json.1.ab") is None
    # T3/T7: a completed ticket's name carries its completion stamp after a second '_'
    done = TicketName.parse("20261121T1200ab-00001.3_host-12-abcdef_20261123T134759Z.json")
    assert done == TicketName("20261121T1200ab-00001", 3, "host-12-abcdef", "20261123T134759Z")
    assert done.filename == "20261121T1200ab-00001.3_host-12-abcdef_20261123T134759Z.json"
    assert done.file("host-12-abcdef") == "20261121T1200ab-00001.3_host-12-abcdef.json"
    # what is not a stamp stays part of the owner, so such a file is still found and moved
    odd = TicketName.parse("t-1.0_old_host.json")
    assert odd == TicketName("t-1", 0, "old_host") and odd.filename == "t-1.0_old_host.json"
    assert TicketName.parse("garbage.json") is None


def test_four_processes_claim_every_ticket_exactly_once(tmp_path):
    state = make_tickets(tmp_path / "st", 200)
    lines = race([state.root], tmp_path / "out.txt", 4)
    ids = Counter(line.split()[0] for line in lines)
    assert len(ids) == 200 and max(ids.values()) == 1
    assert len({line.split()[1] for line in lines}) >= 2  # the work was really shared
    q = TicketQueue(state, "check")
    assert q.counts() == {"completed": 200, "claimed": 0, "failed": 0, "pending": 0}


@pytest.mark.netfs
def test_claim_race_across_two_mounts_of_a_real_share(share, tmp_path):
    a, b, kind = share
    make_tickets(a, 60)
    pending_b = StateDir(b).tickets / "pending"  # mount B sees what mount A wrote
    wait_until(lambda: pending_b.is_dir() and len(os.listdir(pending_b)) == 60, 30)
    lines = race([a, b], tmp_path / "out.txt", 2)
    ids = Counter(line.split()[0] for line in lines)
    # T1: never two owners; T6: every ticket done.
    assert max(ids.values()) == 1, [t for t, n in ids.items() if n > 1]
    assert len(ids) == 60, f"{kind}: {60 - len(ids)} tickets not completed"


def test_hand_back_keeps_progress_and_new_owner_skips_done_urls(tmp_path):
    state = make_tickets(tmp_path, 1, size=4)
    w1 = TicketQueue(state, "w1-1-aaaaaa")
    c = w1.claim()
    assert c is not None and c.path.name == "t-0000.0_w1-1-aaaaaa.json"
    c.done["https://h/0/0"] = "ok"
    c.done["https://h/0/1"] = "skipped:robots"
    assert w1.hand_back(c)
    assert os.listdir(state.ticket_dir("claimed")) == []
    assert os.listdir(state.ticket_dir("pending")) == ["t-0000.1.json"]
    c2 = TicketQueue(state, "w2-2-bbbbbb").claim()
    assert c2 is not None and c2.name.gen == 1
    assert [u["url"] for u in c2.remaining()] == ["https://h/0/2", "https://h/0/3"]
    assert json.loads(c2.path.read_text())["progress"]["remaining"] == 2


def test_lost_ticket_cannot_be_completed_by_its_old_owner(tmp_path):
    state = make_tickets(tmp_path, 1)
    w1 = TicketQueue(state, "w1-1-aaaaaa")
    c = w1.claim()
    assert c is not None
    # Another worker decides w1 is dead and takes the ticket back (T5).
    w2 = TicketQueue(state, "w2-2-bbbbbb")
    assert w2.reclaim(lambda w: w == "w1-1-aaaaaa", lambda w, t: {}) == ["w1-1-aaaaaa"]
    assert not w1.owned(c)
    assert w1.finish(c) is None  # T3: the paused owner's completion is refused
    assert w1.hand_back(c) is False
    assert [n.gen for n in w2.names("pending")] == [1]
    assert w2.counts()["completed"] == 0


def test_reclaim_reads_progress_from_the_dead_workers_journal(tmp_path):
    state = make_tickets(tmp_path, 1, size=3)
    dead = "deadhost-99-cccccc"
    c = TicketQueue(state, dead).claim()
    assert c is not None
    j = Journal(state.journal, dead)
    j.append({"url": "https://h/0/0", "ticket": c.ticket_id, "final": True, "outcome": "new"})
    j.append({"url": "https://h/0/1", "ticket": c.ticket_id, "final": False,
              "outcome": "failed"})
    os.pwrite(j._fd, b'{"url": "https://h/0/2", "ticket": "t-00', j._offset)  # torn by a crash
    assert ticket_progress(state.journal, dead, c.ticket_id) == {"https://h/0/0": "new"}
    me = TicketQueue(state, "me-1-dddddd")
    me.reclaim(lambda w: w == dead,
               lambda w, t: ticket_progress(state.journal, w, t))
    c2 = me.claim()
    assert c2 is not None
    assert [u["url"] for u in c2.remaining()] == ["https://h/0/1", "https://h/0/2"]


def test_failed_tickets_resume_only_the_failed_urls(tmp_path):
    state = make_tickets(tmp_path, 1, size=3)
    q = TicketQueue(state, "w-1-aaaaaa")
    c = q.claim()
    assert c is not None
    c.done["https://h/0/0"] = "ok"
    c.done["https://h/0/1"] = "permanent:http_404"
    c.failures["https://h/0/2"] = "http_503"
    assert q.finish(c) == "failed"
    assert q.resume_failed() == 1
    c2 = q.claim()
    assert c2 is not None and [u["url"] for u in c2.remaining()] == ["https://h/0/2"]


def test_corrupt_ticket_is_quarantined_not_lost(tmp_path):
    state = make_tickets(tmp_path, 2)
    (state.ticket_dir("pending") / "t-0000.0.json").write_bytes(b"")  # power loss
    q = TicketQueue(state, "w-1-aaaaaa")
    got = [q.claim(), q.claim()]
    assert sum(c is not None for c in got) == 1
    assert os.listdir(state.tickets / "corrupt") == ["t-0000.0_w-1-aaaaaa.json"]


# -- heartbeats (heartbeat.py H1–H5) --------------------------------------------------------

BEATER = """
import sys, time
from pathlib import Path
from sitemap_crawler.protocol.heartbeat import Heartbeat
from sitemap_crawler.protocol.state import new_worker_id
wid = new_worker_id() if sys.argv[2] == "auto" else sys.argv[2]
hb = Heartbeat(Path(sys.argv[1]), wid, 0.2).start()
print("up", flush=True)
time.sleep(120)
"""


def start_beater(workers: Path, wid: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", BEATER, str(workers), wid],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "up"
    return p


def test_paused_remote_worker_is_dead_only_after_timeout_of_unchanged_heartbeat(tmp_path):
    (tmp_path / "w").mkdir()
    wid = "otherhost-1-abcdef"  # not this host: judged by content only (H2)
    p = start_beater(tmp_path / "w", wid)
    try:
        obs = Observer(tmp_path / "w", timeout=1.0)
        t_end = time.monotonic() + 1.6
        while time.monotonic() < t_end:  # beating: never dead
            assert not obs.is_dead(wid)
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        wait_until(lambda: obs.is_dead(wid), 5, step=0.05)
        assert time.monotonic() - t0 >= 0.8  # not before the timeout (minus one interval)
        os.kill(p.pid, signal.SIGCONT)
        wait_until(lambda: not obs.is_dead(wid), 5)  # it came back: content changes again
    finally:
        p.kill()
        p.wait()


def test_local_worker_with_a_dead_pid_is_dead_at_once(tmp_path):
    state = StateDir(tmp_path)
    state.ensure()
    p = start_beater(state.workers, "auto")
    wid = (state.workers / os.listdir(state.workers)[0]).name[:-5]
    obs = Observer(state.workers, timeout=3600)
    assert not obs.is_dead(wid)
    p.kill()
    p.wait()
    assert obs.is_dead(wid)  # H3: no need to wait an hour on our own machine


def test_buried_worker_notices_on_its_next_beat(tmp_path, caplog):
    hb = Heartbeat(tmp_path, "h-1-aaaaaa", 3600).start()
    Observer(tmp_path, 1).bury("h-1-aaaaaa")
    hb.beat()
    assert "judged dead by another process" in caplog.text  # H5: said, not only flagged
    assert hb.buried.is_set()  # (and it claims no more: commands/worker.py)
    assert (tmp_path / "h-1-aaaaaa.lock").exists()
    hb.stop()


def test_a_worker_that_was_paused_beats_before_it_goes_on(tmp_path):
    """H8: its heartbeat thread may not have run yet after a pause; ``confirm`` beats itself
    when the last beat is older than two intervals, and so notices the burial (H5)."""
    hb = Heartbeat(tmp_path, "h-1-aaaaaa", 0.2).start()
    hb._stop.set()  # the thread stops beating: as if it had not been scheduled yet
    hb._thread.join()
    assert hb.confirm()  # fresh: no beat needed
    Observer(tmp_path, 1).bury("h-1-aaaaaa")
    assert hb.confirm()  # within two intervals of the last beat it trusts that beat
    time.sleep(0.5)
    assert not hb.confirm()
    assert hb.buried.is_set()
    hb.stop()


def test_paused_local_worker_is_judged_by_its_heartbeat_not_its_pid(tmp_path):
    state = StateDir(tmp_path)
    state.ensure()
    p = start_beater(state.workers, "auto")
    wid = os.listdir(state.workers)[0][:-5]
    try:
        obs = Observer(state.workers, timeout=1.0)
        assert not obs.is_dead(wid)
        os.kill(p.pid, signal.SIGSTOP)  # pid alive, heartbeat frozen
        wait_until(lambda: obs.is_dead(wid), 5, step=0.05)
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.kill()
        p.wait()


def test_a_kept_view_sees_what_others_took_and_added(tmp_path):
    """T10: a queue claims from the listing it kept; names others took fail their rename and
    make it look again, and tickets added since are found once the view runs out."""
    state = make_tickets(tmp_path / "st", 10, size=1)
    a, b = TicketQueue(state, "a-1-aaaaaa"), TicketQueue(state, "b-1-bbbbbb")
    assert a.claim() is not None  # a's view now holds the 9 others
    taken_by_b = [b.claim() for _ in range(8)]
    assert all(taken_by_b)
    TicketQueue(state, "prepare").add({"ticket_id": "t-9999", "site": "s", "urls": []})
    got = {a.claim().ticket_id, a.claim().ticket_id}
    left = ({f"t-{i:04d}" for i in range(10)} | {"t-9999"}) - {c.ticket_id for c in taken_by_b}
    assert got <= left and len(got) == 2
    assert a.claim() is None and b.claim() is None
    assert os.listdir(state.ticket_dir("pending")) == []


def test_draining_a_queue_lists_pending_a_bounded_number_of_times(tmp_path, monkeypatch):
    """T10: claiming 2,000 tickets one by one lists pending/ a handful of times, not once per
    claim (which made draining a 100,000-ticket queue quadratic)."""
    state = make_tickets(tmp_path / "st", 2000, size=1)
    q = TicketQueue(state, "a-1-aaaaaa")
    listed = []
    real = os.scandir  # one scandir of pending/ per listing of it and its buckets (T13)
    monkeypatch.setattr(os, "scandir", lambda p: listed.append(str(p)) or real(p))
    claimed = set()
    while (c := q.claim()) is not None:
        claimed.add(c.ticket_id)
    assert len(claimed) == 2000
    assert sum(p.endswith("pending") for p in listed) <= 20
    assert q.pending_at_most(0) and q.has_work()  # claimed/ still holds them


def test_a_handed_back_ticket_is_claimable_at_once_from_the_view(tmp_path):
    state = make_tickets(tmp_path / "st", 3, size=2)
    q = TicketQueue(state, "a-1-aaaaaa")
    c = q.claim()
    assert q.hand_back(c)
    seen = [q.claim() for _ in range(3)]
    assert sorted((s.ticket_id, s.name.gen) for s in seen) == sorted(
        [(c.ticket_id, 1)] + [(f"t-{i:04d}", 0) for i in range(3) if f"t-{i:04d}" != c.ticket_id])
    assert q.claim() is None


@pytest.mark.parametrize("share", ["smb", "sshfs"], indirect=True)
def test_a_share_is_told_apart_from_a_local_disk(share, tmp_path):
    """fsutil D: directories on a network share are not fsynced (opening one on smbnetfs
    lists it: 317 ms for a pending/ of 10,000 tickets); a local disk's are."""
    from sitemap_crawler.protocol.fsutil import NETWORK_FS, fs_type

    a, b, kind = share
    assert fs_type(a) in NETWORK_FS and fs_type(b) in NETWORK_FS, (fs_type(a), kind)
    assert fs_type(tmp_path) not in NETWORK_FS and fs_type(tmp_path)


def test_past_shard_at_tickets_go_to_buckets_and_old_flat_tickets_are_still_worked(tmp_path):
    """T13: a big queue is written into pending/s<hh>/ buckets; a flat ticket of an older
    version beside them is claimed as well; a handed back ticket returns to its bucket."""
    from sitemap_crawler.protocol.tickets import SHARD_AT, bucket_of

    state = make_tickets(tmp_path / "st", SHARD_AT + 100, size=1)
    pending = state.ticket_dir("pending")
    flat = [e for e in os.listdir(pending) if e.endswith(".json")]
    buckets = [e for e in os.listdir(pending) if not e.endswith(".json")]
    assert len(flat) == SHARD_AT and buckets and all(len(os.listdir(pending / b)) < 20
                                                     for b in buckets)
    assert f"t-{SHARD_AT:04d}.0.json" in os.listdir(pending / bucket_of(f"t-{SHARD_AT:04d}"))
    q = TicketQueue(state, "a-1-aaaaaa")
    assert q.counts()["pending"] == SHARD_AT + 100 and not q.pending_at_most(SHARD_AT + 99)
    seen, back = set(), None
    while (c := q.claim()) is not None:
        if c.bucket and back is None:
            back = c
            assert q.hand_back(c)
            assert f"{c.ticket_id}.1.json" in os.listdir(pending / c.bucket)
            continue
        seen.add(c.ticket_id)
        assert q.finish(c) == "completed"
    assert back is not None and seen == {f"t-{i:04d}" for i in range(SHARD_AT + 100)}
    assert q.counts() == {"completed": SHARD_AT + 100, "claimed": 0, "failed": 0, "pending": 0}
    assert q.pending_at_most(0) and not q.has_work()
    assert sorted(os.listdir(pending)) == sorted(buckets)  # empty buckets stay (T14)
    q2 = TicketQueue(state, "prepare")
    q2.added = SHARD_AT
    q2.add({"ticket_id": "t-a", "site": "s", "urls": [{"url": "https://h/a"}]})
    os.rmdir(pending / bucket_of("t-b"))  # removed by hand after this writer made it
    q2._made.add(bucket_of("t-b"))
    q2.add({"ticket_id": "t-b", "site": "s", "urls": [{"url": "https://h/b"}]})
    assert (pending / bucket_of("t-b") / "t-b.0.json").exists()
    assert {q.claim().ticket_id, q.claim().ticket_id} == {"t-a", "t-b"}
    # a new writer (each frontier fold is one) counts what pending/ itself already holds
    make_tickets(tmp_path / "st2", SHARD_AT, size=1)
    q3 = TicketQueue(StateDir(tmp_path / "st2"), "fold")
    q3.add({"ticket_id": "t-c", "site": "s", "urls": [{"url": "https://h/c"}]})
    assert (q3.dirs["pending"] / bucket_of("t-c") / "t-c.0.json").exists()


def test_a_bad_name_in_a_bucket_is_quarantined_and_a_symlinked_bucket_not_followed(tmp_path):
    """T12 with T13: a bucket's odd names go to quarantine/ like pending/'s own; a symlink
    named like a bucket never leads a claim out of pending/."""
    state = make_tickets(tmp_path / "st", 1, size=1)
    pending = state.ticket_dir("pending")
    (pending / "s05").mkdir()
    (pending / "s05" / "x%2F..%2Fevil.0.json").write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t-9999.0.json").write_text(json.dumps({"ticket_id": "t-9999", "urls": []}))
    (pending / "s06").symlink_to(elsewhere)
    q = TicketQueue(state, "a-1-aaaaaa")
    assert q.claim().ticket_id == "t-0000"
    assert q.claim() is None
    assert os.listdir(pending / "s05") == []
    assert (elsewhere / "t-9999.0.json").exists() and (pending / "s06").is_symlink()
    assert os.listdir(state.root / "quarantine")


@pytest.mark.netfs
def test_a_sharded_queue_raced_across_two_mounts_of_a_real_share(share, tmp_path):
    """T13 with T1 on a share: tickets in buckets are claimed exactly once from two mounts."""
    from sitemap_crawler.protocol.tickets import SHARD_AT, list_pending

    a, b, kind = share
    n = SHARD_AT + 40
    make_tickets(a, n, size=1)
    pending_b = StateDir(b).tickets / "pending"  # mount B sees what mount A wrote
    wait_until(lambda: pending_b.is_dir() and len(list_pending(pending_b)[0]) == n, 60)
    lines = race([a, b], tmp_path / "out.txt", 2)
    ids = Counter(line.split()[0] for line in lines)
    assert max(ids.values()) == 1, [t for t, k in ids.items() if k > 1]
    assert len(ids) == n, f"{kind}: {n - len(ids)} tickets not completed"


def test_buckets_asked_often_while_processes_claim_hand_back_and_add(tmp_path):
    """T14 raced by real processes: four drainers that ask ``pending_at_most`` after every
    claim (skipping buckets they found empty) and hand tickets back into their buckets,
    beside a writer adding tickets into buckets: every ticket is completed exactly once."""
    from sitemap_crawler.protocol.tickets import SHARD_AT

    n, fed = SHARD_AT + 150, 300
    state = make_tickets(tmp_path / "st", n, size=1)
    lines = race([state.root], tmp_path / "out.txt", 4, mode="drain-prune",
                 feed=(state.root, n, fed))
    ids = Counter(line.split()[0] for line in lines)
    assert max(ids.values()) == 1, [t for t, k in ids.items() if k > 1]
    left = TicketQueue(state, "check")
    # drainers stop after 0.15 s without a ticket: a straggler of the feeder may wait
    while (c := left.claim()) is not None:
        ids[c.ticket_id] += 1
        left.finish(c)
    assert set(ids) == {f"t-{i:04d}" for i in range(n + fed)} and max(ids.values()) == 1
    assert left.pending_at_most(0) and not left.has_work()


def test_a_drained_queue_is_asked_with_one_listing(tmp_path, monkeypatch):
    """T14: buckets listed empty are not listed again for EMPTY_TTL s, unless this queue
    wrote into one; another process's ticket there is seen once that time is over."""
    from sitemap_crawler.protocol import tickets
    from sitemap_crawler.protocol.tickets import SHARD_AT

    state = make_tickets(tmp_path / "st", SHARD_AT + 300, size=1)
    pending = state.ticket_dir("pending")
    q = TicketQueue(state, "a-1-aaaaaa")
    while (c := q.claim()) is not None:
        q.finish(c)
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p: listed.append(str(p)) or real(p))
    assert q.pending_at_most(0)
    assert len(listed) == 1 + len(os.listdir(pending)) > 2  # pending/ and each bucket
    listed.clear()
    assert q.pending_at_most(0) and q.pending_at_most(5)
    assert listed == [str(pending)] * 2
    other = TicketQueue(state, "b-1-bbbbbb")
    other.added = SHARD_AT
    other.add({"ticket_id": "t-new", "site": "s", "urls": [{"url": "https://h/new"}]})
    assert q.pending_at_most(0)  # in a bucket listed empty just now: not seen yet
    assert q.has_work()  # the decision to end lists everything
    monkeypatch.setattr(tickets, "EMPTY_TTL", 0.0)
    assert not q.pending_at_most(0)
    monkeypatch.setattr(tickets, "EMPTY_TTL", 60.0)
    c = q.claim()
    assert c is not None and c.ticket_id == "t-new" and q.pending_at_most(0)
    assert q.hand_back(c) and not q.pending_at_most(0)  # its own write: seen at once


@pytest.mark.netfs
def test_buckets_asked_often_across_two_mounts_of_a_real_share(share, tmp_path):
    """T14 on a share: drainers on both mounts ask ``pending_at_most`` after every claim
    and hand tickets back into their buckets while a writer on mount A adds more; each
    ticket is completed once."""
    from sitemap_crawler.protocol.tickets import SHARD_AT, list_pending

    a, b, kind = share
    n, fed = SHARD_AT + 40, 60
    make_tickets(a, n, size=1)
    pending_b = StateDir(b).tickets / "pending"
    wait_until(lambda: pending_b.is_dir() and len(list_pending(pending_b)[0]) == n, 60)
    lines = race([a, b], tmp_path / "out.txt", 2, mode="drain-prune", feed=(a, n, fed))
    ids = Counter(line.split()[0] for line in lines)
    assert max(ids.values()) == 1, [t for t, k in ids.items() if k > 1]
    left = TicketQueue(StateDir(a), "check")
    deadline = time.monotonic() + 60  # what the drainers left, once the listing shows it
    while len(ids) < n + fed and time.monotonic() < deadline:
        c = left.claim()
        if c is None:
            time.sleep(0.5)
            continue
        ids[c.ticket_id] += 1
        left.finish(c)
    assert max(ids.values()) == 1 and len(ids) == n + fed, f"{kind}: {n + fed - len(ids)} lost"


def test_a_writer_that_never_claims_keeps_its_tickets_out_of_its_view(tmp_path):
    """T10: prepare's queue holds no name of the tickets it writes; others claim them."""
    state = StateDir(tmp_path / "st")
    state.ensure()
    q = TicketQueue(state, "prepare")
    for i in range(300):
        q.add({"ticket_id": f"t-{i:04d}", "site": "s", "urls": [{"url": f"https://h/{i}"}]},
              to_view=False)
    assert q.view.size == 0 and not q.view.tags
    w = TicketQueue(state, "a-1-aaaaaa")
    assert len(list(iter(w.claim, None))) == 300
