"""The segments' records by URL hash (index.py ``_Later``): in fold order, in bounded memory.

Export, a compaction and the runner's merge at the end of a crawl read the segments through
``_Later``.  Its sort of every record's hash made a Python int and a list slot per record at
once: 113 MiB of peak at 1,000,000 records, the runner's peak at the end of a million-page
crawl.  The records are real segment lines in a real file, read in a fresh process whose
peak RSS is taken before and after (``VmHWM``).  Measured at 200,000 records: 22.8 MiB
more before the split sort (1b495a1), 9.5 MiB after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from sitemap_crawler.protocol.index import _Later

REPO = Path(__file__).resolve().parents[1]
N = 200_000
BOUND_MIB = 16

_MEASURE = r"""
import json, sys
from pathlib import Path
from sitemap_crawler.protocol.index import _Later
def hwm():  # this process's own peak: getrusage's carries the parent's over exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
p = Path(sys.argv[1])
before = hwm()
later = _Later([(p, p.stat().st_size)], None)
grown = hwm() - before
keys = later.keys
print(json.dumps({"records": len(keys), "grown_kib": grown,
                  "sorted": all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))}))
"""


def _record(i: int, n: int = 0) -> bytes:
    return orjson.dumps({"url": f"https://docs.example.com/section/page-{i:07d}.html",
                         "etag": f'W/"{i:x}-{n}"', "content_hash": f"sha256:{i:064x}",
                         "last_crawled": "2026-11-27T10:00:00Z", "status_code": 200}) + b"\n"


def test_200k_segment_records_are_sorted_in_bounded_memory(tmp_path: Path):
    seg = tmp_path / "url-index.seg-1.jsonl"
    with seg.open("wb") as f:
        f.writelines(_record(i) for i in range(N))
    # run from this checkout's package, whatever is installed
    r = subprocess.run([sys.executable, "-c", _MEASURE, str(seg)], capture_output=True,
                       text=True, check=True, cwd=REPO)
    out = json.loads(r.stdout)
    assert out["records"] == N
    assert out["sorted"]
    assert out["grown_kib"] / 1024 < BOUND_MIB, out


def test_a_urls_records_come_back_in_fold_order_across_segments(tmp_path: Path):
    """Each URL's records in segment order, then line order, whatever their hashes."""
    segs = []
    for s in range(3):
        seg = tmp_path / f"url-index.seg-{s}.jsonl"
        # every URL in every segment, twice, in an order that differs per segment
        order = list(range(500))[s::3] + list(range(500))[:s] + list(range(500))
        seg.write_bytes(b"".join(_record(i, s * 10_000 + k) for k, i in enumerate(order)))
        segs.append((seg, seg.stat().st_size))
    later = _Later(segs, None)
    try:
        keys = later.keys
        assert all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))
        for i in (0, 1, 2, 250, 499):
            recs = later.take(f"https://docs.example.com/section/page-{i:07d}.html")
            tags = [int(r["etag"].split("-")[1].rstrip('"')) for r in recs]
            assert tags == sorted(tags) and len(tags) >= 3, (i, tags)
            assert {t // 10_000 for t in tags} == {0, 1, 2}
    finally:
        later.close()
