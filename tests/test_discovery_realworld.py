"""Real-world discovery inputs, each through the real ``prepare`` CLI against 127.0.0.1.

The fixtures in ``fixtures/discovery/`` have the shapes of files found in the wild (a
WordPress feed with one Latin-1 byte, a Yoast-era robots.txt saved with a BOM, a plugin's
sitemap index with a blank line before ``<?xml``, a .NET sitemap whose children reset the
namespace, an RSS 1.0 feed, a Mintlify-style llms-full.txt); ``@@BASE@@`` is replaced by the
test server's address.  Each test states what the file holds and checks prepare queues
exactly that, with the exit code and warning a user running cron would want.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path
from typing import Any

import httpx
from httpserver import LocalServer, Response
from sites import cli, write_config
from test_discovery import index, urlset, xml

from sitemap_crawler.config import Settings
from sitemap_crawler.discover.sources import DiscoveryStats, discover

FIX = Path(__file__).parent / "fixtures" / "discovery"


def fixture(server: LocalServer, name: str) -> bytes:
    raw = (FIX / name).read_bytes()
    return (raw.replace(b"@@BASE@@", server.base.encode())
            .replace(b"@@HOST@@", f"127.0.0.1:{server.port}".encode()))


def text(body: str | bytes) -> Response:
    return Response(body=body, content_type="text/plain; charset=utf-8")


def queued(out: Path) -> list[dict[str, Any]]:
    """Every URL entry of the pending tickets prepare wrote."""
    entries: list[dict[str, Any]] = []
    for p in sorted((out / ".crawl-state" / "docs" / "tickets" / "pending").glob("*.json")):
        entries += json.loads(p.read_text())["urls"]
    return entries


def prepare(tmp: Path, source: str | list[str], *, check: bool = True, **settings: Any
            ) -> tuple[int, str, list[str]]:
    """Run ``prepare`` once; returns exit code, stderr+stdout and the queued URLs in order."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = write_config(tmp, source, **settings)
    r = cli(cfg, "prepare", "docs", check=check)
    return r.returncode, r.stderr + r.stdout, [e["url"] for e in queued(tmp / "out")]


def one_line_error(code: int, output: str) -> str:
    assert code == 1, output
    assert "Traceback" not in output, output
    return output


# --- robots.txt ----------------------------------------------------------------------------


def test_robots_txt_with_bom_and_site_map_spelling(server: LocalServer, tmp_path: Path) -> None:
    u = server.url
    server.route("/robots.txt", text(fixture(server, "robots-bom.txt")))
    server.route("/sitemap_index.xml", xml(index(u("/post-sitemap.xml"))))
    server.route("/post-sitemap.xml", xml(urlset(u("/hello-world/"), u("/about/"))))
    server.route("/news-sitemap.xml", xml(urlset(u("/news/today/"))))
    code, output, urls = prepare(tmp_path, u("/"))
    assert code == 0, output
    # The first line (after the BOM) and the "Site-map:" line both count.
    assert sorted(urls) == sorted([u("/hello-world/"), u("/about/"), u("/news/today/")])
    assert server.hits("/sitemap.xml") == []  # no probing: robots.txt named the sitemaps


# --- XML: namespaces, prologs, encodings ----------------------------------------------------


def test_rss_1_0_rdf_feed(server: LocalServer, tmp_path: Path) -> None:
    server.route("/index.rdf", Response(body=fixture(server, "feed-rss1.rdf"),
                                        content_type="application/rdf+xml"))
    code, output, urls = prepare(tmp_path, server.url("/index.rdf"))
    assert code == 0, output
    assert urls == [server.url(f"/archives/2024/04/entry-{i}.html") for i in range(1, 8)]
    entries = queued(tmp_path / "out")
    assert entries[0]["title"] == "Entry number 1"
    assert entries[0]["lastmod"] == "2024-04-10T23:30:00Z"  # dc:date, +09:00 to UTC


def test_sitemap_whose_url_elements_reset_the_namespace(server: LocalServer,
                                                       tmp_path: Path) -> None:
    server.route("/sitemap.xml", xml(fixture(server, "sitemap-xmlns-empty.xml")))
    code, output, urls = prepare(tmp_path, server.url("/sitemap.xml"))
    assert code == 0, output
    assert urls == [server.url(f"/en/products/item-{i}.aspx") for i in range(1, 6)]
    entries = queued(tmp_path / "out")
    assert entries[0]["lastmod"] == "2023-10-01T00:00:00Z"
    assert entries[0]["changefreq"] == "weekly" and entries[0]["priority"] == 0.8


def test_wordpress_feeds_with_one_bad_utf8_byte_are_recovered(server: LocalServer,
                                                              tmp_path: Path) -> None:
    posts = [server.url(f"/2024/05/post-{i}-slug/") for i in range(10)]
    for name, path in (("wordpress-rss-bad-utf8.xml", "/feed/"),
                       ("wordpress-atom-bad-utf8.xml", "/feed/atom/")):
        server.route(path, Response(body=fixture(server, name),
                                    content_type="application/rss+xml; charset=UTF-8"))
        work = tmp_path / path.strip("/").replace("/", "-")
        code, output, urls = prepare(work, server.url(path))
        assert code == 0, output
        assert urls == posts, name
        assert "1 invalid UTF-8 sequence(s) replaced" in output, output
        titles = [e["title"] for e in queued(work / "out")]
        assert titles[3] == "Post 3: notes on caching"


def test_sitemap_index_with_blank_line_before_xml_declaration(server: LocalServer,
                                                             tmp_path: Path) -> None:
    u = server.url
    server.route("/sitemap.xml", xml(fixture(server, "sitemap-index-blank-line.xml")))
    children = ("/sitemap-misc.xml", "/sitemap-pt-post-2024-05.xml",
                "/sitemap-pt-page-2023-11.xml")
    for i, path in enumerate(children):
        server.route(path, xml(urlset(u(f"/page-{i}/"))))
    code, output, urls = prepare(tmp_path, u("/sitemap.xml"))
    assert code == 0, output
    assert urls == [u(f"/page-{i}/") for i in range(3)]
    assert "malformed" not in output, output


# --- loops ---------------------------------------------------------------------------------


def test_loops_warn_when_nothing_is_lost_and_fail_when_nothing_is_left(
        server: LocalServer, tmp_path: Path) -> None:
    u = server.url
    server.route("/s.xml", xml(urlset(u("/page"))))
    # An index that lists itself and a child that redirects back to it: /s.xml is read.
    server.route("/index.xml", xml(index(u("/index.xml"), u("/back.xml"), u("/s.xml"))))
    server.route("/back.xml", Response(301, headers={"Location": "/index.xml"}))
    code, output, urls = prepare(tmp_path / "a", u("/index.xml"))
    assert code == 0 and urls == [u("/page")], output
    assert output.count("sitemap loop") == 2, output
    assert f"back.xml: skipped, redirects to {u('/index.xml')}, which was already read " \
           "(sitemap loop)" in output
    # Each kind of loop alone leaves nothing: the same exit code for both.
    server.route("/self.xml", xml(index(u("/self.xml"))))
    server.route("/only-back.xml", xml(index(u("/to-parent.xml"))))
    server.route("/to-parent.xml", Response(301, headers={"Location": "/only-back.xml"}))
    for src in ("/self.xml", "/only-back.xml"):
        code, output, _ = prepare(tmp_path / src.strip("/"), u(src), check=False)
        assert "no URLs found, 1 sitemap(s) skipped as loops" in one_line_error(code, output)
    # Two sources that share a sitemap: the second one's copy is no loop, nothing is lost.
    server.route("/a-index.xml", xml(index(u("/s.xml"))))
    server.route("/b-index.xml", xml(index(u("/s.xml"))))
    code, output, urls = prepare(tmp_path / "two", [u("/a-index.xml"), u("/b-index.xml")])
    assert code == 0 and urls == [u("/page")], output
    assert "already read through an earlier source" in output
    # A redirect loop that never reaches a document says so (it is not "already read").
    server.route("/ping.xml", Response(301, headers={"Location": "/pong.xml"}))
    server.route("/pong.xml", Response(301, headers={"Location": "/ping.xml"}))
    code, output, _ = prepare(tmp_path / "ping", u("/ping.xml"), check=False)
    assert "redirect loop: " in one_line_error(code, output)
    assert "already read" not in output


# --- llms.txt and llms-full.txt ------------------------------------------------------------


def test_llms_full_txt_yields_its_pages_not_their_links(server: LocalServer,
                                                       tmp_path: Path) -> None:
    body = fixture(server, "llms-full.txt")
    server.route("/llms-full.txt", Response(body=body, content_type="text/markdown"))
    code, output, urls = prepare(tmp_path, server.url("/llms-full.txt"))
    assert code == 0, output
    sources = [line.split(b": ", 1)[1].decode() for line in body.splitlines()
               if line.startswith(b"Source: http")]
    assert len(sources) == 12
    assert urls == sources  # no body link, no "Source:" inside code, no API base URL
    titles = [e["title"] for e in queued(tmp_path / "out")]
    assert titles[:2] == ["Get started with the API", "Intro to the platform"]
    assert " 0 other-host, 0 invalid" in output  # the API pages' "## Request / URL:" lines


def test_bare_site_falls_back_to_llms_full_txt(server: LocalServer, tmp_path: Path) -> None:
    server.route("/llms-full.txt", text(fixture(server, "llms-full.txt")))
    code, output, urls = prepare(tmp_path, server.url("/"))
    assert code == 0, output
    assert len(urls) == 12 and urls[0] == server.url("/en/docs/get-started")


LLMS = """# Example

> Docs for Example.

## Docs

- [Quick start](/docs/quick-start): install and run
- [API](/docs/api)

## Optional

- [Changelog](/changelog)
- [Blog](https://blog.example.test/)
"""


def test_llms_txt_optional_links_can_be_skipped(server: LocalServer, tmp_path: Path) -> None:
    server.route("/llms.txt", text(LLMS))
    u = server.url
    code, output, urls = prepare(tmp_path / "all", u("/llms.txt"))
    assert code == 0 and urls == [u("/docs/quick-start"), u("/docs/api"), u("/changelog")]
    code, output, urls = prepare(tmp_path / "skip", u("/llms.txt"), skip_optional=True)
    assert code == 0 and urls == [u("/docs/quick-start"), u("/docs/api")], output
    # The flag travels on the discovery Entry (the ticket field is wired by the worker side).
    stats = DiscoveryStats()
    with httpx.Client(timeout=10) as client:
        entries = list(discover([u("/llms.txt")], Settings(), client, stats))
    assert [e.optional for e in entries] == [False, False, True]  # the blog is off-host


OFF_HOST = """# fastlib

> A library whose documentation lives on another host.

## Docs

- [Guide](https://docs.fastlib.test/guide/)
- [API](https://docs.fastlib.test/api/)
- [Source](https://code.example.test/fastlib/)
"""


def test_llms_txt_with_only_off_host_links_says_so(server: LocalServer, tmp_path: Path) -> None:
    server.route("/llms.txt", text(OFF_HOST))
    code, output, _ = prepare(tmp_path / "a", server.url("/llms.txt"), check=False)
    out = one_line_error(code, output)
    assert "all 3 links are on other hosts" in out and "docs.fastlib.test" in out
    assert "allow_other_hosts: true" in out
    code, output, _ = prepare(tmp_path / "b", server.url("/"), check=False)  # bare site
    assert "all 3 links are on other hosts" in one_line_error(code, output)
    code, output, urls = prepare(tmp_path / "c", server.url("/llms.txt"),
                                 allow_other_hosts=True)
    assert code == 0 and len(urls) == 3, output


def test_markdown_twins(server: LocalServer, tmp_path: Path) -> None:
    u = server.url
    server.route("/sitemap.xml", xml(urlset(u("/docs/a"), u("/docs/"))))
    server.route("/llms.txt", text("# X\n\n## Docs\n\n- [A](/docs/a.md)\n"
                                   "- [Home](/docs/index.html.md)\n- [B](/docs/b.md)\n"))
    # Off: a .md link is a page of its own (fetched as markdown), so A is queued twice.
    code, output, urls = prepare(tmp_path / "off", u("/"))
    assert code == 0 and len(urls) == 5, output
    # On: a listed twin stands for its page: one ticket entry per page.
    code, output, urls = prepare(tmp_path / "on", u("/"), markdown_twins=True)
    assert code == 0 and urls == [u("/docs/a"), u("/docs/"), u("/docs/b")], output
    stats = DiscoveryStats()
    s = dataclasses.replace(Settings(), markdown_twins=True)
    with httpx.Client(timeout=10) as client:
        twins = {e.url: e.markdown_url for e in discover([u("/")], s, client, stats)}
    assert twins == {u("/docs/a"): u("/docs/a.md"), u("/docs/"): u("/docs/index.html.md"),
                     u("/docs/b"): u("/docs/b.md")}


# --- hosts and the sitemap cache -----------------------------------------------------------


def test_host_that_does_not_resolve(tmp_path: Path) -> None:
    t0 = time.monotonic()
    code, output, _ = prepare(tmp_path, "https://docs.nothing-here.invalid/", check=False)
    out = one_line_error(code, output)
    assert "'docs.nothing-here.invalid' did not resolve" in out, out
    assert "no sitemap found" not in out
    assert time.monotonic() - t0 < 60  # one lookup, not one per common sitemap path


def test_sitemap_cache_max_age(server: LocalServer, tmp_path: Path) -> None:
    u = server.url
    server.route("/sitemap.xml", xml(urlset(u("/a"), u("/b"))))  # no validators at all
    for _ in range(3):
        code, output, _ = prepare(tmp_path, u("/sitemap.xml"), cache_sitemaps=1)
        assert code == 0, output
    assert len(server.hits("/sitemap.xml")) == 1  # then read from the copy, < 1 hour old
    kept = tmp_path / "out" / ".crawl-state" / "docs" / "sitemaps"
    meta = next(kept.glob("*.json"))
    data = json.loads(meta.read_text())
    data["fetched_at"] -= 3601  # the copy is now older than the max age: asked again
    meta.write_text(json.dumps(data))
    code, output, _ = prepare(tmp_path, u("/sitemap.xml"), cache_sitemaps=1)
    assert code == 0 and len(server.hits("/sitemap.xml")) == 2
    # true (the default) still asks every time; with no validators nothing is kept.
    code, output, _ = prepare(tmp_path / "t", u("/sitemap.xml"), cache_sitemaps=True)
    code, output, _ = prepare(tmp_path / "t", u("/sitemap.xml"), cache_sitemaps=True)
    assert len(server.hits("/sitemap.xml")) == 4


def test_cache_sitemaps_bad_value_is_one_line(server: LocalServer, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), cache_sitemaps="soon")
    r = cli(cfg, "prepare", "docs", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "cache_sitemaps: expected true, false, or a max age" in r.stderr


def test_utf8_repair_matches_whole_document_decoding_at_any_chunking() -> None:
    from sitemap_crawler.discover.sitemap import _Utf8Repair

    rng = random.Random(7)
    alphabet = ["a", "<", "é", "ß", "€", "😀", "\ufffd"]
    for _ in range(300):
        good = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))).encode()
        data = bytearray(good)
        for _ in range(rng.randint(0, 4)):  # stray, truncated or impossible bytes
            data.insert(rng.randint(0, len(data)), rng.choice([0x80, 0xBF, 0xC3, 0xE2, 0xF0,
                                                               0xF8, 0xFF]))
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 6))))
        rep = _Utf8Repair()
        out = b"".join(rep.feed(bytes(data[a:b])) for a, b in zip([0, *cuts], [*cuts, len(data)],
                                                                  strict=True))
        out += rep.flush()
        want = bytes(data).decode("utf-8", "replace")
        assert out.decode() == want
        assert rep.replaced == want.count("\ufffd") - bytes(data).count("\ufffd".encode())


def test_allow_other_hosts_crawls_the_other_host(server: LocalServer, tmp_path: Path) -> None:
    """End to end: links to another host (localhost vs 127.0.0.1) are fetched and written."""
    from sites import page_html

    for i in range(2):
        server.route(f"/guide/{i}.html", Response(body=page_html(i)))
    other = f"http://localhost:{server.port}"
    server.route("/llms.txt", text(f"# X\n\n## Docs\n\n- [0]({other}/guide/0.html)\n"
                                   f"- [1]({other}/guide/1.html)\n"))
    cfg = write_config(tmp_path, server.url("/llms.txt"), allow_other_hosts=True)
    r = cli(cfg, "crawl", "docs", timeout=120)
    assert "Traceback" not in r.stderr
    written = sorted(p.relative_to(tmp_path / "out" / "md").as_posix()
                     for p in (tmp_path / "out" / "md").rglob("*.md"))
    host = f"localhost_{server.port}"
    assert written == [f"{host}/guide/0.md", f"{host}/guide/1.md"], (written, r.stderr)
