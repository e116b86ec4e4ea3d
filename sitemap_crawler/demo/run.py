"""`sitemap-crawler demo`: the whole product on a built-in site, on a fresh machine, offline.

Serves the generated documentation site (demosite.py) on 127.0.0.1, writes a config for it
into the output directory, prepares and crawls it with N workers and says where the markdown
is.  Each run serves the next *generation* of the site (some pages changed, two removed,
three added) on the same port when it is free, so a second run shows a real incremental crawl.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer
import yaml

from sitemap_crawler.commands.prepare import prepare
from sitemap_crawler.commands.work import run_site, summary
from sitemap_crawler.config import Settings, load_config
from sitemap_crawler.demo import site as demosite
from sitemap_crawler.errors import UserError
from sitemap_crawler.fetch.browser import BrowserMissing, require_browser

log = logging.getLogger(__name__)


# The port `demo --serve-only` serves on unless told otherwise: config.yaml's local-demo
# site crawls http://127.0.0.1:8765/ (tests/test_demosite.py holds the two together).
SERVE_PORT = 8765


def run_demo(output: Path, *, workers: int = 4, pages: int = 300,
             serve_only: bool = False, port: int | None = None) -> int:
    output = output.resolve()
    output.mkdir(parents=True, exist_ok=True)
    meta_path = output / "demo.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (FileNotFoundError, ValueError):
        meta = {"generation": -1, "port": 0}
    generation = int(meta.get("generation", -1)) + 1
    # The demo site publishes generation g's changes during the day starting at epoch + g
    # days.  Starting that day *now* makes the changed pages' sitemap lastmod newer than the
    # previous run's crawl, as on a real site edited between two crawls.
    epoch = datetime.now(UTC).replace(microsecond=0) - timedelta(days=generation)
    site = demosite.generate(generation=generation, pages=pages, epoch=epoch)
    if port is not None and not 0 < port < 65536:
        raise UserError(f"--port: expected 1-65535, got {port}")
    if port is None and serve_only:
        port = SERVE_PORT
    try:
        server = demosite.serve(site, port=int(port if port is not None
                                               else meta.get("port") or 0))
    except OSError as e:
        if port is not None:  # asked for: say so rather than serve where nobody looks
            raise UserError(f"demo: cannot serve on 127.0.0.1:{port} ({e.strerror}); choose "
                            "another with --port (and the same port in the config that "
                            "crawls it, as local-demo's source in config.yaml)") from None
        log.warning("port %s is busy: serving on a new port, so this run cannot be incremental",
                    meta.get("port"))
        server = demosite.serve(site, port=0)
    with server:
        base = server.base_url
        if serve_only:
            typer.echo(f"demo site (generation {generation}) at {base}/ — Ctrl+C to stop")
            threading.Event().wait()
        port = int(base.rsplit(":", 1)[1].split("/")[0])
        meta_path.write_text(json.dumps({"generation": generation, "port": port}))
        config_path = output / "config.yaml"
        sources, render = _javascript_section(base)
        config_path.write_text(yaml.safe_dump({
            "settings": {"base_output_dir": str(output), "request_delay": 0,
                         "max_parallel_per_host": 8, "max_retries": 2, "render": render,
                         "crawl_state": {"ticket_size": 25, "heartbeat_interval": 1,
                                         "heartbeat_timeout": 10}},
            "sites": [{"name": "demo", "sources": sources, "base_dir": "markdown"}],
        }, sort_keys=False))
        cfg = load_config(config_path)
        s = cfg.site("demo")
        typer.echo(f"demo site (generation {generation}, {pages} pages) serving at {base}/")
        res = prepare(s)
        typer.echo(res.summary())
        if res.tickets == 0:
            typer.echo("nothing is due: every page is fresh according to the sitemap")
        totals = run_site(config_path, s, workers)
        typer.echo(summary(s.name, totals))
        st = server.stats()
        typer.echo(f"the demo server answered {st.ok} x 200 and {st.not_modified} x 304 "
                   f"({st.bytes_sent / 1e6:.1f} MB of bodies)")
    typer.echo(f"markdown is in {s.base_dir}  (state: {s.state_dir})")
    if render == "auto":
        typer.echo(f"the JavaScript-rendered pages ({demosite.APP_SCRIPT.rsplit('/', 1)[0]}/) "
                   "were rendered in headless Chromium: see rendered: browser in their front "
                   "matter")
    if generation == 0:
        typer.echo("run `sitemap-crawler demo` again: the site changes a little and the second "
                   "crawl is incremental")
    return 0


def _javascript_section(base: str) -> tuple[list[str], str]:
    """The sources and render mode: with a browser installed the JavaScript-rendered section
    (its own sitemap) is crawled with ``render: auto``; without one it is left out, saying
    so."""
    try:
        require_browser(Settings(render="auto"))
    except BrowserMissing as e:
        typer.echo(f"note: skipping the demo's JavaScript-rendered pages: {e}")
        return [f"{base}/"], "http"
    return [f"{base}/", f"{base}{demosite.APP_SITEMAP}"], "auto"
