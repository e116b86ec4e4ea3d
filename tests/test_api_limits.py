"""``api.work()`` in this process honours ``max_duration`` and ``max_total_size`` as the CLI
does (issue 21 item 6): it stops, hands the rest back, says ``stopped``, and the next call
goes on from there.  Through the public API against a real 127.0.0.1 server."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from sites import doc_site

import sitemap_crawler as sc

N = 30


def site_with(tmp: Path, source: str, **settings: Any) -> sc.Site:
    config = sc.config_from_dict({
        "settings": {"base_output_dir": str(tmp / "out"), "request_delay": 0.2,
                     "max_retries": 1, "crawl_state": {"ticket_size": 5}, **settings},
        "sites": [{"name": "docs", "source": source, "base_dir": "md"}]}, tmp)
    return config.site("docs")


def page_hits(server) -> Counter[str]:
    return Counter(r.path for r in server.requests if r.path.startswith("/docs/"))


def test_api_work_stops_at_max_duration_and_the_next_call_finishes(server, tmp_path):
    doc_site(server, N)  # one request per 0.2 s: the whole crawl takes ~6 s
    site = site_with(tmp_path, server.url("/sitemap.xml"), max_duration="1s")
    sc.prepare(site)
    t0 = time.monotonic()
    totals = sc.work(site)
    took = time.monotonic() - t0
    assert totals["stopped"] == "max_duration", totals
    assert took < 4 and 0 < totals["urls"] < N, (took, totals)  # the whole crawl: ~6 s
    st = sc.status(site)
    assert st["urls_remaining"] == N - totals["urls"], st
    # the limit is the site's: a config without it finishes the rest, each page once
    rest = sc.work(site_with(tmp_path, server.url("/sitemap.xml")))
    assert not rest.get("stopped") and totals["urls"] + rest["urls"] == N, rest
    assert set(page_hits(server)) == {f"/docs/page-{i}.html" for i in range(N)}
    assert max(page_hits(server).values()) == 1


def test_api_work_stops_at_max_total_size(server, tmp_path):
    doc_site(server, N)
    site = site_with(tmp_path, server.url("/sitemap.xml"), request_delay=0.05,
                     max_total_size="4KB")
    sc.prepare(site)
    totals = sc.work(site)
    assert totals["stopped"] == "max_total_size", totals
    assert totals["written"] >= 4096 and totals["urls"] < N, totals
    written = sum(p.stat().st_size for p in (tmp_path / "out" / "md").rglob("*.md"))
    assert written == totals["written"]
