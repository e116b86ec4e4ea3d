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
from sites import cli, doc_site, page_html, read_index, signalled, write_config


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
    code, err = signalled(cfg, "prepare", "docs", sig=signal.SIGTERM, timeout=30,
                          ready=lambda: server.hits("/sitemap.xml"))
    assert code == 130, err
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
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), max_in_flight=2)
    cli(cfg, "prepare", "docs")
    out = tmp_path / "out"
    target = {"out": out, "md": out / "md", "host": out / "md" / f"127.0.0.1_{server.port}"}
    target[where].mkdir(parents=True, exist_ok=True)
    subprocess.run(["chmod", "-R", "a-w", str(target[where])], check=True)
    try:
        r = _without_root_powers(cfg, "work", "docs", "--workers", "1")
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(out)], check=True)
    assert r.returncode == 1, (r.stdout, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "internal error" not in r.stderr, r.stderr
    if where == "host":  # found at the first page written: only the pages then in flight
        assert "Permission denied" in last  # (max_in_flight 2) were fetched
        assert len([q for q in server.requests if q.path.startswith("/docs/")]) <= 2
    else:  # found before any work is claimed
        assert "not writable" in last and str(target[where]) in last, last
        assert not [q for q in server.requests if q.path.startswith("/docs/")]
    # the tickets are all still there for a run that can write
    st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert st["urls_remaining"] == 6


# -- #5 a stored file_path is used only if it is the URL's own file ----------------------------

def _crawled_then_queued(server, tmp_path: Path, n: int = 3, **settings) -> Path:
    """A site crawled once, then ``prepare --full``: every URL pending with its prior."""
    doc_site(server, n)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), **settings)
    cli(cfg, "crawl", "docs", "--workers", "1")
    cli(cfg, "prepare", "docs", "--full")
    return cfg


def _edit_priors(tmp_path: Path, edit) -> None:
    """Rewrite every pending ticket, calling ``edit(url, prior)`` on each URL's prior."""
    for p in (_state(tmp_path) / "tickets" / "pending").glob("*.json"):
        data = json.loads(p.read_text())
        for u in data["urls"]:
            edit(u["url"], u.setdefault("prior", {}))
        p.write_text(json.dumps(data))


def _md(tmp_path: Path, server, i: int) -> Path:
    return tmp_path / "out" / "md" / f"127.0.0.1_{server.port}" / "docs" / f"page-{i}.md"


@pytest.mark.parametrize("status", [200, 404, 410])
def test_a_stored_file_path_of_another_page_is_not_written_or_deleted(server, tmp_path, status):
    cfg = _crawled_then_queued(server, tmp_path)
    page0 = _md(tmp_path, server, 0).read_text()
    notes = tmp_path / "out" / "md" / "my-notes.md"
    notes.write_text("the user's own notes\n")
    target = {200: _md(tmp_path, server, 0), 404: _md(tmp_path, server, 0), 410: notes}[status]
    rel = target.relative_to(tmp_path / "out" / "md").as_posix()
    _edit_priors(tmp_path, lambda url, prior: url.endswith("page-1.html")
                 and prior.update(file_path=rel, content_hash="sha256:0"))
    server.route("/docs/page-1.html", Response(body=page_html(1, version=2)) if status == 200
                 else Response(status, b"gone", content_type="text/plain"))
    cli(cfg, "work", "docs")
    assert _md(tmp_path, server, 0).read_text() == page0
    assert notes.read_text() == "the user's own notes\n"
    if status == 200:  # written where the layout puts it
        assert "version 2" in _md(tmp_path, server, 1).read_text()


def test_on_removed_move_with_a_crafted_path_moves_nothing_outside(server, tmp_path):
    cfg = _crawled_then_queued(server, tmp_path, on_removed="move")
    own = _md(tmp_path, server, 1).relative_to(tmp_path / "out" / "md").as_posix()
    crafted = f"../../out/md/{own}"  # inside as a source, outside once under .removed/
    _edit_priors(tmp_path, lambda url, prior: url.endswith("page-1.html")
                 and prior.update(file_path=crafted))
    server.route("/docs/page-1.html", Response(404, b"gone", content_type="text/plain"))
    cli(cfg, "work", "docs")
    outside = [p for p in tmp_path.rglob("page-1.md") if not p.is_relative_to(tmp_path / "out"
                                                                              / "md")]
    assert not outside, outside


# -- #6 a segment list naming a file outside url-index.d ------------------------------------------

def test_a_segment_list_naming_a_file_outside_is_neither_read_nor_deleted(server, tmp_path):
    doc_site(server, 3)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "crawl", "docs", "--workers", "1")
    victim = tmp_path / "victim.jsonl"
    victim.write_text(json.dumps({"url": "http://elsewhere.invalid/x", "outcome": "new",
                                  "last_crawled": "2099-01-01T00:00:00Z"}) + "\n")
    listed = _state(tmp_path) / "url-index.segments.json"
    data = json.loads(listed.read_text())
    data["segments"] = ["../../../victim.jsonl", str(victim)]
    listed.write_text(json.dumps(data))
    st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert st["index_urls"] == 3
    cli(cfg, "crawl", "docs", "--workers", "1", "--full")  # merges and compacts
    assert victim.exists()
    assert "elsewhere.invalid" not in json.dumps(read_index(_state(tmp_path)))


# -- #7 link-frontier intents -------------------------------------------------------------------

def _link_site(server) -> None:
    server.route("/", Response(body='<html><body><main><h1>Home</h1><p>' + "Words here. " * 20
                               + '</p><a href="/a.html">a</a></main></body></html>'))
    server.route("/a.html", Response(body=page_html(1)))
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                         content_type="text/plain"))


@pytest.mark.parametrize("intent", [
    {"id": "../../../../victim", "site": "docs", "created_at": "x",
     "urls": [{"url": "http://127.0.0.1:1/x", "depth": 1, "found_on": "y"}]},
    {"id": "L20260101T000000abcdef", "site": "docs", "urls": [1, "two", None]},
    "not JSON {",
], ids=["dotdot-id", "bad-urls", "torn"])
def test_a_malformed_intent_is_quarantined_not_followed(server, tmp_path, intent):
    _link_site(server)
    cfg = write_config(tmp_path, server.url("/"), follow_links=True)
    cli(cfg, "prepare", "docs")
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    frontier = _state(tmp_path) / "frontier"
    frontier.mkdir(exist_ok=True)
    (frontier / "intent-..").mkdir()  # lets "intent-../../.." resolve
    name = "intent-L20260101T000000abcdef.json"
    (frontier / name).write_text(intent if isinstance(intent, str) else json.dumps(intent))
    r = cli(cfg, "work", "docs", check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert victim.read_text() == "keep me"
    assert not list(tmp_path.glob("victim*-*")), "a ticket was written outside"
    assert [p.name for p in (_state(tmp_path) / "quarantine").iterdir()
            if p.name.startswith(name)], r.stderr[-2000:]
    assert "a.html" in json.dumps(read_index(_state(tmp_path)))  # the crawl went on


# -- #8 nothing through a symlink in the state or output folders -----------------------------------

def test_a_symlinked_removed_folder_moves_nothing_outside(server, tmp_path):
    cfg = _crawled_then_queued(server, tmp_path, on_removed="move")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out" / "md" / ".removed").symlink_to(elsewhere)
    server.route("/docs/page-1.html", Response(404, b"gone", content_type="text/plain"))
    cli(cfg, "work", "docs")
    assert not list(elsewhere.rglob("*.md"))
    assert list((tmp_path / "out" / "md" / ".removed").rglob("page-1.md"))


@pytest.mark.parametrize("folder", ["tmp", "journal", "frontier", "locks"])
def test_a_symlinked_state_folder_gets_no_files(server, tmp_path, folder):
    if folder == "frontier":  # read and written by link following only
        _link_site(server)
        cfg = write_config(tmp_path, server.url("/"), follow_links=True)
    else:
        doc_site(server, 3)
        cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "prepare", "docs")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mine = elsewhere / ("index.free" if folder == "locks" else
                        "intent-L20260101T000000abcdef.json")  # someone else's file
    mine.write_text("not yours")
    link = _state(tmp_path) / folder
    if link.exists():
        shutil.rmtree(link)
    link.symlink_to(elsewhere)
    r = cli(cfg, "work", "docs", check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert list(elsewhere.iterdir()) == [mine] and mine.read_text() == "not yours"
    assert not (_state(tmp_path) / folder).is_symlink()
    assert len(read_index(_state(tmp_path))) >= 2
