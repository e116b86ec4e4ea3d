"""Issue 8 cases 1 and 5 through the CLI: after a kill -9, any next command redoes at most the
URLs that were in flight, and crashes do not leave files behind for ever."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from sites import cli, doc_site, popen_cli, read_index, write_config
from test_work import page_hits, state_dir
from waiting import wait_until as wait_for

from sitemap_crawler.protocol.heartbeat import read_heartbeat


def journaled(out: Path) -> set[str]:
    """URLs with a final record in some journal (what the killed worker had finished)."""
    done: set[str] = set()
    d = state_dir(out) / "journal"
    for p in d.glob("*.jsonl") if d.exists() else []:
        for line in p.read_bytes().split(b"\n"):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("final"):
                done.add(rec["url"])
    return done


def busy_pid(out: Path, killed: set[int]) -> int | None:
    """The pid of a worker that holds a ticket now (not one killed earlier)."""
    for p in (state_dir(out) / "workers").glob("*.lock"):
        hb = read_heartbeat(p)
        if hb and hb.get("ticket") and int(hb["pid"]) not in killed:
            return int(hb["pid"])
    return None


KILLED: set[int] = set()


def kill_mid_ticket(cfg: Path, out: Path, after: int) -> set[str]:
    """Run `work` (1 worker), kill -9 the worker and the runner once ``after`` URLs are
    journaled; returns the URLs the journal holds at that moment."""
    runner = popen_cli(cfg, "work", "--workers", "1")
    wait_for(lambda: len(journaled(out)) >= after)
    pid = wait_for(lambda: busy_pid(out, KILLED))
    KILLED.add(pid)
    os.kill(pid, signal.SIGKILL)
    os.kill(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=30)
    # the worker was the runner's child: init reaps it (here after ~1 s as a zombie)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30)
    return journaled(out)


@pytest.mark.parametrize("next_command", [["prepare", "docs"], ["crawl", "docs", "-w", "1"],
                                          ["status", "docs", "--json"]])
def test_after_kill_9_the_next_command_redoes_only_urls_in_flight(server, tmp_path,
                                                                    next_command):
    urls = doc_site(server, 20, delay=0.08)
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"ticket_size": 20},
                       max_in_flight=8)
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    done = kill_mid_ticket(cfg, out, after=5)
    assert 5 <= len(done) < 20
    before = page_hits(server)
    cli(cfg, *next_command)
    cli(cfg, "work", "--workers", "1")
    hits = page_hits(server)
    refetched = [u for u in done if hits[u[len(server.base):]] > before[u[len(server.base):]]]
    assert refetched == [], f"{len(refetched)} finished URLs fetched again after {next_command}"
    idx = read_index(state_dir(out))
    assert sorted(idx) == sorted(urls)
    # every URL was fetched once, plus those in flight at the kill: sent, not journaled
    in_flight = {p for p in before if server.base + p not in done}
    assert len(in_flight) <= 8  # max_in_flight of the one worker (fetched or converting)
    assert sum(hits.values()) <= len(urls) + len(in_flight), (hits, in_flight)


def test_n_crashes_leave_no_files_behind_once_reclaimed_and_merged(server, tmp_path):
    urls = doc_site(server, 30, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"ticket_size": 3})
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    crashes = 4
    for k in range(crashes):
        kill_mid_ticket(cfg, out, after=3 * (k + 1))
    st = state_dir(out)
    # every crash left its heartbeat and its journal (and the tickets it held)
    assert len(list((st / "workers").iterdir())) >= crashes
    cli(cfg, "crawl", "docs", "-w", "1")
    assert sorted(read_index(st)) == sorted(urls)
    assert os.listdir(st / "workers") == []
    assert os.listdir(st / "journal") == []
    assert os.listdir(st / "tickets" / "claimed") == []
    status = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert status["dead_workers"] == [] and status["workers"] == []


@pytest.mark.netfs
def test_after_kill_9_on_a_real_share_prepare_redoes_only_urls_in_flight(server, tmp_path,
                                                                        share):
    a, _b, _kind = share
    doc_site(server, 20, delay=0.08)
    cfg = write_config(tmp_path, server.url("/"), out=a / "out",
                       crawl_state={"ticket_size": 20})
    out = a / "out"
    cli(cfg, "prepare", "docs")
    done = kill_mid_ticket(cfg, out, after=5)
    before = page_hits(server)
    cli(cfg, "prepare", "docs")
    cli(cfg, "work", "--workers", "1")
    hits = page_hits(server)
    refetched = [u for u in done if hits[u[len(server.base):]] > before[u[len(server.base):]]]
    assert refetched == []
    assert os.listdir(state_dir(out) / "journal") == []
    assert os.listdir(state_dir(out) / "workers") == []
