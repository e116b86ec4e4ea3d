"""Prepare's memory on a large url-index (issue 22): bounded, not the index as dicts.

The index (200,000 entries of ~600 bytes, written by the index module's own writer) and a
sitemap listing every URL with an old lastmod are made directly, not crawled; a no-op
prepare then runs as a real process, whose peak RSS is read by a wrapper process through
``getrusage(RUSAGE_CHILDREN)``.  Measured: 596 MiB before the compact index (fa5ef61), 73
MiB after it; the bound leaves room for a busier machine and other Python builds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from httpserver import Response
from sites import write_config

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.state import StateDir

N = 200_000
PER_FILE = 50_000
OLD = "2026-01-01T00:00:00Z"
LASTMOD = "2025-12-01T00:00:00Z"  # before OLD: every URL is fresh
BOUND_MIB = 120

_MEASURE = r"""
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr[-2000:],
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def _entry(i: int) -> dict:
    return {"etag": f'"{i:x}-5f3c"', "last_modified": "Thu, 01 Jan 2026 00:00:00 GMT",
            "content_hash": f"sha256:{i:064x}", "status_code": 200, "last_crawled": OLD,
            "first_seen": OLD, "file_path": f"md/section/word-word-{i:07d}.md",
            "outcome": "unchanged", "title": f"Page {i} of a large site", "size": 14000 + i,
            "change_frequency": 0.01, "changes_detected": 1}


def test_a_no_op_prepare_of_a_200k_entry_index_stays_small(server, tmp_path: Path):
    urls = [server.url(f"/section/word-word-{i:07d}.html") for i in range(N)]
    parts = []
    for k in range(0, N, PER_FILE):
        path = f"/sm-{k // PER_FILE}.xml"
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                + "".join(f"<url><loc>{u}</loc><lastmod>{LASTMOD}</lastmod></url>\n"
                          for u in urls[k:k + PER_FILE]) + "</urlset>\n")
        server.route(path, Response(body=body, content_type="application/xml"))
        parts.append(server.url(path))
    index = ('<?xml version="1.0" encoding="UTF-8"?>\n'
             '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             + "".join(f"<sitemap><loc>{p}</loc></sitemap>" for p in parts)
             + "</sitemapindex>")
    server.route("/sitemap.xml", Response(body=index, content_type="application/xml"))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), max_urls_per_site=0)
    state = StateDir(tmp_path / "out" / ".crawl-state" / "docs")
    state.ensure()
    url_index.write_base(state, {u: _entry(i) for i, u in enumerate(urls)}, lambda: None)
    r = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "sitemap_crawler",
                        "--config", str(cfg), "prepare", "docs"],
                       capture_output=True, text=True, timeout=300, check=True)
    m = json.loads(r.stdout)
    assert m["rc"] == 0, m["stderr"]
    assert f"{N} fresh" in m["stdout"] and "wrote 0 tickets" in m["stdout"], m["stdout"]
    peak = m["max_rss_kib"] / 1024
    assert peak < BOUND_MIB, f"prepare peaked at {peak:.0f} MiB for {N} index entries"
