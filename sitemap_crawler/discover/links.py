"""Links found in a page, and the rules that say which of them a link-following crawl takes.

The last way to discover URLs, for sites without a sitemap (seed 004; config keys
``follow_links``, ``max_depth``, ``scope``, ``do_not_crawl``, ``strip_params``).  A worker
calls :func:`page_links` on each HTML page it fetched and :meth:`LinkRules.clean` on each
link; what survives goes into its journal, and the frontier (protocol/frontier.py) turns
links nobody has seen into tickets.

* ``<a rel="nofollow">`` is not followed; a page whose robots meta or X-Robots-Tag says
  ``nofollow`` gives no links at all (the worker checks that).
* Links are read from the whole page, navigation included (the markdown keeps only the main
  content, but a site's navigation is how a crawler finds its pages).
* ``scope``: ``host`` (the sources' hosts and their ``www.`` twins), ``subdomains`` (those
  hosts and any name under them), or a URL prefix (only URLs that start with it).
* ``do_not_crawl``: URL globs never requested; ``strip_params``: query parameter name globs
  removed before dedupe *and* before fetching, so ``?utm_source=x`` is one page, not many.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from lxml import etree

from sitemap_crawler.config import Settings
from sitemap_crawler.discover.urls import UrlFilter, host_of, is_http_url

_SKIP_SCHEMES = ("mailto:", "javascript:", "tel:", "data:", "ftp:", "#")


def page_links(html: str, base_url: str, doc: Any = None) -> list[str]:
    """Absolute http(s) links of ``<a>``/``<area>`` elements, fragment dropped, in order,
    without duplicates; ``rel="nofollow"`` links left out; ``<base href>`` honoured.
    ``doc``: the page's lxml tree when the caller parsed it already (the worker's, before
    conversion changes it), so the page is not parsed twice."""
    if doc is None:
        try:
            doc = etree.fromstring(html.encode("utf-8", "replace"), _parser())
        except (etree.XMLSyntaxError, ValueError):
            return []
    if doc is None:
        return []
    base = base_url
    for b in doc.iter("base"):
        if b.get("href"):
            base = urljoin(base_url, b.get("href").strip())
        break
    out: list[str] = []
    seen: set[str] = set()
    for a in doc.iter("a", "area"):
        href = (a.get("href") or "").strip()
        if not href or href.lower().startswith(_SKIP_SCHEMES):
            continue
        if "nofollow" in (a.get("rel") or "").lower().split():
            continue
        url = urljoin(base, href).split("#", 1)[0]
        if url not in seen and is_http_url(url):
            seen.add(url)
            out.append(url)
    return out


_PARSER: etree.HTMLParser | None = None


def _parser() -> etree.HTMLParser:
    global _PARSER
    if _PARSER is None:
        _PARSER = etree.HTMLParser(recover=True, no_network=True, remove_comments=True,
                                   remove_pis=True)
    return _PARSER


class LinkRules:
    """Which links a link-following crawl takes: scope, ``do_not_crawl``, ``strip_params``."""

    def __init__(self, settings: Settings, sources: Iterable[str]) -> None:
        self.scope = settings.scope
        hosts = {host_of(s) for s in sources} - {""}
        self.hosts = hosts | {h[4:] if h.startswith("www.") else "www." + h for h in hosts}
        self.blocked = UrlFilter((), settings.do_not_crawl) if settings.do_not_crawl else None
        self.strip = (re.compile("|".join(fnmatch.translate(p) for p in settings.strip_params))
                      if settings.strip_params else None)

    def clean(self, url: str) -> str | None:
        """``url`` as it will be fetched (tracking parameters stripped), or None if it is
        out of scope or never to be crawled."""
        if self.strip is not None:
            url = self._strip_params(url)
        if not self.in_scope(url):
            return None
        if self.blocked is not None and self.blocked.check(url) is not None:
            return None
        return url

    def in_scope(self, url: str) -> bool:
        if self.scope == "host":
            return host_of(url) in self.hosts
        if self.scope == "subdomains":
            h = host_of(url)
            return any(h == s or h.endswith("." + s) for s in self.hosts)
        return url.startswith(self.scope)

    def _strip_params(self, url: str) -> str:
        parts = urlsplit(url)
        if not parts.query:
            return url
        assert self.strip is not None
        kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                if not self.strip.match(k)]
        return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), ""))
