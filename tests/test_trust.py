"""Trust, tried as a user would through the CLI: nothing crawled is lost or hidden.

A filter change is not a removal; a page that answers 200 with a challenge or an error page
never replaces a good file; a host whose ETags lie stops being believed; failures are in the
exit code.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from httpserver import Request, Response
from sites import cli, doc_site, page_html, read_index, write_config


def index(out: Path) -> dict:
    return read_index(out / ".crawl-state" / "docs")


def md_files(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in (out / "md").rglob("*.md")}


def set_filters(cfg: Path, **filters: list[str]) -> None:
    data = yaml.safe_load(cfg.read_text())
    data["sites"][0]["filters"] = filters
    cfg.write_text(yaml.safe_dump(data))


def sitemap(server, urls: list[str]) -> None:
    server.route("/sitemap.xml", Response(
        body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>",
        content_type="application/xml"))


def test_a_new_exclude_filter_or_a_cap_deletes_nothing_only_leaving_the_sitemap_does(
        server, tmp_path):
    urls = doc_site(server, 12)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "2")
    before = md_files(out)
    assert len(before) == 12
    # A filter that now leaves out 5 pages, and a cap: neither is evidence that a page is gone.
    set_filters(cfg, exclude=["**/page-1*.html", "**/page-2.html", "**/page-3.html"])
    dry = cli(cfg, "prepare", "docs", "--dry-run").stdout
    assert "removed" not in dry, dry
    text = cli(cfg, "prepare", "docs", "--full").stdout
    assert "removed" not in text and "5 filtered" in text, text
    data = yaml.safe_load(cfg.read_text())
    data["settings"]["max_urls_per_site"] = 2
    cfg.write_text(yaml.safe_dump(data))
    cli(cfg, "prepare", "docs", "--full")
    cli(cfg, "work", "--workers", "2")
    assert md_files(out).keys() == before.keys()
    assert not any(e.get("removed") for e in index(out).values())
    # A URL that left a sitemap read completely is gone: --dry-run names it, prepare acts.
    sitemap(server, [u for u in urls if not u.endswith("/page-5.html")])
    dry = cli(cfg, "prepare", "docs", "--dry-run").stdout
    assert "1 would be removed" in dry, dry
    assert md_files(out).keys() == before.keys()
    assert "1 removed" in cli(cfg, "prepare", "docs").stdout
    after = md_files(out)
    assert len(after) == 11
    gone = index(out)[server.url("/docs/page-5.html")]
    assert gone["removed_reason"] == "not_in_sitemap"
    assert "md/" + gone["file_path"] not in after


def test_a_challenge_or_error_page_served_with_200_keeps_the_good_file(server, tmp_path):
    doc_site(server, 4)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "1")
    good = md_files(out)
    challenge = ("<html><head><title>Just a moment...</title></head><body>"
                 "<h1>Checking your browser before accessing the site.</h1>"
                 "<p>This process is automatic. Your browser will redirect to your requested "
                 "content shortly. Please allow up to 5 seconds.</p>" + "<p>x</p>" * 30
                 + "</body></html>")
    error = ("<html><head><title>500 Internal Server Error</title></head><body>"
             "<h1>Internal Server Error</h1><p>The server encountered an internal error and "
             "was unable to complete your request. " * 5 + "</p></body></html>")
    server.route("/docs/page-1.html", Response(body=challenge))
    server.route("/docs/page-2.html", Response(body=error))
    r = cli(cfg, "crawl", "docs", "--workers", "1", "--full", check=False)
    assert r.returncode == 1, r.stderr
    assert "challenge" in r.stderr and "error page" in r.stderr
    assert md_files(out) == good  # not one byte replaced
    idx = index(out)
    assert idx[server.url("/docs/page-1.html")]["error"] == "challenge"
    assert idx[server.url("/docs/page-2.html")]["error"] == "error_page"
    # The site recovers: resume fetches exactly those two again, and they are fine.
    server.route("/docs/page-1.html", Response(body=page_html(1, version=1)))
    server.route("/docs/page-2.html", Response(body=page_html(2)))
    n = len(server.requests)
    cli(cfg, "resume", "docs", "--workers", "1")
    again = sorted(q.path for q in server.requests[n:] if q.path.startswith("/docs/"))
    assert again == ["/docs/page-1.html", "/docs/page-2.html"]
    assert "version 1" in md_files(out)["md/" + idx[server.url("/docs/page-1.html")]["file_path"]]


def test_a_host_whose_etag_lies_is_fetched_in_full_from_then_on(server, tmp_path):
    doc_site(server, 3)
    state = {"v": 0, "answer_304": False}

    def liar(req: Request) -> Response:  # the same ETag whatever the content
        if state["answer_304"] and req.headers.get("if-none-match") == '"same"':
            return Response(304, b"", headers={"ETag": '"same"'})
        return Response(body=page_html(1, version=state["v"]), headers={"ETag": '"same"'})

    server.route("/docs/page-1.html", liar)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "1")
    # A re-crawl sees the lie: the same ETag came with other content.
    state["v"] = 1
    cli(cfg, "crawl", "docs", "--workers", "1", "--full")
    # From now on the server would answer a conditional request with a lying 304.
    state.update(v=2, answer_304=True)
    n = len(server.requests)
    text = cli(cfg, "crawl", "docs", "--workers", "1", "--full").stdout
    third = [q for q in server.requests[n:] if q.path.startswith("/docs/")]
    assert len(third) == 3
    # No page of that host is asked conditionally any more, so the change is not hidden.
    assert not any("if-none-match" in q.headers for q in third), [q.headers for q in third]
    assert "changed 1" in text, text
    e = index(out)[server.url("/docs/page-1.html")]
    assert "version 2" in (out / "md" / e["file_path"]).read_text()


def test_everything_done_exits_0_and_a_host_that_is_down_exits_1(server, tmp_path):
    doc_site(server, 3)
    cfg = write_config(tmp_path, server.url("/"))
    assert cli(cfg, "crawl", "docs", "--workers", "1", check=False).returncode == 0
    for i in range(3):
        server.route(f"/docs/page-{i}.html", Response(503, b"down"))
    r = cli(cfg, "crawl", "docs", "--workers", "1", "--full", check=False)
    assert r.returncode == 1
    assert "3 URL(s) used up their retries" in r.stderr or "ticket(s) failed" in r.stderr
    # `work` with nothing to do still reports the failed tickets that wait for resume.
    r = cli(cfg, "work", check=False)
    assert r.returncode == 1 and "sitemap-crawler resume docs" in r.stderr
    assert "Exit codes" in cli(cfg, "--help").stdout


def test_a_worker_that_cannot_write_its_heartbeat_stops_and_the_run_exits_1(server, tmp_path):
    import os
    import shutil

    from sites import popen_cli
    from waiting import wait_until

    doc_site(server, 30, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"))
    cli(cfg, "prepare", "docs")
    workers = tmp_path / "out" / ".crawl-state" / "docs" / "workers"
    p = popen_cli(cfg, "work", "--workers", "1")
    lock = wait_until(lambda: next(iter(workers.glob("*.lock")), None), what="a heartbeat")
    lock.unlink()
    lock.mkdir()  # from now on every heartbeat write fails with EISDIR, a real I/O error
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert "heartbeat" in err and "Traceback" not in err
    shutil.rmtree(lock)
    os.sync()
    # Nothing was lost: the next run finishes every page.
    cli(cfg, "work", "--workers", "1")
    assert len(md_files(tmp_path / "out")) == 30


def test_two_prepares_at_once_ticket_each_url_once(server, tmp_path):
    """Found by bench/soak.py: two machines starting `crawl` together queued every URL twice."""
    import os

    from sites import popen_cli

    urls = doc_site(server, 30, delay=0.02)
    cfg = write_config(tmp_path, server.url("/"))
    procs = [popen_cli(cfg, "prepare", "docs") for _ in range(3)]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    pending = tmp_path / "out" / ".crawl-state" / "docs" / "tickets" / "pending"
    queued = []
    for name in os.listdir(pending):
        queued += [u["url"] for u in json.loads((pending / name).read_text())["urls"]]
    assert sorted(queued) == sorted(urls)
