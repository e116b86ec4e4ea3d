"""Benchmark: discover() over a sitemap index of 20 x 50,000 URLs served on 127.0.0.1.

    python bench/bench_discovery.py [--files 20] [--per-file 50000] [--gzip] [--rounds 3]
    python bench/bench_discovery.py --url http://127.0.0.1:8089/sitemap.xml   # any server

Generates the index in a temp dir, serves it with ``python -m http.server`` in a
subprocess (so the server does not share our GIL), and runs each measurement in a fresh
subprocess so peak RSS (``ru_maxrss``) belongs to that measurement alone:

* ``discover``   — the real ``discover()`` over HTTP, entries counted, not kept;
* ``lxml-bare``  — the baseline: a bare ``lxml.etree.iterparse`` loop over the same
  files on disk (every element, cleared as it goes);
* ``parser-fast`` / ``parser-lxml`` — ``XmlParser`` alone on the files on disk, with
  the fast path on and forced off.

Prints one line per measurement (best wall time of ``--rounds``) and the peak RSS.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
FREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")


def generate(root: Path, base: str, files: int, per_file: int, gz: bool) -> None:
    """Write index.xml and the child sitemaps, streaming (no big strings in memory)."""
    ext = ".xml.gz" if gz else ".xml"
    with open(root / "index.xml", "w") as f:
        f.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">\n')
        for i in range(files):
            f.write(f"  <sitemap>\n    <loc>{base}/sitemap-{i}{ext}</loc>\n"
                    f"    <lastmod>2024-05-01T00:00:00+00:00</lastmod>\n  </sitemap>\n")
        f.write("</sitemapindex>\n")
    t0 = 1_700_000_000
    for i in range(files):
        path = root / f"sitemap-{i}{ext}"
        opener = gzip.open(path, "wt", compresslevel=6) if gz else open(path, "w")  # noqa: SIM115
        with opener as f:
            f.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n')
            for j in range(per_file):
                n = i * per_file + j
                ts = time.gmtime(t0 - n * 37)
                if n % 10 == 0:
                    lastmod = time.strftime("%Y-%m-%d", ts)
                elif n % 10 == 1:
                    lastmod = time.strftime("%Y-%m-%dT%H:%M:%S+02:00", ts)
                else:
                    lastmod = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", ts)
                f.write(f"  <url>\n    <loc>{base}/docs/section-{n % 97}/page-{n}</loc>\n"
                        f"    <lastmod>{lastmod}</lastmod>\n"
                        f"    <changefreq>{FREQS[n % 7]}</changefreq>\n"
                        f"    <priority>0.{n % 10}</priority>\n  </url>\n")
            f.write("</urlset>\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _report(name: str, count: int, wall: float, cpu: float) -> None:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"name": name, "count": count, "wall": wall, "cpu": cpu, "rss_mb": rss}))


def measure(kind: str, arg: str) -> None:
    """Run one measurement in this (fresh) process and print a JSON line."""
    import httpx

    from sitemap_crawler.config import Settings
    from sitemap_crawler.discover.sitemap import XmlParser
    from sitemap_crawler.discover.sources import DiscoveryStats, discover

    if kind == "imports":
        _report(kind, 0, 0.0, 0.0)
        return
    w0, c0 = time.perf_counter(), time.process_time()
    n = 0
    if kind == "discover":
        stats = DiscoveryStats()
        with httpx.Client(timeout=30) as client:
            for _ in discover([arg], Settings(), client, stats):
                n += 1
        assert not stats.errors, stats.errors
    elif kind == "lxml-bare":
        from lxml import etree

        for path in sorted(Path(arg).glob("sitemap-*.xml*")):
            src = gzip.open(path) if path.suffix == ".gz" else str(path)  # noqa: SIM115
            for _ev, el in etree.iterparse(src):
                if el.tag.endswith("}loc"):
                    n += 1
                el.clear()
    else:
        for path in sorted(Path(arg).glob("sitemap-*.xml*")):
            p = XmlParser(str(path), 10**9, fast=kind == "parser-fast")
            with (gzip.open(path) if path.suffix == ".gz" else open(path, "rb")) as f:
                while chunk := f.read(1 << 16):
                    n += len(p.feed(chunk))
            n += len(p.close())
    _report(kind, n, time.perf_counter() - w0, time.process_time() - c0)


def run(kind: str, arg: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", kind, arg],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=50_000)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="imports,discover,lxml-bare,parser-fast,parser-lxml")
    ap.add_argument("--url", help="only time discover() on this source, served elsewhere "
                    "(e.g. nginx: python -m bench.site big DIR --base ...)")
    ap.add_argument("--measure", nargs=2, metavar=("KIND", "ARG"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure:
        measure(*a.measure)
        return
    if a.url:
        results = [run("discover", a.url) for _ in range(a.rounds)]
        for r in results:
            print(json.dumps(r))
        return
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        generate(root, base, a.files, a.per_file, a.gzip)
        size = sum(p.stat().st_size for p in root.iterdir())
        print(f"# {a.files} x {a.per_file} URLs, {'gzip' if a.gzip else 'plain'}, "
              f"{size / 2**20:.0f} MiB on disk, generated in {time.perf_counter() - t:.1f}s; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
             "--directory", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            for kind in a.only.split(","):
                arg = f"{base}/index.xml" if kind == "discover" else tmp
                results = [run(kind, arg) for _ in range(1 if kind == "imports" else a.rounds)]
                best = min(results, key=lambda r: r["wall"])
                peak = max(r["rss_mb"] for r in results)
                walls = ", ".join(f"{r['wall']:.2f}" for r in results)
                print(f"{kind:12s} {best['count']:>9,} URLs  wall {best['wall']:6.2f}s  "
                      f"cpu {best['cpu']:6.2f}s  peak RSS {peak:6.1f} MB  (walls: {walls})")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
