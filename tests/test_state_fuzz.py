"""Issue 20: the readers of the url-index segment list, its segments and link-frontier
intents, fed random and mutated files.  Each read and each maintenance step may refuse with
a one-line CrawlError; none may raise anything else, and nothing outside the state folder
may be written, moved or deleted."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.frontier import Frontier
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.protocol.tickets import TicketName
from sitemap_crawler.timestamps import utcnow

NASTY = ["../../../victim.jsonl", "/etc/hostname", "..", ".", "", "a/b.jsonl",
         "00000001-w.jsonl/../../victim.jsonl", "00000001-..jsonl", "\x00", 7, None,
         {"x": 1}, ["00000001-w.jsonl"], "00000001-w.jsonl", "victim.jsonl"]


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(4)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            del b[rng.randrange(len(b)):rng.randrange(len(b) + 1)]
        elif op == 2:
            b[rng.randrange(len(b) + 1):0] = rng.choice(
                [b'"../../victim"', b"{", b"]", b"null", b'"\\u0000"', b"1e999"])
        else:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
    return bytes(b)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _state(tmp: Path) -> StateDir:
    state = StateDir(tmp / "state")
    state.ensure()
    j = Journal(state.journal, new_worker_id())
    for i in range(5):
        j.append({"url": f"https://h.example/{i}", "ticket": "t", "final": True,
                  "last_crawled": utcnow(), "outcome": "new",
                  "links": [f"https://h.example/{i}/next"], "depth": 0})
    j.close()
    url_index.merge(state, new_worker_id(), lambda w: False, lambda w: True)
    return state


def _exercise(state: StateDir) -> None:
    """Every reader and the maintenance steps: only a CrawlError may come out."""
    frontier = Frontier(state, "docs", cap=0, ticket_size=2, key=lambda u: u)
    steps = (lambda: url_index.count(state), lambda: url_index.load_view(state),
             lambda: list(url_index.iter_view(state)),
             lambda: url_index.merge(state, new_worker_id(), lambda w: False, lambda w: True,
                                     frontier=frontier),
             lambda: url_index.update(state, new_worker_id(), lambda w: False, lambda i: None))
    for step in steps:
        try:
            step()
        except CrawlError as e:
            assert "\n" not in str(e)


def test_random_and_mutated_segment_lists_segments_and_intents(tmp_path):
    rng = random.Random(20)
    victim = tmp_path / "victim.jsonl"
    for trial in range(30):
        here = tmp_path / f"t{trial}"
        here.mkdir()
        victim.write_bytes(orjson.dumps({"url": "https://elsewhere/x", "outcome": "new"}) + b"\n")
        state = _state(here)
        listed = state.root / url_index.LIST_FILE
        data = orjson.loads(listed.read_bytes())
        data["segments"] = data.get("segments", []) + rng.sample(NASTY, 3)
        if rng.random() < 0.3:
            data["sizes"] = rng.choice([None, [], {"x": "y"}, {"../../victim.jsonl": 5}])
        listed.write_bytes(_mutate(rng, orjson.dumps(data)) if rng.random() < 0.5
                           else orjson.dumps(data))
        seg_dir = state.root / url_index.SEGMENT_DIR
        seg_dir.mkdir(exist_ok=True)
        for seg in list(seg_dir.iterdir())[:1]:
            seg.write_bytes(_mutate(rng, seg.read_bytes()))
        frontier = state.root / "frontier"
        frontier.mkdir(exist_ok=True)
        intent = {"id": rng.choice(["L20260101T000000abcdef", "../../../victim", "x/y", 5]),
                  "site": "docs", "created_at": utcnow(),
                  "urls": rng.choice([[{"url": "https://h.example/n", "depth": 1,
                                        "found_on": "https://h.example/"}], [1], None, "x"])}
        raw = orjson.dumps(intent)
        (frontier / "intent-L20260101T000000abcdef.json").write_bytes(
            _mutate(rng, raw) if rng.random() < 0.5 else raw)
        outside = {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith(str(here))}
        _exercise(state)
        after = {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith(str(here))}
        assert after == outside, f"trial {trial}: a file outside the state changed"
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("victim") and
                    p != victim], os.listdir(tmp_path)


def test_random_and_mutated_ticket_names_are_exactly_ours_or_refused():
    """A parsed name is exactly the listed one (the claim moves it by that name, T12), so
    no decoding or normalising can lead a move elsewhere or loop on a missing file."""
    rng = random.Random(4)
    seeds = [b"20261121T1200ab-00001-h-127.0.0.1-8080.3_host-12-abcdef_20261123T134759Z.json",
             b"t-1.0.json", b"t-1.0_w.json"]
    for _ in range(3000):
        raw = _mutate(rng, rng.choice(seeds)) + rng.choice([b"", b".json", b"%2F.json"])
        name = raw.decode("utf-8", "replace").replace("/", "%2F").replace("\x00", "")
        got = TicketName.parse(name)
        if got is not None:
            assert got.filename == name and got.file() == f"{got.ticket_id}.{got.gen}.json"
            assert "/" not in got.filename and "%" not in got.filename
