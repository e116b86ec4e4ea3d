"""Issue 8 case 6: the url-index lock holder proves it is alive (fsutil L1-L4, index I1).

Real processes hold the lock through index.update: one that is slow but alive keeps it past
the timeout; one paused (SIGSTOP) past the timeout loses it to another process and then fails
with one line, writing nothing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.state import StateDir

AGENT = Path(__file__).parent / "protocol_agent.py"


def holder(root: Path, tag: str, hold: float, timeout: float) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, str(AGENT), "hold-index", str(root), tag, str(hold),
                          str(timeout)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    return p


def wait_holding(p: subprocess.Popen[str]) -> None:
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.strip() == "holding", (line, p.stderr.read() if p.stderr else "")


def index_of(root: Path) -> dict:
    # The view (I9), not the bare base file: on sshfs this mount may still cache the size of
    # the base it wrote itself, and a plain read of B's longer base then ends at a line's end.
    return url_index.load_view(StateDir(root))


def locks_left(root: Path) -> list[str]:
    return sorted(os.listdir(root / "locks"))


def slow_holder_then_other(dir_a: Path, dir_b: Path, hold: float, timeout: float) -> None:
    """A holds the lock ``hold`` > ``timeout`` seconds while B waits: both must succeed."""
    a = holder(dir_a, "a", hold=hold, timeout=timeout)
    wait_holding(a)
    b = holder(dir_b, "b", hold=0.0, timeout=timeout)
    out_a, err_a = a.communicate(timeout=120)
    out_b, err_b = b.communicate(timeout=120)
    assert a.returncode == 0 and "done" in out_a, (out_a, err_a)
    assert b.returncode == 0 and out_b.split() == ["holding", "done"], (out_b, err_b)
    assert sorted(index_of(dir_a)) == ["https://h/a", "https://h/b"]  # no lost update


def test_a_slow_but_alive_holder_keeps_the_lock_past_the_timeout(tmp_path):
    slow_holder_then_other(tmp_path, tmp_path, hold=3.0, timeout=1.0)
    assert locks_left(tmp_path) == ["index.free"]


def test_a_paused_holder_loses_the_lock_and_then_fails_cleanly(tmp_path):
    a = holder(tmp_path, "a", hold=2.0, timeout=1.0)
    wait_holding(a)
    os.kill(a.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        b = holder(tmp_path, "b", hold=0.0, timeout=1.0)
        out_b, err_b = b.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        os.kill(a.pid, signal.SIGCONT)
    assert b.returncode == 0 and "done" in out_b, (out_b, err_b)
    assert waited >= 1.0  # L3: not before the timeout of unchanged content
    out_a, err_a = a.communicate(timeout=60)
    assert a.returncode == 3, (out_a, err_a)
    assert out_a.strip().splitlines()[-1].startswith("lost: "), out_a
    assert "Traceback" not in err_a, err_a
    assert sorted(index_of(tmp_path)) == ["https://h/b"]  # the loser wrote nothing
    assert locks_left(tmp_path) == ["index.free"]


@pytest.mark.netfs
def test_a_slow_holder_keeps_the_lock_across_two_mounts_of_a_real_share(share):
    a_dir, b_dir, _kind = share
    slow_holder_then_other(a_dir, b_dir, hold=6.0, timeout=3.0)


def test_a_waiter_whose_lock_folder_is_deleted_fails_at_once_with_one_line(tmp_path):
    """The output folder removed during a crawl (found when a run's folder was deleted under
    it): the finishing merge waited on the index lock for its whole 300 s timeout.  Now the
    waiter sees the lock's folder gone and says so."""
    a = holder(tmp_path, "a", hold=30.0, timeout=60.0)
    wait_holding(a)
    b = holder(tmp_path, "b", hold=0.0, timeout=60.0)
    try:
        time.sleep(3.0)  # b started (an import takes ~1 s on a busy machine) and waits
        shutil.rmtree(tmp_path / "locks")
        t = time.monotonic()
        out_b, err_b = b.communicate(timeout=20)
        assert b.returncode == 3, (out_b, err_b)  # the agent's "lost: <one line>"
        assert "lock is gone" in out_b and "Traceback" not in err_b, (out_b, err_b)
        assert time.monotonic() - t < 5
    finally:
        for p in (a, b):
            p.kill()
            p.communicate()
