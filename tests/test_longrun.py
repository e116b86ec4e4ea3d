"""Long runs through the real CLI: rotating JSON logs with a run id, the run summary line,
max_duration and max_total_size, SIGHUP reloads (and no orphan workers), the server's Date,
and the crawl report.  Real worker processes, a real 127.0.0.1 server, real signals."""

from __future__ import annotations

import calendar
import email.utils
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from httpserver import LocalServer, Response, fail_then
from sites import cli, doc_site, page_html, popen_cli, read_index, write_config
from waiting import wait_until


def state_dir(out: Path) -> Path:
    return out / ".crawl-state" / "docs"


def log_lines(log: Path) -> list[dict[str, Any]]:
    """Every line of a log and its rotated files, oldest file first; each must be JSON."""
    files = sorted(log.parent.glob(log.name + ".*[0-9]"), key=lambda p: -int(p.suffix[1:]))
    out = []
    for f in [*files, log]:
        for line in f.read_text().splitlines():
            out.append(json.loads(line))  # a torn or interleaved line fails here
    return out


def summary_of(log: Path) -> dict[str, Any]:
    last = json.loads(log.read_text().splitlines()[-1])
    assert last.get("event") == "run_summary", last
    return last


def md_files(out: Path) -> list[Path]:
    return sorted((out / "md").rglob("*.md"))


def children_of(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is ``pid``, from /proc."""
    kids = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.add(int(name))
    return kids


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


# -- logs ------------------------------------------------------------------------------------

def test_log_rotates_across_workers_without_losing_a_line_and_carries_one_run_id(tmp_path):
    with LocalServer() as srv:
        urls = doc_site(srv, 60)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), log_max_size="4KB",
                           log_backups=1000)
        log = tmp_path / "logs" / "crawl.log"
        cli(cfg, "--log-file", str(log), "crawl", "docs", "-w", "3")
    rotated = list(log.parent.glob("crawl.log.*[0-9]"))
    assert len(rotated) >= 5, "4KB files: a 60-page crawl must rotate several times"
    for f in [log, *rotated]:
        assert f.stat().st_size <= 4096, f
    lines = log_lines(log)
    runs = {rec["run"] for rec in lines}
    assert len(runs) == 1, runs
    events = [rec for rec in lines if rec["logger"] == "sitemap_crawler.events"]
    assert sorted(rec["url"] for rec in events) == sorted(urls), "a URL's line went missing"
    parent = summary_of(log)["pid"]
    worker_pids = {rec["pid"] for rec in events}
    assert parent not in worker_pids and len(worker_pids) >= 2, worker_pids
    s = summary_of(log)
    assert (s["urls"], s["new"], s["exit_code"], s["stopped"]) == (60, 60, 0, "")
    assert s["sites"]["docs"]["new"] == 60 and s["bytes"] > 0 and s["written"] > 0


def test_log_keeps_log_backups_files_and_a_new_run_gets_a_new_id(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 30)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), log_max_size="2KB",
                           log_backups=2)
        log = tmp_path / "crawl.log"
        cli(cfg, "--log-file", str(log), "crawl", "docs", "-w", "2")
        first = summary_of(log)["run"]
        cli(cfg, "--log-file", str(log), "crawl", "docs", "-w", "2", "--full")
    assert sorted(p.name for p in tmp_path.glob("crawl.log*") if not p.name.endswith(".lock")) \
        == ["crawl.log", "crawl.log.1", "crawl.log.2"]
    second = summary_of(log)
    assert second["run"] != first and second["urls"] == 30


def test_log_settings_are_global_only(tmp_path):
    cfg = write_config(tmp_path, "http://127.0.0.1:9/sitemap.xml")
    data = yaml.safe_load(cfg.read_text())
    data["sites"][0]["log_backups"] = 3
    cfg.write_text(yaml.safe_dump(data))
    r = cli(cfg, "status", "docs", check=False)
    assert r.returncode == 2 and "log_backups: a global setting" in r.stderr
    assert "Traceback" not in r.stderr


# -- limits ----------------------------------------------------------------------------------

def test_max_duration_stops_cleanly_hands_tickets_back_and_the_next_run_finishes(tmp_path):
    with LocalServer() as srv:
        # 0.6 s a page: with many URLs in flight (dispatch.py) 40 pages still need > 1.5 s
        urls = doc_site(srv, 40, delay=0.6)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), max_duration=1.5)
        log = tmp_path / "crawl.log"
        cli(cfg, "prepare", "docs")
        t0 = time.monotonic()
        r = cli(cfg, "--log-file", str(log), "work", "docs", "-w", "2")  # exit 0: not a failure
        took = time.monotonic() - t0
        assert "stopped: max_duration reached" in r.stdout
        s = summary_of(log)
        assert (s["stopped"], s["exit_code"]) == ("max_duration", 0)
        assert 0 < s["urls"] < 40 and took < 15
        st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
        assert st["tickets"]["claimed"] == 0 and st["urls_remaining"] == 40 - s["urls"]
        assert st["last_crawl"]["stopped"] == "max_duration"
        assert not st["last_crawl"]["interrupted"]
        # no limit in the next run: it takes up exactly what was left
        data = yaml.safe_load(cfg.read_text())
        data["settings"]["max_duration"] = 0
        cfg.write_text(yaml.safe_dump(data))
        r2 = cli(cfg, "--log-file", str(log), "work", "docs", "-w", "2")
        assert "stopped" not in r2.stdout
        assert summary_of(log)["urls"] == 40 - s["urls"]
        assert len(md_files(tmp_path / "out")) == 40
        assert sorted({r.path for r in srv.requests if r.path.startswith("/docs/")}) == \
            sorted(u[len(srv.base):] for u in urls)


def test_max_total_size_per_site_stops_after_the_bytes_written(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 40, delay=0.05)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), max_in_flight=4)
        data = yaml.safe_load(cfg.read_text())
        data["settings"]["max_total_size"] = "1GB"  # the site's own value wins
        data["sites"][0]["max_total_size"] = "10KB"
        cfg.write_text(yaml.safe_dump(data))
        log = tmp_path / "crawl.log"
        r = cli(cfg, "--log-file", str(log), "crawl", "docs", "-w", "2")
    assert "stopped: max_total_size reached" in r.stdout
    s = summary_of(log)
    assert (s["stopped"], s["exit_code"]) == ("max_total_size", 0)
    files = md_files(tmp_path / "out")
    written = sum(f.stat().st_size for f in files)
    page = max(f.stat().st_size for f in files)
    assert s["written"] == written
    # stopped at the first URL that reached it; the URLs in flight then were finished: at
    # most max_in_flight = 4 per worker (dispatch.py)
    assert 10 * 1024 <= written < 10 * 1024 + 2 * 4 * page, (written, page)
    assert len(files) < 40


# -- SIGHUP ----------------------------------------------------------------------------------

def _agents(srv: LocalServer) -> list[str]:
    return [r.headers.get("user-agent", "") for r in list(srv.requests)
            if r.path.startswith("/docs/")]


def test_sighup_reloads_a_good_config_refuses_a_bad_one_and_leaves_no_orphans(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 60, delay=0.1)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), user_agent="agent-one",
                           request_delay=0.05)
        cli(cfg, "prepare", "docs")
        log = tmp_path / "crawl.log"
        p = popen_cli(cfg, "--log-file", str(log), "work", "docs", "-w", "2")
        try:
            wait_until(lambda: len(_agents(srv)) >= 4, what="the first pages")
            workers = wait_until(lambda: (k := children_of(p.pid)) and len(k) >= 2 and k,
                                 what="two worker processes")
            data = yaml.safe_load(cfg.read_text())
            data["settings"]["user_agent"] = "agent-two"
            cfg.write_text(yaml.safe_dump(data))
            p.send_signal(signal.SIGHUP)
            wait_until(lambda: _agents(srv)[-1] == "agent-two", what="the new user agent")
            cfg.write_text("settings: [this is not\n")  # invalid YAML
            p.send_signal(signal.SIGHUP)
            wait_until(lambda: any("config not reloaded" in rec["msg"]
                                   for rec in log_lines(log)), what="the refusal")
            _out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 0, err
        agents = _agents(srv)
        assert agents[0] == "agent-one" and agents[-1] == "agent-two"
        # a URL started before the reload may still go out with the old agent (it can wait
        # its turn at the host gate for a while): at most one per worker; after that, none
        first_new = agents.index("agent-two")
        # (seen: one worker's in-flight URL waited at the gate while the other sent 20+, so
        # "the last N are all new" is not a promise; "one old request per worker" is)
        assert agents[first_new:].count("agent-one") <= 2, "".join(a[-1] for a in agents)
        assert len({r.path for r in srv.requests if r.path.startswith("/docs/")}) == 60
    refusals = [line for line in err.splitlines() if "config not reloaded" in line]
    assert len(refusals) == 1 and "invalid YAML" in refusals[0], err
    assert "Traceback" not in err
    assert not [w for w in workers if alive(w)], "a worker outlived the runner"


def test_a_killed_runner_leaves_no_orphan_workers(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 40, delay=0.3)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"))
        cli(cfg, "prepare", "docs")
        p = popen_cli(cfg, "work", "docs", "-w", "2")
        try:
            wait_until(lambda: len(_agents(srv)) >= 2, what="the first pages")
            workers = wait_until(lambda: (k := children_of(p.pid)) and len(k) >= 2 and k,
                                 what="two worker processes")
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=10)
            wait_until(lambda: not [w for w in workers if alive(w)], timeout=20,
                       what="the orphaned workers to stop")
        finally:
            if p.poll() is None:
                p.kill()
        # they handed their tickets back: the next run finishes the site
        cli(cfg, "work", "docs", "-w", "2")
        assert len(md_files(tmp_path / "out")) == 40


# -- the server's Date -----------------------------------------------------------------------

def _front_matter(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return yaml.safe_load(text[4:text.index("\n---", 4)])


@pytest.mark.parametrize("offset, used", [(-120, True), (3600, False)])
def test_server_date_is_the_crawl_time_when_sane(tmp_path, offset, used):
    server_now = int(time.time()) + offset
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(server_now))
    with LocalServer() as srv:
        # this server's clock is `offset` seconds off ours
        srv.httpd.RequestHandlerClass.date_time_string = (  # type: ignore[method-assign]
            lambda self, timestamp=None: email.utils.formatdate(server_now, usegmt=True))
        doc_site(srv, 3)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), max_clock_skew="15m")
        log = tmp_path / "crawl.log"
        t0 = time.time()
        cli(cfg, "--log-file", str(log), "crawl", "docs", "-w", "1")
        t1 = time.time()
    idx = read_index(state_dir(tmp_path / "out"))
    assert len(idx) == 3
    for entry in idx.values():
        meta = _front_matter(tmp_path / "out" / "md" / entry["file_path"])
        if used:
            assert entry["last_crawled"] == stamp and meta["fetched_at"] == stamp
        else:
            got = calendar.timegm(time.strptime(entry["last_crawled"], "%Y-%m-%dT%H:%M:%SZ"))
            assert int(t0) - 1 <= got <= t1 + 1 and meta["fetched_at"] == entry["last_crawled"]
    warned = [rec for rec in log_lines(log) if "clock is" in rec["msg"]]
    assert len(warned) == (0 if used else 1), warned  # once per host, not per page
    if not used:
        assert re.search(r"clock is \+3[56]\d\d s off", warned[0]["msg"]), warned
        assert warned[0]["level"] == "warning"


# -- the crawl report ------------------------------------------------------------------------

def test_crawl_report_written_at_the_end_and_shown_by_status(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 6, robots="User-agent: *\nDisallow: /docs/private\n")
        extra = {"/docs/slow.html": Response(body=page_html(90), delay=1.5),
                 "/docs/big.html": Response(body=page_html(91) + "<!--" + "x" * 200_000
                                            + "-->"),
                 "/docs/private.html": Response(body=page_html(92)),
                 "/docs/missing.html": Response(404, b"gone", content_type="text/plain")}
        for path, resp in extra.items():
            srv.route(path, resp)
        srv.route("/docs/limited.html", fail_then(
            1, Response(429, b"slow down", headers={"Retry-After": "1"}),
            Response(body=page_html(93))))
        locs = [srv.url(f"/docs/page-{i}.html") for i in range(6)] + \
            [srv.url(p) for p in [*extra, "/docs/limited.html"]]
        srv.route("/sitemap.xml", Response(
            body='<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{u}</loc></url>" for u in locs) + "</urlset>",
            content_type="application/xml"))
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), max_retries=2)
        cli(cfg, "crawl", "docs", "-w", "2")
        state = state_dir(tmp_path / "out")
        rep = json.loads((state / "report.json").read_text())
        md = (state / "report.md").read_text()
        host = srv.base.split("//")[1]
        assert rep["urls"] == 11
        assert rep["outcomes"]["new"] == 9 and rep["outcomes"]["skipped:robots"] == 1
        assert rep["outcomes"]["gone"] == 1
        assert rep["reasons"]["robots"] == 1 and rep["reasons"]["http_404"] == 1
        # the slow page first; the one that waited out a Retry-After of 1 s is listed with
        # that wait (pages in flight beside it wait on the host's block too, dispatch D1)
        slowest = {p["url"][len(srv.base):]: p["seconds"] for p in rep["slowest"]}
        assert rep["slowest"][0]["url"].endswith("/docs/slow.html")
        assert slowest.get("/docs/limited.html", 0) >= 1.0, rep["slowest"]
        assert rep["largest"][0]["url"].endswith("/docs/big.html")
        assert rep["hosts"][host]["blocks"] >= 1 and "http_429" in rep["hosts"][host]["last_block"]
        assert rep["hosts"][host]["robots_disallowed"] == 1
        assert "# Crawl report: docs" in md and "/docs/slow.html" in md and host in md
        # status shows the same, as markdown and as JSON
        assert cli(cfg, "status", "docs", "--report").stdout.strip() == md.strip()
        assert json.loads(cli(cfg, "status", "docs", "--report", "--json").stdout) == rep
        # a re-crawl answered by 304s: the report says what they saved
        cli(cfg, "crawl", "docs", "-w", "2")
        rep2 = json.loads(cli(cfg, "status", "docs", "--report", "--json").stdout)
        assert rep2["conditional"]["not_modified"] == 6
        assert rep2["conditional"]["bytes_saved"] > 6 * 1000
        assert rep2["run"] != rep["run"]


def test_status_report_before_any_crawl_is_one_line(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 2)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"))
        cli(cfg, "prepare", "docs")
        r = cli(cfg, "status", "docs", "--report", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no crawl report yet" in r.stderr
