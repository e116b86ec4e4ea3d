"""HostGate: rename tokens and the shared block file, on local disk and on real SMB/sshfs shares.

The share tests run one process per mount (mount A and mount B stand for two machines) and
record hold intervals with time.monotonic(); both processes run on this one machine, so their
monotonic clocks are comparable, which is what lets the test check exclusion.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import os
import random
import threading
import time
from pathlib import Path

import pytest

from sitemap_crawler.protocol.hostgate import BLOCK_FILE, HostGate, safe_host

SPAWN = mp.get_context("spawn")
HOST = "example.org"


def never_dead(_w: str) -> bool:
    return False


def gate(root: Path, wid: str = "w1", **kw) -> HostGate:
    return HostGate(root, wid, never_dead, **kw)


def tokens(slots: Path) -> list[str]:
    return sorted(os.listdir(slots))


# -- local disk ----------------------------------------------------------------------------


def test_safe_host_names():
    assert safe_host("Example.ORG") == "example.org"
    a, b = safe_host("127.0.0.1:8080"), safe_host("127.0.0.1_8080")
    assert a != b and "/" not in a and ":" not in a
    assert not safe_host("..").startswith(".")
    assert "/" not in safe_host("a/../b")


def test_ensure_creates_tokens_once(tmp_path):
    g = gate(tmp_path)
    slots = g.ensure(HOST, 3)
    assert tokens(slots) == ["slot-0.free", "slot-1.free", "slot-2.free"]
    assert gate(tmp_path, "w2").ensure(HOST, 3) == slots
    assert tokens(slots) == ["slot-0.free", "slot-1.free", "slot-2.free"]
    assert [p.name for p in slots.parent.iterdir() if p.name.startswith(".tmp")] == []


def test_acquire_release_renames_the_token(tmp_path):
    g = gate(tmp_path, "worker-a")
    stop = threading.Event()
    lease = g.acquire(HOST, 0.0, 2, stop)
    assert lease is not None
    names = tokens(g.slots_dir(HOST, 2))
    assert len(names) == 2
    assert sum(n.startswith(f"slot-{lease.slot}.held.worker-a.") for n in names) == 1
    lease.release()
    assert tokens(g.slots_dir(HOST, 2)) == ["slot-0.free", "slot-1.free"]
    lease.release()  # twice is harmless
    assert tokens(g.slots_dir(HOST, 2)) == ["slot-0.free", "slot-1.free"]


def test_the_slot_this_process_gave_back_is_tried_first(tmp_path):
    """With 8 slots of which one was just handed back here, the next acquire takes that
    one with its first rename, not after ~4 failed ones in a random order (each a rename,
    a stat and a random name: a delay-0 host's turnaround); another gate's scan is not
    steered."""
    g = gate(tmp_path, "worker-a")
    stop = threading.Event()
    held = [g.acquire(HOST, 0.0, 8, stop) for _ in range(3)]
    first = held[0]
    assert first is not None
    slot = first.slot
    first.release()
    for _ in range(20):
        lease = g.acquire(HOST, 0.0, 8, stop)
        assert lease is not None and lease.slot == slot
        lease.release()
    # what this process gave back last comes first, most recent first
    held[1].release()
    again = g.acquire(HOST, 0.0, 8, stop)
    assert again.slot == held[1].slot
    again.release()
    seen = set()
    for i in range(40):  # a fresh process each time: no hint, the random order
        lease = gate(tmp_path, f"worker-b{i}").acquire(HOST, 0.0, 8, stop)
        seen.add(lease.slot)
        lease.release()
    assert len(seen) > 2
    held[2].release()


def test_parallel_slots_limit_and_serial_uses_slot_zero(tmp_path):
    g1, g2, g3 = gate(tmp_path, "a"), gate(tmp_path, "b"), gate(tmp_path, "c")
    stop = threading.Event()
    l1, l2 = g1.acquire(HOST, 0, 2, stop), g2.acquire(HOST, 0, 2, stop)
    assert l1 and l2 and {l1.slot, l2.slot} == {0, 1}
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    t = time.monotonic()
    assert g3.acquire(HOST, 0, 2, stop) is None  # both tokens held: waits until stopped
    assert 0.25 < time.monotonic() - t < 0.6
    l1.release()
    l2.release()
    stop.clear()
    serial = [g1.acquire(HOST, 0.01, 2, stop)]
    assert serial[0] and serial[0].slot == 0
    serial[0].release()


def test_release_keeps_token_until_delay_passed(tmp_path):
    g1, g2 = gate(tmp_path, "a"), gate(tmp_path, "b")
    stop = threading.Event()
    starts = []
    for g in (g1, g2, g1, g2):
        lease = g.acquire(HOST, 0.2, 1, stop)
        assert lease is not None
        starts.append(lease.t0)
        lease.release()
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.2, gaps


def test_stop_cuts_the_release_wait_short(tmp_path):
    g = gate(tmp_path)
    stop = threading.Event()
    lease = g.acquire(HOST, 30.0, 1, stop)
    assert lease is not None
    threading.Timer(0.2, stop.set).start()
    t = time.monotonic()
    lease.release()
    assert time.monotonic() - t < 1.0
    assert tokens(g.slots_dir(HOST, 1)) == ["slot-0.free"]


def test_threads_never_share_a_token(tmp_path):
    stop = threading.Event()
    inside = {"n": 0, "max": 0}
    lock = threading.Lock()

    def run(wid: str) -> None:
        g = gate(tmp_path, wid)
        for _ in range(30):
            lease = g.acquire(HOST, 0, 2, stop)
            assert lease is not None
            with lock:
                inside["n"] += 1
                inside["max"] = max(inside["max"], inside["n"])
            time.sleep(0.002)
            with lock:
                inside["n"] -= 1
            lease.release()

    threads = [threading.Thread(target=run, args=(f"w{i}",)) for i in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert inside["max"] == 2
    assert tokens(gate(tmp_path).slots_dir(HOST, 2)) == ["slot-0.free", "slot-1.free"]


def test_stale_token_of_dead_worker_is_taken_back(tmp_path):
    stop = threading.Event()
    dead_lease = gate(tmp_path, "crashed-1").acquire(HOST, 0, 1, stop)
    assert dead_lease is not None  # ...and never released: the worker "crashed"
    alive = HostGate(tmp_path, "alive-2", lambda w: False, stale_after=0.2)
    threading.Timer(0.8, stop.set).start()
    assert alive.acquire(HOST, 0, 1, stop) is None  # holder is alive: no reclaim
    stop.clear()
    reaper = HostGate(tmp_path, "alive-3", lambda w: w == "crashed-1", stale_after=0.2)
    t = time.monotonic()
    lease = reaper.acquire(HOST, 0, 1, stop)
    assert lease is not None and time.monotonic() - t < 1.0
    # the crashed worker comes back and releases: its token is gone, nothing is created (G3)
    dead_lease.release()
    names = tokens(reaper.slots_dir(HOST, 1))
    assert len(names) == 1 and names[0].startswith("slot-0.held.alive-3.")
    lease.release()
    assert tokens(reaper.slots_dir(HOST, 1)) == ["slot-0.free"]


def test_block_is_shared_without_absolute_times(tmp_path):
    a, b = gate(tmp_path, "a", block_ttl=0.0), gate(tmp_path, "b", block_ttl=0.0)
    assert a.blocked_for(HOST) == 0 and b.blocked_for(HOST) == 0
    a.block(HOST, 0.6, "http_429")
    raw = json.loads((a.host_dir(HOST) / BLOCK_FILE).read_text())
    assert set(raw) == {"seq", "id", "seconds", "reason", "consecutive_failures"}
    assert raw["seq"] == 1 and raw["seconds"] == 0.6  # a duration, no timestamp
    assert 0.5 < b.blocked_for(HOST) <= 0.6
    assert b.block_reason(HOST) == "http_429"
    time.sleep(0.3)
    late = gate(tmp_path, "late", block_ttl=0.0)  # a reader that first sees it now...
    assert 0.5 < late.blocked_for(HOST) <= 0.6  # ...counts from its own first sight (G7)
    assert 0.2 < b.blocked_for(HOST) < 0.35
    b.block(HOST, 0.1, "shorter")  # a shorter block does not cut a longer one
    assert 0.2 < a.blocked_for(HOST) < 0.35
    time.sleep(0.35)
    assert a.blocked_for(HOST) == 0 and b.blocked_for(HOST) == 0
    b.block(HOST, 5, "http_503")
    assert json.loads((a.host_dir(HOST) / BLOCK_FILE).read_text())["seq"] == 2
    assert a.blocked_for(HOST) > 4.9


def test_block_file_read_at_most_every_ttl(tmp_path):
    a, b = gate(tmp_path, "a", block_ttl=0.3), gate(tmp_path, "b", block_ttl=0.3)
    assert b.blocked_for(HOST) == 0  # cached "not blocked" now
    a.block(HOST, 5, "x")
    assert b.blocked_for(HOST) == 0  # still the cached reading
    time.sleep(0.35)
    assert b.blocked_for(HOST) > 4


def test_failure_count_is_shared_and_reset_by_success(tmp_path):
    a, b = gate(tmp_path, "a", block_ttl=0.0), gate(tmp_path, "b", block_ttl=0.0)
    assert a.record_failure(HOST) == 1
    assert b.record_failure(HOST) == 2
    a.block(HOST, 0.2, "x")
    assert b.failures(HOST) == 2  # a block keeps the count
    path = a.host_dir(HOST) / BLOCK_FILE
    mtime = path.stat().st_mtime_ns
    b.record_success(HOST)
    assert a.failures(HOST) == 0
    assert path.stat().st_mtime_ns != mtime
    mtime = path.stat().st_mtime_ns
    time.sleep(0.01)
    b.record_success(HOST)  # nothing to reset: no write
    assert path.stat().st_mtime_ns == mtime


def test_garbage_block_file_is_ignored(tmp_path):
    g = gate(tmp_path, block_ttl=0.0)
    (g.host_dir(HOST) / BLOCK_FILE).write_text("{not json")
    assert g.blocked_for(HOST) == 0 and g.failures(HOST) == 0
    g.block(HOST, 1, "x")
    assert g.blocked_for(HOST) > 0.9


# -- real shares (mount A and mount B stand for two machines) ------------------------------


def _race(root: str, wid: str, n: int, delay: float, out: str, go, ready) -> None:
    g = HostGate(Path(root), wid, never_dead)
    g.ensure(HOST, 1)
    stop = threading.Event()
    ready.set()
    go.wait(30)
    spans = []
    rnd = random.Random(wid)
    for _ in range(n):
        time.sleep(rnd.uniform(0, 0.02))  # a worker does some work between two requests
        lease = g.acquire(HOST, delay, 1, stop)
        assert lease is not None
        t_in = time.monotonic()
        time.sleep(0.003)
        t_out = time.monotonic()
        spans.append((lease.t0, t_in, t_out))
        lease.release()
    Path(out).write_text(json.dumps(spans))


def _run_race(a: Path, b: Path, out: Path, n: int, delay: float) -> list[tuple[str, list]]:
    gate(a).ensure(HOST, 1)  # created once; the ensure race has its own test
    go = SPAWN.Event()
    procs, readies = [], []
    for wid, root in (("on-a", a), ("on-b", b)):
        ready = SPAWN.Event()
        p = SPAWN.Process(target=_race, args=(str(root), wid, n, delay,
                                              str(out / f"{wid}.json"), go, ready))
        p.start()
        procs.append(p)
        readies.append(ready)
    for r in readies:
        assert r.wait(60)
    go.set()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    return [(wid, json.loads((out / f"{wid}.json").read_text())) for wid in ("on-a", "on-b")]


@pytest.mark.netfs
def test_two_machines_never_hold_one_token_together(share, tmp_path):
    a, b, kind = share
    n = 60
    t = time.monotonic()
    results = _run_race(a, b, tmp_path, n, 0.0)
    took = time.monotonic() - t
    spans = sorted((t_in, t_out, wid) for wid, ss in results for _t0, t_in, t_out in ss)
    assert len(spans) == 2 * n
    for (_i1, out1, w1), (in2, _o2, w2) in itertools.pairwise(spans):
        assert out1 <= in2, f"{w1} and {w2} held the token together on {kind}"
    switches = sum(s1[2] != s2[2] for s1, s2 in itertools.pairwise(spans))
    assert switches >= 5, f"the two processes hardly raced ({switches} switches)"
    assert tokens(a / safe_host(HOST) / "slots-1") == ["slot-0.free"]
    print(f"{kind}: {2 * n} exclusive holds in {took:.1f}s, {switches} hand-overs")


@pytest.mark.netfs
def test_two_machines_keep_the_delay_between_starts(share, tmp_path):
    a, b, kind = share
    results = _run_race(a, b, tmp_path, 6, 0.15)
    starts = sorted(t0 for _wid, ss in results for t0, _i, _o in ss)
    gaps = [y - x for x, y in itertools.pairwise(starts)]
    assert min(gaps) >= 0.15, gaps
    assert {wid for wid, ss in results if ss} == {"on-a", "on-b"}
    print(f"{kind}: min gap {min(gaps):.3f}s over {len(gaps)} hand-overs")


def _ensure(root: str, wid: str, hosts: list[str], parallel: int, go, ready) -> None:
    g = HostGate(Path(root), wid, never_dead)
    ready.release()
    go.wait(30)
    for h in hosts:
        g.ensure(h, parallel)


@pytest.mark.netfs
def test_ensure_race_from_both_mounts_makes_one_token_set(share):
    a, b, kind = share
    hosts = [f"h{i}.example" for i in range(8)]
    go, ready = SPAWN.Event(), SPAWN.Semaphore(0)
    procs = [SPAWN.Process(target=_ensure, args=(str(root), f"{tag}{i}", hosts, 3, go, ready))
             for i in range(2) for tag, root in (("a", a), ("b", b))]
    for p in procs:
        p.start()
    for _ in procs:  # all four have imported and wait at the start line
        assert ready.acquire(timeout=60)
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    for h in hosts:
        host_dir = a / safe_host(h)
        assert tokens(host_dir / "slots-3") == ["slot-0.free", "slot-1.free", "slot-2.free"]
        assert [n for n in os.listdir(host_dir) if n.startswith(".tmp")] == [], kind


def _hold_forever(root: str, ready) -> None:
    g = HostGate(Path(root), "crashed-9", never_dead)
    lease = g.acquire(HOST, 0, 1, threading.Event())
    assert lease is not None
    ready.set()
    time.sleep(600)


@pytest.mark.netfs
def test_token_of_dead_worker_on_other_machine_is_taken_back(share):
    a, b, kind = share
    ready = SPAWN.Event()
    p = SPAWN.Process(target=_hold_forever, args=(str(a), ready))
    p.start()
    try:
        assert ready.wait(60)
    finally:
        p.kill()  # the worker on "machine A" dies holding the token
        p.join()
    reaper = HostGate(b, "alive-1", lambda w: w == "crashed-9", stale_after=0.3)
    stop = threading.Event()
    timer = threading.Timer(60, stop.set)
    timer.start()
    t = time.monotonic()
    lease = reaper.acquire(HOST, 0, 1, stop)
    timer.cancel()
    assert lease is not None, f"stale token not taken back on {kind}"
    print(f"{kind}: stale token taken back after {time.monotonic() - t:.2f}s")
    lease.release()
    assert tokens(a / safe_host(HOST) / "slots-1") == ["slot-0.free"]


def test_deferred_release_frees_the_thread_and_keeps_the_delay(tmp_path):
    """G8: the releaser gives the token back at t0 + delay (not earlier), the releasing
    thread goes on at once, free_at says when, and a stop gives it back early."""
    g = gate(tmp_path, deferred=True)
    other = gate(tmp_path, "w2")
    stop = threading.Event()
    lease = g.acquire(HOST, 0.4, 1, stop)
    assert lease is not None
    t = time.monotonic()
    lease.release()
    assert time.monotonic() - t < 0.05  # this thread is free at once
    assert abs(g.free_at(HOST) - (lease.t0 + 0.4)) < 1e-6
    nxt = other.acquire(HOST, 0.4, 1, stop)  # another worker waits for the token
    assert nxt is not None and nxt.t0 - lease.t0 >= 0.4
    nxt.release()
    late = g.acquire(HOST, 30.0, 1, stop)
    assert late is not None
    late.release()
    time.sleep(0.3)
    assert tokens(g.slots_dir(HOST, 1)) != ["slot-0.free"]  # held for its 30 s delay
    stop.set()
    deadline = time.monotonic() + 1.0
    while tokens(g.slots_dir(HOST, 1)) != ["slot-0.free"]:
        assert time.monotonic() < deadline, "a stop must give the token back within 1 s"
        time.sleep(0.02)
    g.close()
