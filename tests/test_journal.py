"""Journal lines as both readers see them: the standard json one and the merge's orjson one."""

from __future__ import annotations

import math

from sitemap_crawler.protocol.journal import Journal, JournalTail, read_journal


def test_every_record_reads_back_the_same_in_both_readers(tmp_path):
    records = [
        {"url": "http://h.example/caf\u00e9?q=\u2019", "title": "Caf\u00e9 \u2014 menu",
         "elapsed": 1e-05, "bytes": 12345, "final": True, "links": ["http://h.example/a"]},
        {"url": "http://h.example/odd", "title": "bad \udc80 byte"},  # a lone surrogate
        {"url": "http://h.example/big", "n": 2 ** 70},  # beyond 64 bits
    ]
    j = Journal(tmp_path, "w1")
    for rec in records:
        j.append(rec)
    j.sync()
    assert list(read_journal(j.path)) == records
    tail = JournalTail(j.path, 0)
    # orjson refuses the lone surrogate and the big int when reading (as before): the
    # readable records come back whole
    assert [r for r in tail if r["url"].endswith("caf\u00e9?q=\u2019")] == records[:1]
    assert j.position() == [3, j.path.stat().st_size]


def test_a_nan_is_written_so_the_merge_can_read_it(tmp_path):
    j = Journal(tmp_path, "w1")
    j.append({"url": "http://h.example/a", "change_frequency": math.nan})
    j.append({"url": "http://h.example/b"})
    got = list(JournalTail(j.path, 0))
    assert [r["url"] for r in got] == ["http://h.example/a", "http://h.example/b"]
    assert got[0]["change_frequency"] is None
