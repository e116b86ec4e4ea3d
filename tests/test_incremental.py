"""Incremental re-crawls through a real server: validators, hashes, lastmod, removals."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from httpserver import Request, Response
from sites import cli, doc_site, page_html, read_index, write_config


def index(out: Path) -> dict:
    return read_index(out / ".crawl-state" / "docs")


def md_state(out: Path) -> dict[str, tuple[int, str]]:
    """path -> (mtime_ns, text) of every markdown file."""
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.read_text())
            for p in (out / "md").rglob("*.md")}


def page_requests(server) -> list[Request]:
    return [r for r in server.requests if r.path.startswith("/docs/")]


def crawl(cfg: Path, *extra: str) -> str:
    return cli(cfg, "crawl", "docs", "--workers", "2", *extra).stdout


def test_second_crawl_with_validators_is_all_304_and_rewrites_nothing(server, tmp_path):
    doc_site(server, 10)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    crawl(cfg)
    before = md_state(out)
    n_first = len(page_requests(server))
    assert len(before) == 10
    text = crawl(cfg)
    second = page_requests(server)[n_first:]
    assert len(second) == 10
    assert all("if-none-match" in r.headers for r in second)
    assert "unchanged 10 (304)" in text and "new 0" in text, text
    assert md_state(out) == before  # not one byte, not one mtime
    idx = index(out)
    assert all(e["status_code"] == 304 for e in idx.values())
    assert all(e["last_crawled"] >= e["first_seen"] for e in idx.values())
    st = json.loads((out / ".crawl-state" / "docs" / "manifest.json").read_text())
    assert st["last_crawl"]["unchanged_304"] == 10 and len(st["crawls"]) == 2


def test_without_validators_the_content_hash_keeps_files_untouched(server, tmp_path):
    doc_site(server, 6, etag=False)
    for i in range(6):  # no ETag, no Last-Modified, and a footer clock that always changes
        clock = iter(range(10**6))
        server.route(f"/docs/page-{i}.html", lambda req, i=i, clock=clock: Response(
            body=page_html(i, clock=str(next(clock)))))
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    crawl(cfg)
    before = md_state(out)
    text = crawl(cfg)
    assert "unchanged 0 (304) + 6 (same content)" in text, text
    assert md_state(out) == before


def test_lying_validators_are_noticed_and_the_content_wins(server, tmp_path):
    doc_site(server, 3)
    version = {"v": 0}

    def liar(req: Request) -> Response:  # the same ETag whatever the content
        return Response(body=page_html(1, version=version["v"]), headers={"ETag": '"same"'})

    server.route("/docs/page-1.html", liar)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    crawl(cfg)
    version["v"] = 1
    text = crawl(cfg)
    assert "changed 1" in text, text
    e = index(out)[server.url("/docs/page-1.html")]
    assert e["validators_lie"] is True and e["changes_detected"] == 1
    assert "version 1" in (out / "md" / e["file_path"]).read_text()


def test_sitemap_lastmod_not_newer_means_no_request_at_all(server, tmp_path):
    doc_site(server, 8, lastmod="2020-01-01")
    cfg = write_config(tmp_path, server.url("/"))
    crawl(cfg)
    n = len(page_requests(server))
    text = cli(cfg, "prepare", "docs").stdout
    assert "8 fresh" in text and "wrote 0 tickets" in text, text
    cli(cfg, "work", "--workers", "2")
    assert len(page_requests(server)) == n
    # --full overrides the sitemap's word
    cli(cfg, "prepare", "docs", "--full")
    cli(cfg, "work", "--workers", "2")
    assert len(page_requests(server)) == n + 8


def test_changed_removed_and_added_pages_between_runs(server, tmp_path):
    urls = doc_site(server, 10)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    crawl(cfg)
    before = md_state(out)
    idx1 = index(out)
    # run 2: page-2 changed; page-3 answers 404; page-4 gone from the sitemap; page-10 new
    server.route("/docs/page-2.html", Response(body=page_html(2, version=1), etag=True))
    server.route("/docs/page-3.html", Response(404, b"gone", content_type="text/plain"))
    server.route("/docs/page-10.html", Response(body=page_html(10), etag=True))
    listed = [u for u in urls if not u.endswith("/page-4.html")]
    listed.append(server.url("/docs/page-10.html"))
    server.route("/sitemap.xml", Response(
        body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<url><loc>{u}</loc></url>" for u in listed) + "</urlset>",
        content_type="application/xml"))
    text = crawl(cfg)
    assert "1 removed" in text  # prepare: page-4 is no longer listed
    assert "new 1, changed 1, unchanged 7 (304)" in text and "removed 1," in text, text
    after = md_state(out)
    f = {i: "md/" + idx1[server.url(f"/docs/page-{i}.html")]["file_path"] for i in range(10)}
    assert f[3] not in after and f[4] not in after  # 404 and unlisted: markdown removed
    assert after[f[2]] != before[f[2]] and "version 1" in after[f[2]][1]
    for i in (0, 1, 5, 6, 7, 8, 9):
        assert after[f[i]] == before[f[i]]
    idx2 = index(out)
    assert idx2[server.url("/docs/page-3.html")]["removed"] is True
    assert idx2[server.url("/docs/page-4.html")]["removed_reason"] == "not_in_sitemap"
    assert idx2[server.url("/docs/page-2.html")]["changes_detected"] == 1
    assert idx2[server.url("/docs/page-10.html")]["first_seen"]


def test_smart_mode_samples_and_recrawls_everything_only_when_much_changed(server, tmp_path):
    doc_site(server, 10, lastmod="2020-01-01")  # the sitemap says nothing ever changes
    cfg = write_config(tmp_path, server.url("/"), crawl_mode="smart", smart_sample=4,
                       smart_threshold=0.3)
    crawl(cfg)
    n = len(page_requests(server))
    text = cli(cfg, "prepare", "docs").stdout
    assert "wrote 0 tickets" in text, text  # sample of 4: all 304 -> stay incremental
    assert len(page_requests(server)) == n + 4
    for i in range(10):  # the site changed wholesale, its sitemap did not say so
        server.route(f"/docs/page-{i}.html", Response(body=page_html(i, version=2), etag=True))
    text = cli(cfg, "prepare", "docs").stdout
    assert "wrote 2 tickets for 10 URLs" in text, text  # 4 of 4 changed -> full crawl
    text = cli(cfg, "work", "--workers", "2").stdout
    assert "changed 10" in text, text


def test_sitemaps_are_read_again_conditionally_and_kept_copies_used(server, tmp_path):
    urls = doc_site(server, 6)

    def sitemap(listed: list[str]) -> Response:
        return Response(body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                        + "".join(f"<url><loc>{u}</loc></url>" for u in listed) + "</urlset>",
                        content_type="application/xml", etag=True)

    server.route("/sitemap.xml", sitemap(urls))
    cfg = write_config(tmp_path, server.url("/"))
    crawl(cfg)
    text = crawl(cfg)  # the sitemap did not change: 304, and its kept copy lists all 6
    hits = server.hits("/sitemap.xml")
    assert len(hits) == 2 and "if-none-match" in hits[1].headers
    assert "found 6 URLs in 1 file, 1 unchanged since the last read" in text, text
    assert "unchanged 6 (304)" in text
    server.route("/docs/page-6.html", Response(body=page_html(6), etag=True))
    server.route("/sitemap.xml", sitemap([*urls, server.url("/docs/page-6.html")]))
    text = crawl(cfg)  # changed: downloaded again, the new page found
    assert "found 7 URLs" in text and "new 1" in text, text


def test_kept_sitemap_copies_are_pruned_only_after_a_complete_read(server, tmp_path):
    urls = doc_site(server, 6)
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'

    def urlset(listed: list[str]) -> Response:
        return Response(body=f"<urlset {ns}>" + "".join(f"<url><loc>{u}</loc></url>"
                                                       for u in listed) + "</urlset>",
                        content_type="application/xml", etag=True)

    def index_of(children: list[str]) -> Response:
        return Response(body=f"<sitemapindex {ns}>" + "".join(
            f"<sitemap><loc>{server.url(c)}</loc></sitemap>" for c in children)
            + "</sitemapindex>", content_type="application/xml", etag=True)

    server.route("/a.xml", urlset(urls[:3]))
    server.route("/b.xml", urlset(urls[3:]))
    server.route("/c.xml", urlset(urls[:1]))
    server.route("/sitemap.xml", index_of(["/a.xml", "/b.xml", "/c.xml"]))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    kept = tmp_path / "out" / ".crawl-state" / "docs" / "sitemaps"

    def copies() -> set[str]:
        return {json.loads(p.read_text())["url"] for p in kept.glob("*.json")}

    def last_prepare() -> dict:
        manifest = tmp_path / "out" / ".crawl-state" / "docs" / "manifest.json"
        return json.loads(manifest.read_text())["prepares"][-1]

    crawl(cfg)
    assert copies() == {server.url(p) for p in ("/sitemap.xml", "/a.xml", "/b.xml", "/c.xml")}
    # c.xml leaves the index while b.xml fails: the read is incomplete, nothing is pruned
    server.route("/sitemap.xml", index_of(["/a.xml", "/b.xml"]))
    server.route("/b.xml", Response(status=500, body="down"))
    cli(cfg, "prepare", "docs")
    assert last_prepare()["sitemaps_pruned"] == 0
    assert server.url("/c.xml") in copies()
    # b.xml is back: everything was read, so the copy of c.xml goes, and only that one
    server.route("/b.xml", urlset(urls[3:]))
    cli(cfg, "prepare", "docs")
    assert last_prepare()["sitemaps_pruned"] == 1
    assert copies() == {server.url(p) for p in ("/sitemap.xml", "/a.xml", "/b.xml")}
    assert len(list(kept.glob("*.body"))) == 3
    # a temporary file left by a killed prepare goes once it is old, not before
    young, old = kept / ".tmp-young.body.1.ab", kept / ".tmp-old.body.1.cd"
    young.write_bytes(b"x")
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    cli(cfg, "prepare", "docs")
    assert young.exists() and not old.exists()
    assert len(list(kept.glob("*.body"))) == 3


def _stamp(days_ago: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() - days_ago * 86400))


def test_prepare_deletes_completed_tickets_older_than_keep_completed(server, tmp_path):
    doc_site(server, 12)  # ticket_size 5: three tickets
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"keep_completed": "7d"})
    state = tmp_path / "out" / ".crawl-state" / "docs" / "tickets"
    crawl(cfg)
    done = sorted((state / "completed").glob("*.json"))
    assert len(done) == 3
    # T3 names a completed ticket with its completion time: <ticket>.<gen>_<worker>_<stamp>
    stems = [p.name[:-5].rsplit("_", 1) for p in done]
    for (_, stamp), path in zip(stems, done, strict=True):
        assert json.loads(path.read_text())["completed_at"].replace("-", "").replace(
            ":", "") == stamp
    # T7 reads the name, not the content: the first finished 8 days ago, the second 6 days
    # ago (its content says 2001 and does not count); the third is being finished right now
    # (renamed into completed/ under its bare name, its final file not written yet)
    old = done[0].with_name(f"{stems[0][0]}_{_stamp(8)}.json")
    done[0].rename(old)
    kept = done[1].with_name(f"{stems[1][0]}_{_stamp(6)}.json")
    data = json.loads(done[1].read_text())
    data["completed_at"] = "2001-01-01T00:00:00Z"
    kept.write_text(json.dumps(data))
    done[1].unlink()
    busy = done[2].with_name(f"{stems[2][0]}.json")
    data = json.loads(done[2].read_text())
    data["completed_at"] = None
    busy.write_text(json.dumps(data))
    done[2].unlink()
    # tickets finished by an older version: bare names, completed_at in the content
    owner = stems[0][0].split("_", 1)[1]
    legacy_old = state / "completed" / f"legacy-1.0_{owner}.json"
    legacy_new = state / "completed" / f"legacy-2.0_{owner}.json"
    legacy_old.write_text(json.dumps({**data, "completed_at": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 9 * 86400))}))
    recent = time.gmtime(time.time() - 86400)
    legacy_new.write_text(json.dumps({**data, "completed_at": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", recent)}))
    (state / "failed" / old.name).write_text(old.read_text())  # failed/: for resume
    cli(cfg, "prepare", "docs")
    migrated = legacy_new.with_name(f"legacy-2.0_{owner}_"
                                    f"{time.strftime('%Y%m%dT%H%M%SZ', recent)}.json")
    assert sorted((state / "completed").glob("*.json")) == sorted([kept, busy, migrated])
    assert json.loads(migrated.read_text())["urls"] == data["urls"]
    assert (state / "failed" / old.name).exists()
    manifest = json.loads((tmp_path / "out" / ".crawl-state" / "docs" / "manifest.json")
                          .read_text())
    assert manifest["prepares"][-1]["tickets_pruned"] == 2
    out = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert out["tickets"]["completed"] == 3
    # keep_completed: 0 keeps them all, however old
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"keep_completed": 0})
    ancient = kept.with_name(f"{stems[1][0]}_20010101T000000Z.json")
    kept.rename(ancient)
    cli(cfg, "prepare", "docs")
    assert sorted((state / "completed").glob("*.json")) == sorted([ancient, busy, migrated])
