"""The url-index as a base file plus segments (protocol/index.py I1-I3): a merge costs what the
crawl learnt, not what the site holds; compaction and combining keep the files bounded; readers
without the lock never see a torn or partial index; export and status read the folded view.

Real files and real processes throughout; the share variants run on the SMB and sshfs mounts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.journal import Journal, owner_of
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.timestamps import utcnow

ROOT = Path(__file__).resolve().parent.parent


def _entry(i: int, when: str = "2026-01-01T00:00:00Z") -> dict:
    return {"etag": f'"e{i}"', "content_hash": f"sha256:{i:064x}", "status_code": 200,
            "last_crawled": when, "file_path": f"docs.example/p/{i}.md", "outcome": "new"}


def _state(root: Path, base_entries: int) -> StateDir:
    state = StateDir(root)
    state.ensure()
    if base_entries:
        idx = {f"https://docs.example/p/{i}": _entry(i) for i in range(base_entries)}
        (root / "url-index.json").write_bytes(orjson.dumps(idx, option=orjson.OPT_SORT_KEYS))
    return state


def _journal(state: StateDir, urls: list[str], outcome: str = "changed") -> None:
    wid = new_worker_id()
    j = Journal(state.journal, wid)
    now = utcnow()
    for u in urls:
        j.append({"url": u, "ticket": "t1", "worker": wid, "final": True, "attempts": 1,
                  "last_crawled": now, "status_code": 200, "outcome": outcome,
                  "etag": '"new"', "content_hash": "sha256:" + "ab" * 32})
    j.close()


def _merge(state: StateDir) -> int:
    return url_index.merge(state, new_worker_id(), lambda w: False, lambda w: True)


def test_merge_leaves_a_large_base_alone_and_writes_what_the_crawl_learnt(tmp_path):
    """1,000 changed pages: one segment of 1,000 records, the same bytes whether the base holds
    2,000 or 40,000 entries; the base file is not rewritten; the folded view has the news."""
    sizes = {}
    for n in (2_000, 40_000):
        state = _state(tmp_path / str(n), n)
        before = os.stat(state.index_path)
        _journal(state, [f"https://docs.example/p/{i}" for i in range(0, 1_000)])
        assert _merge(state) == 1_000
        after = os.stat(state.index_path)
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
            before.st_ino, before.st_mtime_ns, before.st_size), "the base was rewritten"
        segs = url_index.segment_files(state)
        assert len(segs) == 1
        sizes[n] = segs[0].stat().st_size
        view = url_index.load_view(state)
        assert len(view) == n
        assert view["https://docs.example/p/7"]["etag"] == '"new"'
        assert view["https://docs.example/p/7"]["file_path"] == "docs.example/p/7.md"  # kept
        assert view["https://docs.example/p/1500"]["etag"] == '"e1500"'
        assert "ticket" not in view["https://docs.example/p/7"]  # transient fields stay out
        assert not os.listdir(state.journal), "the merged, closed journal is deleted (J2)"
    assert sizes[2_000] == sizes[40_000]


def test_compaction_at_half_the_base_and_combining_past_the_bound(tmp_path):
    state = _state(tmp_path, 100)
    base = state.index_path.stat().st_size
    # Small merges: below half the base they stay segments ...
    for k in range(3):
        _journal(state, [f"https://docs.example/p/{k}"])
        _merge(state)
    assert len(url_index.segment_files(state)) == 3
    assert state.index_path.stat().st_size == base
    # ... until they reach half of it: then everything is folded into a new base.
    _journal(state, [f"https://docs.example/q/{i}" for i in range(60)], outcome="new")
    _merge(state)
    assert url_index.segment_files(state) == []
    idx = url_index.load(state.index_path)
    assert len(idx) == 160 and idx["https://docs.example/p/1"]["etag"] == '"new"'
    listed = orjson.loads((state.root / url_index.LIST_FILE).read_bytes())
    assert listed == {**listed, "segments": [], "base_entries": 160}
    # With a big base, many small merges are combined into one segment, not into the base.
    big = _state(tmp_path / "big", 20_000)
    for k in range(url_index.MAX_SEGMENTS + 1):
        _journal(big, [f"https://docs.example/p/{k}"])
        _merge(big)
    segs = url_index.segment_files(big)
    assert len(segs) == 1 and "combined" in segs[0].name
    view = url_index.load_view(big)
    assert all(view[f"https://docs.example/p/{k}"]["etag"] == '"new"'
               for k in range(url_index.MAX_SEGMENTS + 1))
    assert view["https://docs.example/p/9999"]["etag"] == '"e9999"'


def test_an_index_of_an_earlier_version_is_a_base_without_segments(tmp_path):
    """No url-index.d, no stats file: read as before, counted, then extended by a merge."""
    state = _state(tmp_path, 50)
    assert not (state.root / url_index.SEGMENT_DIR).exists()
    assert not (state.root / url_index.LIST_FILE).exists()
    assert len(url_index.load_view(state)) == 50
    assert url_index.count(state) == 50
    _journal(state, ["https://docs.example/new-page"], outcome="new")
    _merge(state)
    assert url_index.count(state) == 51
    assert "https://docs.example/new-page" in url_index.load_view(state)
    # prepare reads the whole view: the base is rewritten once, and the list has its figures
    idx = url_index.merged_index(state, new_worker_id(), lambda w: False)
    listed = orjson.loads((state.root / url_index.LIST_FILE).read_bytes())
    assert listed["base_entries"] == len(idx) == 51 and listed["segments"] == []
    assert listed["base_id"] and listed["base_hash"]


def test_records_folded_twice_change_nothing(tmp_path):
    """I2: a compaction killed after writing the base but before deleting its segments leaves
    both; the view is the same as with the segments folded once."""
    state = _state(tmp_path, 20_000)
    _journal(state, [f"https://docs.example/p/{i}" for i in range(100)])
    _merge(state)
    seg = url_index.segment_files(state)[0]
    once = url_index.load_view(state)
    url_index.write_base(state, once, lambda: None)  # the base holds the records ...
    assert seg.exists()  # ... and the segment is still there
    assert url_index.load_view(state) == once


def test_a_corrupt_segment_is_a_one_line_error_not_a_silent_loss(tmp_path):
    state = _state(tmp_path, 5_000)
    _journal(state, ["https://docs.example/p/2"])
    _merge(state)
    seg = url_index.segment_files(state)
    assert len(seg) == 1
    seg[0].write_bytes(b'{"url": "https://x/1"}\n{"url": 3}\n')
    with pytest.raises(CrawlError, match="corrupt url-index segment"):
        url_index.load_view(state)


def test_a_merge_killed_before_its_list_leaves_nothing_read_and_loses_nothing(tmp_path):
    """I4: a segment file no list names (its writer died before the list) is not read; the
    journal it came from is still there, so the next merge folds the records again, and the
    next compaction deletes the orphan."""
    state = _state(tmp_path, 5_000)
    orphan = url_index.segment_dir(state) / "00000001-dead-worker-abc.jsonl"
    orphan.parent.mkdir()
    orphan.write_bytes(b'{"url": "https://docs.example/p/3", "etag": "\\"orphan\\""}\n')
    assert url_index.load_view(state)["https://docs.example/p/3"]["etag"] == '"e3"'
    _journal(state, [f"https://docs.example/p/{i}" for i in range(5_000)])
    _merge(state)  # as big as the base: compacted
    assert url_index.segment_files(state) == []
    assert not orphan.exists()
    assert url_index.load(state.index_path)["https://docs.example/p/3"]["etag"] == '"new"'


_COMPACTOR = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from sitemap_crawler.protocol import index as url_index
    from sitemap_crawler.protocol.journal import Journal, owner_of
    from sitemap_crawler.protocol.state import StateDir, new_worker_id
    from sitemap_crawler.timestamps import utcnow
    state = StateDir(Path(sys.argv[1]))
    for k in range(int(sys.argv[3])):
        wid = new_worker_id()
        j = Journal(state.journal, wid)
        for i in range(40):
            j.append({"url": f"https://docs.example/r{k}/{i}", "last_crawled": utcnow(),
                      "outcome": "new", "final": True, "ticket": "t"})
        j.close()
        url_index.merge(state, wid, lambda w: False, lambda w: True)
    print("done", flush=True)
""")


def _race_readers(root: Path, reader_root: Path, rounds: int) -> None:
    """One real process merges (and so compacts and combines) over and over in ``root`` while
    this one reads the index without the lock through ``reader_root`` (another mount of the
    same share, or the same directory): no view ever misses a URL of the base."""
    state = _state(root, 400)
    reader = StateDir(reader_root)
    proc = subprocess.Popen([sys.executable, "-c", _COMPACTOR, str(root), str(ROOT),
                             str(rounds)], stdout=subprocess.PIPE, text=True)
    reads = 0
    try:
        while proc.poll() is None:
            view = url_index.load_view(reader)
            assert all(f"https://docs.example/p/{i}" in view for i in range(400))
            rows = dict(url_index.iter_view(reader))
            assert all(f"https://docs.example/p/{i}" in rows for i in range(400))
            reads += 1
    finally:
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "done" in out
    assert reads > 3
    final = url_index.load_view(state)
    assert len(final) == 400 + 40 * rounds
    assert dict(url_index.iter_view(state)) == final
    assert url_index.count(state) == len(final)


def test_readers_without_the_lock_race_a_compacting_merger(tmp_path):
    _race_readers(tmp_path / "state", tmp_path / "state", 60)


def test_readers_race_a_compacting_merger_on_a_share(share):
    a, b, _kind = share
    _race_readers(a / "state", b / "state", 25)


def test_a_merge_reads_only_what_the_journals_gained(tmp_path):
    """J3: a journal kept open for the whole run (a live worker) is folded from where the
    last merge stopped; a garbled line is read again next time, not skipped for good."""
    state = _state(tmp_path, 20_000)
    wid = new_worker_id()
    j = Journal(state.journal, wid)
    live = lambda w: False  # noqa: E731 - the worker is alive: its journal stays
    for i in range(3):
        j.append({"url": f"https://docs.example/p/{i}", "last_crawled": utcnow(), "etag": '"a"'})
    j.sync()
    assert url_index.merge(state, new_worker_id(), live, live) == 3
    assert url_index.merge(state, new_worker_id(), live, live) == 0  # nothing new: no segment
    assert len(url_index.segment_files(state)) == 1
    j.append({"url": "https://docs.example/p/3", "last_crawled": utcnow(), "etag": '"a"'})
    j.sync()
    assert url_index.merge(state, new_worker_id(), live, live) == 1
    segs = url_index.segment_files(state)
    assert len(segs) == 2 and len(url_index.read_segment(segs[1])) == 1
    # A line whose bytes have not all arrived (zeros), then a whole one: both offsets held.
    good = orjson.dumps({"url": "https://docs.example/p/4", "last_crawled": utcnow(),
                         "etag": '"late"'}) + b"\n"
    with open(j.path, "ab") as f:
        at = f.tell()
        f.write(b"\0" * (len(good) - 1) + b"\n")
        f.write(orjson.dumps({"url": "https://docs.example/p/5", "last_crawled": utcnow(),
                              "etag": '"a"'}) + b"\n")
    assert url_index.merge(state, new_worker_id(), live, live) == 1  # p/5; the zeros wait
    with open(j.path, "r+b") as f:
        f.seek(at)
        f.write(good)  # the bytes arrive
    assert url_index.merge(state, new_worker_id(), live, live) == 2  # p/4, and p/5 again
    view = url_index.load_view(state)
    assert view["https://docs.example/p/4"]["etag"] == '"late"'
    assert view["https://docs.example/p/5"]["etag"] == '"a"'


_FOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from sitemap_crawler.discover.urls import normalize_url
    from sitemap_crawler.protocol import index as url_index
    from sitemap_crawler.protocol.frontier import Frontier
    from sitemap_crawler.protocol.journal import Journal, owner_of
    from sitemap_crawler.protocol.state import StateDir, new_worker_id
    from sitemap_crawler.timestamps import utcnow
    state = StateDir(Path(sys.argv[1]))
    if sys.argv[3] == "compact":
        url_index.update(state, new_worker_id(), lambda w: False, lambda idx: None)
    else:
        wid = new_worker_id()
        j = Journal(state.journal, wid)
        j.append({"url": "https://docs.example/p/9", "last_crawled": utcnow(), "depth": 0,
                  "links": sys.argv[3].split(",")})
        j.close()
        f = Frontier(state, "docs", cap=0, ticket_size=50, key=normalize_url)
        url_index.merge(state, wid, lambda w: False, lambda w: True, None, f)
""")


def test_a_worker_keeps_its_fold_view_and_still_sees_every_other_fold(tmp_path):
    """_FoldCache: a worker's second fold applies only the segments written since its first,
    yet a link another process queued in between, or one folded before a compaction by a
    third process, is never ticketed twice."""
    from sitemap_crawler.discover.urls import normalize_url
    from sitemap_crawler.protocol.frontier import Frontier
    from sitemap_crawler.protocol.tickets import TicketQueue

    state = _state(tmp_path, 5_000)
    url_index.update(state, new_worker_id(), lambda w: False, lambda idx: None)  # a base_id
    x = [f"https://docs.example/x/{i}" for i in range(6)]

    def fold(links: list[str]) -> int:
        wid = new_worker_id()
        j = Journal(state.journal, wid)
        j.append({"url": "https://docs.example/p/1", "last_crawled": utcnow(), "depth": 0,
                  "links": links})
        j.close()
        f = Frontier(state, "docs", cap=0, ticket_size=50, key=normalize_url)
        url_index.merge(state, wid, lambda w: False, lambda w: True, None, f)
        return f.added

    def other(arg: str) -> None:
        subprocess.run([sys.executable, "-c", _FOLDER, str(state.root), str(ROOT), arg],
                       check=True, timeout=120)

    assert fold(x[0:2]) == 2
    other(x[2])  # another process queues x2
    assert fold(x[1:4]) == 1  # x1 known from this process's fold, x2 from the other's: x3
    other("compact")  # a third process writes a new base
    assert fold([x[0], x[3], x[4]]) == 1  # read anew after the compaction: x4
    other(",".join(x))  # x5 by the other process
    assert fold(x) == 0
    q = TicketQueue(state, "t")
    ticketed = [u["url"] for n in q.names("pending") for u in q.read("pending", n)["urls"]]
    assert sorted(ticketed) == sorted(x), "every link ticketed exactly once"


def test_a_segment_cut_at_a_line_end_is_not_read_as_whole(tmp_path):
    """I5: a segment shorter than the size its list records (a share's stale size can cut a
    read exactly after a newline, which parses) is never folded as if it were whole."""
    state = _state(tmp_path, 20_000)
    _journal(state, [f"https://docs.example/p/{i}" for i in range(10)])
    _merge(state)
    seg = url_index.segment_files(state)[0]
    lines = seg.read_bytes().splitlines(keepends=True)
    assert len(lines) == 10
    seg.write_bytes(b"".join(lines[:6]))  # four whole records gone, still valid JSON lines
    with pytest.raises(CrawlError, match="shorter than its listed size"):
        url_index.load_view(state)
    with pytest.raises(CrawlError, match="shorter than its listed size"):
        dict(url_index.iter_view(state))


def test_count_by_keys_agrees_with_the_view_with_and_without_the_keys_file(tmp_path):
    """``count`` holds the segments' URLs as 64-bit keys, not strings: URLs in several
    segments, URLs the base holds and new ones are each counted once, by the keys file and,
    without one, by streaming the base."""
    state = _state(tmp_path, 0)
    url_index.write_base(state, {f"https://docs.example/p/{i}": _entry(i) for i in range(300)},
                         lambda: None)
    _journal(state, [f"https://docs.example/p/{i}" for i in range(0, 20)]
             + [f"https://docs.example/new/{i}" for i in range(10)])
    _merge(state)
    _journal(state, [f"https://docs.example/new/{i}" for i in range(5, 15)]
             + ["https://docs.example/p/299"])
    _merge(state)
    assert len(url_index.segment_files(state)) == 2
    want = len(url_index.load_view(state))
    assert want == 315
    assert url_index.count(state) == want
    (state.root / url_index.KEYS_FILE).unlink()
    assert url_index.count(state) == want


_PARTED = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from sitemap_crawler.protocol import index as url_index
    from sitemap_crawler.protocol.state import StateDir, new_worker_id
    url_index.SEGMENT_PART = 64 << 10
    write = url_index._write_segment
    parts = []

    def dying(*args, **kw):
        path = write(*args, **kw)
        parts.append(path)
        if len(parts) == int(sys.argv[3]):
            os._exit(9)  # killed right after a part and the list naming it are in place
        return path

    url_index._write_segment = dying
    url_index.merge(StateDir(Path(sys.argv[1])), new_worker_id(), lambda w: False,
                    lambda w: True)
""")


def test_a_merge_writes_parts_and_a_kill_between_two_loses_nothing(tmp_path):
    """I10: a merge holds one part of its segment at a time (a first crawl's 580 MB of
    journals held whole took the runner to 762 MiB); killed after its third part, the list
    names three parts of at most a part's size and says how far each journal is in them;
    the next merge folds the rest and the view holds every record."""
    state = _state(tmp_path, 2_000)
    urls = [[f"https://docs.example/j{k}/{i}" for i in range(1_000)] for k in range(3)]
    for batch in urls:
        _journal(state, batch)
    p = subprocess.run([sys.executable, "-c", _PARTED, str(tmp_path), str(ROOT), "3"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 9, p.stderr
    listed = orjson.loads((tmp_path / url_index.LIST_FILE).read_bytes())
    segs = url_index.segment_files(state)
    assert len(segs) == 3
    lines = [s.read_bytes().splitlines() for s in segs]
    assert all(64 << 10 <= sum(map(len, part)) + len(part) < (64 << 10) + 400 for part in lines)
    # J4 as I10 says: what the list says is folded is exactly what the parts hold
    folded = 0
    for path in url_index.journal_files(state.journal):
        upto = listed["journals"].get(owner_of(path), 0)
        folded += path.read_bytes()[:upto].count(b"\n")
    assert folded == sum(map(len, lines))
    assert 0 < folded < 3_000
    _merge(state)
    view = url_index.load_view(state)
    assert len(view) == 5_000
    assert all(view[u]["etag"] == '"new"' for batch in urls for u in batch)
    assert view["https://docs.example/p/7"]["etag"] == '"e7"'
    assert url_index.journal_files(state.journal) == []
