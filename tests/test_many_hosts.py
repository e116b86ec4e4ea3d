"""Every host busy at once (commands/dispatch.py): many sites and hosts in one run, many
requests in flight per worker, one delay per host across sites, processes and machines.

Each host is a real LocalServer on its own loopback address (127.0.0.2, 127.0.0.3, ...);
the politeness checks read the servers' own logs of when each request arrived."""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from httpserver import LocalServer, Response
from sites import cli, doc_site, page_html, popen_cli, read_index

from sitemap_crawler.protocol.heartbeat import read_heartbeat
from sitemap_crawler.protocol.journal import read_journal
from sitemap_crawler.protocol.state import StateDir

# seconds: the test servers stamp a request when a thread of the pytest process has parsed
# it; with both cores busy those stamps were seen to lag the client's own send stamps
# (Lease.mark_sent, same monotonic clock) by up to 95 ms, while the sends were never closer
# than the delay. A broken gate shows gaps near 0.
TOLERANCE = 0.05


@pytest.fixture
def hosts(request):
    """``hosts(n)`` -> n running servers, one per loopback address."""
    started: list[LocalServer] = []

    def make(n: int) -> list[LocalServer]:
        for _ in range(n):
            srv = LocalServer(host=f"127.0.0.{2 + len(started)}")
            srv.__enter__()
            started.append(srv)
        return started[-n:]

    yield make
    for srv in started:
        srv.__exit__(None, None, None)


def config(tmp: Path, sources: dict[str, str], out: Path | None = None, **settings: Any) -> Path:
    """A config with one site per (name, source)."""
    crawl_state = {"ticket_size": 5, "heartbeat_interval": 0.5, "heartbeat_timeout": 3}
    crawl_state.update(settings.pop("crawl_state", {}))
    cfg = {"settings": {"base_output_dir": str(out or tmp / "out"), "request_delay": 0,
                        "max_retries": 1, "crawl_state": crawl_state, **settings},
           "sites": [{"name": n, "source": src, "base_dir": n} for n, src in sources.items()]}
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def page_times(srv: LocalServer, prefix: str = "/docs/") -> list[float]:
    return sorted(r.t for r in srv.requests if r.path.startswith(prefix))


def min_gap(times: list[float]) -> float:
    return min((b - a for a, b in itertools.pairwise(sorted(times))), default=float("inf"))


def prepare_all(cfg: Path, names: list[str]) -> None:
    for n in names:
        cli(cfg, "prepare", n)


def two_prepared_sites(hosts, tmp_path: Path, *, pages: int,
                       delay: float) -> tuple[LocalServer, LocalServer, Path]:
    """Sites "a" and "b" on two hosts with ``request_delay`` ``delay``, both prepared."""
    a, b = hosts(2)
    doc_site(a, pages)
    doc_site(b, pages)
    cfg = config(tmp_path, {"a": a.url("/sitemap.xml"), "b": b.url("/sitemap.xml")},
                 request_delay=delay)
    prepare_all(cfg, ["a", "b"])
    return a, b, cfg


def test_two_sites_on_two_slow_hosts_take_the_time_of_one(hosts, tmp_path):
    """One worker process, two sites with a 0.4 s delay: they are crawled side by side
    (before: one after the other, the sum of both)."""
    a, b, cfg = two_prepared_sites(hosts, tmp_path, pages=8, delay=0.4)
    r = cli(cfg, "work", "--workers", "1")
    assert "a: 8 URLs" in r.stdout and "b: 8 URLs" in r.stdout, r.stdout
    ta, tb = page_times(a), page_times(b)
    one = ta[-1] - ta[0]
    assert one >= 7 * 0.4 - TOLERANCE  # each host kept its delay ...
    assert min_gap(ta) >= 0.4 - TOLERANCE and min_gap(tb) >= 0.4 - TOLERANCE
    # ... and the two ran at the same time: both sites' pages span about one site's time
    # (one after the other: twice it); the pages' own stamps leave start-up out, which a
    # busy machine stretches
    assert tb[0] < ta[-1] and ta[0] < tb[-1], (ta, tb)
    assert max(ta + tb) - min(ta + tb) < 1.5 * one, (ta, tb)


def test_a_worker_waiting_on_one_hosts_delay_fetches_from_another(hosts, tmp_path):
    """Between two requests to host A (1 s apart) the same single worker process sends
    requests to host B: it does not sleep on A's gate while B has work."""
    a, b, cfg = two_prepared_sites(hosts, tmp_path, pages=4, delay=1.0)
    cli(cfg, "work", "--workers", "1")
    ta, tb = page_times(a), page_times(b)
    assert len(ta) == len(tb) == 4
    # Side by side, both hosts' 4 pages take the 3 delays of one; one after the other (a
    # worker sleeping on A's gate) 7. (Comparing single stamps failed when the two hosts'
    # requests came in the same millisecond, in either order.)
    assert max(ta + tb) - min(ta + tb) < 3 * 1.0 + 1.0, (ta, tb)
    assert min_gap(ta) >= 1.0 - TOLERANCE and min_gap(tb) >= 1.0 - TOLERANCE


def test_robots_txt_does_not_hold_a_thread_through_the_delay_it_starts(hosts, tmp_path):
    """D7: with one fetch thread and three new hosts (delay 1 s), the three robots.txt
    requests go out back to back; the thread does not wait out host A's delay for A's
    first page before it asks B's robots.txt (before: 1 s between them)."""
    servers = hosts(3)
    for srv in servers:
        doc_site(srv, 2)
    cfg = config(tmp_path, {f"s{i}": srv.url("/sitemap.xml") for i, srv in enumerate(servers)},
                 request_delay=1.0, max_in_flight=1)
    prepare_all(cfg, [f"s{i}" for i in range(3)])
    cli(cfg, "work", "--workers", "1")
    robots = sorted(r.t for srv in servers for r in srv.requests if r.path == "/robots.txt")
    pages = [page_times(srv) for srv in servers]
    assert len(robots) == 3 and all(len(t) == 2 for t in pages), (robots, pages)
    assert robots[-1] - robots[0] < 0.6, robots
    for srv, t in zip(servers, pages, strict=True):  # each host still kept its delay
        asked = [r.t for r in srv.requests if r.path in ("/robots.txt", "/sitemap.xml")]
        assert min_gap(asked + t) >= 1.0 - TOLERANCE, (asked, t)


def test_a_host_whose_robots_txt_answered_gets_its_parallel_requests_at_once(hosts, tmp_path):
    """D1: robots.txt's answer proves the host is up, as a page's would, so the first pages
    go out ``max_parallel_per_host`` at once (before: one page alone, the rest once it came
    back: a whole answer's time lost at the start of every host, 0.1 s of S2's 14)."""
    (srv,) = hosts(1)
    doc_site(srv, 8, delay=0.5)
    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")}, max_parallel_per_host=4,
                 crawl_state={"ticket_size": 8})
    prepare_all(cfg, ["docs"])
    cli(cfg, "work", "--workers", "1")
    t = page_times(srv)
    assert len(t) == 8, t
    assert t[3] - t[0] < 0.3, t  # before: 0.5 s (the first page's answer) between them
    assert sum(1 for x in t if x < t[0] + 0.3) == 4, t  # never more than the limit


def two_sites_one_host(srv: LocalServer, n: int) -> None:
    """Sites "a" and "b" on one host: /a/... and /b/..., each with its own sitemap."""
    for part in ("a", "b"):
        urls = [srv.url(f"/{part}/page-{i}.html") for i in range(n)]
        srv.route(f"/{part}/sitemap.xml", Response(
            body='<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                 'sitemap/0.9">' + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
                 + "</urlset>", content_type="application/xml"))
        for i in range(n):
            srv.route(f"/{part}/page-{i}.html", Response(body=page_html(i)))
    srv.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                      content_type="text/plain"))


def test_two_sites_sharing_one_host_keep_one_delay_between_them(hosts, tmp_path):
    """Two `work` commands, one per site, on the same host at once: one gate for the host
    (before: one per site's state directory, so the two sites together broke the delay)."""
    (srv,) = hosts(1)
    two_sites_one_host(srv, 6)
    cfg = config(tmp_path, {"a": srv.url("/a/sitemap.xml"), "b": srv.url("/b/sitemap.xml")},
                 request_delay=0.3)
    prepare_all(cfg, ["a", "b"])
    procs = [popen_cli(cfg, "work", "a", "--workers", "2"),
             popen_cli(cfg, "work", "b", "--workers", "2")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    times = sorted(r.t for r in srv.requests if r.path.endswith(".html"))
    assert len(times) == 12
    assert min_gap(times) >= 0.3 - TOLERANCE, min_gap(times)


def test_sigkill_with_many_requests_in_flight_loses_nothing_and_refetches_only_those(
        hosts, tmp_path):
    """6 hosts, delay 0, slow answers, `crawl-all` with 2 workers with many requests in
    flight each, one killed with SIGKILL: every page written once; a page is fetched a second time
    only if it was in flight at the kill (sent in the last answer time before it)."""
    servers = hosts(6)
    for s in servers:
        doc_site(s, 10, delay=0.3)
    names = [f"h{i}" for i in range(6)]
    cfg = config(tmp_path, {n: s.url("/sitemap.xml") for n, s in zip(names, servers, strict=True)},
                 max_in_flight=16)
    out = tmp_path / "out"
    p = popen_cli(cfg, "crawl-all", "--workers", "2")

    def journaled(wid: str) -> set[str]:
        return {rec["url"] for n in names
                for rec in read_journal(StateDir(out / ".crawl-state" / n).journal
                                        / f"{wid}.jsonl") if rec.get("final")}

    def busy() -> tuple[str, int] | None:
        """A worker that holds tickets and has finished a few URLs."""
        for n in names:
            for f in (StateDir(out / ".crawl-state" / n).workers).glob("*.lock"):
                hb = read_heartbeat(f)
                if hb and hb.get("ticket") and len(journaled(hb["worker_id"])) >= 6:
                    return hb["worker_id"], hb["pid"]
        return None

    deadline = time.monotonic() + 60
    while (got := busy()) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    wid, pid = got
    os.kill(pid, signal.SIGKILL)
    finished = journaled(wid)  # its journals are kept until the end-of-run merge (J2)
    p.communicate(timeout=180)
    cli(cfg, "work", "--workers", "2")  # whatever the killed worker left (if anything)
    hits: Counter[str] = Counter(s.base + r.path for s in servers for r in s.requests
                                 if r.path.startswith("/docs/"))
    assert len(hits) == 60 and max(hits.values()) <= 2, hits.most_common(3)
    again = {u for u, v in hits.items() if v == 2}
    assert finished, "the killed worker had journaled nothing"
    # only what was in flight at the kill comes again: nothing it had finished, and at
    # most max_in_flight URLs of the killed process
    assert not again & finished, again & finished
    assert len(again) <= 16, again
    for n in names:
        idx = read_index(out / ".crawl-state" / n)
        assert len(idx) == 10
        files = [v["file_path"] for v in idx.values()]
        assert len(set(files)) == 10
        assert all((out / n / f).is_file() for f in files)


def test_two_machines_on_twenty_polite_hosts_keep_every_gap(share, hosts, tmp_path):
    """Two "machines" (two mounts of a real share), 2 workers each, 20 sites on 20 hosts
    with a 0.3 s delay: per host, request starts are >= 0.3 s apart, whoever sent them."""
    a, b, _kind = share
    servers = hosts(20)
    for s in servers:
        doc_site(s, 3)
    names = [f"h{i:02d}" for i in range(20)]
    sources = {n: s.url("/sitemap.xml") for n, s in zip(names, servers, strict=True)}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cfg_a = config(tmp_path / "a", sources, out=a / "out", request_delay=0.3)
    cfg_b = config(tmp_path / "b", sources, out=b / "out", request_delay=0.3)
    prepare_all(cfg_a, names)
    procs = [popen_cli(cfg_a, "work", "--workers", "2"), popen_cli(cfg_b, "work", "--workers", "2")]
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        errs.append(err)
    # (a gap 14 ms short was seen twice on SMB, cause not found: what the gates said, if so)
    said = [line for err in errs for line in err.splitlines() if "token" in line]
    for s in servers:
        times = page_times(s)
        assert len(times) == 3, (s.base, times)
        assert min_gap(times) >= 0.3 - TOLERANCE, (s.base, times, said)


def test_discovery_keeps_the_delay_of_the_pages(hosts, tmp_path):
    """prepare's robots.txt, sitemap index and child sitemaps go through the same gate as
    the pages: every request to the host, from `crawl`'s prepare to its last page, starts
    >= request_delay after the one before (before: discovery sent them back to back)."""
    (srv,) = hosts(1)
    urls = doc_site(srv, 6)
    children = []
    for k in range(2):
        part = urls[k * 3:(k + 1) * 3]
        srv.route(f"/sitemap-{k}.xml", Response(
            body='<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
                 'sitemap/0.9">' + "".join(f"<url><loc>{u}</loc></url>" for u in part)
                 + "</urlset>", content_type="application/xml"))
        children.append(srv.url(f"/sitemap-{k}.xml"))
    srv.route("/sitemap.xml", Response(
        body='<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
             'sitemap/0.9">' + "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
             + "</sitemapindex>", content_type="application/xml"))
    cfg = config(tmp_path, {"docs": srv.url("/")}, request_delay=0.3)
    r = cli(cfg, "crawl", "docs")
    assert "docs: 6 URLs" in r.stdout, r.stdout
    paths = [q.path for q in sorted(srv.requests, key=lambda q: q.t)]
    assert {"/robots.txt", "/sitemap.xml", "/sitemap-0.xml", "/sitemap-1.xml"} <= set(paths)
    times = sorted(q.t for q in srv.requests)
    assert min_gap(times) >= 0.3 - TOLERANCE, list(zip(paths, times, strict=True))


def test_robots_txt_is_fetched_once_per_robots_cache_not_once_per_process(hosts, tmp_path):
    """robots.py R6: every worker process and the next crawl use the copy kept beside the
    shared gate while robots_cache lasts (each fetch costs the host a delay slot); with
    robots_cache 0 every process asks again."""
    (srv,) = hosts(1)
    doc_site(srv, 12)

    def robots_hits() -> int:
        return sum(r.path == "/robots.txt" for r in srv.requests)

    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")}, request_delay=0.05)
    cli(cfg, "crawl", "docs", "--workers", "2")
    cli(cfg, "crawl", "docs", "--workers", "2", "--full")
    assert robots_hits() == 1
    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")}, out=tmp_path / "out2",
                 request_delay=0.05, robots_cache=0)
    cli(cfg, "crawl", "docs", "--workers", "2")
    assert robots_hits() >= 2  # fetched again (once per process that needed it)


def test_with_no_delay_prepare_asks_robots_txt_for_the_workers(hosts, tmp_path):
    """With request_delay 0, prepare asks robots.txt beside the sitemap and keeps it (R6):
    the workers start with their pages, not with a robots.txt each (before: none asked by
    prepare, then one or two by the two workers, an answer's time before their first
    page).  With a delay prepare leaves it to the workers (a turn of the gate)."""
    (srv,) = hosts(1)
    doc_site(srv, 8)

    def robots_hits() -> int:
        return sum(r.path == "/robots.txt" for r in srv.requests)

    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")})
    cli(cfg, "prepare", "docs")
    assert robots_hits() == 1
    cli(cfg, "work", "--workers", "2")
    assert robots_hits() == 1 and len(page_times(srv)) == 8
    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")}, out=tmp_path / "out2",
                 request_delay=0.05)
    cli(cfg, "prepare", "docs")
    assert robots_hits() == 1  # a delay: the workers ask it


def test_the_runner_folds_the_journals_while_a_worker_waits_out_its_last_delay(hosts, tmp_path):
    """dispatch D8: once its work is over a worker closes its journals and says so, then
    waits out its last token's delay (G5); the runner writes the index and the report
    meanwhile (before: only after every worker had exited, a delay later: 200 polite
    sites spent ~1 s so at the end of a crawl)."""
    (srv,) = hosts(1)
    doc_site(srv, 2)
    cfg = config(tmp_path, {"docs": srv.url("/sitemap.xml")}, request_delay=2.0)
    prepare_all(cfg, ["docs"])
    state = StateDir(tmp_path / "out" / ".crawl-state" / "docs")
    p = popen_cli(cfg, "work", "--workers", "1")
    lingering = None
    while p.poll() is None:
        if (state.root / "report.json").exists():  # written after the merge
            lingering = os.listdir(state.gate_workers)  # the worker's gate heartbeat
            break
        time.sleep(0.01)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert lingering, "the report came only after the worker had given its tokens back"
    assert os.listdir(state.gate_workers) == []  # and it did, before the command ended
    t = page_times(srv)
    assert len(t) == 2 and min_gap(t) >= 2.0 - TOLERANCE

