"""The rendering benchmark: ``render: browser`` and ``render: auto`` beside Playwright alone.

    python -m bench.bench_browser [--pages 300] [--shells 15] [--workdir DIR]

In one run, against one mostly static site served by nginx on 127.0.0.1 (bench/site.py's
documentation pages, 10-30 KB each, plus ``--shells`` empty JavaScript shells whose text an
external app.js writes):

1. ``sitemap-crawler work`` with ``render: http`` (2 workers): the reference;
2. ``render: auto`` with 1 and 2 workers: plain fetches, a browser only for the shells;
3. ``render: browser`` with 1 and 2 workers: every page rendered in headless Chromium;
4. Playwright alone, one process: launch Chromium, then a plain loop of ``page.goto(url)`` +
   ``page.content()`` over the same URLs (no robots.txt, no politeness, no conversion, no
   files): what rendering costs with nothing around it.

Each crawl is prepared first and only ``work`` is timed (browser start-up included, as it is
in the Playwright loop).  Every crawl's output is checked: the shells' markdown must hold the
text app.js writes.  Prints one JSON line per measurement and a table; the figures go into
bench/RESULTS.md by hand.  Needs nginx, Playwright and a Chromium (apt-get install nginx
chromium; pip install 'sitemap-crawler[browser]').
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import site as bench_site
from bench.nginx import Nginx
from sitemap_crawler.demo import site as demosite

REPO = Path(__file__).resolve().parents[1]
SHELL_TEXT = "Rendered by app.js: shell page {i} explains the quantum flux capacitor."


def emit(rec: dict[str, Any]) -> None:
    print(json.dumps(rec), flush=True)


def add_shells(root: Path, n: int) -> list[str]:
    """``n`` empty shells under /app/ and the demo's app.js; listed in the manifest (and so in
    the sitemaps written afterwards)."""
    app_js = demosite.generate(0, pages=20).resource(demosite.APP_SCRIPT, "").body
    bench_site._write(root / demosite.APP_SCRIPT.lstrip("/"), app_js)
    manifest = bench_site.load_manifest(root)
    paths = []
    for i in range(n):
        path = f"/app/shell-{i}.html"
        data = json.dumps({"title": f"Shell {i}", "nav": [["/", "Home"]],
                           "paragraphs": [SHELL_TEXT.format(i=i)] * 3})
        body = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                f"<title>Shell {i}</title></head><body><div id=\"root\"></div>"
                f'<script id="page-data" type="application/json">{data}</script>'
                f'<script src="{demosite.APP_SCRIPT}"></script></body></html>').encode()
        bench_site._write(bench_site.page_file(root, path), body)
        manifest["urls"][path] = {"version": 0, "lastmod": "2024-01-01T00:00:00Z",
                                  "section": "app"}
        paths.append(path)
    bench_site._save_manifest(root, manifest)
    return paths


def crawl(workdir: Path, base: str, urls: int, name: str, workers: int,
          **settings: Any) -> dict[str, Any]:
    """prepare, then time ``work``; return the figures and what was written."""
    out = workdir / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cfg = {"settings": {"base_output_dir": str(out), "request_delay": 0,
                        "max_parallel_per_host": 8, "max_urls_per_site": 0,
                        "crawl_state": {"ticket_size": 25}, **settings},
           "sites": [{"name": "bench", "source": f"{base}/sitemap.xml", "base_dir": "md"}]}
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    cmd = [sys.executable, "-m", "sitemap_crawler", "--config", str(path)]
    subprocess.run([*cmd, "prepare", "bench"], check=True, capture_output=True, cwd=REPO)
    t0 = time.monotonic()
    r = subprocess.run([*cmd, "work", "bench", "--workers", str(workers)], capture_output=True,
                       text=True, cwd=REPO)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"{name}: exit {r.returncode}: {r.stderr[-2000:]}")
    rendered = shells_ok = files = 0
    for md in (out / "md").rglob("*.md"):
        files += 1
        text = md.read_text()
        rendered += "\nrendered: browser\n" in text
        shells_ok += "Rendered by app.js" in text
    return {"run": name, "workers": workers, "render": settings.get("render", "http"),
            "files": files, "rendered": rendered, "shells_with_text": shells_ok,
            "urls": urls, "work_s": round(wall, 2), "pages_per_s": round(urls / wall, 1)}


PLAYWRIGHT_LOOP = """
import json, sys, time
from playwright.sync_api import sync_playwright
urls = json.loads(sys.argv[2])
t0 = time.monotonic()
with sync_playwright() as p:
    b = p.chromium.launch(executable_path=sys.argv[1], headless=True)
    page = b.new_page()
    t1 = time.monotonic()
    ok = 0
    for u in urls:
        page.goto(u)
        ok += "Rendered by app.js" in page.content()
    t2 = time.monotonic()
    b.close()
print(json.dumps({"total_s": t2 - t0, "loop_s": t2 - t1, "shells_with_text": ok}))
"""


def playwright_alone(urls: list[str], chromium: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-c", PLAYWRIGHT_LOOP, chromium, json.dumps(urls)],
                       capture_output=True, text=True, check=True)
    res = json.loads(r.stdout)
    return {"run": "playwright-alone", "workers": 1, "files": 0, "urls": len(urls),
            "shells_with_text": res["shells_with_text"], "work_s": round(res["total_s"], 2),
            "loop_s": round(res["loop_s"], 2),
            "pages_per_s": round(len(urls) / res["total_s"], 1),
            "loop_pages_per_s": round(len(urls) / res["loop_s"], 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--shells", type=int, default=15)
    ap.add_argument("--workdir", type=Path, default=None)
    a = ap.parse_args(argv)
    from sitemap_crawler.config import Settings
    from sitemap_crawler.fetch.browser import find_chromium

    chromium = find_chromium(Settings(render="browser"))
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="bench-browser-"))
    root = workdir / "site"
    shutil.rmtree(root, ignore_errors=True)
    bench_site.build_site(root, pages=a.pages)
    add_shells(root, a.shells)
    server = Nginx(root)
    base = server.start()
    try:
        bench_site.write_sitemaps(root, base)
        urls = [base + p for p in sorted(bench_site.load_manifest(root)["urls"])]
        emit({"site": base, "urls": len(urls), "shells": a.shells,
              "load_avg_before": os.getloadavg()[0]})
        runs = [crawl(workdir, base, len(urls), "http-2", 2),
                crawl(workdir, base, len(urls), "auto-1", 1, render="auto"),
                crawl(workdir, base, len(urls), "auto-2", 2, render="auto"),
                crawl(workdir, base, len(urls), "browser-1", 1, render="browser"),
                crawl(workdir, base, len(urls), "browser-2", 2, render="browser"),
                playwright_alone(urls, chromium)]
    finally:
        server.close()
    for rec in runs:
        emit(rec)
        if rec.get("render") != "http":  # without a browser the shells are too short
            assert rec["shells_with_text"] == a.shells, rec
    print("\n| run | workers | URLs | files | rendered | s | pages/s |\n"
          "|---|---|---|---|---|---|---|")
    for rec in runs:
        print(f"| {rec['run']} | {rec['workers']} | {rec['urls']} | {rec['files']} "
              f"| {rec.get('rendered', '—')} | {rec['work_s']} | {rec['pages_per_s']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
