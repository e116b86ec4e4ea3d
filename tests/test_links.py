"""Link following on the ticket queue, through the CLI against a real site with no sitemap:
depth, scope, nofollow, do_not_crawl, strip_params, robots; exactly once across processes,
machines (two mounts of a real SMB share) and a kill -9."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from httpserver import Response
from linksite import page, tree_site
from sites import cli, on_two_machines, popen_cli, read_index, write_config


def follow_config(tmp: Path, source: str, *, out: Path | None = None, **site: object) -> Path:
    cfg = write_config(tmp, source, out=out)
    data = yaml.safe_load(cfg.read_text())
    data["sites"][0].update({"follow_links": True, **site})
    cfg.write_text(yaml.safe_dump(data))
    return cfg


def fetched(server) -> Counter[str]:
    return Counter(r.path for r in server.requests if not _discovery_probe(r.path))


def _discovery_probe(path: str) -> bool:
    """robots.txt, llms*.txt and the common sitemap paths prepare looks at first."""
    return path == "/robots.txt" or path.startswith("/llms") or "sitemap" in path


def index(out: Path) -> dict:
    return read_index(out / ".crawl-state" / "docs")


def written(out: Path) -> dict[str, str]:
    """url -> markdown path of every file written, read from the front matter."""
    got = {}
    for p in (out / "md").rglob("*.md"):
        text = p.read_text()
        got[yaml.safe_load(text[4:text.index("\n---", 4)])["url"]] = str(p)
    return got


def test_a_site_without_a_sitemap_is_crawled_by_following_links(server, tmp_path):
    paths = tree_site(server, sections=3, per_section=5)
    cfg = follow_config(tmp_path, server.url("/"))
    r = cli(cfg, "crawl", "docs", "--workers", "2")
    hits = fetched(server)
    assert set(hits) == set(paths), r.stderr
    assert max(hits.values()) == 1, hits  # each page exactly once
    out = tmp_path / "out"
    assert set(written(out)) == {server.url(p) for p in paths}
    idx = index(out)
    assert idx[server.url("/")]["depth"] == 0
    assert idx[server.url("/")]["content_root"] == "main"  # which element the text came from
    assert idx[server.url("/docs/s1/")]["depth"] == 1
    assert idx[server.url("/docs/s1/p2.html")]["depth"] == 2
    assert not any(e.get("outcome") == "queued" for e in idx.values())
    # A re-crawl revalidates what it knows (conditional GETs) and finds a new page.
    server.route("/docs/s0/p0.html", Response(body=page("Page 0.0", ["/docs/s0/new.html"])))
    server.route("/docs/s0/new.html", Response(body=page("New", [])))
    n = len(server.requests)
    cli(cfg, "crawl", "docs", "--workers", "2")
    again = Counter(q.path for q in server.requests[n:] if not _discovery_probe(q.path))
    assert again["/docs/s0/new.html"] == 1 and max(again.values()) == 1, again
    assert set(again) == set(paths) | {"/docs/s0/new.html"}
    conditional = [q for q in server.requests[n:] if q.path == "/docs/s1/p1.html"]
    assert "if-none-match" in conditional[0].headers
    assert index(out)[server.url("/docs/s0/new.html")]["depth"] == 3


def test_depth_scope_nofollow_do_not_crawl_strip_params_and_robots(server, tmp_path):
    links = ["/docs/a.html", "/docs/d1.html", "/blog/post.html", "/docs/c.html?utm_source=x",
             "/docs/c.html?utm_source=y&id=1", "/docs/logout", "/docs/private.html",
             "/docs/nf.html", "http://elsewhere.invalid/x.html"]
    server.route("/docs/", Response(body=page("Docs", links).replace(
        '<a href="/docs/a.html">', '<a rel="nofollow" href="/docs/a.html">')))
    server.route("/docs/d1.html", Response(body=page("D1", ["/docs/d2.html"])))
    server.route("/docs/d2.html", Response(body=page("D2", ["/docs/d3.html"])))
    server.route("/docs/d3.html", Response(body=page("D3", ["/docs/d4.html"])))
    for p in ("/docs/a.html", "/blog/post.html", "/docs/c.html", "/docs/logout",
              "/docs/private.html", "/docs/d4.html", "/docs/from-nf.html"):
        server.route(p, Response(body=page(p, [])))
    server.route("/docs/nf.html", Response(body=page(
        "NF", ["/docs/from-nf.html"], head='<meta name="robots" content="nofollow">')))
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /docs/private\n",
                                         content_type="text/plain"))
    cfg = follow_config(tmp_path, server.url("/docs/"), max_depth=3,
                        scope=server.url("/docs/"), do_not_crawl=["*/logout"],
                        strip_params=["utm_*"])
    cli(cfg, "crawl", "docs", "--workers", "1")
    hits = fetched(server)
    assert "/docs/a.html" not in hits  # rel=nofollow
    assert "/blog/post.html" not in hits  # out of the prefix scope
    assert "/docs/logout" not in hits  # do_not_crawl
    assert "/docs/private.html" not in hits  # robots.txt
    assert "/docs/from-nf.html" not in hits  # the page's meta robots says nofollow
    assert "/docs/d3.html" in hits and "/docs/d4.html" not in hits  # d3 is at max_depth 3
    assert hits["/docs/c.html"] == 1 and hits["/docs/c.html?id=1"] == 1  # utm_* stripped
    assert max(hits.values()) == 1
    idx = index(tmp_path / "out")
    assert idx[server.url("/docs/private.html")]["outcome"] == "skipped:robots"


def _work_until_pages(server, cfg: Path, pages: int) -> float:
    """Run `work` until ``pages`` were fetched, then kill -9 it all; when (monotonic)."""
    p = popen_cli(cfg, "work", "--workers", "2")
    t0 = time.monotonic()
    while sum(fetched(server).values()) < pages:
        assert time.monotonic() - t0 < 60 and p.poll() is None, "work ended too early"
        time.sleep(0.02)
    for child in _children(p.pid):
        os.kill(child, signal.SIGKILL)
    t_kill = time.monotonic()
    p.kill()
    p.wait()
    return t_kill


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_a_kill_9_mid_crawl_loses_no_link_and_fetches_only_in_flight_pages_twice(
        server, tmp_path):
    paths = tree_site(server, sections=4, per_section=10, delay=0.03)
    cfg = follow_config(tmp_path, server.url("/"), max_in_flight=4)
    cli(cfg, "prepare", "docs")
    t_kill = _work_until_pages(server, cfg, 12)
    cli(cfg, "crawl", "docs", "--workers", "2")
    hits = fetched(server)
    assert set(hits) == set(paths)
    twice = [p for p, n in hits.items() if n > 1]
    # 2 workers with at most max_in_flight = 4 URLs in flight each (fetching or converting);
    # only pages sent shortly before the kill (answers take 0.03 s) come again
    assert len(twice) <= 8 and max(hits.values()) <= 2, twice
    # sent shortly before the kill: a URL is in flight until its page is converted and
    # journaled (1 s on a loaded machine), and the server's stamp can lag the send (up to
    # 0.1 s seen on a loaded machine), never precede it
    first = {p: min(r.t for r in server.requests if r.path == p) for p in twice}
    assert all(t_kill - 1.0 <= t <= t_kill + 0.25 for t in first.values()), (t_kill, first)
    assert set(written(tmp_path / "out")) == {server.url(p) for p in paths}


@pytest.mark.netfs
def test_two_machines_follow_links_on_a_real_share_each_page_once(share, server, tmp_path):
    a, b, kind = share
    paths = tree_site(server, sections=4, per_section=8, delay=0.01)
    cfg_a = on_two_machines(tmp_path, a, b,
                            lambda d, out: follow_config(d, server.url("/"), out=out))
    # A machine whose workers stopped early (its mount saw no work yet) leaves nothing behind:
    cli(cfg_a, "work", "--workers", "1")
    hits = fetched(server)
    assert set(hits) == set(paths), (kind, sorted(set(paths) - set(hits)))
    assert max(hits.values()) == 1, (kind, [p for p, n in hits.items() if n > 1])


def test_a_link_following_site_is_probed_for_three_documents_not_sixteen(server, tmp_path):
    """Without a sitemap, prepare asks for robots.txt, /sitemap.xml and /llms.txt only (each
    request costs the host a delay): before, 13 common sitemap paths and llms-full.txt too."""
    tree_site(server, sections=2, per_section=3)
    cfg = follow_config(tmp_path, server.url("/"))
    cli(cfg, "prepare", "docs")
    probes = sorted(r.path for r in server.requests if _discovery_probe(r.path))
    assert probes == ["/llms.txt", "/robots.txt", "/sitemap.xml"], probes
