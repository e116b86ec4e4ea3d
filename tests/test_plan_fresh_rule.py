"""The fresh rule prepare tests a million URLs with (plan.py ``FreshRule``, known.py
``fresh_sizes``) says "fresh" exactly where the planner's ``decide_at`` does.

Prepare counts the URLs ``fresh_sizes`` calls fresh without asking the planner, and asks it
for the rest: a URL the rule called fresh that the planner would have ticketed would never
be crawled again.  Here every combination of what decides it is judged both ways: the index
entry (crawled long ago, recently, in the future, never, removed, failed), the sitemap's
lastmod (none, empty, unparseable, a date, stamps before and after the crawl), its
changefreq (none, each value, an unknown one), and the settings (interval, full, dates not
trusted).
"""

from __future__ import annotations

import dataclasses
import itertools
import time

from sitemap_crawler.commands.known import KnownUrls
from sitemap_crawler.commands.plan import CHANGEFREQ_HOURS, Planner
from sitemap_crawler.config import Duration, Settings

NOW = time.time()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


ENTRIES = {  # what the index holds of a URL
    "old": {"last_crawled": _stamp(NOW - 40 * 86400), "size": 11},
    "day": {"last_crawled": _stamp(NOW - 20 * 3600), "size": 12},
    "hour": {"last_crawled": _stamp(NOW - 1800), "size": 13},
    "future": {"last_crawled": _stamp(NOW + 3600), "size": 14},
    "failed": {"last_crawled": _stamp(NOW - 1800), "failed": True, "size": 15},
    "removed": {"last_crawled": _stamp(NOW - 1800), "removed": True, "size": 16},
    "never": {"size": 17},
    "bad-stamp": {"last_crawled": "yesterday", "size": 18},
}
LASTMODS = [None, "", "soon", _stamp(NOW - 60 * 86400), _stamp(NOW - 3600),
            _stamp(NOW - 60), _stamp(NOW + 86400), _stamp(NOW - 30 * 86400)[:10],
            _stamp(NOW)[:10]]
CHANGEFREQS = [None, "sometimes", *CHANGEFREQ_HOURS]
SETTINGS = [Settings(), Settings(recrawl_interval=Duration(7 * 86400)),
            Settings(recrawl_interval=Duration(3600)), Settings(trust_sitemap_dates=False),
            dataclasses.replace(Settings(), crawl_mode="full")]


def test_the_fresh_rule_says_fresh_exactly_where_the_planner_does():
    urls = [f"https://docs.example.com/{name}" for name in ENTRIES]
    known = KnownUrls.build(((u, e) for u, e in zip(urls, ENTRIES.values(), strict=True)),
                            None)
    cases = list(itertools.product(range(len(urls)), LASTMODS, CHANGEFREQS))
    batch = [urls[i] for i, _, _ in cases] + ["https://docs.example.com/not-indexed"]
    lastmods = [lm for _, lm, _ in cases] + [None]
    changefreqs = [cf for _, _, cf in cases] + ["daily"]
    seen_fresh = 0
    for settings in SETTINGS:
        planner = Planner(settings, now=NOW)
        rule = planner.fresh_rule()
        if rule is None:  # full, or dates not trusted: the planner says due to all
            assert all(known.decide(planner, lm, cf, None, known.find(urls[i])).due
                       for i, lm, cf in cases if known.find(urls[i]) is not None)
            continue
        sizes = known.fresh_sizes(batch, lastmods, changefreqs, rule)
        assert sizes[-1] is None  # not in the index: new
        for (i, lm, cf), size in zip(cases, sizes, strict=False):
            slot = known.find(urls[i])
            assert slot is not None
            d = known.decide(planner, lm, cf, None, slot)
            assert (size is not None) == (not d.due), (settings, list(ENTRIES)[i], lm, cf, d)
            if size is not None:
                assert size == known.size(slot)
                seen_fresh += 1
    assert seen_fresh > 50  # the grid has both answers in it
