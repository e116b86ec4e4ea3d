"""What the address policy and the request deadline cost per request (fetch/netguard.py):
CPU per GET of a 20 KB page over keep-alive from nginx on 127.0.0.1, httpx's own transport
beside GuardedTransport, alternating, in one process.

    python bench/bench_netguard.py --gets 2000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.nginx import nginx_serving
from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.client import ssl_context
from sitemap_crawler.fetch.netguard import guarded_transport

PAGES = 50


def cpu_per_get(client: httpx.Client, base: str, gets: int) -> float:
    """Microseconds of this process's CPU per GET, body read."""
    t = time.process_time()
    for i in range(gets):
        with client.stream("GET", f"{base}/p{i % PAGES}.html") as r:
            for _ in r.iter_raw():
                pass
    return (time.process_time() - t) / gets * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for i in range(PAGES):
            (Path(d) / f"p{i}.html").write_text("<html><body>" + "x" * 20000 + "</body></html>")
        with nginx_serving(Path(d)) as base:
            res: dict[str, list[float]] = {"httpx": [], "guarded": []}
            for _ in range(a.rounds):
                for kind in res:
                    tr = (httpx.HTTPTransport(verify=ssl_context()) if kind == "httpx" else
                          guarded_transport(Settings(), [base], ssl_context()))
                    with httpx.Client(transport=tr) as c:
                        cpu_per_get(c, base, 50)  # connection and imports first
                        res[kind].append(cpu_per_get(c, base, a.gets))
    for kind, v in res.items():
        print(f"{kind}: median {statistics.median(v):.0f} us CPU per GET "
              f"({min(v):.0f}-{max(v):.0f}) over {a.rounds} rounds of {a.gets}")


if __name__ == "__main__":
    main()
