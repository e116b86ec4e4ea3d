"""The crawl benchmark: sitemap-crawler beside Scrapy (+ markdownify) on one nginx site.

    python -m bench.bench_work [--pages 5000] [--workdir DIR] [--skip-scrapy] [--rounds 3]
                               [--shape docs|long]

In one run, against the same static documentation site served by nginx on 127.0.0.1
(apt-get install nginx; bench/nginx.py runs a private instance):

1. first pass, markdown output: ``sitemap-crawler crawl --workers 4`` and ``--workers 1``
   alternating for ``--rounds`` rounds (the 4-vs-1 figure is the median ratio), and Scrapy
   with a markdownify item pipeline (bench/scrapy_baseline.py);
2. a second pass with nothing changed: conditional GET alone (``trust_sitemap_dates:
   false``), then with the sitemap's lastmod trusted — bytes on the wire from nginx's access
   log, files rewritten from mtimes;
3. 5 % of pages changed (and their lastmod): exactly those files must be rewritten;
4. Scrapy's HttpCacheMiddleware with RFC2616Policy: pass 1 fills the cache, pass 2 measured,
   with nginx's default headers and with ``Cache-Control: max-age=0``.

Worker RSS is sampled from /proc every 0.5 s during the 4-worker pass.  Prints one JSON line
per measurement and a summary table; append the figures to bench/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from bench import site as bench_site
from bench.nginx import Nginx

REPO = Path(__file__).resolve().parents[1]


def emit(rec: dict[str, Any]) -> None:
    print(json.dumps(rec), flush=True)


def write_config(path: Path, base: str, out: Path, **settings: Any) -> Path:
    cfg = {"settings": {"base_output_dir": str(out), "request_delay": 0,
                        "max_parallel_per_host": 8, "max_urls_per_site": 0,
                        "crawl_state": {"ticket_size": 100}, **settings},
           "sites": [{"name": "bench", "source": f"{base}/sitemap.xml", "base_dir": "md"}]}
    path.write_text(yaml.safe_dump(cfg))
    return path


def rss_sampler(state_workers: Path, stop: threading.Event,
                samples: dict[int, list[int]]) -> None:
    """VmRSS (KiB) of every live worker process, every 0.5 s."""
    while not stop.wait(0.5):
        for p in state_workers.glob("*.lock"):
            try:
                pid = json.loads(p.read_bytes())["pid"]
                status = Path(f"/proc/{pid}/status").read_text()
            except (OSError, ValueError, KeyError):
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    samples.setdefault(pid, []).append(int(line.split()[1]))


def run_ours(cfg: Path, workers: int, *, sample_rss: bool = False) -> dict[str, Any]:
    out = Path(yaml.safe_load(cfg.read_text())["settings"]["base_output_dir"])
    samples: dict[int, list[int]] = {}
    stop = threading.Event()
    th = None
    if sample_rss:
        th = threading.Thread(target=rss_sampler, args=(out / ".crawl-state" / "bench" /
                                                         "workers", stop, samples), daemon=True)
        th.start()
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                        "--log-level", "WARNING", "crawl", "bench", "--workers", str(workers)],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    stop.set()
    if th:
        th.join()
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    manifest = json.loads((out / ".crawl-state" / "bench" / "manifest.json").read_text())
    last = manifest["last_crawl"]
    if "no work left" in r.stdout:  # prepare queued nothing: no crawl happened this time
        last = {"urls": 0, "seconds": 0.0}
    rec: dict[str, Any] = {"tool": f"sitemap-crawler --workers {workers}",
                           "seconds": round(wall, 2),
                           "urls": last.get("urls", 0),
                           "pages_per_s": round(last.get("urls", 0) / wall, 1),
                           "new": last.get("new", 0), "changed": last.get("changed", 0),
                           "unchanged_304": last.get("unchanged_304", 0),
                           "unchanged_hash": last.get("unchanged_hash", 0),
                           "work_seconds": last.get("seconds"),
                           "summary": r.stdout.strip().splitlines()[-1]}
    if samples:
        # "flat" = the RSS once warmed up (5 s in) equals the RSS at the end of the run
        rec["worker_rss_kib"] = {str(pid): {"first": s[0], "at_5s": s[min(10, len(s) - 1)],
                                            "max": max(s), "last": s[-1], "samples": len(s)}
                                 for pid, s in samples.items()}
    return rec


def md_mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*.md")}


def scrapy(kind: str, base: str, out: Path, httpcache: Path | None = None,
           main_only: bool = False) -> dict[str, Any]:
    args = [sys.executable, "-c",
            "import json,sys; from bench.scrapy_baseline import crawl; from pathlib import Path;"
            "print(json.dumps(crawl(sys.argv[1], Path(sys.argv[2]), markdown=sys.argv[3]=='md',"
            " httpcache=Path(sys.argv[4]) if sys.argv[4] else None,"
            " main_only=sys.argv[5]=='main')))",
            base, str(out), kind, str(httpcache or ""), "main" if main_only else "page"]
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--skip-scrapy", action="store_true")
    ap.add_argument("--rounds", type=int, default=3,
                    help="first passes with 4 and with 1 worker, alternating (default 3)")
    ap.add_argument("--shape", choices=bench_site.SHAPES, default="docs",
                    help="the bench site's pages (bench/site.py); bench_crawl runs both")
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-work-"))
    work.mkdir(parents=True, exist_ok=True)
    root = work / "site"
    if not (root / "bench-manifest.json").exists() and not any(root.glob("*")):
        bench_site.build_site(root, pages=a.pages, shape=a.shape)
    emit({"event": "site", "root": str(root), "pages": a.pages, "shape": a.shape,
          "loadavg_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()})
    results: list[dict[str, Any]] = []

    nginx = Nginx(root, access_log=True)
    base = nginx.start()
    bench_site.write_sitemaps(root, base)
    try:
        # 1. first pass --------------------------------------------------------------------
        # 4 and 1 workers alternate for --rounds rounds: on a small VM one run of either can
        # be 15 % off, so the scaling figure is the median of the per-round ratios.
        firsts: dict[int, list[dict[str, Any]]] = {4: [], 1: []}
        for rnd in range(a.rounds):
            for workers in (4, 1):
                out = work / f"ours-{workers}"
                shutil.rmtree(out, ignore_errors=True)
                cfg = write_config(work / f"ours-{workers}.yaml", base, out)
                nginx.status_counts(reset=True)
                rec = run_ours(cfg, workers, sample_rss=workers == 4 and rnd == 0)
                rec.update(phase="first", round=rnd + 1, server=nginx.status_counts(reset=True))
                emit(rec)
                results.append(rec)
                firsts[workers].append(rec)
        ratios = [one["work_seconds"] / four["work_seconds"]
                  for four, one in zip(firsts[4], firsts[1], strict=True)]
        emit({"phase": "scaling", "work_ratio_4_vs_1": [round(r, 3) for r in ratios],
              "median": round(statistics.median(ratios), 3)})
        if not a.skip_scrapy:
            for kind in ("md", "raw"):
                nginx.status_counts(reset=True)
                rec = scrapy(kind, base, work / f"scrapy-{kind}")
                rec.update(phase="first", server=nginx.status_counts(reset=True))
                emit(rec)
                results.append(rec)

        # 2. second pass, nothing changed ---------------------------------------------------
        out = work / "ours-4"
        first4 = firsts[4][-1]  # the pass whose output ours-4 holds
        first_bytes = first4["server"]["bytes"] + first4["server"]["request_bytes"]
        first_wall = statistics.median(r["seconds"] for r in firsts[4])
        for trust in (False, True):
            cfg = write_config(work / "ours-inc.yaml", base, out, trust_sitemap_dates=trust)
            before = md_mtimes(out / "md")
            rec = run_ours(cfg, 4)
            after = md_mtimes(out / "md")
            srv = nginx.status_counts(reset=True)
            rec.update(phase="second, nothing changed",
                       mode="lastmod trusted" if trust else "conditional GET only",
                       server=srv, files_rewritten=sum(after[k] != v for k, v in before.items()),
                       bytes_vs_first=round((srv["bytes"] + srv["request_bytes"])
                                            / first_bytes, 4),
                       wall_vs_first=round(rec["seconds"] / first_wall, 3))
            emit(rec)
            results.append(rec)

        # 3. 5 % changed ----------------------------------------------------------------------
        changed = bench_site.mutate(root, 0.05)
        bench_site.write_sitemaps(root, base)
        before = md_mtimes(out / "md")
        rec = run_ours(cfg, 4)
        after = md_mtimes(out / "md")
        rewritten = {k for k, v in before.items() if after.get(k) != v}
        rec.update(phase="second, 5% changed", server=nginx.status_counts(reset=True),
                   pages_changed=len(changed), files_rewritten=len(rewritten),
                   wall_vs_first=round(rec["seconds"] / first_wall, 3))
        emit(rec)
        results.append(rec)
    finally:
        nginx.close()

    # 4. Scrapy RFC2616Policy -------------------------------------------------------------------
    if not a.skip_scrapy:
        for cc in (None, "max-age=0"):
            ng = Nginx(root, access_log=True, cache_control=cc)
            base2 = ng.start()
            bench_site.write_sitemaps(root, base2)
            cache = work / f"scrapy-cache-{cc or 'default'}"
            shutil.rmtree(cache, ignore_errors=True)
            try:
                p1 = scrapy("md", base2, work / "scrapy-rfc-1", cache)
                p1.update(phase="rfc2616 pass 1", cache_control=cc or "(nginx default)",
                          server=ng.status_counts(reset=True))
                emit(p1)
                p2 = scrapy("md", base2, work / "scrapy-rfc-2", cache)
                p2.update(phase="rfc2616 pass 2, nothing changed",
                          cache_control=cc or "(nginx default)",
                          server=ng.status_counts(reset=True))
                emit(p2)
                results += [p1, p2]
            finally:
                ng.close()
            bench_site.write_sitemaps(root, base)

    print("\n| phase | tool | seconds | pages/s | requests | bytes | notes |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        srv = r.get("server", {})
        notes = {k: r[k] for k in ("mode", "files_rewritten", "bytes_vs_first",
                                   "wall_vs_first", "pages_changed", "cache_control")
                 if k in r}
        print(f"| {r.get('phase')} | {r.get('tool')} | {r.get('seconds')} | "
              f"{r.get('pages_per_s', '')} | {srv.get('requests', '')} | "
              f"{srv.get('bytes', '')} | {notes} |")


if __name__ == "__main__":
    main()
