"""What `export` says agrees with the crawl (issue 21, items 8-11), in every format.

A real crawl through the CLI of a site with a too-short page, a 404, a redirect loop, a
redirect chain longer than ``max_redirects`` and a redirect to a non-HTTP scheme; the
exports are read back with DuckDB, as a user's query would.
"""

from __future__ import annotations

import duckdb
import pytest
import yaml
from httpserver import Response
from sites import cli, doc_site, write_config

READERS = {"jsonl": "read_json_auto", "csv": "read_csv_auto", "parquet": "read_parquet"}
SHORT = "<!doctype html><html><head><title>Stub</title></head><body><main><p>Soon.</p></main>"


def _redirect(to: str) -> Response:
    return Response(302, b"", headers={"Location": to}, content_type=None)


@pytest.fixture
def site(server, tmp_path):
    urls = doc_site(server, 3)
    server.route("/short.html", Response(body=SHORT, etag=True))
    server.route("/loop-a", _redirect("/loop-b"))
    server.route("/loop-b", _redirect("/loop-a"))
    for i in range(4):  # /hop-0 -> /hop-1 -> ... -> /hop-4: 4 redirects, 2 allowed
        server.route(f"/hop-{i}", _redirect(f"/hop-{i + 1}"))
    server.route("/ftp", _redirect("ftp://127.0.0.1/file"))
    extra = {name: server.url(f"/{name}") for name in
             ("short.html", "missing.html", "loop-a", "hop-0", "ftp")}
    server.route("/sitemap.xml", Response(
        body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<url><loc>{u}</loc></url>" for u in [*urls, *extra.values()])
             + "</urlset>", content_type="application/xml"))
    cfg = write_config(tmp_path, server.url("/"), max_redirects=2)
    return cfg, urls, extra


def _export(cfg, tmp_path, fmt: str) -> tuple[dict[str, tuple], dict[str, str]]:
    dest = tmp_path / f"urls.{fmt}"
    cli(cfg, "export", "docs", "--format", fmt, "-o", str(dest))
    con = duckdb.connect()
    rel = f"{READERS[fmt]}('{dest}')"
    types = {name: kind for name, kind, *_ in con.execute(f"describe select * from {rel}")
             .fetchall()}
    rows = {r[0]: r[1:] for r in con.execute(
        f"select url, outcome, coalesce(reason, ''), depth, fetched_at from {rel}").fetchall()}
    return rows, types


def test_reasons_and_outcomes_say_what_happened(site, server, tmp_path):
    cfg, urls, extra = site
    r = cli(cfg, "crawl", "docs", "--workers", "1")
    assert "not found 1" in r.stdout, r.stdout
    rows, _ = _export(cfg, tmp_path, "jsonl")
    # 9: a 404 on the first crawl is "not found", as the summary says, not "removed"
    assert rows[extra["missing.html"]][:2] == ("not_found", "http_404")
    # 11: each redirect failure has its own reason, not "error"
    assert rows[extra["loop-a"]][:2] == ("failed", "redirect_loop")
    assert rows[extra["hop-0"]][:2] == ("failed", "too_many_redirects")
    assert rows[extra["ftp"]][:2] == ("failed", "redirect_bad_scheme")
    assert rows[extra["short.html"]][:2] == ("skipped", "too_short")
    # 8: the re-crawl's 304 does not lose why the page was skipped
    cli(cfg, "crawl", "docs", "--workers", "1")
    assert server.hits("/short.html")[-1].headers.get("if-none-match")  # answered 304
    rows, _ = _export(cfg, tmp_path, "jsonl")
    assert rows[extra["short.html"]][:2] == ("skipped", "too_short")
    assert rows[urls[0]][:2] == ("unchanged", "not_modified")
    assert rows[extra["missing.html"]][:2] == ("not_found", "http_404")


def test_column_types_are_the_same_in_every_format(site, tmp_path):
    cfg, urls, _extra = site
    data = yaml.safe_load(cfg.read_text())
    data["sites"][0]["filters"] = {"exclude": ["*/page-2.html"]}  # an excluded row too
    cfg.write_text(yaml.safe_dump(data))
    cli(cfg, "crawl", "docs", "--workers", "1")
    seen = {}
    for fmt in READERS:
        rows, types = _export(cfg, tmp_path, fmt)
        seen[fmt] = types
        # 10: sitemap URLs have depth 0, never "no value"; fetched_at is a timestamp
        assert rows[urls[0]][2] == 0 and rows[urls[2]][:3] == ("excluded", "filter", 0)
        assert rows[urls[0]][3] is not None and rows[urls[2]][3] is None
    assert seen["jsonl"] == seen["csv"] == seen["parquet"], seen
    assert seen["jsonl"]["depth"] == "BIGINT"
    assert seen["jsonl"]["fetched_at"] == "TIMESTAMP WITH TIME ZONE"
    assert seen["jsonl"]["status_code"] == "BIGINT"


def _linking(*paths: str) -> Response:
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in paths)
    text = "Words enough to be a page, not a stub. " * 6
    return Response(body=f"<html><head><title>t</title></head><body><main><h1>t</h1>"
                         f"<p>{text}</p><ul>{links}</ul></main></body></html>")


def test_depth_is_the_shortest_path_when_a_longer_one_is_found_first(server, tmp_path):
    # S -> A -> C -> T is found first (B is slow), S -> B -> T is the shortest path to T.
    server.route("/s", _linking("/a", "/b"))
    server.route("/a", _linking("/c"))
    server.route("/c", _linking("/t"))
    slow = _linking("/t")
    slow.delay = 2.0
    server.route("/b", slow)
    server.route("/t", _linking())
    cfg = write_config(tmp_path, server.url("/s"), follow_links=True, max_depth=4,
                       crawl_state={"ticket_size": 1})
    cli(cfg, "crawl", "docs", "--workers", "2")
    t_hits = server.hits("/t")
    b_done = server.hits("/b")[0].t + slow.delay
    assert t_hits and t_hits[0].t < b_done, "T was not reached through C first"
    rows, _ = _export(cfg, tmp_path, "jsonl")
    depth = {u.rsplit("/", 1)[1]: r[2] for u, r in rows.items()}
    assert depth == {"s": 0, "a": 1, "b": 1, "c": 2, "t": 2}, depth
