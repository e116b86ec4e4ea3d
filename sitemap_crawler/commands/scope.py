"""Which URLs a site's tickets may hold: a ticket is a file of the shared state folder, so a
URL in it is input, and one outside the site is refused before any request (issue 20).

A ticket URL is in scope when its host (``host:port`` unless the port is the scheme's) is

* a source's host or its ``www.`` twin;
* one that a ``prepare`` of this site queued URLs of (recorded in ``manifest.json`` as
  ``hosts``): a site whose sitemap moved to another host, or sitemaps that list URLs on
  another port of the same name;
* any host with ``allow_other_hosts``; a host that link following's ``scope`` takes
  (``subdomains``, or a URL prefix) for a link-following site.

The manifest is state too, so its list only widens the scope to hosts a prepare wrote; it
is what a prepare found, kept so that workers need not discover the site again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sitemap_crawler.config import Site
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol.hostgate import host_key
from sitemap_crawler.protocol.state import StateDir

if TYPE_CHECKING:  # links.py needs lxml: prepare without link following does not import it
    from sitemap_crawler.discover.links import LinkRules

MANIFEST_HOSTS = "hosts"
MAX_HOSTS = 10_000  # a manifest's list beyond this is not read (a bounded input)


def twins(hosts: Iterable[str]) -> set[str]:
    """``hosts`` with their ``www.`` twins (``host:port`` keys keep their port)."""
    out = {h for h in hosts if h}
    return out | {h[4:] if h.startswith("www.") else "www." + h for h in out}


def manifest_hosts(manifest: dict[str, Any]) -> set[str]:
    """The hosts a manifest records, if it is a list of strings; else none."""
    got = manifest.get(MANIFEST_HOSTS)
    if not isinstance(got, list) or len(got) > MAX_HOSTS:
        return set()
    return {h for h in got if isinstance(h, str) and h}


class TicketScope:
    """The URLs a worker takes from this site's tickets."""

    def __init__(self, site: Site, state: StateDir, rules: LinkRules | None) -> None:
        s = site.settings
        self.any_host = bool(s.allow_other_hosts)
        self.rules = rules if rules is not None and rules.scope != "host" else None
        self.hosts = twins(host_key(u) for u in site.sources)
        with contextlib.suppress(CrawlError, OSError):  # unreadable: widens nothing
            self.hosts |= manifest_hosts(state.read_manifest())

    def refuses(self, url: str) -> bool:
        """True when ``url`` is not one of this site's (never fetched, never written)."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return True
        try:
            if self.any_host or host_key(url) in self.hosts:
                return False
        except ValueError:  # a port that is not a number
            return True
        return self.rules is None or not self.rules.in_scope(url)
