"""The prepare benchmark: 1,000,000 URLs in a sitemap index, ours beside ultimate-sitemap-parser.

    python -m bench.bench_prepare [--files 20] [--per-file 50000] [--workdir DIR]

Writes a sitemap index of ``files`` x ``per_file`` URLs (with lastmod, changefreq, priority),
serves it with nginx on 127.0.0.1, then in one run measures, each in a fresh process:
``sitemap-crawler prepare`` (fetch, parse, filter, dedupe, write tickets) and
ultimate-sitemap-parser listing the same URLs — wall time and peak RSS of the process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench import site as bench_site
from bench.nginx import Nginx
from bench.scrapy_baseline import run_usp


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak < before:  # ru_maxrss of children is a max over all of them so far
        peak = before
    return wall, peak / 1024, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=50_000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-prepare-"))
    root = work / "site"
    root.mkdir(parents=True, exist_ok=True)
    nginx = Nginx(root)
    base = nginx.start()
    try:
        bench_site.make_big_sitemap(root, files=a.files, per_file=a.per_file, base_url=base)
        out = work / "out"
        cfg = work / "config.yaml"
        cfg.write_text(yaml.safe_dump({
            "settings": {"base_output_dir": str(out), "max_urls_per_site": 0},
            "sites": [{"name": "big", "source": f"{base}/sitemap.xml"}]}))
        print(json.dumps({"event": "start", "urls": a.files * a.per_file,
                          "loadavg_1m": round(os.getloadavg()[0], 2)}), flush=True)
        # The first run is a fresh process: its RUSAGE_CHILDREN peak is ours alone.
        for i in range(a.rounds):
            shutil.rmtree(out, ignore_errors=True)
            # prepare ends with os.sync(): start each round with nothing of the previous
            # round's 10,000 tickets (or their deletion) still to be written back
            os.sync()
            wall, rss, stdout = measure([sys.executable, "-m", "sitemap_crawler", "--config",
                                         str(cfg), "--log-level", "WARNING", "prepare", "big"])
            print(json.dumps({"tool": "sitemap-crawler prepare", "round": i + 1,
                              "seconds": round(wall, 2),
                              "peak_rss_mib": round(rss, 1) if i == 0 else None,
                              "summary": stdout.strip().splitlines()[-1],
                              "loadavg_1m": round(os.getloadavg()[0], 2)}), flush=True)
        rec = run_usp(base, work / "usp")
        print(json.dumps(rec), flush=True)
    finally:
        nginx.close()


if __name__ == "__main__":
    main()
