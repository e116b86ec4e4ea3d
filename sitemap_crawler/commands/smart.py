"""crawl_mode: smart — sample some known URLs first; if many changed, re-crawl everything.

Seed 002 phase 7: conditional GETs on ``smart_sample`` random URLs of the index (through the
same polite Fetcher and host gate as the workers).  A 304 or an unchanged content hash is
"unchanged"; if more than ``smart_threshold`` of the sample changed, the site is treated as
changed wholesale and prepare queues every URL; otherwise it plans incrementally.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any

from sitemap_crawler.config import Settings
from sitemap_crawler.convert.markdown import html_to_markdown, normalized_hash
from sitemap_crawler.fetch.charset import decode_html
from sitemap_crawler.fetch.client import Fetcher
from sitemap_crawler.protocol.hostgate import HostGate


@dataclass
class SmartVerdict:
    sampled: int
    changed: int

    @property
    def ratio(self) -> float:
        return self.changed / self.sampled if self.sampled else 0.0


def sample_changes(idx: dict[str, dict[str, Any]], settings: Settings, gate: HostGate,
                   seed: int | None = None, sources: tuple[str, ...] = ()) -> SmartVerdict:
    """How many of a sample of known URLs changed; ``sources`` are the site's (the address
    policy exempts their addresses, fetch/netguard.py)."""
    known = [u for u, e in idx.items() if not e.get("removed") and e.get("content_hash")]
    rng = random.Random(seed)
    sample = rng.sample(known, min(settings.smart_sample, len(known)))
    changed = 0
    fetcher = Fetcher(settings, gate=gate, stop=threading.Event(), sources=sources)
    try:
        for url in sample:
            e = idx[url]
            r = fetcher.fetch(url, etag=e.get("etag"), last_modified=e.get("last_modified"))
            if r.outcome == "not_modified":
                continue
            if r.outcome != "ok":
                changed += 1
                continue
            if r.content_type in ("text/html", "application/xhtml+xml"):
                text, _ = decode_html(r.body, r.headers.get("content-type"))
                h = html_to_markdown(text, r.final_url).content_hash
            else:
                h = normalized_hash(r.body.decode("utf-8", errors="replace"))
            changed += h != e.get("content_hash")
    finally:
        fetcher.close()
    return SmartVerdict(len(sample), changed)
