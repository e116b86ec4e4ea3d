"""One url-index format (a JSONL base, like the segments) and one reader (issue 22).

A base written by an earlier version (one JSON object) is read, then rewritten once by the
next prepare; a prepare judges "new, due, fresh, removed" on a compact form of the index
whose memory does not grow with the entries' size (tests/test_prepare_memory.py measures it).
"""

from __future__ import annotations

from pathlib import Path

import orjson
from httpserver import Response
from sites import cli, doc_site, read_index, write_config

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.state import StateDir

LASTMOD = "2020-01-01T00:00:00Z"  # older than any crawl: every page is fresh


def _site(server, tmp_path: Path, n: int = 12) -> tuple[Path, Path, list[str]]:
    urls = doc_site(server, n, lastmod=LASTMOD)
    cfg = write_config(tmp_path, server.url("/"))
    cli(cfg, "crawl", "docs", "--workers", "2")
    return cfg, tmp_path / "out" / ".crawl-state" / "docs", urls


def test_the_base_is_jsonl_sorted_by_url_and_read_line_by_line(server, tmp_path):
    _cfg, root, urls = _site(server, tmp_path)
    state = StateDir(root)
    idx = read_index(root)
    url_index.write_base(state, idx, lambda: None)
    lines = state.index_path.read_bytes().splitlines()
    assert [orjson.loads(x)["url"] for x in lines] == sorted(urls)
    assert dict(url_index.iter_entries(state.index_path)) == idx == url_index.load(
        state.index_path)
    want = {urls[3]}
    assert dict(url_index.iter_entries(state.index_path, want.__contains__)) == {
        urls[3]: idx[urls[3]]}


def test_a_base_of_an_earlier_version_is_read_then_migrated_once_by_prepare(server, tmp_path):
    """Users have output folders with a url-index.json of one JSON object: export and
    status read it as it is, the first prepare rewrites it as JSONL with the same entries and
    judges them as before (every page fresh), and the next prepare leaves it alone."""
    cfg, root, urls = _site(server, tmp_path)
    state = StateDir(root)
    idx = read_index(root)
    old = orjson.dumps(idx, option=orjson.OPT_SORT_KEYS)  # as the earlier version wrote it
    state.index_path.write_bytes(old)
    assert url_index.old_format(state.index_path)
    assert dict(url_index.iter_view(state)) == idx
    assert orjson.loads(cli(cfg, "status", "docs", "--json").stdout)  # reads it
    assert state.index_path.read_bytes() == old  # readers do not migrate
    r = cli(cfg, "prepare", "docs")
    assert f"{len(urls)} fresh" in r.stdout and "wrote 0 tickets" in r.stdout, r.stdout
    assert not url_index.old_format(state.index_path)
    assert state.index_path.read_bytes().startswith(b'{"url":')
    assert read_index(root) == idx
    migrated = state.index_path.stat()
    r = cli(cfg, "prepare", "docs")
    assert f"{len(urls)} fresh" in r.stdout, r.stdout
    again = state.index_path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (migrated.st_ino, migrated.st_mtime_ns)


def test_a_torn_jsonl_base_is_rebuilt_not_read_short(server, tmp_path):
    """A base cut within a line (by something outside us) is corrupt: rebuilt from the front
    matter, with every page kept, never read as an index with fewer entries."""
    cfg, root, urls = _site(server, tmp_path)
    state = StateDir(root)
    url_index.write_base(state, read_index(root), lambda: None)
    raw = state.index_path.read_bytes()
    state.index_path.write_bytes(raw[:len(raw) // 2])
    r = cli(cfg, "prepare", "docs")
    assert "corrupt url-index" in r.stderr and f"rebuilt {len(urls)} entries" in r.stderr
    assert set(read_index(root)) == set(urls)


def test_prepare_on_the_compact_index_keeps_the_due_judgement(server, tmp_path):
    """A changed lastmod makes exactly that page due, with its validators carried in its
    ticket; a page gone from the sitemap is removed; the rest are fresh."""
    cfg, root, urls = _site(server, tmp_path)
    keep = urls[:-1]
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{u}</loc><lastmod>"
                      f"{'2099-01-01T00:00:00Z' if u == keep[2] else LASTMOD}</lastmod></url>"
                      for u in keep) + "</urlset>")
    server.route("/sitemap.xml", Response(body=body, content_type="application/xml"))
    before = read_index(root)
    r = cli(cfg, "prepare", "docs")
    assert f"{len(keep) - 1} fresh" in r.stdout and "(0 new, 1 due again)" in r.stdout, r.stdout
    assert "1 removed" in r.stdout, r.stdout
    tickets = [orjson.loads(p.read_bytes()) for p in (root / "tickets" / "pending").glob("*")]
    entries = [e for t in tickets for e in t["urls"]]
    assert [e["url"] for e in entries] == [keep[2]]
    assert entries[0]["prior"]["etag"] == before[keep[2]]["etag"]
    assert entries[0]["prior"]["file_path"] == before[keep[2]]["file_path"]
    assert read_index(root)[urls[-1]]["removed"] is True


def _read(path: Path, raw: bytes, want=None) -> list[tuple[str, dict]] | str:
    path.write_bytes(raw)
    try:
        return list(url_index.iter_entries(path, want))
    except CrawlError as e:
        return str(e)


def test_the_base_reader_checks_every_line_whole_or_some_urls(tmp_path):
    """The base reader skips blank lines and refuses a torn last line (even one that parses),
    a line that is not a record and one that is not JSON, the same whether it reads every
    line or only some URLs' (``want``, which skips other lines without parsing them)."""
    p = tmp_path / "url-index.json"
    a, b = b'{"url":"http://h/a","size":1}\n', b'{"url":"http://h/b"}\n'
    for want in (None, lambda u: True):
        assert _read(p, a + b"\n" + b, want) == [("http://h/a", {"size": 1}),
                                                ("http://h/b", {})]
        assert "ends within a line" in _read(p, a + b[:-1], want)  # parses, but torn
        assert "ends within a line" in _read(p, a + b[:-5], want)
        assert "not a record" in _read(p, a + b'{"url":7}\n', want)
        assert "not a record" in _read(p, a + b'{"uri":"http://h/c"}\n', want)
        assert "not a record" in _read(p, a + b'["http://h/c"]\n', want)
        assert "corrupt url-index" in _read(p, a + b'{"url":"http://h/c",}\n', want)
