"""Issue 20, the work queue as input: hand-made ticket names and tickets, and what dead
workers of other machines leave.  Real CLI processes, a real 127.0.0.1 server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from httpserver import LocalServer, Response
from sites import cli, doc_site, page_html, popen_cli, read_index, write_config
from test_trust_crash import busy_pid, journaled
from waiting import wait_until as wait_for

from sitemap_crawler.protocol.state import MACHINE_ENV


def _state(tmp_path: Path) -> Path:
    return tmp_path / "out" / ".crawl-state" / "docs"


# -- #4 ticket file names ----------------------------------------------------------------------

def test_a_hostile_ticket_name_is_quarantined_once_and_never_followed(server, tmp_path):
    doc_site(server, 3)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "prepare", "docs")
    pending = _state(tmp_path) / "tickets" / "pending"
    ticket = next(pending.iterdir()).read_bytes()
    # pending/ -> tickets/ -> docs/ -> .crawl-state/ -> out/ -> tmp_path: the victim
    victim = tmp_path / "victim.0.json"
    victim.write_text("a file of the user's, not a ticket")
    up = "..%2F" * 5
    bad = [f"{up}victim.0.json", "a%2Fb.0.json", "t%2D1.0.json", "t-1.007.json"]
    for name in bad:
        (pending / name).write_bytes(ticket)
    try:  # a name that cannot be claimed made work list and retry it for ever
        r = cli(cfg, "work", "docs", "--workers", "1", timeout=60, check=False)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("work did not end with hostile ticket names") from e
    assert r.returncode == 0, r.stderr[-2000:]
    assert victim.read_text() == "a file of the user's, not a ticket"
    assert not [p for p in tmp_path.glob("victim*") if p != victim]
    assert len(read_index(_state(tmp_path))) == 3  # the real tickets were done
    kept = sorted(p.name for p in (_state(tmp_path) / "quarantine").iterdir())
    assert [k.rsplit(".", 2)[0] for k in kept] == sorted(bad), kept
    for name in bad:  # one log line each
        assert sum(name in line for line in r.stderr.splitlines()) == 1, r.stderr[-2000:]
    assert not list(pending.iterdir())
    again = cli(cfg, "work", "docs", "--workers", "1", timeout=60)
    assert "quarantine" not in again.stderr
    assert json.loads(cli(cfg, "status", "docs", "--json").stdout)["urls_remaining"] == 0


# -- #9 a ticket holding another host's URL ------------------------------------------------------

def test_a_ticket_url_on_another_host_is_refused_not_fetched(server, tmp_path):
    doc_site(server, 2)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "prepare", "docs")
    pending = _state(tmp_path) / "tickets" / "pending"
    with LocalServer("127.0.0.2") as elsewhere, LocalServer() as other_port:
        for srv in (elsewhere, other_port):
            srv.route("/secret.html", Response(body=page_html(7)))
        foreign = [elsewhere.url("/secret.html"), other_port.url("/secret.html"),
                   f"http://localhost:{server.port}/docs/page-0.html"]
        ticket = json.loads(next(pending.iterdir()).read_text())
        ticket["ticket_id"] = "20261126T120000beef-00099"
        ticket["urls"] = [{"url": u} for u in foreign] + [
            {"url": server.url("/docs/page-1.html"), "markdown_url": elsewhere.url("/x.md")}]
        (pending / "20261126T120000beef-00099.0.json").write_text(json.dumps(ticket))
        cli(cfg, "work", "docs", "--workers", "1")
        assert elsewhere.requests == [] and other_port.requests == []  # nor the .md twin
    assert not [q for q in server.requests if q.headers.get("host", "").startswith("localhost")]
    idx = read_index(_state(tmp_path))
    assert idx[server.url("/docs/page-1.html")]["outcome"] in ("new", "unchanged_hash")
    for u in foreign:
        assert idx[u]["outcome"] == "skipped:out_of_scope", idx[u]
        assert not idx[u].get("file_path")
    written = sorted(p.name for p in (tmp_path / "out" / "md").rglob("*.md"))
    assert written == ["page-0.md", "page-1.md"], written  # the site's own pages only
    assert json.loads(cli(cfg, "status", "docs", "--json").stdout)["urls_remaining"] == 0


def test_a_site_whose_sitemap_moved_host_is_still_crawled(server, tmp_path):
    """The hosts a prepare queued are the site's (manifest.json): a moved site is crawled."""
    with LocalServer("127.0.0.2") as moved:
        urls = doc_site(moved, 2)
        server.route("/sitemap.xml", Response(301, b"", headers={
            "Location": moved.url("/sitemap.xml")}))
        # 127.0.0.2 stands for the public host the site moved to: the address policy (a
        # loopback address that is not the source's) is not what this test is about
        cfg = write_config(tmp_path, server.url("/sitemap.xml"),
                           allow_networks=["127.0.0.2/32"])
        cli(cfg, "crawl", "docs", "--workers", "1")
        idx = read_index(_state(tmp_path))
        assert [idx[u]["outcome"] for u in urls] == ["new", "new"], idx


# -- #19 workers that die on other machines ------------------------------------------------------

def _crash_elsewhere(cfg: Path, out: Path, machine: str, after: int) -> None:
    """`work` under another machine id (as on another machine), killed -9 mid-ticket."""
    env = {**os.environ, MACHINE_ENV: machine}
    runner = subprocess.Popen([sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                               "work", "--workers", "1"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(journaled(out)) >= after)
    pid = wait_for(lambda: busy_pid(out, set()))
    os.kill(pid, signal.SIGKILL)
    os.kill(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=30)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30)


def _files_outside_tickets(st: Path) -> list[str]:
    return sorted(p.relative_to(st).as_posix() for p in st.rglob("*")
                  if p.is_file() and not p.is_relative_to(st / "tickets"))


def test_workers_dead_on_other_machines_leave_no_files_for_good(server, tmp_path):
    urls = doc_site(server, 40, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"ticket_size": 2})
    out, st = tmp_path / "out", _state(tmp_path)
    cli(cfg, "prepare", "docs")
    counts = []
    for k in range(5):
        _crash_elsewhere(cfg, out, f"machine-{k}", after=len(journaled(out)) + 2)
        assert len(list((st / "journal").iterdir())) >= 1
        cli(cfg, "work", "docs", "--workers", "1")
        cli(cfg, "prepare", "docs")
        counts.append(len(_files_outside_tickets(st)))
    assert sorted(read_index(st)) == sorted(urls)
    assert max(counts) == min(counts), (counts, _files_outside_tickets(st))
    assert os.listdir(st / "workers") == [] and os.listdir(st / "journal") == []


# -- #20 link-frontier crash recovery (F2) -------------------------------------------------------

KILLED_AT_COMMIT = """
import os, signal, sys
from pathlib import Path
from sitemap_crawler import api
from sitemap_crawler.config import load_config
from sitemap_crawler.protocol.frontier import Frontier
# killed -9 right after a fold wrote its intent and the index holding its queued URLs,
# before any of the intent's tickets: the moment F2 exists for
Frontier.commit = lambda self, intent, replay=False: os.kill(os.getpid(), signal.SIGKILL)
config = load_config(Path(sys.argv[1]))
api.work(config.site("docs"), workers=0)
"""


def test_a_fold_killed_before_its_tickets_is_replayed_by_the_next_command(server, tmp_path):
    links = "".join(f'<a href="/p{i}.html">p{i}</a> ' for i in range(4))
    server.route("/", Response(body="<html><body><main><h1>Home</h1><p>" + "Words. " * 30
                               + f"</p>{links}</main></body></html>"))
    for i in range(4):
        server.route(f"/p{i}.html", Response(body=page_html(i)))
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                         content_type="text/plain"))
    cfg = write_config(tmp_path, server.url("/"), follow_links=True)
    cli(cfg, "prepare", "docs")
    r = subprocess.run([sys.executable, "-c", KILLED_AT_COMMIT, str(cfg)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    st = _state(tmp_path)
    assert [p.name for p in (st / "frontier").iterdir() if p.name.startswith("intent-")]
    queued = {u for u, e in read_index(st).items() if e.get("outcome") == "queued"}
    assert queued == {server.url(f"/p{i}.html") for i in range(4)}  # known, no ticket yet
    assert not list((st / "tickets" / "pending").iterdir())
    cli(cfg, "work", "docs", "--workers", "1")
    idx = read_index(st)
    assert [idx[server.url(f"/p{i}.html")]["outcome"] for i in range(4)] == ["new"] * 4
    assert [len(server.hits(f"/p{i}.html")) for i in range(4)] == [1] * 4  # tickets once
    assert not list((st / "frontier").glob("intent-*"))


def test_a_worker_buried_and_pruned_while_paused_claims_nothing_when_it_wakes(server,
                                                                              tmp_path):
    """H5 with H7: its journal was merged and deleted while it was paused, so what it would
    journal now would be lost; it hands back what it claims and stops."""
    urls = doc_site(server, 12, delay=0.1)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    out, st = tmp_path / "out", _state(tmp_path)
    cli(cfg, "prepare", "docs")
    a = popen_cli(cfg, "work", "docs", "--workers", "1")
    try:
        wait_for(lambda: len(journaled(out)) >= 2)
        pid = wait_for(lambda: busy_pid(out, set()))
        os.kill(pid, signal.SIGSTOP)
        try:
            cli(cfg, "work", "docs", "--workers", "1")  # reclaims, finishes, merges
            assert not [p for p in (st / "journal").iterdir() if f"-{pid}-" in p.name]
            for i in range(12):
                server.route(f"/docs/page-{i}.html", Response(body=page_html(i, version=2)))
            cli(cfg, "prepare", "docs", "--full")
        finally:
            os.kill(pid, signal.SIGCONT)
        a.communicate(timeout=120)
    finally:
        if a.poll() is None:
            a.kill()
    cli(cfg, "work", "docs", "--workers", "1")
    idx = read_index(st)
    assert {u: idx[u]["outcome"] for u in urls} == {u: "changed" for u in urls}
