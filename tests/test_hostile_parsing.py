"""Issue 20, hostile input that must stay bounded: config.yaml (alias bombs, recursive
aliases, size), stacked Content-Encodings and charset labels the bytes contradict.  Each
case goes through the real CLI against a real 127.0.0.1 server."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from httpserver import LocalServer, Response
from sites import cli, doc_site, page_html, read_index, signalled, write_config

BOMB = "\n".join(
    ["settings:", "  base_output_dir: ./out", "x0: &x0 ['${HOME}', '${HOME}', '${HOME}', "
     "'${HOME}', '${HOME}', '${HOME}', '${HOME}', '${HOME}', '${HOME}']"]
    + [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 12)]
    + ["sites: []", ""])


def _bad_config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    return cfg


@pytest.mark.parametrize("text, says", [
    (BOMB.replace("sites: []", "sites: [*x11]"), "alias bomb"),
    ("settings: &s {base_output_dir: ./out, crawl_state: *s}\nsites: []\n", "recursive"),
    ("settings:\n  do_not_crawl: &a [*a]\nsites: []\n", "recursive"),
    ("settings: {}\nsites: " + "[" * 20000 + "]" * 20000 + "\n", "nested"),
    ("settings: {}\n#" + "x" * (2 << 20) + "\nsites: []\n", "larger than"),
], ids=["bomb", "recursive-mapping", "recursive-list", "deep", "huge"])
def test_a_hostile_config_is_one_line_and_exit_2(tmp_path, text, says):
    cfg = _bad_config(tmp_path, text)
    t0 = time.monotonic()
    r = cli(cfg, "list", check=False, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert time.monotonic() - t0 < 30
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], r.stderr[-2000:]


def test_a_bomb_sent_by_sighup_keeps_the_old_config_and_the_crawl_ends_well(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 30, delay=0.1)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"))
        cli(cfg, "prepare", "docs")
        log = tmp_path / "crawl.log"
        good = cfg.read_text()
        code, err = signalled(
            cfg, "--log-file", str(log), "work", "docs", "-w", "1", sig=signal.SIGHUP,
            ready=lambda: len([r for r in srv.requests if "/docs/" in r.path]) >= 3,
            before=lambda: cfg.write_text(good.replace("sites:", "bomb: &b [*b]\nsites:")))
    assert code == 0, err
    refusals = [ln for ln in err.splitlines() if "config not reloaded" in ln]
    assert len(refusals) == 1 and "recursive" in refusals[0], err
    assert "Traceback" not in err
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["event"] == "run_summary" and last["exit_code"] == 0
    assert len(read_index(tmp_path / "out" / ".crawl-state" / "docs")) == 30


# -- stacked Content-Encodings (#15) --------------------------------------------------------

STACKED = {"Content-Encoding": ", ".join(["gzip"] * 2000)}  # plain bytes: gzip passes them


def _urlset(urls: list[str]) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
            'schemas/sitemap/0.9">' + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
            + "</urlset>")


def test_stacked_codings_fail_one_page_and_one_child_sitemap_only(server, tmp_path):
    pages = [server.url(f"/docs/page-{i}.html") for i in range(6)]
    children = ["/sm-a.xml", "/sm-bad.xml", "/sm-b.xml"]
    server.route("/sitemap.xml", Response(body=(
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<sitemap><loc>{server.url(c)}</loc></sitemap>" for c in children)
        + "</sitemapindex>"), content_type="application/xml"))
    server.route("/sm-a.xml", Response(body=_urlset(pages[:3]), content_type="application/xml"))
    server.route("/sm-bad.xml", Response(body=_urlset([server.url("/docs/hidden.html")]),
                                         content_type="application/xml", headers=STACKED))
    server.route("/sm-b.xml", Response(body=_urlset(pages[3:]), content_type="application/xml"))
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                         content_type="text/plain"))
    for i, u in enumerate(pages):
        server.route(u[len(server.base):], Response(body=page_html(i), headers=(
            STACKED if i == 0 else {})))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    r = cli(cfg, "prepare", "docs", check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sm-bad.xml" in r.stderr and "stacked" in r.stderr, r.stderr[-3000:]
    r = cli(cfg, "work", "docs", check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "unexpected" not in r.stderr
    idx = read_index(tmp_path / "out" / ".crawl-state" / "docs")
    assert sorted(idx) == sorted(pages)
    assert idx[pages[0]]["outcome"] == "skipped:content_encoding:stacked", idx[pages[0]]
    assert all(idx[u]["outcome"] == "new" for u in pages[1:])


def test_stacked_codings_on_robots_txt_are_an_unreadable_robots_txt(server, tmp_path):
    pages = [server.url(f"/docs/page-{i}.html") for i in range(2)]
    server.route("/sitemap.xml", Response(body=_urlset(pages), content_type="application/xml"))
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                         content_type="text/plain", headers=STACKED))
    for i, u in enumerate(pages):
        server.route(u[len(server.base):], Response(body=page_html(i)))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), max_retries=0)
    cli(cfg, "prepare", "docs")
    r = cli(cfg, "work", "docs", check=False)
    assert "Traceback" not in r.stderr and "unexpected" not in r.stderr, r.stderr[-3000:]
    idx = read_index(tmp_path / "out" / ".crawl-state" / "docs")
    # as for a robots.txt that answers 503: no page is fetched, each waits for robots.txt
    assert all(idx[u].get("error") == "robots_unavailable" for u in pages), idx
    assert not [q for q in server.requests if q.path.startswith("/docs/")]


# -- a charset label the bytes contradict (#17) ----------------------------------------------

def test_a_charset_label_the_bytes_contradict_is_not_believed(server, tmp_path):
    text = "Plain English words about the configuration of the widget. " * 6
    html = f"<html><head><title>T</title></head><body><main><h1>Title</h1><p>{text}</p>" \
           "</main></body></html>"
    pages = {"/ascii.html": (html.encode("ascii"), "text/html; charset=utf-16"),
             "/wide.html": (html.encode("utf-16le"), "text/html; charset=windows-1252")}
    server.route("/sitemap.xml", Response(body=_urlset([server.url(p) for p in pages]),
                                          content_type="application/xml"))
    for path, (body, ctype) in pages.items():
        server.route(path, Response(body=body, content_type=ctype))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    cli(cfg, "crawl", "docs", "--workers", "1")
    idx = read_index(tmp_path / "out" / ".crawl-state" / "docs")
    for path in pages:
        e = idx[server.url(path)]
        assert e["outcome"] == "new", e
        md = (tmp_path / "out" / "md" / e["file_path"]).read_text()
        assert "Plain English words about the configuration" in md, md[:500]
