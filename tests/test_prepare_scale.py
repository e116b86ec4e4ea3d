"""The fast lanes of a million-URL prepare give the same result as the general ones.

The sitemap parser's strict tier (columns), the host check of a whole column, prepare's
column lane (``_admit_columns``), the sharded ``UrlSet`` and the plain ticket writes are
checked against the general code paths they stand in for, on tricky inputs, through a real
HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import httpx
import orjson
import pytest
import yaml
from httpserver import LocalServer, Response
from sites import write_config

from sitemap_crawler.commands.prepare import prepare
from sitemap_crawler.config import Settings, load_config
from sitemap_crawler.discover import sitemap
from sitemap_crawler.discover.sitemap import _NORMAL_STAMPS, Columns, XmlParser, norm_lastmod
from sitemap_crawler.discover.sources import DiscoveryStats, discover_batches
from sitemap_crawler.discover.urls import (
    UrlSet,
    host_matcher,
    normalize_url,
    plain_origin,
)
from sitemap_crawler.protocol.fsutil import write_new_file
from sitemap_crawler.protocol.tickets import HOST_MARK

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">'


def _block(loc: str, lastmod: str | None = None, changefreq: str | None = None,
           priority: str | None = None, ws: str = "") -> str:
    out = f"<url>{ws}<loc>{loc}</loc>{ws}"
    for tag, v in (("lastmod", lastmod), ("changefreq", changefreq), ("priority", priority)):
        if v is not None:
            out += f"<{tag}>{v}</{tag}>{ws}"
    return out + "</url>\n"


LASTMODS = ["2024-01-05T10:00:00Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
            "2024-04-31T00:00:00Z", "2024-04-30T23:59:59Z", "0000-01-01T00:00:00Z",
            "2024-01-01T24:00:00Z", "2024-01-01t00:00:00z", "2024-06-01T12:00:00+02:00",
            "2024-06-01T12:00:00.123Z", "2024-06-01", " 2024-06-01T12:00:00Z ", "",
            "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "garbage", "2024-12-31T23:59:60Z",
            "0000-02-29T00:00:00Z", "2400-02-29T00:00:00Z", "2100-02-29T00:00:00Z"]
FREQS = ["daily", "Weekly", " monthly ", "bogus", "", "never"]
PRIOS = ["0.5", "1.5", "-1", "abc", " 0.3 ", "", "nan", "0"]


def _tricky_docs(base: str) -> list[bytes]:
    rnd = random.Random(7)
    plain = [_block(f"{base}/p/{n}", rnd.choice(LASTMODS), rnd.choice(FREQS),
                    rnd.choice(PRIOS)) for n in range(400)]
    sparse = [_block(f"{base}/s/{n}?a=1&amp;b={n}",
                     rnd.choice([None, *LASTMODS]), rnd.choice([None, *FREQS]),
                     rnd.choice([None, *PRIOS]), ws=rnd.choice(["", "\n  ", " \t"]))
              for n in range(400)]
    odd = [  # each of these must leave the strict tier and still read the same
        f'<url><loc>{base}/ext</loc><image:image xmlns:image="x"><image:loc>{base}/i.png'
        "</image:loc></image:image></url>\n",
        f"<url><!-- c --><loc>{base}/comment</loc></url>\n",
        f"<url><loc><![CDATA[{base}/cdata]]></loc></url>\n",
        f"<url><loc>{base}/ent?a=1&#38;b=2</loc></url>\n",
        f"<url><loc>  {base}/padded  </loc></url>\n",
        "<url><loc></loc></url>\n",
        f"<url><priority>0.4</priority><loc>{base}/order</loc></url>\n",
        f"<url><loc>{base}/caf\u00e9</loc></url>\n",
        f'<url><loc xml:lang="en">{base}/attr</loc></url>\n',
        f"<url><loc>{base}/inner space</loc></url>\n",
        f"<url><loc>{base}/lt&lt;gt</loc><changefreq>da&#105;ly</changefreq></url>\n",
    ]
    mixed = plain[:150] + odd + plain[150:300] + odd[::-1] + plain[300:]
    return [
        (HEAD + "".join(plain) + "</urlset>\n").encode(),
        (HEAD + "\n  " + "  ".join(sparse) + "</urlset>").encode(),
        (HEAD + "".join(mixed) + "</urlset>\n").encode(),
        (HEAD + "".join(plain[:50]) + "".join(sparse[:50]) + "".join(plain[50:99])
         + "</urlset>").encode(),
    ]


@pytest.mark.parametrize("doc_no", range(4))
@pytest.mark.parametrize("max_items", [10**6, 120])
def test_strict_tier_fast_path_and_lxml_agree(doc_no: int, max_items: int) -> None:
    """Columns, the block regex and lxml give identical entries, chunked anyhow."""
    doc = _tricky_docs("https://example.com")[doc_no]

    def parse(**kw: bool) -> tuple[list, XmlParser]:
        rnd = random.Random(doc_no * 31 + max_items)
        p = XmlParser("src", max_items, **kw)
        out, i = [], 0
        while i < len(doc):
            step = rnd.choice([1, 13, 200, 4096, 50_000])
            out += p.feed(doc[i : i + step])
            i += step
            if p.done:
                break
        else:
            out += p.close()
        return out, p

    strict, ps = parse()
    fast, pf = parse(strict=False)
    slow, pl = parse(fast=False)
    assert strict == fast == slow
    assert len(strict) == min(max_items, len(slow)) and len(strict) > 100
    assert ps.capped == pf.capped == pl.capped == (max_items == 120)
    assert pf.strict_items == pl.strict_items == 0
    assert ps.strict_items > 0  # the strict tier did take part
    if doc_no == 2:
        assert ps.fast_items > 0  # ... and handed the odd blocks on
        urls = [e.url for e in strict]
        assert "https://example.com/padded" in urls or max_items == 120


@pytest.mark.parametrize("fields", [(1, 1, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)])
@pytest.mark.parametrize("ws", ["", "\n  "])
def test_a_run_laid_out_alike_is_split_by_its_layout_and_reads_the_same(fields, ws) -> None:
    """The strict tier splits a run of blocks laid out as its first one with a regex of that
    layout (sitemap._template); the entries are those of the fast path and lxml, and a
    block laid out otherwise sends the run back to the general regex, still the same."""
    rnd = random.Random(sum(fields) * 7 + len(ws))

    def block(n: int, ws: str = ws) -> str:
        lm, cf, pr = (rnd.choice(values) if on else None
                      for on, values in zip(fields, (LASTMODS, FREQS, PRIOS), strict=True))
        return _block(f"https://example.com/t/{n}", lm, cf, pr, ws=ws)

    uniform = HEAD + "".join(block(n) for n in range(300)) + "</urlset>\n"
    other = " " if ws == "" else ""
    mixed = HEAD + "".join(block(n, ws if n != 150 else other) for n in range(300)) \
        + "</urlset>\n"
    for doc, laid_alike in ((uniform, True), (mixed, False)):
        sitemap._TEMPLATES.clear()
        strict = XmlParser("src", 10**6)
        got = list(strict.feed(doc.encode())) + list(strict.close())
        fast = XmlParser("src", 10**6, strict=False)
        want = list(fast.feed(doc.encode())) + list(fast.close())
        slow = XmlParser("src", 10**6, fast=False)
        assert got == want == list(slow.feed(doc.encode())) + list(slow.close())
        assert len(got) == 300 and strict.strict_items > 0
        assert (list(sitemap._TEMPLATES.values()) != [None]) is laid_alike


def test_strict_columns_come_out_whole_and_normalised() -> None:
    """One feed of plain blocks is one Columns; its fields are normalised as lxml's."""
    body = "".join(_block(f"https://example.com/x/{n}", "2024-03-01T10:00:00+01:00",
                          "Daily", " 0.25 ") for n in range(50))
    p = XmlParser("src", 1000)
    got = p.feed((HEAD + body).encode())
    assert isinstance(got, Columns) and len(got) == 50
    assert got.lastmods[0] == "2024-03-01T09:00:00Z"
    assert got.changefreqs[0] == "daily" and got.priorities[0] == 0.25
    assert got.origin() == "https://example.com/"
    assert [e.url for e in got][:2] == ["https://example.com/x/0", "https://example.com/x/1"]
    assert p.close() == []


def test_bulk_lastmod_check_agrees_with_norm_lastmod_on_every_date() -> None:
    """The strict tier keeps a lastmod column as it is only if norm_lastmod would: every
    month and day of leap, century and odd years, and impossible times."""
    years = [*range(12), *range(1896, 1905), *range(2096, 2105), *range(2396, 2405), 9999]
    stamps = [f"{y:04d}-{m:02d}-{d:02d}T{t}Z" for y in years for m in range(14)
              for d in range(33) for t in ("00:00:00", "23:59:59", "24:00:00", "12:60:00")]
    for v in stamps:
        assert (_NORMAL_STAMPS.fullmatch(v) is not None) == (norm_lastmod(v) == v), v
    good = [v for v in stamps if norm_lastmod(v) == v]
    assert len(good) > 10_000 and _NORMAL_STAMPS.fullmatch("\n".join(good))


def test_plain_origin_is_only_said_of_canonical_urls() -> None:
    """Whatever the list, an origin is returned only if every URL is its own key and passes
    the single-URL host check."""
    rnd = random.Random(3)
    pieces = ["a", "B", "%41", "%2f", "%7e", "/./", "/../", "//", "?", "?x=1", "#f", "&",
              ";", ":80", "é", " ", "\n", ".", "-", "~", "%", "%zz", "/"]
    hosts = ["http://ex.com", "https://ex.com", "HTTP://ex.com", "http://Ex.com",
             "http://ex.com:80", "http://ex.com:8080", "http://www.ex.com", "http://other.org"]
    matcher = host_matcher({"ex.com"})
    seen_origin = 0
    for _ in range(3000):
        host = rnd.choice(hosts[:2]) if rnd.random() < 0.8 else rnd.choice(hosts)
        urls = [host + "/" + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 4)))
                for _ in range(rnd.randint(1, 4))]
        if rnd.random() < 0.5:
            urls = [u for u in urls if all(c not in u for c in "%#. \n?é")] or urls
        origin = plain_origin(urls)
        if origin is not None:
            seen_origin += 1
            assert all(normalize_url(u) == u for u in urls), urls
            assert all(u.startswith(origin) for u in urls)
            if matcher.fullmatch(origin):
                assert all(matcher.fullmatch(u) for u in urls), urls
    assert seen_origin > 300


def test_urlset_add_many_reports_what_was_there() -> None:
    s = UrlSet()
    keys = [f"https://example.com/{n}" for n in range(50_000)]
    assert s.add_many(keys) == []
    assert len(s) == 50_000 and all(k in s for k in keys[::97])
    assert s.add_many(["https://example.com/new", keys[5], "https://example.com/new",
                       keys[49_999]]) == [1, 2, 3]
    assert len(s) == 50_001
    assert s.add("https://example.com/other") and not s.add("https://example.com/other")
    # 16 shards at <= 70 % load: 50,002 keys need 6,144 slots of 8 bytes each per shard
    assert s.nbytes <= 16 * 6144 * 8


def test_write_new_file_is_atomic_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = write_new_file(str(tmp_path), "t.0.json", b"x" * 100_000)
    assert Path(target).read_bytes() == b"x" * 100_000
    (tmp_path / "busy.json").mkdir()
    (tmp_path / "busy.json" / "f").write_text("keeps the directory non-empty")
    with pytest.raises(OSError):
        write_new_file(str(tmp_path), "busy.json", b"y")
    assert sorted(os.listdir(tmp_path)) == ["busy.json", "t.0.json"]


# --- prepare: the column lane against the per-entry path ---------------------------------

def _urls(base: str) -> list[tuple[str, str | None, str | None, str | None]]:
    rnd = random.Random(11)
    rows = []
    for n in range(230):
        rows.append((f"{base}/docs/{n}", rnd.choice([None, "2024-05-01T00:00:00Z",
                                                     "2024-05-01T02:00:00+02:00"]),
                     rnd.choice([None, "weekly", "Daily"]), rnd.choice([None, "0.5", "0"])))
    rows += [(f"{base}/docs/3", None, None, None),                   # duplicate
             (f"{base.replace('http', 'HTTP')}/docs/4", None, None, None),  # same key
             (f"{base}/docs/5#part", None, None, None),              # same key
             (f"{base}/q?a=1&amp;b=2", "2024-01-01T00:00:00Z", None, None),
             ("http://other.example/x", None, None, None),           # other host
             ("not-a-url", None, None, None),                        # invalid
             (f"{base}/skip/me", None, None, None)]                  # filtered (exclude)
    rows += [(f"{base}/docs/{n}", None, None, None) for n in range(225, 240)]  # dups + new
    return rows


def _serve(server: LocalServer, path: str, rows: list, *, general: bool) -> None:
    # ``general``: every block carries an extension element, which keeps the whole file
    # out of the strict tier (the per-entry path) with the same entries.
    ext = '<xhtml:link rel="alternate" hreflang="de" href="http://x/"/>' if general else ""
    body = "".join(_block(u, m, c, p).replace("</url>", ext + "</url>") for u, m, c, p in rows)
    head = HEAD.replace('">', '" xmlns:xhtml="http://www.w3.org/1999/xhtml">', 1)
    server.route(path, Response(body=(head + body + "</urlset>").encode(),
                                content_type="application/xml"))


def _prepare(tmp: Path, source: str, exclude: list[str], **settings: object) -> tuple:
    """prepare once: (result counters, ticket entries in order, excluded.jsonl)."""
    cfg = write_config(tmp, source, out=tmp / "out", name="site", **settings)
    raw = yaml.safe_load(cfg.read_text())
    raw["sites"][0]["filters"] = {"exclude": exclude}
    cfg.write_text(yaml.safe_dump(raw))
    state = tmp / "out" / ".crawl-state" / "site"
    pending = state / "tickets" / "pending"
    before = set(pending.glob("*.json")) if pending.exists() else set()
    res = prepare(load_config(cfg).sites[0])
    tickets = sorted(set(pending.glob("*.json")) - before,  # this prepare's, in its order
                     key=lambda p: int(p.name.split(HOST_MARK)[0].rsplit("-", 1)[1]))
    entries = [e for t in tickets for e in orjson.loads(t.read_bytes())["urls"]]
    counts = {k: v for k, v in dataclasses.asdict(res).items() if k != "seconds"}
    return counts, entries, (state / "excluded.jsonl").read_bytes()


@pytest.mark.parametrize(("exclude", "settings"), [
    ([], {}),
    ([], {"max_urls_per_site": 200}),
    (["*/skip/*"], {}),
], ids=["plain", "cap", "filters"])
def test_column_lane_writes_what_the_per_entry_path_writes(server: LocalServer,
                                                           tmp_path: Path, exclude: list[str],
                                                           settings: dict) -> None:
    """Same tickets, excluded.jsonl and counters, on a first prepare and on a second one
    that finds everything queued, whether the sitemap took the lane or not."""
    base = server.url("").rstrip("/")
    rows = _urls(base)
    _serve(server, "/strict.xml", rows, general=False)
    _serve(server, "/general.xml", rows, general=True)
    with httpx.Client() as client:  # the lane is really taken for one and not the other
        kinds = {path: {type(b).__name__ for b in discover_batches(
            [server.url(path)], Settings(), client, DiscoveryStats())}
            for path in ("/strict.xml", "/general.xml")}
    assert "Columns" in kinds["/strict.xml"] and kinds["/general.xml"] == {"list"}
    runs = {}
    for path in ("/strict.xml", "/general.xml"):
        tmp = tmp_path / path.strip("/").replace(".xml", "")
        tmp.mkdir()
        runs[path] = [_prepare(tmp, server.url(path), exclude, **settings) for _ in range(2)]
    (first, entries, _), (again, entries2, _) = runs["/strict.xml"]
    assert len(entries) == first["kept"]
    for got, want in zip(runs["/strict.xml"], runs["/general.xml"], strict=True):
        assert got[1] == want[1]  # the same ticket entries, in the same order
        assert got[2] == want[2]  # the same excluded.jsonl, line by line
        assert got[0] == want[0]  # the same counters
    assert first["duplicates"] == 8 and first["cross_host"] == 1 and first["invalid"] == 1
    assert again["already_queued"] == first["kept"] > 0
    if not settings:
        assert again["tickets"] == 0 and entries2 == []  # nothing new to queue
    if exclude:
        assert first["filtered"] == {"exclude:*/skip/*": 1}
    if settings:
        assert first["kept"] == 200 and first["over_limit"] == 42
        assert again["kept"] == 42 and len(entries2) == 42  # the rest, now under the cap
    else:
        assert {"url": f"{base}/q?a=1&b=2", "lastmod": "2024-01-01T00:00:00Z"} in entries
        assert first["kept"] == 230 + 1 + 10 + (0 if exclude else 1)
