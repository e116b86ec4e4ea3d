"""Link following beside Scrapy's CrawlSpider, with the sitemap crawl of both in the same run.

    python -m bench.bench_links [--pages 5000] [--workdir DIR] [--rounds 3] [--workers 4]

One bench site (bench/site.py with ``related=10``: every page also lists 10 "Related pages",
a 10-ary tree over the site, because the plain demo pages link only to the ~50 sidebar
pages) is served by two private nginx instances from the same directory:

- **visible**: robots.txt with ``Sitemap:``, the sitemap index and its children, as
  bench_work serves it;
- **hidden**: the same pages, but robots.txt has no ``Sitemap:`` line and every sitemap
  path we or Scrapy could probe (``/sitemap*.xml``, ``/sitemaps/``, ``/*-sitemap.xml``,
  ``/llms.txt``, ``/llms-full.txt``) answers 404.

Each round measures four crawls, markdown output, first pass into an empty directory:

1. sitemap-crawler ``crawl --workers N`` from ``/sitemap.xml`` (visible server);
2. Scrapy ``SitemapSpider`` + markdownify (visible server), as bench/scrapy_baseline.py;
3. sitemap-crawler ``crawl --workers N`` with ``follow_links: true`` from ``/`` (hidden);
4. Scrapy ``CrawlSpider`` + ``LinkExtractor(allow_domains=[host])`` + markdownify from
   ``/`` (hidden), same settings (CONCURRENT_REQUESTS 32, robots.txt obeyed).

The tools alternate (ours first in odd rounds, Scrapy first in even ones).  pages/s is
*server-side* for every tool: distinct page URIs nginx answered 200 to, divided by the
tool's wall time (start-up included).  Correctness from the same access log: pages reached
by each tool and pages fetched more than once.  ``cpu_seconds_all`` is the user + system
time of the tool's whole process tree (our workers included), which a loaded machine
inflates much less than wall time.  One JSON line per crawl on stdout and in
``WORKDIR/results.jsonl``; a summary table (per-round ratios, medians) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from bench import site as bench_site
from bench.bench_work import run_ours, scrapy
from bench.nginx import Nginx
from bench.scrapy_baseline import ensure_installed

RELATED = 10
# Everything a sitemap or llms.txt probe could find, 404 on the hidden server.
HIDE = r"^/(sitemap[^/]*\.xml(\.gz)?|sitemaps?/.*|[a-z]+-sitemap\.xml|llms(-full)?\.txt)$"


def hidden_conf(robots: Path) -> str:
    return (f"location = /robots.txt {{ default_type text/plain; alias {robots}; }}\n"
            f'        location ~ "{HIDE}" {{ return 404; }}')


def is_page(uri: str) -> bool:
    path = uri.split("?", 1)[0]
    return path.endswith((".html", "/"))


def server_view(ng: Nginx) -> dict[str, Any]:
    """Pages reached (distinct page URIs answered 200) and duplicate fetches, then reset."""
    by_status = ng.uri_counts()
    ok = {u: n for u, n in by_status.get("200", {}).items() if is_page(u)}
    counts = ng.status_counts(reset=True)
    return {"pages_reached": len(ok),
            "pages_fetched_twice": sum(1 for n in ok.values() if n > 1),
            "extra_fetches": sum(n - 1 for n in ok.values() if n > 1),
            "twice": sorted(u for u, n in ok.items() if n > 1)[:5],
            "not_200": {s: sorted(u)[:5] for s, u in by_status.items() if s != "200"},
            "requests": counts["requests"], "statuses": {k: v for k, v in counts.items()
                                                         if k.isdigit()}}


def write_config(path: Path, base: str, out: Path, *, links: bool, max_depth: int) -> Path:
    site: dict[str, Any] = {"name": "bench", "base_dir": "md"}
    if links:
        site.update(source=f"{base}/", follow_links=True, max_depth=max_depth)
    else:
        site.update(source=f"{base}/sitemap.xml")
    cfg = {"settings": {"base_output_dir": str(out), "request_delay": 0,
                        "max_parallel_per_host": 8, "max_urls_per_site": 0,
                        "crawl_state": {"ticket_size": 100}},
           "sites": [site]}
    path.write_text(yaml.safe_dump(cfg))
    return path


def scrapy_links(base: str, out: Path) -> dict[str, Any]:
    """Scrapy CrawlSpider in a fresh interpreter (RUSAGE_CHILDREN then covers one child)."""
    import subprocess

    args = [sys.executable, "-c",
            "import json,sys; from bench.scrapy_baseline import crawl; from pathlib import Path;"
            "print(json.dumps(crawl(sys.argv[1], Path(sys.argv[2]), follow_links=True)))",
            base, str(out)]
    r = subprocess.run(args, capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1])
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def _children_cpu() -> float:
    """User + system seconds of every finished, waited-for descendant (workers included)."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def get_status(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--max-depth", type=int, default=20,
                    help="link depth limit for us (the site needs 4; Scrapy has none)")
    ap.add_argument("--only", default="sitemap,links", help="comma list of sitemap,links")
    ap.add_argument("--skip-scrapy", action="store_true")
    a = ap.parse_args()
    modes = [m for m in ("sitemap", "links") if m in a.only.split(",")]
    if not a.skip_scrapy:
        ensure_installed(("scrapy",))
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-links-"))
    work.mkdir(parents=True, exist_ok=True)
    root = work / "site"
    man = (bench_site.load_manifest(root) if (root / bench_site.MANIFEST).exists() else None)
    if (man is None or man.get("related") != RELATED or man["pages"] != a.pages
            or man["mutations"]):
        shutil.rmtree(root, ignore_errors=True)
        bench_site.build_site(root, pages=a.pages, related=RELATED)
    robots = work / "robots-no-sitemap.txt"
    robots.write_text("User-agent: *\nDisallow: /private/\nAllow: /\n")
    results = work / "results.jsonl"

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        with results.open("a") as f:
            f.write(line + "\n")

    visible = Nginx(root, access_log=True)
    hidden = Nginx(root, access_log=True, extra_conf=hidden_conf(robots))
    try:
        vbase = visible.start()
        hbase = hidden.start()
        bench_site.write_sitemaps(root, vbase)
        # the hidden server really hides: no Sitemap: line, every probe 404
        st, body = get_status(hbase + "/robots.txt")
        assert st == 200 and b"sitemap" not in body.lower(), (st, body)
        for p in ("/sitemap.xml", "/sitemap-guide.xml", "/sitemap_index.xml", "/llms.txt"):
            assert get_status(hbase + p)[0] == 404, p
        assert get_status(vbase + "/sitemap.xml")[0] == 200
        hidden.status_counts(reset=True)
        visible.status_counts(reset=True)
        emit({"event": "start", "root": str(root), "pages": a.pages, "related": RELATED,
              "workers": a.workers, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "loadavg": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()})
        for rnd in range(1, a.rounds + 1):
            tools = ["ours", "scrapy"] if rnd % 2 else ["scrapy", "ours"]
            if a.skip_scrapy:
                tools = ["ours"]
            for mode in modes:
                ng, base = (hidden, hbase) if mode == "links" else (visible, vbase)
                for tool in tools:
                    out = work / f"{tool}-{mode}"
                    shutil.rmtree(out, ignore_errors=True)
                    load0 = os.getloadavg()[0]
                    cpu0 = _children_cpu()
                    if tool == "ours":
                        cfg = write_config(work / f"ours-{mode}.yaml", base, out,
                                           links=mode == "links", max_depth=a.max_depth)
                        rec = run_ours(cfg, a.workers)
                        rec["files"] = sum(1 for _ in (out / "md").rglob("*.md"))
                    elif mode == "links":
                        rec = scrapy_links(base, out)
                    else:
                        rec = scrapy("md", base, out)
                    cpu = _children_cpu() - cpu0
                    srv = server_view(ng)
                    rec.update(round=rnd, mode=mode, server=srv,
                               pages_per_s_server=round(srv["pages_reached"] / rec["seconds"],
                                                        1),
                               cpu_seconds_all=round(cpu, 2),
                               loadavg_1m_before=round(load0, 2),
                               loadavg_1m_after=round(os.getloadavg()[0], 2))
                    rec["who"] = tool
                    emit(rec)
        emit({"event": "end", "loadavg": [round(x, 2) for x in os.getloadavg()]})
    finally:
        visible.close()
        hidden.close()
    summarize(results, a.rounds)


def summarize(results: Path, rounds: int) -> None:
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    # only the last run in the file (results.jsonl is appended to)
    start = max(i for i, r in enumerate(recs) if r.get("event") == "start")
    recs = [r for r in recs[start:] if "mode" in r]
    print("\n| mode | round | ours s | ours pages/s | Scrapy s | Scrapy pages/s | ratio |"
          " CPU s ours / Scrapy | CPU ratio | pages reached ours / Scrapy |"
          " fetched twice ours / Scrapy | load before |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {}
    cpu_ratios: dict[str, list[float]] = {}
    for mode in ("sitemap", "links"):
        for rnd in range(1, rounds + 1):
            o = next((r for r in recs if r["mode"] == mode and r["round"] == rnd
                      and r["who"] == "ours"), None)
            s = next((r for r in recs if r["mode"] == mode and r["round"] == rnd
                      and r["who"] == "scrapy"), None)
            if o is None or s is None:
                continue
            ratio = o["pages_per_s_server"] / s["pages_per_s_server"]
            cpu_ratio = s["cpu_seconds_all"] / o["cpu_seconds_all"]
            ratios.setdefault(mode, []).append(ratio)
            cpu_ratios.setdefault(mode, []).append(cpu_ratio)
            print(f"| {mode} | {rnd} | {o['seconds']} | {o['pages_per_s_server']} | "
                  f"{s['seconds']} | {s['pages_per_s_server']} | {ratio:.2f}x | "
                  f"{o['cpu_seconds_all']} / {s['cpu_seconds_all']} | {cpu_ratio:.2f}x | "
                  f"{o['server']['pages_reached']} / {s['server']['pages_reached']} | "
                  f"{o['server']['pages_fetched_twice']} / {s['server']['pages_fetched_twice']}"
                  f" | {o['loadavg_1m_before']} / {s['loadavg_1m_before']} |")
    for mode, rs in ratios.items():
        cs = cpu_ratios[mode]
        print(f"{mode}: median pages/s ratio {statistics.median(rs):.2f}x "
              f"(range {min(rs):.2f}-{max(rs):.2f}x); CPU-seconds ratio "
              f"{statistics.median(cs):.2f}x ({min(cs):.2f}-{max(cs):.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_summary":
        summarize(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
