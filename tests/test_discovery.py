"""Discovery through a real HTTP server on 127.0.0.1: every source kind, limit and attack."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path

import httpx
import pytest
from httpserver import LocalServer, Response

from sitemap_crawler.config import Settings
from sitemap_crawler.discover.sitemap import XmlParser
from sitemap_crawler.discover.sources import COMMON_SITEMAP_PATHS, DiscoveryStats, discover
from sitemap_crawler.errors import DiscoveryError

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML = "application/xml"


def urlset(*urls: str, extra: str = "") -> str:
    body = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">{body}{extra}</urlset>\n'


def index(*locs: str) -> str:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in locs)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">{body}'
            "</sitemapindex>")


def xml(body: str | bytes, **kw: object) -> Response:
    return Response(body=body, content_type=XML, **kw)  # type: ignore[arg-type]


def run(sources: list[str], **settings: object) -> tuple[list, DiscoveryStats]:
    stats = DiscoveryStats()
    s = dataclasses.replace(Settings(), **settings)
    with httpx.Client(timeout=10) as client:
        entries = list(discover(sources, s, client, stats))
    return entries, stats


def fail(sources: list[str], **settings: object) -> str:
    with pytest.raises(DiscoveryError) as ei:
        run(sources, **settings)
    msg = str(ei.value)
    assert "\n" not in msg and msg
    return msg


# --- XML sitemaps ----------------------------------------------------------------------


def test_urlset_fields_are_normalised(server: LocalServer) -> None:
    u = server.url
    doc = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>{u('/a')}</loc>
    <lastmod>2024-01-15T10:20:30+00:00</lastmod>
    <changefreq>weekly</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc> {u('/b?x=1&amp;y=2')} </loc><lastmod>2024-01-15</lastmod>
       <changefreq>DAILY</changefreq><priority>1.5</priority>
       <image:image><image:loc>{u('/img.png')}</image:loc></image:image></url>
  <url><priority>-3</priority><changefreq>sometimes</changefreq><loc>{u('/c')}</loc>
       <lastmod>2024-03-10T08:00:00+02:00</lastmod></url>
  <url><loc>{u('/d')}</loc><lastmod>yesterday</lastmod><priority>high</priority></url>
  <url><loc>{u('/e')}</loc><lastmod>2024-02-30T00:00:00Z</lastmod></url>
  <url><loc>{u('/f')}</loc><lastmod>2024-02-29T23:59:59.123Z</lastmod></url>
</urlset>"""
    server.route("/sitemap.xml", xml(doc))
    entries, stats = run([u("/sitemap.xml")])
    got = [(e.url, e.lastmod, e.changefreq, e.priority) for e in entries]
    assert got == [
        (u("/a"), "2024-01-15T10:20:30Z", "weekly", 0.8),
        (u("/b?x=1&y=2"), "2024-01-15T00:00:00Z", "daily", 1.0),
        (u("/c"), "2024-03-10T06:00:00Z", None, 0.0),
        (u("/d"), None, None, None),
        (u("/e"), None, None, None),
        (u("/f"), "2024-02-29T23:59:59Z", None, None),
    ]
    assert all(e.source == u("/sitemap.xml") for e in entries)
    assert stats.sitemaps_read == 1 and stats.urls_found == 6 and not stats.errors
    assert [(s.kind, s.urls) for s in stats.sources] == [("urlset", 6)]


def _docs(base: str) -> list[bytes]:
    """Documents that exercise the fast path, the hand-over to lxml, and lxml alone."""
    blocks = [
        f"\n  <url>\n    <loc>{base}/p/{n}?a=1&amp;b=&#50;</loc>\n"
        f"    <lastmod>2024-0{1 + n % 9}-1{n % 10}T0{n % 10}:00:00+0{n % 3}:00</lastmod>\n"
        f"    <changefreq>{['daily', 'Weekly', 'bogus'][n % 3]}</changefreq>\n"
        f"    <priority>0.{n % 10}</priority>\n"
        f'    <xhtml:link rel="alternate" hreflang="de" href="{base}/de/{n}"/>\n  </url>'
        for n in range(300)
    ]
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<?xml-stylesheet href="s.xsl"?>\n'
            f'<urlset xmlns="{NS}" xmlns:xhtml="http://www.w3.org/1999/xhtml">')
    odd = (f"<url><!-- c --><loc><![CDATA[{base}/cdata]]></loc></url>"
           f"<url>\n<loc>{base}/after</loc></url>")
    return [
        (head + "".join(blocks) + "\n</urlset>\n").encode(),
        (head + "".join(blocks[:150]) + odd + "".join(blocks[150:])
         + "</urlset><!-- end -->").encode(),
        (f'<?xml version="1.0" encoding="ISO-8859-1"?><urlset xmlns="{NS}">'
         f"<url><loc>{base}/caf\xe9</loc></url></urlset>").encode("latin-1"),
        (f'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">'
         f"<url><loc>{base}/old-ns</loc></url></urlset>").encode(),
        f"<urlset><url><loc>{base}/no-ns</loc></url></urlset>".encode(),
    ]


@pytest.mark.parametrize("doc_no", range(5))
def test_fast_path_and_lxml_agree(doc_no: int) -> None:
    """The regex fast path, its hand-over to lxml, and lxml alone give identical entries."""
    doc = _docs("https://example.com")[doc_no]
    rnd = random.Random(doc_no)

    def parse(fast: bool) -> tuple[list, XmlParser]:
        p = XmlParser("src", 10**6, fast=fast)
        out, i = [], 0
        while i < len(doc):
            step = rnd.choice([1, 7, 64, 500, 4096, 100_000])
            out += p.feed(doc[i : i + step])
            i += step
        out += p.close()
        assert p.warning is None
        return out, p

    fast, pf = parse(True)
    slow, ps = parse(False)
    assert fast == slow and fast
    assert ps.fast_items == 0
    if doc_no == 0:
        assert pf.fast_items == 300
        assert fast[2].url == "https://example.com/p/2?a=1&b=2"
        assert fast[2].lastmod == "2024-03-12T00:00:00Z" and fast[2].changefreq is None
    if doc_no == 1:
        assert 0 < pf.fast_items < len(fast)  # handed over half-way, nothing lost
        assert [e.url for e in fast].count("https://example.com/cdata") == 1
        assert len(fast) == 302
    if doc_no == 2:
        assert fast[0].url == "https://example.com/caf\xe9"


def test_sitemap_index_nested_two_levels(server: LocalServer) -> None:
    u = server.url
    server.route("/index.xml", xml(index(u("/sub-index.xml"), u("/s3.xml"))))
    server.route("/sub-index.xml", xml(index(u("/s1.xml"), u("/s2.xml"))))
    for i in (1, 2, 3):
        server.route(f"/s{i}.xml", xml(urlset(u(f"/page/{i}a"), u(f"/page/{i}b"))))
    entries, stats = run([u("/index.xml")])
    assert [e.url for e in entries] == [u(f"/page/{i}{c}") for i in (1, 2, 3) for c in "ab"]
    assert entries[0].source == u("/s1.xml")
    assert stats.sitemap_indexes == 2 and stats.sitemaps_read == 5
    assert [s.kind for s in stats.sources] == ["sitemapindex", "sitemapindex", "urlset",
                                               "urlset", "urlset"]


def test_discovery_streams(server: LocalServer) -> None:
    """The first URL is out before the second child sitemap is even requested."""
    u = server.url
    server.route("/index.xml", xml(index(u("/s1.xml"), u("/s2.xml"))))
    server.route("/s1.xml", xml(urlset(u("/a"))))
    server.route("/s2.xml", xml(urlset(u("/b"))))
    with httpx.Client(timeout=10) as client:
        gen = discover([u("/index.xml")], Settings(), client, DiscoveryStats())
        assert next(gen).url == u("/a")
        assert server.hits("/s2.xml") == []
        assert [e.url for e in gen] == [u("/b")]


@pytest.mark.parametrize("ctype", ["application/x-gzip", "application/gzip",
                                   "application/octet-stream"])
def test_gzip_child_sniffed_by_magic(server: LocalServer, ctype: str) -> None:
    u = server.url
    server.route("/index.xml", xml(index(u("/s1.xml.gz"), u("/plain.gz"))))
    server.route("/s1.xml.gz", Response(body=gzip.compress(urlset(u("/z1")).encode()),
                                        content_type=ctype))
    # named .gz but not compressed: the bytes decide
    server.route("/plain.gz", Response(body=urlset(u("/z2")), content_type=ctype))
    entries, stats = run([u("/index.xml")])
    assert [e.url for e in entries] == [u("/z1"), u("/z2")]
    assert [s.gzip for s in stats.sources] == [False, True, False]


def test_gzip_with_content_encoding_on_top(server: LocalServer) -> None:
    """Transport gzip over a gzip file (two layers), and a lone layer mislabelled both ways."""
    u = server.url
    inner = gzip.compress(urlset(u("/double")).encode())
    server.route("/double.xml.gz", Response(body=gzip.compress(inner),
                                            content_type="application/x-gzip",
                                            headers={"Content-Encoding": "gzip"}))
    server.route("/single.xml.gz", Response(body=gzip.compress(urlset(u("/single")).encode()),
                                            content_type="application/x-gzip",
                                            headers={"Content-Encoding": "gzip"}))
    server.route("/liar.xml", xml(urlset(u("/liar")), headers={"Content-Encoding": "gzip"}))
    server.route("/deflate.xml", xml(zlib.compress(urlset(u("/deflate")).encode()),
                                     headers={"Content-Encoding": "deflate"}))
    server.route("/index.xml", xml(index(u("/double.xml.gz"), u("/single.xml.gz"),
                                         u("/liar.xml"), u("/deflate.xml"))))
    entries, stats = run([u("/index.xml")])
    assert [e.url for e in entries] == [u("/double"), u("/single"), u("/liar"), u("/deflate")]
    assert not stats.errors


def test_chunked_transfer_splits_blocks_anywhere(server: LocalServer) -> None:
    u = server.url
    urls = [u(f"/chunked/{n}") for n in range(500)]
    server.route("/sitemap.xml", xml(urlset(*urls), chunks=97))
    entries, _ = run([u("/sitemap.xml")])
    assert [e.url for e in entries] == urls


# --- robots.txt, bare sites, llms.txt, text, feeds -------------------------------------


def test_robots_txt_sitemap_lines_including_itself(server: LocalServer) -> None:
    u = server.url
    robots = (f"User-agent: *\nDisallow: /private\n\nSitemap: {u('/s1.xml')}\n"
              f"sitemap:{u('/robots.txt')}\n# Sitemap: {u('/commented.xml')}\nSITEMAP: /s2.xml\n")
    server.route("/robots.txt", Response(body=robots, content_type="text/plain"))
    server.route("/s1.xml", xml(urlset(u("/one"))))
    server.route("/s2.xml", xml(urlset(u("/two"))))
    entries, stats = run([u("/robots.txt")])
    assert [e.url for e in entries] == [u("/one"), u("/two")]
    assert len(server.hits("/robots.txt")) == 1
    assert server.hits("/commented.xml") == []
    assert any("already read" in e for e in stats.errors)


def test_bare_site_prefers_robots_sitemaps(server: LocalServer) -> None:
    u = server.url
    server.route("/robots.txt", Response(body=f"Sitemap: {u('/custom.xml')}\n",
                                         content_type="text/plain"))
    server.route("/custom.xml", xml(urlset(u("/from-robots"))))
    server.route("/sitemap.xml", xml(urlset(u("/from-probe"))))
    entries, _ = run([server.base])
    assert [e.url for e in entries] == [u("/from-robots")]
    assert server.hits("/sitemap.xml") == []
    assert len(server.hits("/llms.txt")) == 1


def test_bare_site_probes_common_paths_first_hit_wins(server: LocalServer) -> None:
    u = server.url
    server.route("/sitemap.xml", Response(body="<!DOCTYPE html><html><body>soft 404</body></html>"))
    server.route("/sitemap_index.xml", xml(index(u("/s1.xml"))))
    server.route("/sitemap-index.xml", xml(urlset(u("/never"))))
    server.route("/s1.xml", xml(urlset(u("/probed"))))
    server.route("/llms.txt", Response(body=f"# Site\n\n- [Doc]({u('/doc.md')})\n",
                                       content_type="text/plain"))
    entries, stats = run([server.base + "/"])
    assert [e.url for e in entries] == [u("/probed"), u("/doc.md")]
    assert server.hits("/sitemap-index.xml") == []
    assert len(server.hits("/robots.txt")) == 1 and len(server.hits("/sitemap.xml")) == 1
    assert not stats.errors  # misses while probing are not warnings


def test_bare_site_with_nothing_is_one_clear_error(server: LocalServer) -> None:
    msg = fail([server.base])
    assert server.base in msg and "no sitemap found" in msg
    assert all(len(server.hits(p)) == 1 for p in COMMON_SITEMAP_PATHS)


def test_llms_txt(server: LocalServer) -> None:
    u = server.url
    doc = f"""# Example Project

> Example is a library for examples.

Some notes in prose with a [stray link]({u('/prose')}) that is not a list item.

## Docs

- [Quick start]({u('/docs/quickstart.md')}): how to begin
- [API reference](api.md "API"): relative to the file
* [Up one](../guide.md)
1. [**Bold** name](<spaced name.md>)
- [Elsewhere](https://other.example/page)
- [Anchor only](#top)

```
- [In a code block]({u('/code')})
```

random stray line
### Sub heading
- [Deep]({u('/docs/deep')})

## Optional

- [Changelog]({u('/changelog')}): skippable
"""
    server.route("/docs/llms.txt", Response(body=doc, content_type="text/markdown"))
    entries, stats = run([u("/docs/llms.txt")])
    got = [(e.url, e.title, e.section, e.optional) for e in entries]
    assert got == [
        (u("/docs/quickstart.md"), "Quick start", "Docs", False),
        (u("/docs/api.md"), "API reference", "Docs", False),
        (u("/guide.md"), "Up one", "Docs", False),
        (u("/docs/spaced%20name.md"), "Bold name", "Docs", False),
        (u("/docs/deep"), "Deep", "Docs", False),
        (u("/changelog"), "Changelog", "Optional", True),
    ]
    assert stats.cross_host == 1 and stats.invalid_urls == 1
    assert stats.sources[0].kind == "llms"


def test_plain_text_sitemap(server: LocalServer) -> None:
    u = server.url
    body = f"\ufeff{u('/t1')}\n\n  {u('/t2')}  \r\nnot a url\n{u('/t3')}"
    server.route("/urls.txt", Response(body=body, content_type="text/plain"))
    entries, stats = run([u("/urls.txt")])
    assert [e.url for e in entries] == [u("/t1"), u("/t2"), u("/t3")]
    assert stats.sources[0].kind == "text"


def test_rss_and_atom_feeds(server: LocalServer) -> None:
    u = server.url
    rss = f"""<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
<image><url>{u('/logo.png')}</url></image>
<item><title>First</title><link>{u('/post/1')}</link>
<pubDate>Tue, 10 Jun 2003 04:00:00 +0200</pubDate></item>
<item><title>Second</title><guid>{u('/post/2')}</guid></item></channel></rss>"""
    atom = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>F</title><link href="{u('/')}"/>
<entry><title>A</title><link rel="self" href="{u('/self')}"/><link href="{u('/a')}"/>
<updated>2003-12-13T18:30:02Z</updated></entry>
<entry><title>B</title><link rel="alternate" href="{u('/b')}"/>
<published>2003-12-13T08:29:29-04:00</published></entry></feed>"""
    server.route("/rss.xml", Response(body=rss, content_type="application/rss+xml"))
    server.route("/atom.xml", Response(body=atom, content_type="application/atom+xml"))
    entries, stats = run([u("/rss.xml"), u("/atom.xml")])
    assert [(e.url, e.lastmod, e.title) for e in entries] == [
        (u("/post/1"), "2003-06-10T02:00:00Z", "First"),
        (u("/post/2"), None, "Second"),
        (u("/a"), "2003-12-13T18:30:02Z", "A"),
        (u("/b"), "2003-12-13T12:29:29Z", "B"),
    ]
    assert [s.kind for s in stats.sources] == ["rss", "atom"]


def test_kind_is_sniffed_not_named(server: LocalServer) -> None:
    u = server.url
    server.route("/list.txt", Response(body=urlset(u("/x1")), content_type="text/plain"))
    server.route("/sitemap.xml", Response(body=f"{u('/x2')}\n", content_type="text/xml"))
    server.route("/feed", Response(body=f"<rss><channel><item><link>{u('/x3')}</link></item>"
                                   "</channel></rss>", content_type="text/html"))
    server.route("/robots", Response(body=f"User-agent: *\nSitemap: {u('/list.txt')}\n"))
    entries, stats = run([u("/sitemap.xml"), u("/feed"), u("/robots")])
    assert [e.url for e in entries] == [u("/x2"), u("/x3"), u("/x1")]
    assert [s.kind for s in stats.sources] == ["text", "rss", "robots", "urlset"]


# --- hosts, limits, loops --------------------------------------------------------------


def test_cross_host_and_invalid_urls_are_dropped_and_counted(server: LocalServer) -> None:
    p = server.port
    here = f"http://localhost:{p}"
    doc = urlset(f"{here}/a", f"http://www.localhost:{p}/b", f"HTTP://LOCALHOST:{p}/c",
                 f"http://127.0.0.1:{p}/x", "https://other.example/y", "ftp://localhost/z",
                 "not a url", "", "/relative", f"{here}/sp ace")
    server.route("/sitemap.xml", xml(doc))
    entries, stats = run([f"{here}/sitemap.xml"])
    assert [e.url for e in entries] == [f"{here}/a", f"http://www.localhost:{p}/b",
                                        f"HTTP://LOCALHOST:{p}/c"]
    assert stats.cross_host == 2 and stats.invalid_urls == 5 and stats.urls_found == 3


def test_child_sitemap_on_other_host_is_skipped(server: LocalServer) -> None:
    p = server.port
    server.route("/index.xml", xml(index(f"http://localhost:{p}/s.xml",
                                         f"http://127.0.0.1:{p}/s.xml")))
    server.route("/s.xml", xml(urlset(f"http://localhost:{p}/ok")))
    entries, stats = run([f"http://localhost:{p}/index.xml"])
    assert [e.url for e in entries] == [f"http://localhost:{p}/ok"]
    assert stats.cross_host == 1 and len(server.hits("/s.xml")) == 1


def test_depth_limit(server: LocalServer) -> None:
    u = server.url
    server.route("/i0.xml", xml(index(u("/i1.xml"), u("/top.xml"))))
    server.route("/i1.xml", xml(index(u("/i2.xml"))))
    server.route("/i2.xml", xml(index(u("/deep.xml"))))
    server.route("/top.xml", xml(urlset(u("/shallow"))))
    server.route("/deep.xml", xml(urlset(u("/deep"))))
    entries, stats = run([u("/i0.xml")], max_sitemap_depth=1)
    assert [e.url for e in entries] == [u("/shallow")]
    assert server.hits("/i2.xml") == [] and server.hits("/deep.xml") == []
    assert any("max_sitemap_depth" in e for e in stats.errors)
    entries, _ = run([u("/i0.xml")])  # default depth 5 reaches it
    assert [e.url for e in entries] == [u("/deep"), u("/shallow")]


def test_index_listing_itself_and_child_redirecting_to_parent(server: LocalServer) -> None:
    u = server.url
    server.route("/index.xml", xml(index(u("/index.xml"), u("/back.xml"), u("/s.xml"),
                                         u("/s.xml"))))
    server.route("/back.xml", Response(301, headers={"Location": "/index.xml"}))
    server.route("/s.xml", xml(urlset(u("/page"))))
    entries, stats = run([u("/index.xml")])
    assert [e.url for e in entries] == [u("/page")]
    assert len(server.hits("/index.xml")) == 1 and len(server.hits("/s.xml")) == 1
    assert sum("sitemap loop" in e for e in stats.errors) == 3


def test_redirects_are_followed_with_a_cap(server: LocalServer) -> None:
    u = server.url
    server.route("/old.xml", Response(302, headers={"Location": u("/new.xml")}))
    server.route("/new.xml", xml(urlset(u("/moved"))))
    for i in range(5):
        server.route(f"/r{i}", Response(307, headers={"Location": f"/r{i + 1}"}))
    server.route("/r5", xml(urlset(u("/far"))))
    server.route("/index.xml", xml(index(u("/r0"), u("/old.xml"))))
    entries, stats = run([u("/index.xml")], max_redirects=3)
    assert [e.url for e in entries] == [u("/moved")]
    assert entries[0].source == u("/new.xml")
    assert any("more than 3 redirects" in e for e in stats.errors)


def test_urls_per_file_cap(server: LocalServer) -> None:
    u = server.url
    urls = [u(f"/n/{i}") for i in range(8)]
    server.route("/fast.xml", xml(urlset(*urls)))
    server.route("/lxml.xml", xml(urlset(*urls).replace("<url>", "<url><!-- x -->")))
    for path in ("/fast.xml", "/lxml.xml"):
        entries, stats = run([u(path)], max_urls_per_sitemap=5)
        assert [e.url for e in entries] == urls[:5]
        assert stats.truncated_files == 1
        assert any("max_urls_per_sitemap" in e for e in stats.errors)


def test_max_sitemaps_and_max_size(server: LocalServer) -> None:
    u = server.url
    server.route("/index.xml", xml(index(*(u(f"/s{i}.xml") for i in range(5)))))
    for i in range(5):
        server.route(f"/s{i}.xml", xml(urlset(u(f"/p{i}"))))
    entries, stats = run([u("/index.xml")], max_sitemaps=3)
    assert [e.url for e in entries] == [u("/p0"), u("/p1")]
    assert server.hits("/s2.xml") == [] and any("max_sitemaps" in e for e in stats.errors)

    big = urlset(*(u(f"/big/{i:04d}") for i in range(1000)))
    server.route("/big.xml", xml(big))
    entries, stats = run([u("/big.xml")], max_sitemap_size=20_000)
    assert 0 < len(entries) < 1000 and stats.truncated_files == 1
    assert [e.url for e in entries] == [u(f"/big/{i:04d}") for i in range(len(entries))]
    assert stats.bytes_downloaded <= 20_000 + 65536


def test_failing_children_are_warnings_until_nothing_is_left(server: LocalServer) -> None:
    u = server.url
    server.route("/index.xml", xml(index(u("/gone.xml"), u("/boom.xml"), u("/ok.xml"),
                                         u("/html.xml"))))
    server.route("/boom.xml", Response(500, "oops"))
    server.route("/ok.xml", xml(urlset(u("/fine"))))
    server.route("/html.xml", Response(body="<html><body>hi</body></html>"))
    entries, stats = run([u("/index.xml")])
    assert [e.url for e in entries] == [u("/fine")]
    assert len(stats.errors) == 3
    assert any("HTTP 404" in e for e in stats.errors)
    assert any("HTTP 500" in e for e in stats.errors)
    assert any("root element is <html>" in e for e in stats.errors)

    server.route("/bad-index.xml", xml(index(u("/gone.xml"), u("/boom.xml"))))
    msg = fail([u("/bad-index.xml")])
    assert "no URLs found" in msg and u("/bad-index.xml") in msg


# --- bad roots -------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    "<!DOCTYPE html>\n<html><head><title>x</title></head><body></body></html>",
    "<!doctype html><html lang=en><meta charset=utf-8><p>unclosed",
    '<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>',
])
def test_html_root_is_a_one_line_error(server: LocalServer, body: str) -> None:
    server.route("/sitemap.xml", Response(body=body))
    msg = fail([server.url("/sitemap.xml")])
    assert msg == f"{server.url('/sitemap.xml')}: not a sitemap: root element is <html>"


@pytest.mark.parametrize(("route", "expect"), [
    (Response(404, "nope"), "HTTP 404"),
    (Response(body="<notasitemap/>", content_type=XML), "root element is <notasitemap>"),
    (Response(body="<urlset><url>", content_type=XML), "malformed XML"),
    (Response(body=b"\x00\x01\x02binary\xff" * 20, content_type=XML), "binary data"),
    (Response(body="   \n ", content_type=XML), "empty document"),
    (Response(body="just some words\nand more words\n", content_type="text/plain"),
     "no links found"),
    (Response(body="User-agent: *\nDisallow: /\n", content_type="text/plain"),
     "lists no Sitemap: lines"),
])
def test_bad_root_sources(server: LocalServer, route: Response, expect: str) -> None:
    server.route("/src", route)
    msg = fail([server.url("/src")])
    assert msg.startswith(server.url("/src") + ": ") and expect in msg, msg


def test_not_a_url_source() -> None:
    msg = fail(["ftp://example.com/sitemap.xml"])
    assert "not an http(s) URL" in msg


def test_malformed_xml_keeps_what_came_before(server: LocalServer) -> None:
    u = server.url
    bad = f"<url><loc>{u('/m4')}</loc><bad & </url><url><loc>{u('/m5')}</loc></url>"
    doc = urlset(u("/m1"), u("/m2"), u("/m3")).replace("</urlset>", bad + "</urlset>")
    server.route("/broken.xml", xml(doc))
    entries, stats = run([u("/broken.xml")])
    assert [e.url for e in entries] == [u("/m1"), u("/m2"), u("/m3")]
    assert len(stats.errors) == 1 and "malformed XML" in stats.errors[0]
    truncated = urlset(u("/t1"), u("/t2"))[:-30]
    server.route("/cut.xml", xml(truncated))
    entries, stats = run([u("/cut.xml")])
    assert [e.url for e in entries] == [u("/t1")]
    assert "malformed XML" in stats.errors[0]


# --- hostile input ---------------------------------------------------------------------


def test_xxe_does_not_leak_local_files(server: LocalServer, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    token = "TOP-SECRET-" + str(random.random())
    secret.write_text(token)
    u = server.url
    general = (f'<?xml version="1.0"?>\n<!DOCTYPE urlset [\n'
               f'  <!ENTITY xxe SYSTEM "file://{secret}">\n]>\n'
               f'<urlset xmlns="{NS}"><url><loc>{u("/x")}&xxe;</loc></url>'
               f'<url><loc>&xxe;</loc></url><url><loc>{u("/ok")}</loc></url></urlset>')
    parameter = (f'<?xml version="1.0"?>\n<!DOCTYPE urlset [\n'
                 f'  <!ENTITY % file SYSTEM "file://{secret}">\n'
                 f'  <!ENTITY % dtd SYSTEM "{u("/evil.dtd")}">\n  %dtd;\n]>\n'
                 f'<urlset xmlns="{NS}"><url><loc>{u("/p")}</loc></url></urlset>')
    server.route("/evil.dtd", Response(body='<!ENTITY % all "<!ENTITY send SYSTEM '
                                       f"'{u('/leak')}?%file;'>\">%all;",
                                       content_type="application/xml-dtd"))
    server.route("/general.xml", xml(general))
    server.route("/parameter.xml", xml(parameter))
    for path in ("/general.xml", "/parameter.xml"):
        try:
            entries, stats = run([u(path)])
        except DiscoveryError as e:
            assert token not in str(e)
            continue
        dump = json.dumps([dataclasses.asdict(e) for e in entries]) + json.dumps(stats.errors)
        assert token not in dump
    assert server.hits("/evil.dtd") == [] and server.hits("/leak") == []
    entries, _ = run([u("/general.xml")])
    assert u("/ok") in [e.url for e in entries]


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>{base}/b</loc></url><url><loc>{base}/a&lol9;</loc><lastmod>&lol9;</lastmod></url>
</urlset>"""

MEASURE = """
import json, sys, time
import httpx
from sitemap_crawler.config import Settings
from sitemap_crawler.discover.sources import DiscoveryStats, discover
from sitemap_crawler.errors import DiscoveryError
with httpx.Client(timeout=30) as c:
    c.get(sys.argv[1].rsplit("/", 1)[0] + "/warm-up")  # load httpx's lazy imports first
# Peak RSS from VmHWM, reset first ("5" > clear_refs): ru_maxrss missed a 1 GiB peak here.
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS:")
stats, urls, error, t = DiscoveryStats(), [], None, time.perf_counter()
try:
    with httpx.Client(timeout=30) as c:
        urls = [e.url for e in discover([sys.argv[1]], Settings(), c, stats)]
except DiscoveryError as e:
    error = str(e)
print(json.dumps({"grew_mb": (status("VmHWM:") - before) / 1024,
                  "seconds": time.perf_counter() - t, "urls": urls, "error": error,
                  "errors": stats.errors, "truncated": stats.truncated_files}))
"""


def measure(url: str) -> dict:
    """discover(url) in a fresh interpreter: what it found and how much its peak RSS grew."""
    out = subprocess.run([sys.executable, "-c", MEASURE, url], capture_output=True, text=True,
                         timeout=120, check=True)
    return json.loads(out.stdout)


def test_billion_laughs_is_not_expanded(server: LocalServer) -> None:
    server.route("/lol.xml", xml(BILLION_LAUGHS.replace("{base}", server.base)))
    r = measure(server.url("/lol.xml"))
    assert r["seconds"] < 5 and r["grew_mb"] < 30, r
    assert all(len(u) < 200 for u in r["urls"])
    assert r["urls"][0] == server.url("/b")  # what came before the bomb is kept
    assert len(r["errors"]) <= 1 and all("\n" not in e for e in r["errors"])


@pytest.fixture(scope="session")
def zero_bomb() -> bytes:
    """1 GiB of zeros as one gzip member of about 1 MiB."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)
    block = bytes(1 << 20)
    data = b"".join(c.compress(block) for _ in range(1024)) + c.flush()
    assert len(data) < 2 << 20
    return data


@pytest.fixture(scope="session")
def blanks_bomb() -> bytes:
    """256 MiB of blanks as one gzip member (~250 KiB): far beyond max_sitemap_size."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)
    block = b" " * (1 << 20)
    return b"".join(c.compress(block) for _ in range(256)) + c.flush()


def test_gzip_bomb_as_root_is_refused_in_bounded_memory(server: LocalServer,
                                                        zero_bomb: bytes) -> None:
    server.route("/bomb.xml.gz", Response(body=zero_bomb, content_type="application/gzip"))
    r = measure(server.url("/bomb.xml.gz"))
    assert r["error"] and "binary data" in r["error"] and "\n" not in r["error"]
    assert r["grew_mb"] < 30 and r["seconds"] < 10, r


def test_gzip_bomb_child_is_cut_at_max_sitemap_size(server: LocalServer, blanks_bomb: bytes,
                                                    zero_bomb: bytes) -> None:
    u = server.url
    # a valid start, the bomb, a URL that must never be reached: three gzip members, one file
    xml_bomb = (gzip.compress(f'<?xml version="1.0"?><urlset xmlns="{NS}"><url><loc>'
                              f'{u("/kept")}</loc></url>'.encode()) + blanks_bomb
                + gzip.compress(f"<url><loc>{u('/never')}</loc></url></urlset>".encode()))
    server.route("/xml-bomb.xml.gz", Response(body=xml_bomb, content_type="application/gzip"))
    server.route("/zero-bomb.gz", Response(body=zero_bomb, content_type="application/gzip"))
    server.route("/s.xml", xml(urlset(u("/fine"))))
    server.route("/index.xml", xml(index(u("/zero-bomb.gz"), u("/xml-bomb.xml.gz"),
                                         u("/s.xml"))))
    r = measure(u("/index.xml"))
    assert r["urls"] == [u("/kept"), u("/fine")], r
    assert r["grew_mb"] < 30 and r["seconds"] < 20, r
    assert len(r["errors"]) == 2 and all("\n" not in e for e in r["errors"])
    assert "max_sitemap_size" in r["errors"][1] and r["truncated"] == 1


def test_brotli_content_encoding_bomb_is_cut_at_max_sitemap_size(server: LocalServer) -> None:
    """httpx decodes brotli with no output limit (1 GiB from 1.6 KiB in one call, measured):
    discovery decodes it in steps (decoding.py), so the size cap holds."""
    import brotli

    u = server.url
    body = brotli.compress(f'<?xml version="1.0"?><urlset xmlns="{NS}"><url><loc>'
                           f'{u("/kept")}</loc></url>'.encode() + b" " * (1 << 30)
                           + f"<url><loc>{u('/never')}</loc></url></urlset>".encode(),
                           quality=5)
    assert len(body) < 64 * 1024
    server.route("/br.xml", Response(body=body, content_type="application/xml",
                                     headers={"Content-Encoding": "br"}))
    r = measure(u("/br.xml"))
    assert r["urls"] == [u("/kept")], r
    assert r["grew_mb"] < 30 and r["seconds"] < 10, r
    assert r["truncated"] == 1 and "max_sitemap_size" in r["errors"][0], r


def test_unsupported_content_encoding_is_one_line_error(server: LocalServer) -> None:
    server.route("/z.xml", Response(body=b"(\xb5/\xfd" + bytes(20), content_type="application/xml",
                                    headers={"Content-Encoding": "zstd"}))
    r = measure(server.url("/z.xml"))
    assert r["urls"] == [] and r["error"] and "zstd" in r["error"] and "\n" not in r["error"], r


def test_millions_of_junk_elements_do_not_grow_the_tree(server: LocalServer) -> None:
    """Elements lxml reports no event for are swept as the parse goes (bounded memory)."""
    u = server.url
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    junk = [b"<x/>" * 250_000] * 8  # 2M elements, 8 MB
    raw = [f'<urlset xmlns="{NS}"><url><lastmod>2024-01-01</lastmod>'.encode(),
           *junk, f"<loc>{u('/first')}</loc></url>".encode(),  # junk inside an item
           *junk, f"<url><loc>{u('/last')}</loc></url></urlset>".encode()]
    parts = [c.compress(part) for part in raw]
    server.route("/junk.xml.gz", Response(body=b"".join(parts) + c.flush(),
                                          content_type="application/gzip"))
    r = measure(u("/junk.xml.gz"))
    assert r["urls"] == [u("/first"), u("/last")] and not r["errors"], r
    assert r["grew_mb"] < 30, r  # measured ~3 MB; ~500 MB without the sweeps


def test_progress_reports_each_document(server: LocalServer) -> None:
    u = server.url
    server.route("/index.xml", xml(index(u("/s.xml"))))
    server.route("/s.xml", xml(urlset(u("/a"), u("/b"))))
    lines: list[str] = []
    with httpx.Client(timeout=10) as client:
        n = sum(1 for _ in discover([u("/index.xml")], Settings(), client, DiscoveryStats(),
                                    lines.append))
    assert n == 2
    assert lines == [f"sitemapindex {u('/index.xml')}: 0 URLs, 1 sitemaps",
                     f"urlset {u('/s.xml')}: 2 URLs"]


def test_million_urls_parse_speed_regression_guard(server: LocalServer) -> None:
    """Not the benchmark (bench/bench_discovery.py): a cheap guard against a 5x slowdown."""
    u = server.url
    body = urlset(*(u(f"/docs/page-{n}") for n in range(50_000)))
    server.route("/big.xml", xml(body.replace("</loc>", "</loc><lastmod>2024-01-01T00:00:00Z"
                                              "</lastmod><changefreq>daily</changefreq>"
                                              "<priority>0.5</priority>")))
    t = time.process_time()
    entries, _ = run([u("/big.xml")])
    took = time.process_time() - t
    assert len(entries) == 50_000 and entries[-1].priority == 0.5
    assert took < 1.5, f"{took:.2f}s CPU for 50k URLs (measured ~0.2s)"
