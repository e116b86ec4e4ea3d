"""The demo site, checked from the outside: a real server on 127.0.0.1, fetched with httpx.

These tests pin down what the demo (and the crawler tests built on it) rely on: discovery files
that list every page, validators that ignore the footer clock, and generations that change
exactly what ``changed_since``/``removed_since``/``added_since`` report.
"""

from __future__ import annotations

import email.utils
import gzip
import http.client
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from lxml import etree
from protego import Protego

from sitemap_crawler.demo import site as demosite
from sitemap_crawler.demo.site import DemoServer, DemoSite

NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


@pytest.fixture(scope="module")
def site() -> DemoSite:
    return demosite.generate()


@pytest.fixture
def server(site: DemoSite) -> Iterator[DemoServer]:
    with demosite.serve(site) as srv:
        yield srv


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10, follow_redirects=False) as c:
        yield c


def sitemap_entries(client: httpx.Client, base: str) -> dict[str, dict[str, str]]:
    """{url: {lastmod, changefreq, priority}} from the index and both children."""
    r = client.get(base + "/sitemap.xml")
    assert r.status_code == 200
    index = etree.fromstring(r.content)
    assert etree.QName(index).localname == "sitemapindex"
    children = index.xpath("sm:sitemap/sm:loc/text()", namespaces=NS)
    assert [urlsplit(c).path for c in children] == ["/sitemap-docs.xml", "/sitemap-blog.xml.gz"]
    assert len(index.xpath("sm:sitemap/sm:lastmod", namespaces=NS)) == 2
    entries: dict[str, dict[str, str]] = {}
    for child in children:
        r = client.get(child)
        assert r.status_code == 200
        data = r.content
        if child.endswith(".gz"):
            assert r.headers["content-type"] == "application/gzip"
            assert "content-encoding" not in r.headers
            data = gzip.decompress(data)
        urlset = etree.fromstring(data)
        assert etree.QName(urlset).localname == "urlset"
        for url in urlset.xpath("sm:url", namespaces=NS):
            fields = {etree.QName(e).localname: e.text for e in url}
            assert set(fields) == {"loc", "lastmod", "changefreq", "priority"}
            assert fields["loc"] not in entries
            entries[fields["loc"]] = fields
    return entries


def test_robots_points_at_the_sitemap_index_and_disallows_private(server, client, site):
    r = client.get(server.base_url + "/robots.txt")
    assert r.status_code == 200
    assert f"Sitemap: {server.base_url}/sitemap.xml" in r.text
    rp = Protego.parse(r.text)
    assert not rp.can_fetch(server.base_url + site.special["private"], "sitemap-crawler")
    assert rp.can_fetch(server.base_url + "/guide/getting-started.html", "sitemap-crawler")


def test_sitemap_index_and_gz_child_list_every_page(server, client, site):
    entries = sitemap_entries(client, server.base_url)
    assert {urlsplit(u).path for u in entries} == set(site.sitemap_paths())
    assert len(entries) == len(site.sitemap_paths()) >= 300
    # the non-ASCII path is percent-encoded in the sitemap; the llms.txt-only page is absent
    assert server.base_url + site.special["non_ascii_path"] in entries
    assert "%C3%A9" in site.special["non_ascii_path"]
    assert site.special["markdown_llms_only"] not in site.sitemap_paths()
    for fields in entries.values():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", fields["lastmod"])
        assert 0 < float(fields["priority"]) <= 1


def test_every_listed_page_answers_as_designed(server, client, site):
    sp = site.special
    sizes = []
    for url in sitemap_entries(client, server.base_url):
        path = urlsplit(url).path
        r = client.get(url)
        assert "content-length" in r.headers and int(r.headers["content-length"]) == len(
            r.content)
        if path == sp["missing"]:
            assert r.status_code == 404
            continue
        if path == sp["redirect"]:
            assert r.status_code == 301
            assert r.headers["location"] == server.base_url + sp["redirect_target"]
            continue
        assert r.status_code == 200, url  # incl. the private page: robots.txt guards it
        assert r.headers["etag"].startswith('"') and "last-modified" in r.headers
        ctype = r.headers["content-type"]
        if path.endswith(".md"):
            assert ctype == "text/markdown; charset=utf-8"
            assert r.text.startswith("# ")
        elif path.endswith(".pdf"):
            assert ctype == "application/pdf"
            assert r.content.startswith(b"%PDF-") and r.content.rstrip().endswith(b"%%EOF")
        elif path == sp["cp1252"]:
            assert ctype == "text/html"  # the charset is only in the <meta> tag
            assert b'content="text/html; charset=windows-1252"' in r.content
            with pytest.raises(UnicodeDecodeError):
                r.content.decode("utf-8")
            text = r.content.decode("cp1252")
            assert "\u201clike these\u201d" in text and "caf\u00e9" in text
        else:
            assert ctype == "text/html; charset=utf-8"
            body = r.text
            sizes.append(len(r.content))
            for tag in ("<header", "<nav class=\"sidebar\"", "<main", "<article>", "<h1>",
                        "<footer", "Generated at "):
                assert tag in body, (url, tag)
            if "/index.html" not in path and path not in ("/", sp["private"]):
                for tag in ("<h2", "<h3>", "<pre><code class=\"language-python\">", "<table>",
                            "<ul>", "<ol>", "<img ", "<blockquote", "<code>"):
                    assert tag in body, (url, tag)
                assert body.count("<a href=") >= 50
    assert min(sizes) >= 5_000 and max(sizes) <= 25_600
    assert len(sizes) >= 290


def test_designed_quirks(server, client, site):
    sp, base = site.special, server.base_url
    i18n = client.get(base + sp["i18n"]).text
    assert "é" in i18n and "ü" in i18n and "日本語" in i18n
    ja = client.get(base + sp["japanese"]).text
    assert '<html lang="ja">' in ja and "日本語" in ja
    cafe = client.get(base + sp["non_ascii_path"])
    assert cafe.status_code == 200 and "Zürich" in cafe.text
    # the server also accepts the path percent-encoded differently (as a crawler may send it)
    raw = client.get(base + "/blog/café-und-müsli-zürich-meetup.html")
    assert raw.status_code == 200
    canon = client.get(base + sp["canonical"]).text
    assert f'<link rel="canonical" href="{sp["canonical_target"]}">' in canon
    noindex = client.get(base + sp["noindex"]).text
    assert '<meta name="robots" content="noindex, nofollow">' in noindex
    md = client.get(base + sp["markdown_llms_only"])
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert client.get(base + "/no/such/page.html").status_code == 404


def test_conditional_get_answers_304(server, client):
    url = server.base_url + "/guide/installation.html"
    first = client.get(url)
    etag, lm = first.headers["etag"], first.headers["last-modified"]
    r = client.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.content == b"" and r.headers["etag"] == etag
    assert "content-length" not in r.headers  # RFC 9110: no Content-Length: 0 on a 304
    assert client.get(url, headers={"If-Modified-Since": lm}).status_code == 304
    stale = client.get(url, headers={"If-None-Match": '"stale"', "If-Modified-Since": lm})
    assert stale.status_code == 200  # If-None-Match wins over If-Modified-Since
    older = email.utils.format_datetime(
        email.utils.parsedate_to_datetime(lm).replace(year=2000), usegmt=True)
    old = client.get(url, headers={"If-Modified-Since": older})
    assert old.status_code == 200
    sm = client.get(server.base_url + "/sitemap.xml")
    again = client.get(server.base_url + "/sitemap.xml",
                       headers={"If-None-Match": sm.headers["etag"]})
    assert again.status_code == 304
    stats = server.stats()
    assert stats.requests == 7 and stats.ok == 4 and stats.not_modified == 3
    assert stats.by_status == {200: 4, 304: 3}
    assert stats.bytes_sent == sum(len(x.content) for x in (first, stale, old, sm))
    log = server.request_log[1]
    assert log.method == "GET" and log.status == 304 and log.path == "/guide/installation.html"
    assert log.headers["if-none-match"] == etag and "user-agent" in log.headers


def test_footer_clock_changes_but_validators_do_not(server, client):
    url = server.base_url + "/api/index.html"
    a, b = client.get(url), client.get(url)
    assert a.content != b.content
    clock = re.compile(rb"Generated at [^<]+")
    assert clock.sub(b"", a.content) == clock.sub(b"", b.content)
    assert a.headers["etag"] == b.headers["etag"]
    assert a.headers["last-modified"] == b.headers["last-modified"]


def test_head_and_keep_alive(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("HEAD", "/guide/installation.html")
        head = conn.getresponse()
        head.read()
        assert head.status == 200 and int(head.getheader("content-length")) > 5_000
        sock = conn.sock
        conn.request("GET", "/robots.txt")
        get = conn.getresponse()
        assert get.status == 200 and b"Sitemap:" in get.read()
        assert conn.sock is sock  # same connection: keep-alive honoured
    finally:
        conn.close()


def test_generation_switch_changes_exactly_what_the_site_reports(server, client, site):
    base = server.base_url
    before = sitemap_entries(client, base)
    etags0 = {}
    for url in before:
        r = client.get(url)
        if r.status_code == 200:
            etags0[urlsplit(url).path] = r.headers["etag"]
    server.set_generation(1)
    gen1 = site.at(1)
    changed, removed, added = gen1.changed_since(0), gen1.removed_since(0), gen1.added_since(0)
    assert len(removed) == 2 and len(added) == 3
    assert 10 <= len(changed) <= 20  # ~5 % of ~320 pages
    after = sitemap_entries(client, base)
    paths_after = {urlsplit(u).path for u in after}
    assert paths_after == {urlsplit(u).path for u in before} - removed | added
    etags1 = {}
    for url in after:
        r = client.get(url)
        if r.status_code == 200:
            etags1[urlsplit(url).path] = r.headers["etag"]
    differing = {p for p in etags0.keys() & etags1.keys() if etags0[p] != etags1[p]}
    assert differing == changed
    assert set(etags1) - set(etags0) == added
    for path in removed:
        assert client.get(base + path).status_code == 410
    for path in changed:  # lastmod moved forward in the sitemap for every changed page
        assert after[base + path]["lastmod"] > before[base + path]["lastmod"]
    unchanged = set(etags0) & set(etags1) - changed
    assert all(after[base + p]["lastmod"] == before[base + p]["lastmod"] for p in unchanged)


def test_generations_are_deterministic_and_cumulative():
    a, b = demosite.generate(3, pages=60, seed=11), demosite.generate(3, pages=60, seed=11)
    assert [p.path for p in a.pages] == [p.path for p in b.pages]
    assert all(a.etag(p) == b.etag(b.page(p.path)) for p in a.pages)
    assert a.changed_since(0) == b.changed_since(0)
    steps = [(a.at(g).removed_since(g - 1), a.at(g).added_since(g - 1)) for g in (1, 2, 3)]
    assert all(len(r) == 2 and len(n) == 3 for r, n in steps)
    ever_removed = set().union(*(r for r, _ in steps))
    ever_added = set().union(*(n for _, n in steps))
    assert a.removed_since(0) == ever_removed - ever_added
    assert a.added_since(0) == ever_added - ever_removed
    assert a.changed_since(3) == set() and a.at(0).added_since(0) == set()
    other = demosite.generate(0, pages=60, seed=12)
    assert [p.path for p in other.pages] != [p.path for p in a.at(0).pages]


def test_llms_txt_has_the_llmstxt_format(server, client, site):
    r = client.get(server.base_url + "/llms.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    lines = r.text.splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    assert lines[2].startswith("> ")
    h2 = [ln[3:] for ln in lines if ln.startswith("## ")]
    assert h2[-1] == "Optional" and len(h2) >= 3
    assert not any(ln.startswith("# ") for ln in lines[1:])
    items = [ln for ln in lines if ln.startswith("- ")]
    item_re = re.compile(r"- \[([^\]]+)\]\(([^)\s]+)\)(: .+)?")
    targets = []
    for ln in items:
        m = item_re.fullmatch(ln)
        assert m, ln
        targets.append(m.group(2))
    assert any(t.startswith("/") for t in targets)
    assert any(t.startswith(server.base_url) for t in targets)
    md = [t for t in targets if t.endswith(".md")]
    assert site.special["markdown_llms_only"] in md and len(md) == 4
    for t in targets:
        url = t if t.startswith("http") else server.base_url + t
        assert client.get(url).status_code == 200, url
