"""The first-pass crawl, ours (``work --workers N``) beside Scrapy + markdownify, on one or both
site shapes, rounds alternating the tools.

    python -m bench.bench_crawl [--shapes docs,long] [--pages 5000] [--rounds 3]
                                [--workers 4] [--workdir DIR] [--skip-scrapy]

Why a bench of its own: issue 13 asks for the ratio on the bench site *and* on a second
shape (bench/longsite.py: long prose, deep heavy navigation, few code blocks) in the same
run, judged by pages/s and by CPU seconds.  For each shape the static site is built once
(bench/site.py; kept between runs when its manifest matches), served by a private nginx
with an access log, and each round crawls it into empty directories:

- ours: ``prepare`` (timed apart), then ``work --workers N`` — the figure the issue names —
  with the settings of bench_work (``request_delay: 0``, ``max_parallel_per_host: 8``,
  ``ticket_size: 100``);
- Scrapy ``SitemapSpider`` + markdownify pipeline (bench/scrapy_baseline.py,
  CONCURRENT_REQUESTS 32, robots.txt obeyed), wall time of its child process, start-up and
  sitemap reading included.

Ours first in odd rounds, Scrapy first in even ones.  pages/s is server-side: distinct page
URIs nginx answered 200 to during the tool's run, over its wall time.  ``cpu_seconds_all``
is the user + system time of the tool's whole process tree (RUSAGE_CHILDREN, workers
included), which a busy machine inflates far less than wall time.  ``crawl_pages_per_s``
also counts prepare's wall time in ours.  One JSON line per crawl on stdout and in
``WORKDIR/results.jsonl``; a table per shape at the end
(``python -m bench.bench_crawl _summary WORKDIR/results.jsonl`` prints it again).
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
import time
from pathlib import Path
from typing import Any

import yaml

from bench import site as bench_site
from bench.bench_links import _children_cpu, server_view
from bench.bench_work import scrapy
from bench.nginx import Nginx
from bench.scrapy_baseline import compile_ours, ensure_installed

REPO = Path(__file__).resolve().parents[1]


def write_config(path: Path, base: str, out: Path) -> Path:
    cfg = {"settings": {"base_output_dir": str(out), "request_delay": 0,
                        "max_parallel_per_host": 8, "max_urls_per_site": 0,
                        "crawl_state": {"ticket_size": 100}},
           "sites": [{"name": "bench", "source": f"{base}/sitemap.xml", "base_dir": "md"}]}
    path.write_text(yaml.safe_dump(cfg))
    return path


def _cli(cfg: Path, *args: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                        "--log-level", "WARNING", *args], capture_output=True, text=True,
                       cwd=REPO, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{args}: exit {r.returncode}: {r.stderr[-2000:]}")
    return wall, r.stdout.strip()


def run_ours(cfg: Path, workers: int, ng: Nginx) -> dict[str, Any]:
    """prepare, then ``work --workers N`` timed on its own (server counts of work only)."""
    cpu0 = _children_cpu()
    prep_wall, _ = _cli(cfg, "prepare", "bench")
    prep_cpu = _children_cpu() - cpu0
    ng.status_counts(reset=True)  # the server counts cover work alone
    cpu0 = _children_cpu()
    flags = ["--workers", str(workers)] if workers else []
    wall, out = _cli(cfg, "work", "bench", *flags)
    cpu = _children_cpu() - cpu0
    return {"tool": f"sitemap-crawler work {' '.join(flags)}".strip(), "seconds": round(wall, 2),
            "prepare_seconds": round(prep_wall, 2), "prepare_cpu_seconds": round(prep_cpu, 2),
            "cpu_seconds_all": round(cpu, 2), "summary": out.splitlines()[-1] if out else ""}


def ensure_site(root: Path, pages: int, shape: str) -> dict:
    man = bench_site.load_manifest(root) if (root / bench_site.MANIFEST).exists() else None
    if (man is None or man.get("shape", "docs") != shape or man["pages"] != pages
            or man["mutations"] or man.get("related")):
        shutil.rmtree(root, ignore_errors=True)
        man = bench_site.build_site(root, pages=pages, shape=shape)
    return man


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="docs,long", help="comma list of docs,long")
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0,
                    help="work --workers N (0: no flag, the default of one per core)")
    ap.add_argument("--scrapy-whole-page", dest="scrapy_main", action="store_false",
                    help="Scrapy converts the whole page (before issue 18: unequal work)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--skip-scrapy", action="store_true")
    a = ap.parse_args()
    shapes = [s for s in a.shapes.split(",") if s]
    for s in shapes:
        if s not in bench_site.SHAPES:
            ap.error(f"unknown shape {s!r}")
    if not a.skip_scrapy:
        ensure_installed(("scrapy",))
    compile_ours()  # equal footing: both tools run from bytecode (scrapy_baseline.py)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    work.mkdir(parents=True, exist_ok=True)
    results = work / "results.jsonl"

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        with results.open("a") as f:
            f.write(line + "\n")

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "sitemap_crawler"],
                                capture_output=True, text=True, cwd=REPO).stdout.strip())
    emit({"event": "start", "commit": commit + ("+dirty" if dirty else ""),
          "shapes": shapes, "pages": a.pages, "rounds": a.rounds, "workers": a.workers,
          "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
          "loadavg": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()})
    for shape in shapes:
        outs: list[Path] = []
        root = work / f"site-{shape}"
        man = ensure_site(root, a.pages, shape)
        ng = Nginx(root, access_log=True)
        try:
            base = ng.start()
            bench_site.write_sitemaps(root, base)
            emit({"event": "site", "shape": shape, "urls": len(man["urls"]),
                  "mb": round(man["bytes"] / 1e6, 1)})
            for rnd in range(1, a.rounds + 1):
                tools = ["ours", "scrapy"] if rnd % 2 else ["scrapy", "ours"]
                if a.skip_scrapy:
                    tools = ["ours"]
                for tool in tools:
                    # A fresh folder a round, all removed at the end: deleting the last
                    # round's files right before a run made its new inodes cost more (ext4),
                    # three a page for us and one for Scrapy.
                    out = work / f"{tool}-{shape}-r{rnd}"
                    shutil.rmtree(out, ignore_errors=True)
                    outs.append(out)
                    load0 = os.getloadavg()[0]
                    ng.status_counts(reset=True)
                    if tool == "ours":
                        rec = run_ours(write_config(work / f"ours-{shape}.yaml", base, out),
                                       a.workers, ng)
                        rec["files"] = sum(1 for _ in (out / "md").rglob("*.md"))
                    else:
                        cpu0 = _children_cpu()
                        rec = scrapy("md", base, out, main_only=a.scrapy_main)
                        rec["cpu_seconds_all"] = round(_children_cpu() - cpu0, 2)
                    srv = server_view(ng)
                    pages = srv["pages_reached"]
                    rec.update(shape=shape, round=rnd, who=tool, server=srv,
                               pages_per_s_server=round(pages / rec["seconds"], 1),
                               cpu_ms_per_page=round(1000 * rec["cpu_seconds_all"]
                                                     / max(pages, 1), 2),
                               loadavg_1m_before=round(load0, 2),
                               loadavg_1m_after=round(os.getloadavg()[0], 2))
                    if tool == "ours":
                        rec["crawl_pages_per_s"] = round(
                            pages / (rec["seconds"] + rec["prepare_seconds"]), 1)
                    emit(rec)
        finally:
            ng.close()
            for out in outs:
                shutil.rmtree(out, ignore_errors=True)
    emit({"event": "end", "loadavg": [round(x, 2) for x in os.getloadavg()]})
    summarize(results)


def summarize(results: Path) -> None:
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    start = max(i for i, r in enumerate(recs) if r.get("event") == "start")
    print(f"run: {json.dumps(recs[start])}")
    recs = [r for r in recs[start:] if "who" in r]
    for shape in dict.fromkeys(r["shape"] for r in recs):
        print(f"\n{shape}:\n| round | ours work s | ours pages/s | Scrapy s | Scrapy pages/s "
              "| ratio | ratio incl. prepare | CPU s ours / Scrapy | CPU ms/page ours / "
              "Scrapy | CPU ratio | pages ours / Scrapy | load before ours / Scrapy |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        ratios, with_prep, cpu_ratios = [], [], []
        for rnd in sorted({r["round"] for r in recs if r["shape"] == shape}):
            o = next((r for r in recs if r["shape"] == shape and r["round"] == rnd
                      and r["who"] == "ours"), None)
            s = next((r for r in recs if r["shape"] == shape and r["round"] == rnd
                      and r["who"] == "scrapy"), None)
            if o is None or s is None:
                continue
            ratio = o["pages_per_s_server"] / s["pages_per_s_server"]
            ratio_p = o["crawl_pages_per_s"] / s["pages_per_s_server"]
            cpu_ratio = (s["cpu_seconds_all"] / s["server"]["pages_reached"]) / (
                o["cpu_seconds_all"] / o["server"]["pages_reached"])
            ratios.append(ratio)
            with_prep.append(ratio_p)
            cpu_ratios.append(cpu_ratio)
            print(f"| {rnd} | {o['seconds']} | {o['pages_per_s_server']} | {s['seconds']} | "
                  f"{s['pages_per_s_server']} | {ratio:.2f}x | {ratio_p:.2f}x | "
                  f"{o['cpu_seconds_all']} / {s['cpu_seconds_all']} | "
                  f"{o['cpu_ms_per_page']} / {s['cpu_ms_per_page']} | {cpu_ratio:.2f}x | "
                  f"{o['server']['pages_reached']} / {s['server']['pages_reached']} | "
                  f"{o['loadavg_1m_before']} / {s['loadavg_1m_before']} |")
        if ratios:
            print(f"{shape}: pages/s ratio median {statistics.median(ratios):.2f}x "
                  f"({min(ratios):.2f}-{max(ratios):.2f}x); with prepare "
                  f"{statistics.median(with_prep):.2f}x ({min(with_prep):.2f}-"
                  f"{max(with_prep):.2f}x); CPU per page {statistics.median(cpu_ratios):.2f}x "
                  f"({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_summary":
        summarize(Path(sys.argv[2]))
    else:
        main()
