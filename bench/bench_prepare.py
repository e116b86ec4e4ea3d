"""The prepare benchmark: 1,000,000 URLs in a sitemap index, ours beside ultimate-sitemap-parser.

    python -m bench.bench_prepare [--files 20] [--per-file 50000] [--workdir DIR]
                                  [--rounds 3] [--usp-rounds 3] [--shape plain|varied]
                                  [--gzip] [--request-delay 0] [--pythonpath DIR,DIR]

Writes a sitemap index of ``files`` x ``per_file`` URLs (with lastmod, changefreq, priority),
serves it with nginx on 127.0.0.1, then in one run measures, each in a fresh process:
``sitemap-crawler prepare`` (fetch, parse, filter, dedupe, write tickets) and
ultimate-sitemap-parser listing the same URLs — wall time and peak RSS of the process.
Rounds alternate between the two tools, so a busy moment of the machine hits both.
``--shape varied``: longer paths of many lengths (``/guide/deploy-backup-notes-0000001.html``);
``--gzip``: the urlset files gzipped (bench/site.py ``make_big_sitemap``).

``--pythonpath``: one prepare per round from each of these checkouts (comma-separated, in
turn; default this one), so a before/after comparison shares the machine's load; each
record names its ``code``.

``--request-delay`` (seconds, default 0): prepare's politeness between its requests to the
site.  Discovery takes the host gate like the workers (issue 18), so with the config's
default of 1 s a prepare of 21 sitemap files waits ~21 s whatever it costs, and
ultimate-sitemap-parser waits for nothing; runs before issue 22's third round used 1 s.

Each prepare round writes into an output directory of its own, and the directories are
deleted only at the end.  Deleting the last round's 10,000 tickets just before the next
round made that round slower on this VM's ext4 (mounted without a journal): for 60 s after
a delete (360 s while the inode table is dirty) the kernel skips "recently deleted" inodes
when it allocates new ones (``recently_deleted()`` in fs/ext4/ialloc.c), and perf showed
each of the 10,000 creates scanning past them.  That cost belongs to the harness, not to
prepare, and usp writes no files at all.
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
from bench.scrapy_baseline import _measure_in_fresh_process

ROOT = Path(__file__).resolve().parents[1]


def measure(cmd: list[str]) -> tuple[float, float, str, float, float]:
    """(wall seconds, peak RSS MiB, stdout, CPU seconds, of them in the kernel) of one child
    process: the kernel's share tells file-creation cost (10,000 tickets) from Python's.

    Call it in a fresh process: RUSAGE_CHILDREN's peak is a max over every child so far."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, use.ru_maxrss / 1024, r.stdout, use.ru_utime + use.ru_stime, use.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=50_000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--usp-rounds", type=int, default=3)
    ap.add_argument("--shape", choices=("plain", "varied"), default="plain")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--request-delay", type=float, default=0.0)
    ap.add_argument("--pythonpath", default=str(ROOT))
    a = ap.parse_args()
    codes = [Path(p).resolve() for p in a.pythonpath.split(",")]
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-prepare-"))
    root = work / "site"
    root.mkdir(parents=True, exist_ok=True)
    nginx = Nginx(root)
    base = nginx.start()
    try:
        bench_site.make_big_sitemap(root, files=a.files, per_file=a.per_file, base_url=base,
                                    shape=a.shape, gzipped=a.gzip)
        cfg = work / "config.yaml"
        print(json.dumps({"event": "start", "urls": a.files * a.per_file, "shape": a.shape,
                          "gzip": a.gzip, "request_delay": a.request_delay,
                          "loadavg_1m": round(os.getloadavg()[0], 2)}), flush=True)
        for i in range(max(a.rounds, a.usp_rounds)):
            for code in codes if i < a.rounds else ():
                print(json.dumps(prepare_round(work, cfg, base, i, a.request_delay, code)),
                      flush=True)
            if i < a.usp_rounds:  # in a fresh process too: its peak RSS is this round's
                rec = _measure_in_fresh_process(["usp", "--base", base])
                print(json.dumps(rec | {"round": i + 1}), flush=True)
    finally:
        nginx.close()
        for d in work.glob("out-*"):
            shutil.rmtree(d, ignore_errors=True)


def prepare_round(work: Path, cfg_path: Path, base: str, i: int, delay: float,
                  code: Path = ROOT) -> dict:
    """One prepare of the checkout ``code`` in a fresh process, into a fresh output
    directory (module docstring)."""
    tag = f"{i + 1}-{code.name}"
    out = work / f"out-{os.getpid()}-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    cfg = work / f"config-{tag}.yaml"
    cfg.write_text(yaml.safe_dump({
        "settings": {"base_output_dir": str(out), "max_urls_per_site": 0,
                     "request_delay": delay},
        "sites": [{"name": "big", "source": f"{base}/sitemap.xml"}]}))
    # prepare ends with a syncfs of its file system (fsutil.sync_filesystem): start each
    # round with nothing of the previous round's 10,000 tickets still to be written back
    os.sync()
    # Each round is a child of a fresh process: its RUSAGE_CHILDREN peak is this round's.
    script = ("import json, sys; from bench.bench_prepare import measure; "
              "print(json.dumps(measure(sys.argv[1:])))")
    r = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "sitemap_crawler",
                        "--config", str(cfg), "--log-level", "WARNING", "prepare", "big"],
                       capture_output=True, text=True, check=True, cwd=code,
                       env=dict(os.environ, PYTHONPATH=f"{code}:{ROOT}"))
    wall, rss, stdout, cpu, sys_cpu = json.loads(r.stdout)
    return {"tool": "sitemap-crawler prepare", "round": i + 1, "code": str(code),
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2), "sys_seconds": round(sys_cpu, 2),
            "peak_rss_mib": round(rss, 1),
            "summary": stdout.strip().splitlines()[-1],
            "loadavg_1m": round(os.getloadavg()[0], 2)}


if __name__ == "__main__":
    main()
