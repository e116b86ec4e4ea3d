"""Pages that need JavaScript (fetch/browser.py): a real headless Chromium on a loopback site.

The site has a plain page and two empty shells whose text only JavaScript writes: one with an
inline script, one with an external app.js (which also adds a link and asks a third-party
host for a script and an image, which must never be asked).  Skipped when no Chromium or no
Playwright is installed, unless SITEMAP_CRAWLER_REQUIRE_BROWSER is set (CI installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from httpserver import LocalServer, Response, fail_then
from sites import cli, popen_cli, read_index, write_config
from waiting import wait_until

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.browser import CHROMIUM_NAMES, Browser, shell_reason
from sitemap_crawler.fetch.client import Fetcher
from sitemap_crawler.protocol.hostgate import HostGate

CHROMIUM = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
try:
    import playwright.sync_api  # noqa: F401
    HAVE_PLAYWRIGHT = True
except ImportError:
    HAVE_PLAYWRIGHT = False
# CI installs both and sets SITEMAP_CRAWLER_REQUIRE_BROWSER=1: then these tests run (and fail
# when something is missing) instead of being skipped.
needs_browser = pytest.mark.skipif(
    (CHROMIUM is None or not HAVE_PLAYWRIGHT)
    and not os.environ.get("SITEMAP_CRAWLER_REQUIRE_BROWSER"),
    reason="needs Chromium and Playwright (apt-get install chromium; "
           "pip install 'sitemap-crawler[browser]')")

PLAIN_TEXT = "This plain page was written by the server and needs no script at all. " * 3
INLINE_TEXT = "Inline script wrote this paragraph about configuring the widget frobnicator. "
APP_TEXT = "The external app.js rendered this guide to the quantum flux capacitor settings. "

PLAIN = f"""<!doctype html><html><head><title>Plain page</title></head><body><main>
<h1>Plain page</h1><p>{PLAIN_TEXT}</p><script>var x = 1;</script></main></body></html>"""

SHELL_INLINE = f"""<!doctype html><html><head><title>Inline shell</title></head><body>
<div id="root"></div>
<script>
document.getElementById('root').innerHTML =
  '<main><h1>Inline shell</h1><p>' + {json.dumps(INLINE_TEXT * 3)} + '</p></main>';
</script></body></html>"""

SHELL_APP = """<!doctype html><html><head><title>App shell</title>
<script src="{third}/tracker.js"></script></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript>
<div id="app"></div><img src="{third}/pixel.png">
<script src="/app.js"></script></body></html>"""

APP_JS = f"""
var el = document.getElementById('app');
el.innerHTML = '<main><h1>App shell</h1><p>' + {json.dumps(APP_TEXT * 3)} + '</p>' +
  '<p><a href="/from-js.html">A page only the script links to</a></p></main>';
"""


def serve_site(srv: LocalServer, third: str, *, app_delay: float = 0.0,
               robots: str = "User-agent: *\nAllow: /\n", shells: int = 0) -> dict[str, str]:
    """The plain page, the two shells, and ``shells`` more like the app.js one (each asking
    for app.js?p=<i>, so no browser cache spares a request)."""
    paths = {"plain": "/plain.html", "inline": "/shell-inline.html", "app": "/shell-app.html"}
    paths.update({f"shell-{i}": f"/shell-{i}.html" for i in range(shells)})
    urls = {k: srv.url(p) for k, p in paths.items()}

    def sitemap(keys: list[str]) -> Response:
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.'
                'org/schemas/sitemap/0.9">' + "".join(f"<url><loc>{urls[k]}</loc></url>"
                                                      for k in keys) + "</urlset>")
        return Response(body=body, content_type="application/xml")

    srv.route("/robots.txt", Response(body=robots, content_type="text/plain"))
    srv.route("/sitemap.xml", sitemap(list(paths)))
    for i in range(shells):
        body = SHELL_APP.format(third=third).replace("/app.js", f"/app.js?p={i}")
        srv.route(f"/shell-{i}.html", Response(body=body.replace("App shell", f"Shell {i}")))
    srv.route("/sitemap-plain.xml", sitemap(["plain"]))
    srv.route("/sitemap-app.xml", sitemap(["app"]))
    srv.route("/plain.html", Response(body=PLAIN, etag=True))
    srv.route("/shell-inline.html", Response(body=SHELL_INLINE, etag=True))
    srv.route("/shell-app.html", Response(body=SHELL_APP.format(third=third), etag=True))
    srv.route("/app.js", Response(body=APP_JS, content_type="application/javascript",
                                  delay=app_delay))
    srv.route("/from-js.html", Response(body=PLAIN.replace("Plain page", "From JS")))
    return urls


@pytest.fixture
def third():
    """Another host (localhost, another port): the site's pages point at it; nothing of the
    browser's may reach it."""
    with LocalServer() as srv:
        srv.base = f"http://localhost:{srv.port}"
        yield srv


def pages(out: Path) -> dict[str, tuple[dict, str]]:
    """url -> (front matter, body) of every markdown file written."""
    found = {}
    for p in (out / "md").rglob("*.md"):
        text = p.read_text()
        end = text.index("\n---", 4)
        meta = yaml.safe_load(text[4:end])
        found[meta["url"]] = (meta, text[end + 4:])
    return found


def index(out: Path) -> dict[str, dict]:
    return read_index(out / ".crawl-state" / "docs")


def subdir(tmp: Path, name: str) -> Path:
    (tmp / name).mkdir()
    return tmp / name


def launch_logger(tmp: Path) -> tuple[Path, Path]:
    """An executable_path that logs each browser start to a file, then runs Chromium."""
    log = tmp / "launches.log"
    exe = tmp / "logged-chromium"
    exe.write_text(f"#!/bin/sh\necho $$ >> {log}\nexec {CHROMIUM} \"$@\"\n")
    exe.chmod(0o755)
    return exe, log


def launches(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


# -- no browser needed ----------------------------------------------------------------------

def test_shell_reason_tells_shells_from_pages():
    assert shell_reason(PLAIN) is None
    assert "empty #root" in shell_reason(SHELL_INLINE)
    why = shell_reason(SHELL_APP.format(third="http://x"))
    assert "empty #app" in why and "noscript" in why and "0 chars" in why
    assert shell_reason("<html><body><p>short</p></body></html>") is None  # no script
    next_js = ('<html><body><div id="__next"></div><script src="/_next/main.js"></script>'
               f'<footer>{"Footer text. " * 30}</footer></body></html>')
    assert shell_reason(next_js) == "shell: empty #__next"


def test_render_http_warns_that_a_page_looks_like_a_shell(tmp_path, third):
    with LocalServer() as srv:
        urls = serve_site(srv, third.base)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"))
        r = cli(cfg, "crawl", "docs", "--workers", "1")
        shells = [line for line in r.stderr.splitlines() if "JavaScript shell" in line]
        # a warning for the host's first shell, the others at info level
        warned = [line for line in shells if line.startswith("warning:")]
        assert len(warned) == 1 and "render: auto" in warned[0], r.stderr
        assert {u for u in urls.values() if any(u in line for line in shells)} == {
            urls["inline"], urls["app"]}, r.stderr
        assert not srv.hits("/app.js") and not third.requests  # no browser ran
        written = pages(tmp_path / "out")
        assert set(written) == {urls["plain"]}  # the shells are too short without a browser


def test_no_chromium_is_a_one_line_error_naming_the_install_command(tmp_path, third):
    with LocalServer() as srv:
        serve_site(srv, third.base)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="auto")
        bare = tmp_path / "bin"  # a PATH without any Chromium
        bare.mkdir()
        r = subprocess.run([sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                            "crawl", "docs"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PATH": str(bare)})
        err = r.stderr.strip().splitlines()[-1]
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert "apt-get install chromium" in err and "render: auto" in err, r.stderr
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="browser",
                           browser={"executable_path": str(tmp_path / "no-such-chromium")})
        r = cli(cfg, "work", check=False)
        err = r.stderr.strip()
        assert r.returncode == 1 and "Traceback" not in err and len(err.splitlines()) == 1, err
        assert "no-such-chromium" in err and "apt-get install chromium" in err, err
        assert srv.requests == [] or all(q.path.endswith(".xml") or q.path == "/robots.txt"
                                         for q in srv.requests)  # no page was fetched


@needs_browser
def test_a_chromium_that_cannot_start_is_a_one_line_error(tmp_path, third):
    broken = tmp_path / "broken-chromium"
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    broken.chmod(0o755)
    with LocalServer() as srv:
        serve_site(srv, third.base)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="browser",
                           browser={"executable_path": str(broken)})
        r = cli(cfg, "crawl", "docs", check=False)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert "cannot start Chromium" in last and "tickets went back to pending" in last, \
            r.stderr


def test_bad_render_settings_are_one_line_errors(tmp_path):
    for settings, words in ((dict(render="js"), "render: expected one of http, browser, "
                                                "auto"),
                            (dict(browser={"block": ["video"]}), "unknown resource type"),
                            (dict(browser={"viewport": {"width": 0}}), "width: must be"),
                            (dict(browser={"wait": " "}), "CSS selector")):
        cfg = write_config(tmp_path, "http://127.0.0.1:9/", **settings)
        r = cli(cfg, "prepare", "docs", check=False)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, \
            r.stderr


# -- with a real browser --------------------------------------------------------------------

@needs_browser
def test_render_browser_writes_the_shells_text_and_follows_their_links(tmp_path, third):
    with LocalServer() as srv:
        urls = serve_site(srv, third.base)
        exe, log = launch_logger(tmp_path)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="browser",
                           follow_links=True, browser={"executable_path": str(exe),
                                                       "user_agent": "RenderBot/1.0"})
        cli(cfg, "crawl", "docs", "--workers", "1")
        out = tmp_path / "out"
        written = pages(out)
        assert INLINE_TEXT.strip() in written[urls["inline"]][1]
        assert APP_TEXT.strip() in written[urls["app"]][1]
        assert PLAIN_TEXT.split(".")[0] in written[urls["plain"]][1]
        for u in urls.values():
            assert written[u][0]["rendered"] == "browser"
            assert written[u][0]["render_reason"] == "render: browser"
            assert index(out)[u]["rendered"] == "browser"
        # a link that exists only in the rendered DOM was followed
        assert srv.url("/from-js.html") in written
        # B1: the server was asked once for each document (the browser got the fetched
        # bytes), the script once; nothing at all reached the third-party host
        hits = Counter(r.path for r in srv.requests)
        assert hits["/shell-app.html"] == hits["/shell-inline.html"] == 1
        assert hits["/plain.html"] == hits["/app.js"] == 1
        assert srv.hits("/app.js")[0].headers["user-agent"] == "RenderBot/1.0"
        assert third.requests == []
        assert launches(log) == 1  # one browser for the worker, reused


def test_chromium_may_reach_only_the_sites_origins_at_addresses_the_policy_allows(tmp_path):
    """B2: each name mapped to its checked address (no second DNS answer), others to none."""
    gate = HostGate(tmp_path / "hosts", "w1", lambda w: False)
    with Fetcher(Settings(), gate=gate, stop=threading.Event(),
                 sources=("http://127.0.0.2:8080/",)) as f:
        b = Browser(Settings(), f, threading.Event(), {"127.0.0.2", "localhost", "::1"})
        assert b.resolver_rules() == ("MAP 127.0.0.2 127.0.0.2, MAP localhost ~NOTFOUND, "
                                      "MAP * ~NOTFOUND")
        # and a page's request goes to the site's origins only (F9): not another port
        page = "http://127.0.0.2:8080/docs/a.html"
        assert b._allowed("http://127.0.0.2:8080/app.js", page)
        assert not b._allowed("http://127.0.0.2:6379/", page)
        assert not b._allowed("https://127.0.0.2:8080/app.js", page)


@needs_browser
def test_the_browser_obeys_robots_txt_and_the_host_gate(tmp_path, third):
    """Two workers render shells whose app.js takes 0.5 s, with request_delay 0.1 s: each
    holds the host's lease for its whole navigation, so while one app.js is being served no
    other request reaches the host; a shell disallowed by robots.txt is never asked for."""
    with LocalServer() as srv:
        urls = serve_site(srv, third.base, app_delay=0.5, shells=8,
                          robots="User-agent: *\nDisallow: /shell-inline.html\n")
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="browser",
                           request_delay=0.1, crawl_state={"ticket_size": 1})
        cli(cfg, "crawl", "docs", "--workers", "2")
        assert index(tmp_path / "out")[urls["inline"]]["skipped"] == "robots"
        assert not srv.hits("/shell-inline.html")
        written = pages(tmp_path / "out")
        assert len(written) == 10 and APP_TEXT.strip() in written[urls["shell-7"]][1]
        scripts = [r.t for r in srv.requests if r.path.startswith("/app.js")]
        assert len(scripts) == 9
        during = [(r.path, round(r.t - t, 3)) for t in scripts for r in srv.requests
                  if t < r.t < t + 0.45]
        assert during == [], during


@needs_browser
def test_render_auto_renders_only_the_shells_and_says_why(tmp_path, third):
    with LocalServer() as srv:
        urls = serve_site(srv, third.base)
        exe, log = launch_logger(tmp_path)
        browser = {"executable_path": str(exe), "restart_every": 1}
        # a site of plain pages only: no browser is started at all
        plain_cfg = write_config(subdir(tmp_path, "a"), srv.url("/sitemap-plain.xml"),
                                 render="auto", browser=browser)
        cli(plain_cfg, "crawl", "docs", "--workers", "1")
        assert launches(log) == 0
        assert "rendered" not in pages(tmp_path / "a" / "out")[urls["plain"]][0]
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="auto", browser=browser)
        cli(cfg, "crawl", "docs", "--workers", "1")
        out = tmp_path / "out"
        written = pages(out)
        assert INLINE_TEXT.strip() in written[urls["inline"]][1]
        assert APP_TEXT.strip() in written[urls["app"]][1]
        meta = written[urls["app"]][0]
        assert meta["rendered"] == "browser" and "empty #app" in meta["render_reason"]
        assert "empty #root" in index(out)[urls["inline"]]["render_reason"]
        assert "rendered" not in written[urls["plain"]][0]
        assert "rendered" not in index(out)[urls["plain"]]
        assert launches(log) == 2  # two shells, restart_every: 1
        assert third.requests == []
        # a re-crawl revalidates with the document's validators: 304s, no browser
        before = launches(log)
        r = cli(cfg, "crawl", "docs", "--workers", "1")
        assert "unchanged 3 (304)" in r.stdout, r.stdout
        assert launches(log) == before
        assert index(out)[urls["app"]]["rendered"] == "browser"  # carried over
        # the site starts sending the page's text itself: no browser, and the index says so
        srv.route("/shell-app.html", Response(body=PLAIN.replace("Plain page", "App"),
                                              etag=True))
        r = cli(cfg, "crawl", "docs", "--workers", "1")
        assert "changed 1" in r.stdout, r.stdout
        assert launches(log) == before
        assert index(out)[urls["app"]].get("rendered") is None
        assert "rendered" not in pages(out)[urls["app"]][0]


@needs_browser
def test_a_slow_render_keeps_the_heartbeat_and_a_timeout_fails_the_page(tmp_path, third):
    """app.js takes 4 s, heartbeat_timeout is 3 s: the other worker must not judge the
    rendering one dead (the page would be fetched twice).  Then a 1 s page timeout."""
    with LocalServer() as srv:
        urls = serve_site(srv, third.base, app_delay=4.0)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="auto",
                           crawl_state={"ticket_size": 1})
        r = cli(cfg, "crawl", "docs", "--workers", "2")
        assert "dead" not in r.stderr, r.stderr
        assert APP_TEXT.strip() in pages(tmp_path / "out")[urls["app"]][1]
        assert len(srv.hits("/shell-app.html")) == 1 and len(srv.hits("/app.js")) == 1
        cfg = write_config(subdir(tmp_path, "b"), srv.url("/sitemap.xml"), render="auto",
                           max_retries=0, browser={"timeout": 1})
        r = cli(cfg, "crawl", "docs", "--workers", "1", check=False)
        assert index(tmp_path / "b" / "out")[urls["app"]]["error"] == "render_timeout"
        assert r.returncode != 0 and "resume docs" in r.stderr  # the ticket failed: resume


@needs_browser
def test_a_render_that_timed_out_is_retried(tmp_path, third):
    """max_retries 1: app.js first takes 4 s (past the 1.5 s page timeout), then answers at
    once; the page is written from the second render, its document fetched once."""
    with LocalServer() as srv:
        urls = serve_site(srv, third.base)
        srv.route("/app.js", fail_then(1, Response(body=APP_JS, delay=4.0,
                                                   content_type="application/javascript"),
                                       Response(body=APP_JS,
                                                content_type="application/javascript")))
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="auto", max_retries=1,
                           browser={"timeout": 1.5})
        cli(cfg, "crawl", "docs", "--workers", "1")
        assert APP_TEXT.strip() in pages(tmp_path / "out")[urls["app"]][1]
        assert len(srv.hits("/app.js")) == 2 and len(srv.hits("/shell-app.html")) == 1


@needs_browser
def test_a_stop_before_the_render_hands_the_ticket_back(tmp_path, third):
    """SIGTERM while the shell's document is being fetched (request_delay 3 s: the worker
    then waits for the host's lease to render it): the ticket goes back to pending, not to
    failed/, and the next run writes the page."""
    with LocalServer() as srv:
        urls = serve_site(srv, third.base)
        cfg = write_config(tmp_path, srv.url("/sitemap-app.xml"), render="auto",
                           request_delay=3)
        cli(cfg, "prepare", "docs")
        p = popen_cli(cfg, "work")
        try:
            wait_until(lambda: srv.hits("/shell-app.html"), 60)
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 130
        tickets = tmp_path / "out" / ".crawl-state" / "docs" / "tickets"
        assert os.listdir(tickets / "failed") == [] and len(os.listdir(tickets / "pending")) == 1
        assert not srv.hits("/app.js")
        cli(cfg, "work")
        assert APP_TEXT.strip() in pages(tmp_path / "out")[urls["app"]][1]


def _descendants(pid: int) -> dict[int, str]:
    """pid -> start time of every process below ``pid``."""
    children: dict[int, list[int]] = {}
    start: dict[int, str] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(d))
        start[int(d)] = fields[19]
    out, todo = {}, [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out[c] = start[c]
            todo.append(c)
    return out


def _alive(pid: int, started: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19] == started and fields[0] != "Z"


def _is_chromium(pid: int) -> bool:
    try:
        return "chrom" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return False


def _is_driver(pid: int) -> bool:
    try:
        return b"run-driver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@needs_browser
@pytest.mark.parametrize("driver", ["running", "hung"])
def test_kill_9_of_a_worker_leaves_no_chromium_behind(tmp_path, third, driver):
    """kill -9 of the worker.  With Playwright's driver hung (stopped), the driver cannot
    notice that its worker is gone: only the death signal (B3) takes it and Chromium down."""
    with LocalServer() as srv:
        serve_site(srv, third.base, app_delay=60.0)  # the worker stays inside the render
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"), render="browser")
        cli(cfg, "prepare", "docs")
        p = popen_cli(cfg, "work", "--workers", "1")
        try:
            wait_until(lambda: srv.hits("/app.js"), 60, what="the browser to ask for app.js")

            def worker_with_chromium() -> int | None:
                for pid in (c for c in _descendants(p.pid) if _descendants(c)):
                    if any(_is_chromium(d) for d in _descendants(pid)):
                        return pid
                return None

            worker = wait_until(worker_with_chromium, 30)
            below = _descendants(worker)
            chromes = [d for d in below if _is_chromium(d)]
            assert len(chromes) >= 2, below  # the browser and its helpers
            drivers = [d for d in below if _is_driver(d)]
            assert len(drivers) == 1, below
            if driver == "hung":
                os.kill(drivers[0], signal.SIGSTOP)
            os.kill(worker, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(_alive(d, s) for d, s in below.items()):
                time.sleep(0.1)
            left = [d for d, s in below.items() if _alive(d, s)]
            assert left == [], [Path(f"/proc/{d}/cmdline").read_bytes()[:80] for d in left]
            p.communicate(timeout=60)  # the runner sees its worker gone and ends
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()


def _demo(out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sitemap_crawler", "demo", "--pages", "30",
                           "--workers", "2", "--output", str(out)], capture_output=True,
                          text=True, timeout=300, env=env)


def test_demo_without_a_browser_skips_its_javascript_pages_with_a_note(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    r = _demo(tmp_path / "demo", {**os.environ, "PATH": str(bare)})
    assert r.returncode == 0, r.stderr
    assert "note: skipping the demo's JavaScript-rendered pages" in r.stdout, r.stdout
    assert "apt-get install chromium" in r.stdout
    assert not list((tmp_path / "demo" / "markdown").rglob("app/*.md"))
    assert list((tmp_path / "demo" / "markdown").rglob("guide/*.md"))


@needs_browser
def test_demo_renders_its_javascript_pages(tmp_path):
    r = _demo(tmp_path / "demo")
    assert r.returncode == 0, r.stderr
    assert "skipping" not in r.stdout
    app = {p.name: p.read_text() for p in (tmp_path / "demo" / "markdown").rglob("app/*.md")}
    assert set(app) == {"index.md", "dashboards.md", "alerts.md"}, r.stdout
    assert "quiet hours hold them until morning" in app["alerts.md"]
    assert "rendered: browser" in app["alerts.md"] and "empty #root" in app["alerts.md"]
    others = [p for p in (tmp_path / "demo" / "markdown").rglob("*.md") if "app" not in p.parts]
    assert len(others) > 30 and not any("rendered:" in p.read_text() for p in others)
