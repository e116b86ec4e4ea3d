"""Prepare's form of the url-index in a binary file beside the base (protocol/fields.py
I7-I8, commands/known.py): the same judgement as the streamed base, with the segments
written since folded over it, and never trusted for a base it was not written for.

Real files, written by the index module's own writer and merges of real journals.
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

from sitemap_crawler.commands.known import KnownUrls
from sitemap_crawler.commands.plan import Planner
from sitemap_crawler.config import Settings
from sitemap_crawler.protocol import fields
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.timestamps import utcnow

HOST = "https://docs.example"


def _entry(i: int) -> dict:
    """Entries of every kind the judgement tells apart."""
    e: dict = {"etag": f'"e{i}"', "last_crawled": f"2026-01-{1 + i % 28:02d}T00:00:00Z",
               "file_path": f"p/{i}.md", "outcome": "new", "size": 1000 + i,
               "change_frequency": (i % 5) / 10}
    if i % 7 == 0:
        e["removed"] = True
    if i % 11 == 0:
        e["failed"] = True
    if i % 13 == 0:
        e["change_frequency"] = "not a number"
    if i % 17 == 0:
        e = {}
    if i % 19 == 0:
        e.pop("last_crawled", None)
    return e


def _state(root: Path, n: int = 400) -> StateDir:
    state = StateDir(root)
    state.ensure()
    url_index.write_base(state, {f"{HOST}/p/{i:04d}": _entry(i) for i in range(n)},
                         lambda: None)
    return state


def _crawl(state: StateDir, urls: list[str], outcome: str = "changed") -> None:
    """A crawl's results, merged as a segment."""
    wid = new_worker_id()
    j = Journal(state.journal, wid)
    for u in urls:
        j.append({"url": u, "ticket": "t1", "worker": wid, "final": True,
                  "last_crawled": utcnow(), "status_code": 200, "outcome": outcome,
                  "size": 7, "etag": '"new"'})
    j.close()
    url_index.merge(state, new_worker_id(), lambda w: False, lambda w: True)


def _listed(n: int) -> list[str]:
    return [f"{HOST}/p/{i:04d}" for i in range(0, n, 3)] + [f"{HOST}/new/{i}" for i in range(9)]


def _judged(k: KnownUrls, planner: Planner, urls: list[str]) -> list:
    out = []
    for i, u in enumerate(urls):
        slot = k.find(u)
        if slot is None:
            out.append(None)
            continue
        lastmod = None if i % 2 else "2026-01-10T00:00:00Z"
        d = k.decide(planner, lastmod, "daily" if i % 3 else None, None, slot)
        out.append((d.due, d.new, None if math.isnan(d.score) else round(d.score, 9),
                    k.size(slot), k.empty(slot)))
    return out


def _same_as_streamed(state: StateDir, n: int) -> KnownUrls:
    """The fields file, with the segments folded over it, judges as the streamed view."""
    loaded = KnownUrls.load(state, None)
    assert loaded is not None
    streamed = KnownUrls.build(url_index.iter_view(state), None)
    assert len(loaded) == len(streamed) == len(url_index.load_view(state))
    planner = Planner(Settings())
    urls = _listed(n)
    assert _judged(loaded, planner, urls) == _judged(streamed, planner, urls)
    assert loaded.unlisted() == streamed.unlisted()
    keys = loaded.unlisted()
    urls_of = loaded.urls_of(keys)
    assert urls_of is not None
    view = dict(url_index.iter_view(state))
    assert sorted(urls_of) == sorted(u for u, e in view.items()
                                     if url_index.url_key(u) in keys)
    want = set(urls[:40]) | {f"{HOST}/nowhere"}
    assert dict(loaded.view(state, want)) == {u: e for u, e in view.items() if u in want}
    return loaded


def test_the_fields_file_judges_as_the_streamed_base_with_segments_over_it(tmp_path):
    state = _state(tmp_path)
    assert (tmp_path / fields.FIELDS_FILE).is_file()  # written with the base
    _same_as_streamed(state, 400)
    # a crawl's results (pages of the base, new pages, a removed page back) as segments
    _crawl(state, [f"{HOST}/p/{i:04d}" for i in (0, 3, 7, 14, 17, 33)]
           + [f"{HOST}/new/{i}" for i in range(4)])
    _crawl(state, [f"{HOST}/new/{i}" for i in range(2, 6)] + [f"{HOST}/p/0399"], "failed")
    assert len(url_index.segment_files(state)) == 2
    _same_as_streamed(state, 400)
    # a new base with the segments in it: the fields file follows it
    before = (tmp_path / fields.FIELDS_FILE).read_bytes()
    url_index.update(state, new_worker_id(), lambda w: False, lambda idx: None)
    assert url_index.segment_files(state) == []
    assert (tmp_path / fields.FIELDS_FILE).read_bytes() != before
    _same_as_streamed(state, 400)


def _usable(state: StateDir) -> bool:
    return KnownUrls.load(state, None) is not None


def test_an_unfinished_round_is_told_on_the_fields_file_as_on_the_strings(tmp_path):
    """R1: ``last_crawled >= round_at`` compared as strings; on the fields file as parsed
    stamps, and not at all (the base streamed) when a stamp is not as utcnow writes it."""
    state = _state(tmp_path)
    _crawl(state, [f"{HOST}/p/{i:04d}" for i in (1, 2, 3)] + [f"{HOST}/new/1"])
    urls = [f"{HOST}/p/{i:04d}" for i in range(400)] + [f"{HOST}/new/{i}" for i in range(3)]
    # the crawl's own first stamp, not utcnow() after it: a second may tick in between
    first = min(e["last_crawled"] for _, e in url_index.iter_view(state)
                if e.get("etag") == '"new"')
    for round_at in ("2026-01-14T00:00:00Z", "2026-01-14T00:00:01Z", first):
        loaded = KnownUrls.load(state, round_at)
        assert loaded is not None
        streamed = KnownUrls.build(url_index.iter_view(state), round_at)
        done = [(u, loaded.done_in_round(s)) for u in urls if (s := loaded.find(u)) is not None]
        want = [(u, streamed.done_in_round(s)) for u in urls
                if (s := streamed.find(u)) is not None]
        assert done == want
        assert any(d for _, d in done) and not all(d for _, d in done)
    assert KnownUrls.load(state, "2026-01-14") is None  # not a stamp as utcnow writes it
    odd = _state(tmp_path / "odd")
    url_index.update(odd, new_worker_id(), lambda w: False,
                     lambda idx: idx[f"{HOST}/p/0001"].update(last_crawled="2026-01-05 10:00"))
    assert KnownUrls.load(odd, None) is not None
    assert KnownUrls.load(odd, "2026-01-14T00:00:00Z") is None


def test_a_fields_file_is_not_trusted_for_another_base(tmp_path):
    """I7: a fields file of another base, a base changed by hand, a file cut short or with
    bytes after its end, of the other byte order, or none at all (an earlier version's
    output): the index is streamed."""
    state = _state(tmp_path / "a")
    other = _state(tmp_path / "b", 401)
    path = tmp_path / "a" / fields.FIELDS_FILE
    good = path.read_bytes()
    assert _usable(state)
    shutil.copy(tmp_path / "b" / fields.FIELDS_FILE, path)
    assert not _usable(state)
    path.write_bytes(good[:-1])
    assert not _usable(state)
    path.write_bytes(good + b"\0")
    assert not _usable(state)
    other_order = b'"big"' if sys.byteorder == "little" else b'"little"'
    path.write_bytes(good.replace(f'"{sys.byteorder}"'.encode(), other_order, 1))
    assert not _usable(state)  # written on a machine of the other byte order
    path.unlink()
    assert not _usable(state)
    path.write_bytes(good)
    assert _usable(state)
    base = state.index_path.read_bytes()
    state.index_path.write_bytes(base[:-200] + base[-200:].replace(b'"e', b'"E'))
    assert not _usable(state)  # same size, other last bytes
    state.index_path.write_bytes(base[:len(base) // 2])
    assert not _usable(state)  # torn: read by the streaming reader, which reports it
    state.index_path.write_bytes(base)
    assert _usable(state) and _usable(other)


def test_a_base_line_not_where_the_fields_file_says_is_not_read_as_its_url(tmp_path):
    """I8: two lines of the same length swapped (size, tail and list unchanged): a line read
    by offset is another URL's, so the index is streamed instead."""
    state = _state(tmp_path)
    lines = state.index_path.read_bytes().splitlines(keepends=True)
    a, b = 100, 101
    assert len(lines[a]) == len(lines[b]) and b'/p/0100"' in lines[a]
    lines[a], lines[b] = lines[b], lines[a]
    state.index_path.write_bytes(b"".join(lines))
    k = KnownUrls.load(state, None)
    assert k is not None  # no segment touches those URLs yet
    try:
        dict(k.view(state, {f"{HOST}/p/0100"}))
        raise AssertionError("a swapped line was read as its URL")
    except fields.Stale:
        pass
    _crawl(state, [f"{HOST}/p/0100"])  # now the fold reads that line: the fields are not used
    assert KnownUrls.load(state, None) is None
