"""keysort.py: the index's and the report's sorts of a million 64-bit keys, in runs by the
top byte, give what ``sorted()`` gives; and the crawl report, which uses it, still counts
each URL by its last record across several workers' journals."""

from __future__ import annotations

import random
from array import array
from pathlib import Path

from sitemap_crawler.commands import report
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.keysort import sorted_keys, sorted_pairs
from sitemap_crawler.protocol.state import StateDir, new_worker_id

EDGES_U = [0, 1, 2**56 - 1, 2**56, 2**63 - 1, 2**63, 2**64 - 1]
EDGES_S = [-(2**63), -(2**56) - 1, -(2**56), -1, 0, 1, 2**56 - 1, 2**56, 2**63 - 1]


def test_sorted_keys_is_sorted():
    rng = random.Random(7)
    keys = [rng.getrandbits(64) for _ in range(20_000)] + EDGES_U * 3
    keys += [rng.getrandbits(8) << 56 for _ in range(500)]  # many in one run
    rng.shuffle(keys)
    assert list(sorted_keys(array("Q", keys))) == sorted(keys)
    assert list(sorted_keys(array("Q"))) == []


def test_sorted_pairs_is_a_stable_sort_by_key():
    rng = random.Random(11)
    keys = [rng.getrandbits(64) - 2**63 for _ in range(5_000)]
    keys += rng.choices(keys, k=5_000) + EDGES_S * 4  # each repeated key, more than once
    rng.shuffle(keys)
    values = list(range(len(keys)))  # the order they came in
    got_k, got_v = sorted_pairs(array("q", keys), array("q", values))
    want = sorted(zip(keys, values, strict=True), key=lambda p: p[0])  # stable
    assert list(zip(got_k, got_v, strict=True)) == want


def test_the_report_counts_each_url_by_its_last_record(tmp_path: Path):
    state = StateDir(tmp_path / "state")
    state.ensure()
    a, b = sorted([new_worker_id(), new_worker_id()])  # journals are read by name: a, then b
    ja, jb = Journal(state.journal, a), Journal(state.journal, b)
    urls = [f"http://127.0.0.1:9/p/{i}" for i in range(300)]
    for u in urls:  # every URL failed once in a's journal
        ja.append({"url": u, "ticket": "t", "worker": a, "final": True,
                   "outcome": "failed", "status_code": 503})
    for i, u in enumerate(urls[:200]):  # then 200 of them written by b
        jb.append({"url": u, "ticket": "t", "worker": b, "final": True,
                   "outcome": "new" if i % 2 else "changed", "status_code": 200})
    ja.close()
    jb.close()
    rep = report.build(state, "s", {})
    assert rep["urls"] == 300
    assert rep["outcomes"] == {"new": 100, "changed": 100, "failed": 100}
