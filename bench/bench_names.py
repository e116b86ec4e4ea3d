"""What a file name claim costs (protocol/names.py N1-N5): a new claim (made by rename) and a
known one (read back by path by a process that has not seen it), per name, on a folder of a
local disk or a share.

    python bench/bench_names.py --dir /tmp/netfs/mnt/smb-a --names 200 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sitemap_crawler.protocol.names import NameClaims


def one_round(where: Path, n: int) -> tuple[float, float]:
    """Milliseconds per new claim and per known claim."""
    root = where / f"bench-names-{os.getpid()}-{time.monotonic_ns()}"
    root.mkdir(parents=True)
    try:
        keys = [f"host/docs/page-{i}.md" for i in range(n)]
        timings = []
        for _ in range(2):  # a new NameClaims: nothing known in memory
            claims = NameClaims(root)
            t = time.perf_counter()
            for i, k in enumerate(keys):
                claims.claim(k, lambda i=i: f"https://host/docs/page-{i}")
            timings.append((time.perf_counter() - t) / n * 1000)
        return timings[0], timings[1]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--names", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    runs = [one_round(a.dir, a.names) for _ in range(a.rounds)]
    new, known = [r[0] for r in runs], [r[1] for r in runs]
    print(f"{a.dir}: new claim {statistics.median(new):.2f} ms ({min(new):.2f}-{max(new):.2f}), "
          f"known claim {statistics.median(known):.2f} ms ({min(known):.2f}-{max(known):.2f}), "
          f"{a.names} names x {a.rounds} rounds")


if __name__ == "__main__":
    main()
