"""Fetcher through a real HTTP server: robots, politeness across processes, retries, limits.

Politeness is measured on the SERVER's request log (monotonic arrival times), including with
separate worker processes (multiprocessing spawn) that share one host-gate directory.
"""

from __future__ import annotations

import dataclasses
import email.utils
import gzip
import itertools
import json
import multiprocessing as mp
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from httpserver import LocalServer, Request, Response, fail_then
from waiting import wait_until

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.client import Fetcher, host_key, parse_retry_after
from sitemap_crawler.protocol.hostgate import BLOCK_FILE, HostGate

SPAWN = mp.get_context("spawn")
HTML = "<!doctype html><html><body><p>hello</p></body></html>"
# The gate spaces the moments our request headers have been written (Lease.mark_sent); the
# server stamps arrival in its own thread after parsing, which adds a few ms of scheduling
# noise either way (measured: min 0.298 s for a 0.3 s delay over many runs).
SEND_JITTER = 0.01
LOOPBACK = ("http://127.0.0.1/",)  # a site of ours there: the address policy lets it be reached


def settings(**kw) -> Settings:
    base = dict(request_delay=0.0, max_retries=2, max_backoff=5.0, timeout=5.0,
                connect_timeout=5.0, patience=0)
    base.update(kw)
    return dataclasses.replace(Settings(), **base)


def make(tmp_path: Path, s: Settings, wid: str = "w1", stop: threading.Event | None = None,
         **kw) -> Fetcher:
    gate = HostGate(tmp_path / "hosts", wid, lambda w: False)
    kw.setdefault("backoff_base", 0.05)
    kw.setdefault("sources", LOOPBACK)
    return Fetcher(s, gate=gate, stop=stop or threading.Event(), **kw)


def gaps(reqs: list[Request]) -> list[float]:
    ts = sorted(r.t for r in reqs)
    return [b - a for a, b in itertools.pairwise(ts)]


@pytest.fixture
def fetcher(tmp_path):
    f = make(tmp_path, settings())
    yield f
    f.close()


# -- basics --------------------------------------------------------------------------------


def test_ok_page_with_headers_and_validators(server, fetcher):
    server.route("/p", Response(body=HTML, etag=True, last_modified=1_700_000_000))
    r = fetcher.fetch(server.url("/p"))
    assert (r.outcome, r.reason, r.status) == ("ok", None, 200)
    assert r.body == HTML.encode() and r.content_type == "text/html"
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.etag and r.etag.startswith('"')
    assert r.last_modified == email.utils.formatdate(1_700_000_000, usegmt=True)
    assert r.attempts == 1 and r.redirects == [] and r.final_url == r.url
    assert r.bytes_received == len(HTML) and r.elapsed > 0
    assert server.hits("/p")[0].headers["user-agent"] == Settings().user_agent


def test_conditional_get_not_modified(server, fetcher):
    server.route("/e", Response(body=HTML, etag=True))
    server.route("/m", Response(body=HTML, last_modified=1_700_000_000))
    first = fetcher.fetch(server.url("/e"))
    again = fetcher.fetch(server.url("/e"), etag=first.etag)
    assert (again.outcome, again.status, again.body) == ("not_modified", 304, b"")
    assert again.etag == first.etag
    assert server.hits("/e")[1].headers["if-none-match"] == first.etag
    lm = fetcher.fetch(server.url("/m")).last_modified
    assert lm
    r = fetcher.fetch(server.url("/m"), last_modified=lm)
    assert r.outcome == "not_modified" and r.last_modified == lm
    assert server.hits("/m")[1].headers["if-modified-since"] == lm
    changed = fetcher.fetch(server.url("/e"), etag='"stale"')
    assert changed.outcome == "ok" and changed.body == HTML.encode()


def test_content_types(server, fetcher):
    server.route("/doc.md", Response(body="# Title\n", content_type="text/markdown"))
    server.route("/notes.txt", Response(body="plain", content_type="text/plain; charset=utf-8"))
    server.route("/x.xhtml", Response(body=HTML, content_type="application/xhtml+xml"))
    server.route("/f.pdf", Response(body=b"%PDF" + b"x" * 300_000,
                                    content_type="application/pdf"))
    server.route("/untyped", Response(body=HTML, content_type=None))
    server.route("/blob", Response(body=b"\x00\x01binary", content_type=None))
    assert fetcher.fetch(server.url("/doc.md")).content_type == "text/markdown"
    assert fetcher.fetch(server.url("/notes.txt")).content_type == "text/plain"
    assert fetcher.fetch(server.url("/x.xhtml")).outcome == "ok"
    pdf = fetcher.fetch(server.url("/f.pdf"))
    assert (pdf.outcome, pdf.reason, pdf.body) == ("skipped", "content_type:application/pdf",
                                                   b"")
    assert pdf.bytes_received < 300_000  # the body was not read
    sniffed = fetcher.fetch(server.url("/untyped"))
    assert (sniffed.outcome, sniffed.content_type) == ("ok", "text/html")
    assert fetcher.fetch(server.url("/blob")).reason == "content_type:application/octet-stream"
    assert fetcher.fetch(server.url("/doc.md")).outcome == "ok"  # the connection still works


def test_size_cap_on_chunked_body_without_length(server, tmp_path):
    huge = b"<html>" + b"x" * (8 * 1024 * 1024)
    server.route("/huge", Response(body=huge, chunks=128))
    server.route("/big", Response(body=b"<html>" + b"y" * 300_000))
    server.route("/p", Response(body=HTML))
    with make(tmp_path, settings(max_file_size=256 * 1024)) as f:
        r = f.fetch(server.url("/huge"))
        assert "content-length" not in r.headers
        assert (r.outcome, r.reason, r.body) == ("skipped", "too_large", b"")
        assert 256 * 1024 < r.bytes_received < 2 * 1024 * 1024  # stopped early
        big = f.fetch(server.url("/big"))  # Content-Length says too much: nothing is read
        assert (big.outcome, big.reason, big.bytes_received) == ("skipped", "too_large", 0)
        assert f.fetch(server.url("/p")).outcome == "ok"  # the client recovered


def test_no_retry_on_404_410_403(server, fetcher):
    server.route("/gone", Response(410, body="gone"))
    server.route("/secret", Response(403, body="no"))
    r = fetcher.fetch(server.url("/missing"))
    assert (r.outcome, r.reason, r.status, r.attempts) == ("permanent", "http_404", 404, 1)
    assert fetcher.fetch(server.url("/gone")).reason == "http_410"
    assert fetcher.fetch(server.url("/secret")).outcome == "permanent"
    assert len(server.hits("/missing")) == len(server.hits("/gone")) == 1


def test_bad_urls_and_unsendable_requests_are_permanent(server, tmp_path):
    server.route("/p", Response(body=HTML))
    with make(tmp_path, settings(patience=1)) as f:
        assert (f.fetch("ftp://127.0.0.1/x").outcome, f.fetch("ftp://x/").reason) == (
            "permanent", "bad_url")
        assert f.fetch("http:///nohost").reason == "bad_url"
        r = f.fetch(server.url("/p"), etag='"a"\r\nX-Injected: 1')  # h11 refuses to send it
        assert (r.outcome, r.reason, r.status, r.attempts) == ("permanent", "bad_request", 0, 1)
        assert f.gate.failures(host_key(server.base)) == 0  # not the host's fault
        assert f.fetch(server.url("/p")).outcome == "ok"
    assert len(server.hits("/p")) == 1


# -- redirects -----------------------------------------------------------------------------


def test_redirects_within_host_are_followed_and_recorded(server, fetcher):
    server.route("/a", Response(301, headers={"Location": "/b"}))
    server.route("/b", Response(302, headers={"Location": server.url("/c#frag")}))
    server.route("/c", Response(body=HTML))
    r = fetcher.fetch(server.url("/a"))
    assert r.outcome == "ok" and r.final_url == server.url("/c")
    assert r.redirects == [server.url("/b"), server.url("/c")]
    assert r.attempts == 3


def test_offsite_redirect_is_skipped_without_request(server, tmp_path):
    other = f"http://localhost:{server.port}/elsewhere"  # another host name, same server
    server.route("/out", Response(301, headers={"Location": other}))
    server.route("/elsewhere", Response(body=HTML))
    with make(tmp_path, settings()) as f:
        r = f.fetch(server.url("/out"))
        assert (r.outcome, r.reason) == ("skipped", "redirect_offsite")
        assert r.redirects == [other] and r.final_url == other
        assert server.hits("/elsewhere") == []
    with make(tmp_path, settings(), allowed_hosts={"127.0.0.1", "localhost"}) as f:
        assert f.fetch(server.url("/out")).outcome == "ok"


def test_redirect_loop_and_too_many(server, tmp_path):
    server.route("/l1", Response(302, headers={"Location": "/l2"}))
    server.route("/l2", Response(302, headers={"Location": "/l1"}))
    for i in range(6):
        server.route(f"/c{i}", Response(302, headers={"Location": f"/c{i + 1}"}))
    server.route("/c6", Response(body=HTML))
    with make(tmp_path, settings(max_redirects=3)) as f:
        loop = f.fetch(server.url("/l1"))
        assert (loop.outcome, loop.reason) == ("permanent", "redirect_loop")
        assert loop.redirects == [server.url("/l2"), server.url("/l1")]
        chain = f.fetch(server.url("/c0"))
        assert (chain.outcome, chain.reason) == ("permanent", "too_many_redirects")
        assert server.hits("/c4") == []


# -- robots.txt ----------------------------------------------------------------------------


def test_robots_disallow_skips_without_request(server, fetcher):
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /private\n"))
    server.route("/private/x", Response(body=HTML))
    r = fetcher.fetch(server.url("/private/x"))
    assert (r.outcome, r.reason, r.attempts, r.status) == ("skipped", "robots", 0, 0)
    assert server.hits("/private/x") == []
    assert fetcher.fetch(server.url("/public")).reason == "http_404"  # allowed, fetched


def test_robots_ignored_when_configured(server, tmp_path):
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /\n"))
    server.route("/p", Response(body=HTML))
    with make(tmp_path, settings(respect_robots_txt=False)) as f:
        assert f.fetch(server.url("/p")).outcome == "ok"
    assert server.hits("/robots.txt") == []


def test_robots_crawl_delay_spaces_requests(server, fetcher):
    server.route("/robots.txt", Response(body="User-agent: *\nCrawl-delay: 0.3\n"))
    for i in range(4):
        server.route(f"/p{i}", Response(body=HTML))
    for i in range(4):
        assert fetcher.fetch(server.url(f"/p{i}")).outcome == "ok"
    g = gaps(server.requests)  # robots.txt and the four pages
    assert len(g) == 4 and min(g) >= 0.3 - SEND_JITTER, g


def test_robots_unavailable_is_retryable_not_skipped(server, tmp_path):
    server.route("/robots.txt", Response(503, body="down"))
    server.route("/p", Response(body=HTML))
    with make(tmp_path, settings(max_retries=1)) as f:
        r = f.fetch(server.url("/p"))
        assert (r.outcome, r.reason, r.attempts) == ("retryable", "robots_unavailable", 0)
        assert server.hits("/p") == []
        assert len(server.hits("/robots.txt")) == 2  # tried again on the retry
        server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n"))
        assert f.fetch(server.url("/p")).outcome == "ok"


# -- retries, blocks, patience ---------------------------------------------------------------


def test_retries_on_503_then_success(server, tmp_path):
    server.route("/flaky", fail_then(2, Response(503, body="busy"), Response(body=HTML)))
    with make(tmp_path, settings(max_retries=3)) as f:
        r = f.fetch(server.url("/flaky"))
    assert (r.outcome, r.status, r.attempts) == ("ok", 200, 3)
    assert len(server.hits("/flaky")) == 3


def test_retries_exhausted_and_repeated_5xx_blocks_host(server, tmp_path):
    server.route("/down", Response(502, body="bad gateway"))
    with make(tmp_path, settings(max_retries=2)) as f:
        r = f.fetch(server.url("/down"))
        assert (r.outcome, r.reason, r.status, r.attempts) == ("retryable", "http_502", 502, 3)
        block = json.loads((f.gate.host_dir(host_key(server.base)) / BLOCK_FILE).read_text())
    assert block["reason"] == "http_502" and block["seq"] >= 1
    assert block["consecutive_failures"] == 1


def test_network_errors_are_retried(tmp_path):
    with LocalServer() as srv:
        url = srv.url("/p")
    # the server is gone: connection refused on every attempt
    with make(tmp_path, settings(max_retries=2, respect_robots_txt=False)) as f:
        r = f.fetch(url)
    assert (r.outcome, r.reason, r.status, r.attempts) == ("retryable", "connect_error", 0, 3)


def test_timeout(server, tmp_path):
    server.route("/slow", Response(body=HTML, delay=1.0))
    with make(tmp_path, settings(timeout=0.3, max_retries=0)) as f:
        t = time.monotonic()
        r = f.fetch(server.url("/slow"))
        assert (r.outcome, r.reason, r.status) == ("retryable", "timeout", 0)
        assert time.monotonic() - t < 0.9


def test_429_retry_after_seconds_blocks_the_host_for_everyone(server, tmp_path):
    server.route("/limited", fail_then(1, Response(429, headers={"Retry-After": "1"}),
                                       Response(body=HTML)))
    server.route("/other", Response(body=HTML))
    a = make(tmp_path, settings(), wid="a")
    b = make(tmp_path, settings(), wid="b")
    results = {}
    th = threading.Thread(target=lambda: results.update(a=a.fetch(server.url("/limited"))))
    th.start()
    wait_until(lambda: HostGate(tmp_path / "hosts", "probe", lambda w: False).block_reason(
        host_key(server.base)) == "http_429", 30, what="worker a to block the host")
    observer = HostGate(tmp_path / "hosts", "observer", lambda w: False)
    assert observer.blocked_for(host_key(server.base)) > 0.7
    assert observer.block_reason(host_key(server.base)) == "http_429"
    assert b.fetch(server.url("/other")).outcome == "ok"  # worker b waited for the block
    th.join()
    assert results["a"].outcome == "ok" and results["a"].attempts == 2
    t429, t_retry = (r.t for r in server.hits("/limited"))
    assert t_retry - t429 >= 1.0
    assert server.hits("/other")[0].t - t429 >= 1.0
    a.close()
    b.close()


def test_429_retry_after_http_date(server, fetcher):
    def handler(req: Request) -> Response:
        if len(server.hits("/d")) == 1:
            when = email.utils.formatdate(time.time() + 2, usegmt=True)
            return Response(429, headers={"Retry-After": when})
        return Response(body=HTML)

    server.route("/d", handler)
    r = fetcher.fetch(server.url("/d"))
    assert r.outcome == "ok"
    first, retry = (q.t for q in server.hits("/d"))
    assert 0.9 <= retry - first <= 2.6  # whole-second dates: between 1 and 2 s


def test_retry_after_date_is_relative_to_the_servers_date():
    date = "Sat, 01 Jan 2000 00:00:00 GMT"  # the server's clock is 26 years behind ours
    assert parse_retry_after("Sat, 01 Jan 2000 00:00:30 GMT", date) == 30.0
    assert parse_retry_after("120", date) == 120.0
    assert parse_retry_after("Fri, 31 Dec 1999 23:59:00 GMT", date) == 0.0
    assert parse_retry_after("soon", date) is None and parse_retry_after(None) is None
    # without a Date header our own clock is the only reference
    assert parse_retry_after("Sat, 01 Jan 2000 00:00:30 GMT") == 0.0


def test_backoff_is_capped(server, tmp_path):
    server.route("/cap", fail_then(2, Response(503, headers={"Retry-After": "3600"}),
                                   Response(body=HTML)))
    with make(tmp_path, settings(max_backoff=0.3, max_retries=3)) as f:
        t = time.monotonic()
        r = f.fetch(server.url("/cap"))
    assert r.outcome == "ok" and r.attempts == 3
    assert 0.6 <= time.monotonic() - t < 2.0
    g = gaps(server.hits("/cap"))
    assert all(0.3 <= x < 0.8 for x in g), g


def test_patience_gives_up_on_host_for_all_workers(server, tmp_path):
    server.route("/broken", Response(500, body="oops"))
    s = settings(patience=2, max_retries=1, max_backoff=5.0)
    a, b = make(tmp_path, s, wid="a"), make(tmp_path, s, wid="b")
    assert a.fetch(server.url("/broken")).reason == "http_500"
    assert b.fetch(server.url("/broken?2")).reason == "http_500"  # second URL in a row
    sent = len(server.requests)
    time.sleep(0.55)  # worker a reads the shared block file at most every 0.5 s
    for f in (a, b):
        r = f.fetch(server.url("/fine"))
        assert (r.outcome, r.reason, r.attempts) == ("retryable", "host_gave_up", 0)
    assert len(server.requests) == sent  # no request at all
    a.close()
    b.close()


def test_success_resets_patience(server, tmp_path):
    server.route("/broken", Response(500))
    server.route("/fine", Response(body=HTML))
    with make(tmp_path, settings(patience=2, max_retries=0)) as f:
        assert f.fetch(server.url("/broken")).outcome == "retryable"
        assert f.fetch(server.url("/fine")).outcome == "ok"
        assert f.gate.failures(host_key(server.base)) == 0
        assert f.fetch(server.url("/broken")).reason == "http_500"
        assert f.fetch(server.url("/fine")).outcome == "ok"  # never reached patience


# -- stop --------------------------------------------------------------------------------------


def test_stop_interrupts_a_long_backoff(server, tmp_path):
    server.route("/wait", Response(429, headers={"Retry-After": "600"}))
    stop = threading.Event()
    with make(tmp_path, settings(max_backoff=600), stop=stop) as f:
        threading.Timer(0.3, stop.set).start()
        t = time.monotonic()
        r = f.fetch(server.url("/wait"))
        took = time.monotonic() - t
    assert (r.outcome, r.reason) == ("interrupted", "stopped")
    assert took < 1.0
    assert len(server.hits("/wait")) == 1


def test_stop_interrupts_waiting_for_a_blocked_host(server, tmp_path):
    server.route("/p", Response(body=HTML))
    stop = threading.Event()
    with make(tmp_path, settings(), stop=stop) as f:
        f.gate.block(host_key(server.base), 300, "http_429")  # as if another worker did
        threading.Timer(0.3, stop.set).start()
        t = time.monotonic()
        assert f.fetch(server.url("/p")).outcome == "interrupted"
        assert time.monotonic() - t < 1.0
    assert server.hits("/p") == []


# -- separate worker processes sharing one gate directory ---------------------------------------


def _worker(base: str, paths: list[str], root: str, wid: str, kw: dict, out: str, go) -> None:
    stop = threading.Event()
    gate = HostGate(Path(root), wid, lambda w: False)
    with Fetcher(settings(**kw), gate=gate, stop=stop, sources=LOOPBACK) as f:
        Path(out + ".ready").touch()
        go.wait(60)
        outcomes = [f.fetch(base + p).outcome for p in paths]
    Path(out).write_text(json.dumps(outcomes))


def _run_workers(server: LocalServer, tmp_path: Path, n: int, per: int, kw: dict) -> None:
    go = SPAWN.Event()
    procs = []
    for i in range(n):
        paths = [f"/w{i}/p{j}" for j in range(per)]
        p = SPAWN.Process(target=_worker, args=(server.base, paths, str(tmp_path / "hosts"),
                                                f"proc{i}", kw, str(tmp_path / f"{i}.json"), go))
        p.start()
        procs.append(p)
    wait_until(lambda: all((tmp_path / f"{i}.json.ready").exists() for i in range(n)), 60,
               what="every process to import and wait at the start line")
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    for i in range(n):
        assert json.loads((tmp_path / f"{i}.json").read_text()) == ["ok"] * per


def test_delay_respected_across_worker_processes(server, tmp_path):
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n"))
    for i in range(2):
        for j in range(4):
            server.route(f"/w{i}/p{j}", Response(body=HTML))
    _run_workers(server, tmp_path, 2, 4, {"request_delay": 0.3})
    pages = [r for r in server.requests if r.path.startswith("/w")]
    assert {r.path[:3] for r in pages} == {"/w0", "/w1"}
    g = gaps(server.requests)  # every request, robots.txt included
    assert len(g) == 9 and min(g) >= 0.3 - SEND_JITTER, g
    print(f"2 processes, delay 0.3 s: server-side gaps min {min(g):.4f} max {max(g):.4f}")


def test_parallel_limit_across_worker_processes(server, tmp_path):
    lock = threading.Lock()
    inflight = {"now": 0, "max": 0}

    def slow(req: Request) -> Response:
        with lock:
            inflight["now"] += 1
            inflight["max"] = max(inflight["max"], inflight["now"])
        time.sleep(0.25)
        with lock:
            inflight["now"] -= 1
        return Response(body=HTML)

    for i in range(4):
        for j in range(3):
            server.route(f"/w{i}/p{j}", slow)
    t = time.monotonic()
    _run_workers(server, tmp_path, 4, 3, {"request_delay": 0.0, "max_parallel_per_host": 2})
    assert inflight["max"] == 2  # never more than 2 at once, and the limit was reached
    took = time.monotonic() - t
    assert took >= 12 * 0.25 / 2
    print(f"4 processes, 12 requests of 0.25 s, max 2 at once: {took:.2f}s")


# -- Content-Encoding: decoded in bounded steps (decoding.py) ----------------------------------

FETCH_MEASURE = """
import json, sys, threading, time
from pathlib import Path
from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.client import Fetcher
from sitemap_crawler.protocol.hostgate import HostGate
s = Settings(request_delay=0.0, max_retries=0, timeout=30.0, max_file_size=1 << 20)
gate = HostGate(Path(sys.argv[2]), "m", lambda w: False)
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key))
with Fetcher(s, gate=gate, stop=threading.Event(), sources=("http://127.0.0.1/",)) as f:
    f.fetch(sys.argv[1].rsplit("/", 1)[0] + "/warm-up")  # robots.txt and lazy imports first
    # Peak RSS from VmHWM, reset first ("5" > clear_refs): ru_maxrss missed a 1 GiB peak.
    with open("/proc/self/clear_refs", "w") as c:
        c.write("5")
    before = status("VmRSS:")
    t = time.perf_counter()
    r = f.fetch(sys.argv[1])
print(json.dumps({"grew_mb": (status("VmHWM:") - before) / 1024,
                  "seconds": time.perf_counter() - t, "outcome": r.outcome, "reason": r.reason,
                  "received": r.bytes_received}))
"""


def measure_fetch(url: str, tmp_path: Path) -> dict:
    """Fetcher.fetch(url) in a fresh interpreter (max_file_size 1 MiB): peak RSS growth."""
    out = subprocess.run([sys.executable, "-c", FETCH_MEASURE, url, str(tmp_path / "hosts")],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def zeros_bomb(coding: str) -> bytes:
    """1 GiB of zeros as gzip (~1 MiB) or brotli (~1.6 KiB)."""
    if coding == "br":
        import brotli  # the test extra has it; imported here so other tests run without it

        return brotli.compress(bytes(1 << 30), quality=5)
    c = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)
    block = bytes(1 << 20)
    return b"".join(c.compress(block) for _ in range(1024)) + c.flush()


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_compressed_bomb_page_is_cut_at_max_file_size_in_bounded_memory(server, tmp_path,
                                                                        coding):
    from sitemap_crawler.fetch.decoding import ACCEPT_ENCODING

    assert coding in ACCEPT_ENCODING  # brotli >= 1.1 comes with the test extra
    bomb = zeros_bomb(coding)
    server.route("/bomb", Response(body=bomb, headers={"Content-Encoding": coding}))
    server.route("/warm-up", Response(body=HTML))
    r = measure_fetch(server.url("/bomb"), tmp_path)
    assert (r["outcome"], r["reason"]) == ("skipped", "too_large"), r
    # httpx's own decoder makes the whole GiB in one call for brotli (34 MB per chunk for gzip)
    assert r["grew_mb"] < 30 and r["seconds"] < 10, r
    assert r["received"] <= len(bomb)


def test_robots_txt_bomb_is_read_only_up_to_its_cap(server, tmp_path):
    server.route("/robots.txt", Response(body=zeros_bomb("br"),
                                         headers={"Content-Encoding": "br"}))
    server.route("/warm-up", Response(body=HTML))
    server.route("/p", Response(body=HTML))
    r = measure_fetch(server.url("/p"), tmp_path)  # robots.txt is read by the warm-up
    assert r["outcome"] == "ok", r
    assert r["grew_mb"] < 30, r


def test_content_encodings_decoded_or_refused_in_one_line(server, fetcher):
    page = (HTML * 50).encode()
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    server.route("/gz", Response(body=gzip.compress(page), headers={"Content-Encoding": "gzip"}))
    server.route("/zlib", Response(body=zlib.compress(page),
                                   headers={"Content-Encoding": "deflate"}))
    server.route("/raw", Response(body=raw_deflate.compress(page) + raw_deflate.flush(),
                                  headers={"Content-Encoding": "deflate"}))
    server.route("/twice", Response(body=gzip.compress(gzip.compress(page)),
                                    headers={"Content-Encoding": "gzip, gzip"}))
    server.route("/liar", Response(body=page, headers={"Content-Encoding": "gzip"}))
    server.route("/zstd", Response(body=b"(\xb5/\xfd" + bytes(40),
                                   headers={"Content-Encoding": "zstd"}))
    server.route("/corrupt", Response(body=gzip.compress(page)[:40] + b"\xff" * 200,
                                      headers={"Content-Encoding": "gzip"}))
    for path in ("/gz", "/zlib", "/raw", "/twice", "/liar"):
        r = fetcher.fetch(server.url(path))
        assert (r.outcome, r.body) == ("ok", page), path
    assert server.requests[-1].headers["accept-encoding"].startswith("gzip, deflate")
    z = fetcher.fetch(server.url("/zstd"))  # never asked for: refused, not guessed at
    assert (z.outcome, z.reason) == ("skipped", "content_encoding:zstd")
    bad = fetcher.fetch(server.url("/corrupt"))
    assert bad.outcome == "retryable" and bad.reason == "decoding_error", bad
    assert fetcher.fetch(server.url("/gz")).outcome == "ok"  # the client recovered
