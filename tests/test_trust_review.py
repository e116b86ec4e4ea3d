"""Issue 8, "found in review": renames that lie, errors that must not turn into "empty",
heartbeats that cannot be written.  Real files and processes; the one injected fault is a
rename that happens but answers an error, which SMB does and no local disk can be made to."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from pathlib import Path

import pytest
from sites import cli, doc_site, write_config

from sitemap_crawler.protocol.fsutil import move_exclusive
from sitemap_crawler.protocol.heartbeat import Heartbeat
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import TicketQueue

real_rename = os.rename


def make_ticket(root: Path) -> StateDir:
    state = StateDir(root)
    state.ensure()
    TicketQueue(state, "prepare").add({"ticket_id": "t-0000", "site": "s", "gen": 0,
                                       "urls": [{"url": "https://h/0"}, {"url": "https://h/1"}]})
    return state


def renamed_but_answered(err: int):
    def rename(src, dst):  # the server did it; the reply was lost or wrong
        real_rename(src, dst)
        raise OSError(err, os.strerror(err))
    return rename


@pytest.mark.parametrize("err", [errno.EACCES, errno.EIO])
def test_a_rename_that_happened_but_answered_an_error_is_a_win(tmp_path, monkeypatch, err):
    (tmp_path / "a").write_bytes(b"x")
    monkeypatch.setattr(os, "rename", renamed_but_answered(err))
    assert move_exclusive(tmp_path / "a", tmp_path / "b_me")
    monkeypatch.setattr(os, "rename", real_rename)
    assert not move_exclusive(tmp_path / "a", tmp_path / "c_me")  # really lost: gone


def test_a_claim_misreported_as_lost_is_still_worked_and_the_queue_drains(tmp_path,
                                                                          monkeypatch):
    state = make_ticket(tmp_path)
    q = TicketQueue(state, "w-1-aaaaaa")
    monkeypatch.setattr(os, "rename", renamed_but_answered(errno.EACCES))
    c = q.claim()
    monkeypatch.setattr(os, "rename", real_rename)
    assert c is not None and c.path.name == "t-0000.0_w-1-aaaaaa.json"


def test_an_orphan_under_the_workers_own_id_is_handed_back(tmp_path):
    """T5b: a ticket in claimed/ under our id that we do not hold must not keep us waiting."""
    state = make_ticket(tmp_path)
    pending = state.ticket_dir("pending") / "t-0000.0.json"
    orphan = state.ticket_dir("claimed") / "t-0000.0_w-1-aaaaaa.json"
    real_rename(pending, orphan)  # what a misreported rename leaves behind
    q = TicketQueue(state, "w-1-aaaaaa")
    assert q.claim() is None and q.has_work()
    q.reclaim(lambda w: False, lambda w, t: {"https://h/0": "ok"})
    c = q.claim()
    assert c is not None and [u["url"] for u in c.remaining()] == ["https://h/1"]
    c.done["https://h/1"] = "ok"
    assert q.finish(c) == "completed"
    assert not q.has_work()


def test_a_heartbeat_that_cannot_be_written_stops_the_worker_loudly(tmp_path, caplog):
    stopped = threading.Event()
    hb = Heartbeat(tmp_path, "h-1-aaaaaa", 0.05, on_fail=stopped.set).start()
    path = tmp_path / "h-1-aaaaaa.lock"
    path.unlink()
    path.mkdir()  # every write now fails with EISDIR, a real I/O error
    try:
        assert stopped.wait(10), "the worker was not told to stop"
        assert hb.failed.is_set()
        assert any(r.levelno == logging.ERROR and "cannot write its heartbeat" in r.message
                   for r in caplog.records)
    finally:
        hb.stop(remove=False)


def test_a_corrupt_manifest_is_kept_aside_not_overwritten(server, tmp_path):
    doc_site(server, 3)
    cfg = write_config(tmp_path, server.url("/"))
    cli(cfg, "prepare", "docs")
    st = tmp_path / "out" / ".crawl-state" / "docs"
    (st / "manifest.json").write_text('{"prepares": [{"at": "history"')  # torn
    r = cli(cfg, "prepare", "docs")
    aside = list(st.glob("manifest.corrupt.*.json"))
    assert len(aside) == 1 and "history" in aside[0].read_text()
    assert "corrupt" in r.stderr
    assert json.loads((st / "manifest.json").read_text())["prepares"]

