"""S1 (protocol/fsutil.py): a file replaced by rename on one mount is read whole on the other,
even while that mount's client still holds the old, shorter size (sshfs caches it 20 s)."""

from __future__ import annotations

import json

import orjson
import pytest

from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.fsutil import atomic_write, on_network_fs


@pytest.mark.netfs
def test_an_index_replaced_on_one_mount_is_read_whole_on_the_other(share):
    import os
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
