"""`export` through the CLI: one row per URL with outcome and reason, read back by DuckDB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml
from httpserver import Response
from sites import cli, doc_site, page_html, write_config

from sitemap_crawler.commands import export as export_cmd

FORMATS = {"jsonl": "read_json_auto", "csv": "read_csv_auto", "parquet": "read_parquet"}


@pytest.fixture
def crawled(server, tmp_path):
    """A crawl with a robots-disallowed page, a filtered page, a 404, a noindex page, a
    duplicate and an other-host URL in the sitemap."""
    urls = doc_site(server, 8, robots="User-agent: *\nDisallow: /docs/page-1.html\n")
    server.route("/docs/page-3.html", Response(404, b"gone", content_type="text/plain"))
    server.route("/docs/page-4.html", Response(body=page_html(4).replace(
        "<head>", '<head><meta name="robots" content="noindex">')))
    listed = [*urls, urls[0] + "#top", "https://elsewhere.invalid/x.html"]
    server.route("/sitemap.xml", Response(
        body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<url><loc>{u}</loc></url>" for u in listed) + "</urlset>",
        content_type="application/xml"))
    cfg = write_config(tmp_path, server.url("/"))
    data = yaml.safe_load(cfg.read_text())
    data["sites"][0]["filters"] = {"exclude": ["*/page-2.html"]}
    cfg.write_text(yaml.safe_dump(data))
    cli(cfg, "crawl", "docs", "--workers", "2")
    return cfg, urls, tmp_path / "out"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_export_has_one_row_per_url_with_its_reason_and_duckdb_reads_it(crawled, fmt,
                                                                         tmp_path):
    cfg, urls, out = crawled
    dest = tmp_path / f"urls.{fmt}"
    r = cli(cfg, "export", "docs", "--format", fmt, "-o", str(dest))
    assert "10 URLs" in r.stdout, r.stdout
    con = duckdb.connect()
    rows = {u: (o, why, code, fp) for u, o, why, code, fp in con.execute(
        "select url, outcome, coalesce(reason, ''), status_code, coalesce(file_path, '') "
        f"from {FORMATS[fmt]}(?)",
        [str(dest)]).fetchall()}
    assert len(rows) == 10
    page = {i: rows[u] for i, u in enumerate(urls)}
    assert page[0][:2] == ("written", "") and page[0][2] == 200
    assert page[1][:2] == ("skipped", "robots")
    assert page[2][:2] == ("excluded", "filter")
    assert page[3][:3] == ("not_found", "http_404", 404)
    assert page[4][:2] == ("skipped", "noindex")
    assert rows[urls[0] + "#top"][:2] == ("excluded", "duplicate")
    assert rows["https://elsewhere.invalid/x.html"][:2] == ("excluded", "other_host")
    # every markdown file appears exactly once as file_path
    files = sorted(str(p.relative_to(out / "md")) for p in (out / "md").rglob("*.md"))
    paths = sorted(fp for _o, _w, _c, fp in rows.values() if fp)
    assert paths == files and len(files) == 4  # pages 0, 5, 6 and 7 were written
    # a second crawl: unchanged pages say why
    cli(cfg, "crawl", "docs", "--workers", "2")
    cli(cfg, "export", "docs", "--format", fmt, "-o", str(dest))
    again = dict(con.execute(f"select url, reason from {FORMATS[fmt]}(?)",
                             [str(dest)]).fetchall())
    assert again[urls[0]] == "not_modified"


def test_parquet_without_pyarrow_is_a_one_line_error(crawled, tmp_path):
    cfg, _urls, _out = crawled
    code = ("import sys; sys.modules['pyarrow'] = None; "
            "from sitemap_crawler.cli import main; sys.argv = sys.argv[1:]; main()")
    r = subprocess.run([sys.executable, "-c", code, "sitemap-crawler", "--config", str(cfg),
                        "export", "docs", "-f", "parquet", "-o", str(tmp_path / "x.parquet")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: --format parquet needs pyarrow: pip install 'sitemap-crawler[parquet]'"]


def test_export_of_a_site_never_prepared_says_so(tmp_path):
    cfg = write_config(tmp_path, "http://127.0.0.1:9/")
    r = cli(cfg, "export", "docs", "-o", str(tmp_path / "x.jsonl"), check=False)
    assert r.returncode == 2 and "nothing to export yet" in r.stderr
    assert not Path(tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("n", [0, 2 * export_cmd.PARQUET_BATCH, 2 * export_cmd.PARQUET_BATCH + 7])
def test_parquet_row_groups_hold_every_row_in_order(tmp_path, n):
    """Rows are written a row group at a time, column by column: an empty export, a count
    that ends on a group's edge and one that does not all read back whole, in order."""
    def rows():
        for i in range(n):
            yield {**export_cmd._EMPTY, "url": f"https://h.example/{i}", "outcome": "written",
                   "status_code": 200, "bytes": i, "fetched_at": "2026-01-02T03:04:05Z"}
    path = tmp_path / "x.parquet"
    assert export_cmd._write_parquet(rows(), path) == n
    got = duckdb.sql(f"SELECT url, bytes, CAST(fetched_at AS VARCHAR) AS t "
                     f"FROM read_parquet('{path}')").fetchall()
    assert [u for u, _, _ in got] == [f"https://h.example/{i}" for i in range(n)]
    assert [b for _, b, _ in got] == list(range(n))
    assert {t[:19] for _, _, t in got} <= {"2026-01-02 03:04:05"}
