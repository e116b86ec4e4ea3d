"""Tickets written by a helper process beside prepare's parser (tickets.py T15, spool.py).

Real processes and real files: the helper writes whole files or none, remakes a bucket a
listing removed (T14), reports its errors as the caller's ``OSError``, and writes nothing
once its parent was killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from httpserver import Response
from sites import write_config
from waiting import wait_until

from sitemap_crawler.commands.prepare import prepare
from sitemap_crawler.config import load_config
from sitemap_crawler.protocol import tickets
from sitemap_crawler.protocol.spool import Spool
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import HOST_MARK, TicketQueue, list_pending


def test_the_helper_writes_whole_files_and_remakes_a_vanished_folder(tmp_path: Path) -> None:
    (tmp_path / "s01").mkdir()
    s = Spool()
    for i in range(300):
        s.write(str(tmp_path / "s01"), f"t-{i}.0.json", b"%d" % i * 5000)
    s.write(str(tmp_path / "s02"), "gone.0.json", b"x", fallback=str(tmp_path))  # T14
    s.close()
    assert sorted(os.listdir(tmp_path / "s01")) == sorted(f"t-{i}.0.json" for i in range(300))
    assert (tmp_path / "s01" / "t-7.0.json").read_bytes() == b"7" * 5000
    assert os.listdir(tmp_path / "s02") == ["gone.0.json"]
    assert s.proc.returncode == 0


def test_the_helpers_error_is_raised_as_the_callers_oserror(tmp_path: Path) -> None:
    s = Spool()
    s.write(str(tmp_path / "no" / "such"), "t.0.json", b"x")  # no fallback: an error
    with pytest.raises(FileNotFoundError) as e:
        for i in range(2000):  # the pipe breaks once the helper has ended, or close says
            s.write(str(tmp_path), f"after-{i}.0.json", b"y" * 1000)
        s.close()
    assert str(tmp_path / "no" / "such") in str(e.value.filename)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("after-")]  # none after it


def test_a_killed_parent_leaves_no_file_written_after_it(tmp_path: Path) -> None:
    """kill -9 of the process that feeds the helper: the helper ends, and a ticket whose
    message was cut short is never written (T15)."""
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from sitemap_crawler.protocol.spool import _HEAD, Spool
        s = Spool()
        s.write({str(tmp_path)!r}, "whole.0.json", b"w" * 100)
        half = [b"{tmp_path}", b"", b"half.0.json"]
        os.write(s.fd, _HEAD.pack(*map(len, half), 100) + b"".join(half) + b"h" * 40)
        print(s.proc.pid, flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    helper = int(p.stdout.readline())
    wait_until(lambda: (tmp_path / "whole.0.json").exists(), 20)
    p.send_signal(signal.SIGKILL)
    p.wait()
    wait_until(lambda: not _alive(helper), 10)  # PR_SET_PDEATHSIG, or EOF mid-message
    assert sorted(os.listdir(tmp_path)) == ["whole.0.json"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_prepare_spools_its_tickets_and_writes_what_it_wrote_itself(server, tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The same tickets whether prepare writes them itself or through the helper, all in
    place when prepare returns; the helper is really used (it is a child of this process)."""
    n = 350
    body = "".join(f"<url><loc>{server.url(f'/p/{i}')}</loc></url>" for i in range(n))
    server.route("/sitemap.xml", Response(body=(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + body + "</urlset>").encode(), content_type="application/xml"))
    spawned: list[int] = []
    real = Spool.__init__

    def counting(self: Spool) -> None:
        real(self)
        spawned.append(self.proc.pid)

    monkeypatch.setattr(Spool, "__init__", counting)
    got = {}
    for after in (10**9, 20):  # never, and after 20 tickets
        monkeypatch.setattr(tickets, "SPOOL_AFTER", after)
        tmp = tmp_path / str(after)
        tmp.mkdir()
        cfg = write_config(tmp, server.url("/sitemap.xml"), out=tmp / "out", name="site",
                           crawl_state={"ticket_size": 2})
        res = prepare(load_config(cfg).sites[0])
        state = StateDir(tmp / "out" / ".crawl-state" / "site")
        names, bad = list_pending(state.ticket_dir("pending"))
        assert res.tickets == len(names) == n // 2 and not bad
        q = TicketQueue(state, "check")
        urls = {}
        for name in names:
            data = orjson.loads(q.path("pending", name).read_bytes())
            seq = int(name.ticket_id.split(HOST_MARK)[0].rsplit("-", 1)[1])
            urls[seq] = [u["url"] for u in data["urls"]]
        got[after] = urls
        leftovers = [f for _, _, fs in os.walk(state.ticket_dir("pending")) for f in fs
                     if f.startswith(".tmp-")]
        assert not leftovers
    assert len(spawned) == 1 and not _alive(spawned[0])
    assert got[20] == got[10**9]


def test_a_bucket_removed_while_the_helper_writes_is_made_again(tmp_path: Path) -> None:
    """T13 with T15: buckets removed by hand as soon as they are empty, while a spooling
    queue adds tickets and another claims them: none is lost."""
    state = StateDir(tmp_path / "st")
    state.ensure()
    pending = state.ticket_dir("pending")
    q = TicketQueue(state, "prepare")
    q.added = tickets.SHARD_AT
    q.spool(after=0)
    other = TicketQueue(state, "worker")
    for i in range(400):
        q.add({"ticket_id": f"t-{i:04d}", "site": "s", "urls": [{"url": f"https://h/{i}"}]})
        if i % 50 == 0:
            for c in iter(other.claim, None):  # empties buckets
                other.finish(c)
            for b in os.listdir(pending):
                with contextlib.suppress(OSError):
                    os.rmdir(pending / b)  # refused for one that holds anything
    q.flush()
    while (c := other.claim()) is not None:
        other.finish(c)
    assert other.counts()["completed"] == 400 and not other.has_work()


def test_without_a_helper_the_queue_writes_its_tickets_itself(tmp_path: Path,
                                                              monkeypatch) -> None:
    """A program embedding us whose ``sys.executable`` is no Python: no helper starts, and
    the queue writes every ticket itself (T15)."""
    monkeypatch.setattr(sys, "executable", "/bin/true")
    with pytest.raises(OSError):
        Spool()
    state = StateDir(tmp_path / "st")
    state.ensure()
    q = TicketQueue(state, "prepare")
    q.spool(after=5)
    for i in range(50):
        q.add({"ticket_id": f"t-{i:04d}", "site": "s", "urls": [{"url": f"https://h/{i}"}]})
    assert len(os.listdir(state.ticket_dir("pending"))) == 50  # before any flush
    q.flush()
