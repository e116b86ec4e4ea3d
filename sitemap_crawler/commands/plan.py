"""Incremental planning: which known URLs are due again, and in which order.

Rules (seed 000 §6, seed 002 phases 5–6, roadmap v0.4.0 phase 2):

* a URL never crawled (or whose last crawl was a tombstone) is *new*: always due, first;
* ``--full``, ``crawl_mode: full`` or ``crawl_state.incremental: false``: everything is due;
* a sitemap ``lastmod`` newer than ``last_crawled`` makes a URL due; a ``lastmod`` that is not
  newer means no ticket at all (zero requests) unless ``recrawl_interval`` has passed;
* without ``lastmod``, a ``changefreq`` makes a URL due once its threshold (seed 000 §6.3) has
  passed since the last crawl; with neither, the URL is due and a conditional GET decides;
* stale URLs are ordered by a score: days since the last crawl, observed change frequency
  (changes/day, an EMA kept in the index), and sitemap priority.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from sitemap_crawler.config import Settings
from sitemap_crawler.timestamps import parse_ts

CHANGEFREQ_HOURS = {"always": 0, "hourly": 1, "daily": 24, "weekly": 168, "monthly": 720,
                    "yearly": 8760, "never": 87600}
_CHANGEFREQ_S = {k: h * 3600.0 for k, h in CHANGEFREQ_HOURS.items()}  # FreshRule's form



@dataclass(frozen=True)
class Decision:
    due: bool
    new: bool
    why: str
    score: float = 0.0


# The answers without a score, made once: a prepare of a million URLs gives a million
_NEW = Decision(True, True, "new", 1e9)
_FRESH_LASTMOD = Decision(False, False, "fresh:lastmod")
_FRESH_CHANGEFREQ = Decision(False, False, "fresh:changefreq")


@dataclass(frozen=True)
class FreshRule:
    """``decide_at``'s "fresh" outside the planner (``Planner.fresh_rule``): a URL crawled
    at ``t`` (not failed) is fresh when ``max(0, now - t) < interval`` and either its
    ``lastmod`` parses to at most ``t``, or it has no usable ``lastmod`` and its
    ``changefreq``'s seconds are more than that age."""
    now: float
    interval: float  # recrawl_interval, inf when unset
    changefreq_s: dict[str, float]


class Planner:
    def __init__(self, settings: Settings, *, full: bool = False, now: float | None = None):
        self.settings = settings
        self.full = full or settings.crawl_mode == "full" or not settings.crawl_state.incremental
        self.now = time.time() if now is None else now

    def decide(self, lastmod: str | None, changefreq: str | None, priority: float | None,
               prior: dict[str, Any] | None) -> Decision:
        if not prior or prior.get("removed") or not prior.get("last_crawled"):
            return _NEW
        crawled = parse_ts(prior.get("last_crawled"))
        if crawled is None:
            return _NEW
        return self.decide_at(lastmod, changefreq, priority, crawled,
                              float(prior.get("change_frequency") or 0),
                              bool(prior.get("failed")))

    def fresh_rule(self) -> FreshRule | None:
        """What ``decide_at``'s two "fresh" answers read, for a caller that tests a million
        URLs in one loop (known.py ``fresh_sizes``); None when no URL can be fresh (full).
        A URL the rule does not call fresh goes to ``decide_at``: the rule only ever says
        fresh where ``decide_at`` does (tests/test_plan_fresh_rule.py holds the two alike)."""
        if self.full or not self.settings.trust_sitemap_dates:
            return None
        return FreshRule(self.now, self.settings.recrawl_interval or math.inf, _CHANGEFREQ_S)

    def decide_at(self, lastmod: str | None, changefreq: str | None, priority: float | None,
                  crawled: float | None, change_frequency: float, failed: bool) -> Decision:
        """``decide`` from the few fields it reads (prepare's compact index, known.py);
        ``crawled`` None: never crawled, removed, or no valid ``last_crawled``."""
        if crawled is None:
            return _NEW
        age = max(0.0, self.now - crawled)
        score = age / 86400 * 0.4 + change_frequency * 10 * 0.4 \
            + (priority if priority is not None else 0.5) * 0.2
        if self.full:
            return Decision(True, False, "full", score)
        if failed:
            return Decision(True, False, "retry", score + 1000)
        interval = self.settings.recrawl_interval
        if interval and age >= interval:
            return Decision(True, False, "interval", score)
        if not self.settings.trust_sitemap_dates:
            return Decision(True, False, "conditional", score)
        lm = parse_ts(lastmod)
        if lm is not None:
            if lm > crawled:
                return Decision(True, False, "lastmod", score + 100)
            return _FRESH_LASTMOD
        if changefreq in CHANGEFREQ_HOURS:
            if age >= CHANGEFREQ_HOURS[changefreq] * 3600:
                return Decision(True, False, "changefreq", score)
            return _FRESH_CHANGEFREQ
        return Decision(True, False, "conditional", score)
