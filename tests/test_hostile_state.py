"""Issue 20: the state folder and the output folder as input, and the exit codes of every
command.  Real CLI processes, a real 127.0.0.1 server, hand-made state files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from httpserver import Response
from sites import cli, doc_site, page_html, popen_cli, read_index, write_config
from waiting import wait_until


def _state(tmp_path: Path) -> Path:
    return tmp_path / "out" / ".crawl-state" / "docs"


def _sitemap(server, paths: list[str], newer: tuple[str, ...] = ()) -> None:
    """A sitemap of ``paths``, all last modified in 2020 but ``newer`` (today)."""
    def lastmod(p: str) -> str:
        return "2099-01-01" if p in newer else "2020-01-01"
    server.route("/sitemap.xml", Response(body=(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{server.url(p)}</loc><lastmod>{lastmod(p)}</lastmod></url>"
                  for p in paths) + "</urlset>"), content_type="application/xml"))


# -- #21 index.count() exact ------------------------------------------------------------------

def test_status_counts_the_index_exactly_between_compactions(server, tmp_path):
    doc_site(server, 40)
    paths = [f"/docs/page-{i}.html" for i in range(40)]
    for p in paths[:3]:  # gone in the first crawl, back in the second: not new URLs
        server.route(p, Response(404, b"no", content_type="text/plain"))
    _sitemap(server, paths)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "crawl", "docs", "--workers", "1")
    for i, p in enumerate(paths[:3]):
        server.route(p, Response(body=page_html(i)))
    server.route("/docs/extra.html", Response(404, b"no", content_type="text/plain"))
    # a new URL that is never "new"; only these four are crawled again
    _sitemap(server, [*paths, "/docs/extra.html"], newer=(*paths[:3], "/docs/extra.html"))
    cli(cfg, "crawl", "docs", "--workers", "1")
    assert json.loads((_state(tmp_path) / "url-index.segments.json").read_text())["segments"], \
        "the second crawl's records must still be in a segment for this test"
    real = len(read_index(_state(tmp_path)))
    assert real == 41
    st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert st["index_urls"] == real


# -- #22 SIGTERM during prepare ------------------------------------------------------------------

def test_sigterm_during_prepare_exits_130_and_the_next_prepare_runs(server, tmp_path):
    doc_site(server, 3)
    sitemap = server.routes["/sitemap.xml"]
    server.route("/sitemap.xml", Response(body=sitemap.body, content_type="application/xml",
                                          delay=20))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    p = popen_cli(cfg, "prepare", "docs")
    try:
        wait_until(lambda: server.hits("/sitemap.xml"), what="the sitemap request")
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    server.route("/sitemap.xml", sitemap)
    cli(cfg, "prepare", "docs")  # no prepare lock left behind


# -- #18 an output folder that is not writable ---------------------------------------------------

def _without_root_powers(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as root without the capability to ignore file modes (tests run as root, for
    whom a chmod means nothing)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to drop CAP_DAC_OVERRIDE")
    drop = "-dac_override,-dac_read_search"
    return subprocess.run(["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}",
                           sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                           *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("where", ["out", "md", "host"])
def test_an_output_folder_that_is_not_writable_is_a_clear_error(server, tmp_path, where):
    doc_site(server, 6)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "prepare", "docs")
    out = tmp_path / "out"
    target = {"out": out, "md": out / "md", "host": out / "md" / f"127.0.0.1_{server.port}"}
    target[where].mkdir(parents=True, exist_ok=True)
    subprocess.run(["chmod", "-R", "a-w", str(target[where])], check=True)
    try:
        r = _without_root_powers(cfg, "work", "docs")
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(out)], check=True)
    assert r.returncode == 1, (r.stdout, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "internal error" not in r.stderr, r.stderr
    if where == "host":  # found at the first page written: that one page was fetched
        assert "Permission denied" in last
        assert len([q for q in server.requests if q.path.startswith("/docs/")]) <= 1
    else:  # found before any work is claimed
        assert "not writable" in last and str(target[where]) in last, last
        assert not [q for q in server.requests if q.path.startswith("/docs/")]
    # the tickets are all still there for a run that can write
    st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert st["urls_remaining"] == 6
