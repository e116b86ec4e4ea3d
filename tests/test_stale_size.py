"""S1 (protocol/fsutil.py): a file replaced by rename on one mount is read whole on the other,
even while that mount's client still holds the old, shorter size (sshfs caches it 20 s)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import orjson
import pytest

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.fsutil import atomic_write, on_network_fs
from sitemap_crawler.protocol.state import StateDir


@pytest.mark.netfs
def test_an_index_replaced_on_one_mount_is_read_whole_on_the_other(share):
    import time

    a, b, kind = share
    assert on_network_fs(a) and on_network_fs(b)
    small = {"https://x/0": {"n": 0}}
    atomic_write(a / "url-index.json", orjson.dumps(small))
    os.stat(a / "url-index.json")  # mount A now caches the small file's size
    big = {f"https://x/{i}": {"n": i, "pad": "y" * 50} for i in range(200)}
    atomic_write(b / "url-index.json", orjson.dumps(big))  # "machine" B replaces it
    # Measured on sshfs: a plain read from A now ends after the old size (23 of 16,781
    # bytes) until its attribute cache expires; load() reads until the content is whole.
    t0 = time.monotonic()
    assert url_index.load(a / "url-index.json") == big, kind
    assert time.monotonic() - t0 < 35


def test_a_torn_index_on_a_local_disk_is_corruption_at_once(tmp_path):
    import time

    from sitemap_crawler.errors import CrawlError

    path = tmp_path / "url-index.json"
    path.write_text(json.dumps({"https://x/": {"n": 1}})[:-3])
    t0 = time.monotonic()
    with pytest.raises(CrawlError, match="corrupt url-index"):
        url_index.load(path)
    assert time.monotonic() - t0 < 1  # no waiting for a cache that a local disk does not have


@pytest.mark.netfs
def test_a_base_replaced_on_one_mount_loses_nothing_when_the_other_updates_it(share):
    """I9: the JSON-lines base written on mount B starts with the lines of the base mount A
    wrote and still caches, so A's stale size cuts B's base at a line's end, which parses.
    Found in CI as a lost update (tests/test_trust_lock.py on sshfs).  A's update must fold
    B's whole base, and A's view must hold every entry."""
    a, b, kind = share
    sa, sb = StateDir(a), StateDir(b)
    sa.ensure()

    def add(urls: list[str]) -> Callable[[dict], None]:
        def fn(idx: dict) -> None:
            for u in urls:
                idx[u] = {"n": len(u)}
        return fn

    url_index.update(sa, "wa", lambda _w: False, add(["https://x/0"]))
    os.stat(a / "url-index.json")  # mount A now caches the small base's size
    more = [f"https://x/{i:04d}" for i in range(1, 200)]  # sorted after x/0: same first line
    url_index.update(sb, "wb", lambda _w: False, add(more))
    url_index.update(sa, "wa", lambda _w: False, add(["https://x/zzz"]))
    want = {"https://x/0", "https://x/zzz", *more}
    assert set(url_index.load_view(sa)) == want, kind
    assert set(url_index.load_view(sb)) == want, kind
