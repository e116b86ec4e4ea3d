"""A full round fetches every page again (issue 21 item 1): ``crawl --full``, ``prepare
--full`` and ``crawl_state.incremental: false`` send no validators, so the markdown is made
again; a file is still rewritten only when its content changed.  Through the CLI against a
real server that counts conditional requests."""

from __future__ import annotations

from pathlib import Path

import yaml
from httpserver import Request, Response
from sites import cli, doc_site, page_html, write_config

N = 6


def md_state(out: Path) -> dict[str, tuple[int, str]]:
    """path -> (mtime_ns, text) of every markdown file."""
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_text())
            for p in (out / "md").rglob("*.md")}


def pages(server, since: int) -> list[Request]:
    return [r for r in server.requests[since:] if r.path.startswith("/docs/")]


def conditional(reqs: list[Request]) -> list[Request]:
    return [r for r in reqs if "if-none-match" in r.headers or "if-modified-since" in r.headers]


def stale_site(server) -> None:
    """Pages with a Last-Modified that never moves: a conditional GET is answered 304 even
    after page 0 changes (a template change the server does not date, say)."""
    doc_site(server, N, etag=False)


def test_crawl_full_fetches_every_page_without_validators(server, tmp_path):
    stale_site(server)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "2")
    before = md_state(out)
    server.route("/docs/page-0.html", Response(body=page_html(0, version=1),
                                               last_modified=1_700_000_000.0))
    # an incremental crawl asks conditionally and is told 304: page 0 stays stale
    n = len(server.requests)
    text = cli(cfg, "crawl", "docs", "--workers", "2").stdout
    assert len(conditional(pages(server, n))) == N and f"unchanged {N} (304)" in text, text
    assert md_state(out) == before
    # --full: no validator sent, page 0's markdown made again, the others not rewritten
    n = len(server.requests)
    text = cli(cfg, "crawl", "docs", "--workers", "2", "--full").stdout
    got = pages(server, n)
    assert len(got) == N and conditional(got) == [], [r.headers for r in got]
    assert "changed 1" in text and f"unchanged 0 (304) + {N - 1} (same content)" in text, text
    after = md_state(out)
    changed = [p for p in after if after[p] != before[p]]
    assert len(changed) == 1 and "page-0" in changed[0], changed
    assert "version 1" in after[changed[0]][1]
    # the next plain crawl is incremental again
    n = len(server.requests)
    cli(cfg, "crawl", "docs", "--workers", "2")
    assert len(conditional(pages(server, n))) == N


def test_prepare_full_then_work_and_incremental_false_send_no_validators(server, tmp_path):
    doc_site(server, N)  # ETag and Last-Modified: every conditional request would be a 304
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "2")
    before = md_state(out)
    n = len(server.requests)
    cli(cfg, "prepare", "docs", "--full")
    text = cli(cfg, "work", "--workers", "2").stdout
    got = pages(server, n)
    assert len(got) == N and conditional(got) == [], [r.headers for r in got]
    assert "unchanged 0 (304)" in text, text
    assert md_state(out) == before  # same content: not one byte, not one mtime
    # crawl_state.incremental: false in the config: every crawl is a full one
    data = yaml.safe_load(cfg.read_text())
    data["settings"]["crawl_state"]["incremental"] = False
    cfg.write_text(yaml.safe_dump(data))
    n = len(server.requests)
    cli(cfg, "crawl", "docs", "--workers", "2")
    got = pages(server, n)
    assert len(got) == N and conditional(got) == [], [r.headers for r in got]
    assert md_state(out) == before
    # URLs an earlier prepare queued are not queued again: the user is told how they go
    data["settings"]["crawl_state"]["incremental"] = True
    cfg.write_text(yaml.safe_dump(data))
    cli(cfg, "prepare", "docs")
    r = cli(cfg, "prepare", "docs", "--full")
    assert f"{N} URLs were already queued by an earlier prepare" in r.stderr, r.stderr
