"""Small documentation sites served by the real LocalServer, and configs that crawl them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from httpserver import LocalServer, Response

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.state import StateDir

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><header><nav><a href="/">Home</a> <a href="/docs/">Docs</a></nav></header>
<nav class="sidebar"><ul>{sidebar}</ul></nav>
<main><article><h1>{title}</h1>
<p>{text}</p>
<h2>Usage</h2><p>Call <code>run()</code> with the options below; it returns a result object.</p>
<pre><code class="language-python">def run(x):\n    return x * {n}\n</code></pre>
<table><tr><th>Option</th><th>Meaning</th></tr><tr><td>n</td><td>the {n}th thing</td></tr></table>
</article></main>
<footer>Generated at {clock}</footer></body></html>"""


def page_html(n: int, version: int = 0, clock: str = "12:00") -> str:
    sidebar = "".join(f'<li><a href="/docs/page-{i}.html">Page {i}</a></li>' for i in range(20))
    text = (f"This is page {n}, version {version}. " * 8).strip()
    return PAGE.format(title=f"Page {n}", sidebar=sidebar, text=text, n=n, clock=clock)


def doc_site(srv: LocalServer, n: int, *, delay: float = 0.0, etag: bool = True,
             lastmod: str | None = None, robots: str = "User-agent: *\nAllow: /\n") -> list[str]:
    """Register n pages, a sitemap and robots.txt; return the page URLs."""
    urls = [srv.url(f"/docs/page-{i}.html") for i in range(n)]
    lm = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    sm = ('<?xml version="1.0" encoding="UTF-8"?>\n'
          '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
          + "".join(f"<url><loc>{u}</loc>{lm}</url>" for u in urls) + "</urlset>")
    srv.route("/sitemap.xml", Response(body=sm, content_type="application/xml"))
    srv.route("/robots.txt", Response(body=robots + f"Sitemap: {srv.url('/sitemap.xml')}\n",
                                      content_type="text/plain"))
    for i in range(n):
        srv.route(f"/docs/page-{i}.html", Response(body=page_html(i), etag=etag, delay=delay,
                                                   last_modified=1_700_000_000.0))
    return urls


def write_config(tmp: Path, source: str, *, out: Path | None = None, name: str = "docs",
                 **settings: Any) -> Path:
    crawl_state = {"ticket_size": 5, "heartbeat_interval": 0.5, "heartbeat_timeout": 3}
    crawl_state.update(settings.pop("crawl_state", {}))
    cfg = {"settings": {"base_output_dir": str(out or tmp / "out"), "request_delay": 0,
                        "max_retries": 1, "crawl_state": crawl_state, **settings},
           "sites": [{"name": name, "source": source, "base_dir": "md"}]}
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cli(config: Path, *args: str, timeout: float = 300,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "sitemap_crawler", "--config", str(config), *args],
                       capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}")
    return r


def popen_cli(config: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sitemap_crawler", "--config", str(config),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def signalled(config: Path, *args: str, ready: Callable[[], object], sig: int,
              before: Callable[[], object] | None = None,
              timeout: float = 120) -> tuple[int, str]:
    """Run the CLI, send it ``sig`` once ``ready()`` (after ``before()``), and return its exit
    code and stderr; a process still running at the end is killed."""
    from waiting import wait_until

    p = popen_cli(config, *args)
    try:
        wait_until(ready, what="the moment to signal")
        if before is not None:
            before()
        p.send_signal(sig)
        _out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, err


def on_two_machines(tmp: Path, a: Path, b: Path, make: Callable[[Path, Path], Path], *,
                    timeout: float = 300) -> Path:
    """prepare on "machine" A, then ``work --workers 2`` on A and B at once, each through its
    own mount (``a``, ``b``) of one share; every run must exit 0.  Returns A's config.

    ``make(config_dir, output_dir)`` writes a config and returns its path."""
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    cfg_a, cfg_b = make(tmp / "a", a / "out"), make(tmp / "b", b / "out")
    cli(cfg_a, "prepare", "docs")
    procs = [popen_cli(cfg_a, "work", "--workers", "2"), popen_cli(cfg_b, "work", "--workers", "2")]
    for p in procs:
        _, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err
    return cfg_a


def read_index(state_root: Path) -> dict[str, dict[str, Any]]:
    """The url-index as the crawler sees it: the base with its segments folded in."""
    return url_index.load_view(StateDir(state_root))
