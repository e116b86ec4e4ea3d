"""robots.txt per origin: fetched once, cached, parsed with protego.

Choices (written down because they decide what we crawl):

* R1. Cached per origin (scheme, host, port) for ``settings.robots_cache`` seconds of this
  process's monotonic clock (seed 001: robots.txt information expires, 30 minutes there).
* R2. Rules are matched with the *product token* of ``settings.user_agent`` (the text before
  the first ``/``, e.g. ``sitemap-crawler``), the way robots.txt groups name crawlers.
* R3. 2xx: parse the first 512 KiB (Google's limit; the rest is ignored, not an error).
  4xx other than 429, or no answer within 5 redirects: there is no robots.txt, crawl
  everything.  5xx, 429 or a network error: the site cannot tell us what is allowed, so
  nothing is crawled on that origin for now (Google's convention: a server error on
  robots.txt means "don't crawl yet").  That verdict is ``unavailable``, not ``disallowed``:
  it is cached for only ``error_ttl`` seconds and callers treat it as a retryable failure, so
  a short outage never turns into "skipped by robots".
* R4. Redirects are followed (at most 5 hops, to any host, as Google does).
* R5. Every robots.txt request may pass through ``guard(url)`` (a context manager given by
  the fetcher: host gate, blocks), so it is as polite as any page request.
* R6. With a ``store`` directory (the shared gate's, state.gate_root), an answer that gave
  rules or "no robots.txt" is kept as ``<store>/<host>/robots-<scheme>.json`` with the wall
  time it was fetched, and every process on every machine uses it until ``robots_cache``
  has passed by its own clock: one fetch per host per ``robots_cache``, not one per process
  and per crawl (each fetch costs the host a delay slot).  A file from the future (a clock
  ahead of ours) or unreadable is fetched again; errors (R3 ``unavailable``) are never kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin, urlsplit

import httpx
from protego import Protego

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.decoding import DecodeError, UnsupportedEncoding, decoded
from sitemap_crawler.protocol.fsutil import atomic_write
from sitemap_crawler.protocol.hostgate import safe_host, sent_trace

log = logging.getLogger(__name__)

MAX_ROBOTS_BYTES = 512 * 1024
MAX_ROBOTS_REDIRECTS = 5
DEFAULT_ERROR_TTL = 60.0

Verdict = Literal["allowed", "disallowed", "unavailable"]
Guard = Callable[[str], AbstractContextManager[object]]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` in lower case, default ports dropped."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def product_token(user_agent: str) -> str:
    """``sitemap-crawler/0.4 (+url)`` -> ``sitemap-crawler`` (R2)."""
    return user_agent.split("/", 1)[0].strip() or user_agent.strip()


@dataclass
class RobotsEntry:
    """What we know about one origin's robots.txt."""

    state: Literal["rules", "allow_all", "unavailable"]
    expires: float  # monotonic
    parser: Protego | None = None
    status: int = 0  # HTTP status of the last answer, 0 = none
    error: str | None = None
    sitemaps: list[str] = field(default_factory=list)
    body: str | None = None  # the text the rules came from (R6 keeps it)
    from_store: bool = False  # read from the kept copy (R6), not fetched


class RobotsCache:
    """robots.txt verdicts per origin (R1–R5)."""

    def __init__(self, client: httpx.Client, settings: Settings, *, guard: Guard | None = None,
                 error_ttl: float = DEFAULT_ERROR_TTL, store: Path | None = None) -> None:
        self.store = store
        self.client = client
        self.settings = settings
        self.guard = guard
        self.error_ttl = error_ttl
        self.agent = product_token(settings.user_agent)
        self._entries: dict[str, RobotsEntry] = {}
        self._lock = threading.Lock()
        self._origin_locks: dict[str, threading.Lock] = {}

    # -- queries ------------------------------------------------------------------------

    def verdict(self, url: str, *, retry_errors: bool = False) -> Verdict:
        """``allowed``/``disallowed`` by the rules, or ``unavailable`` (R3).

        ``retry_errors``: fetch again now if the cached answer is an error (a caller that
        backed off already and retries).
        """
        entry = self.entry(url, retry_errors=retry_errors)
        if entry.state == "unavailable":
            return "unavailable"
        if entry.parser is None:
            return "allowed"
        return "allowed" if entry.parser.can_fetch(url, self.agent) else "disallowed"

    def allowed(self, url: str) -> bool:
        """True only if the rules allow ``url`` (an unreachable robots.txt allows nothing)."""
        return self.verdict(url) == "allowed"

    def crawl_delay(self, url: str) -> float | None:
        """Crawl-delay for our agent, or Request-rate converted to seconds; the larger wins."""
        return self._delay(self.entry(url))

    def _delay(self, entry: RobotsEntry) -> float | None:
        if entry.parser is None:
            return None
        delays: list[float] = []
        cd = entry.parser.crawl_delay(self.agent)
        if cd is not None:
            delays.append(float(cd))
        rate = entry.parser.request_rate(self.agent)
        if rate is not None and rate.requests > 0:
            delays.append(rate.seconds / rate.requests)
        return max(delays) if delays else None

    def sitemaps(self, origin: str) -> list[str]:
        """``Sitemap:`` lines of the origin's robots.txt (they apply to every agent)."""
        return list(self.entry(origin).sitemaps)

    def cached(self, url: str) -> bool:
        """True if ``url``'s origin has a live entry in memory: asking costs no request."""
        entry = self._entries.get(origin_of(url))
        return entry is not None and time.monotonic() < entry.expires

    def entry(self, origin: str, *, retry_errors: bool = False) -> RobotsEntry:
        """The cached entry of ``origin``, fetched when missing or expired.

        ``state`` tells "no rules" (``allow_all``) from "could not ask" (``unavailable``):
        a caller that lists ``sitemaps()`` should check it before concluding there are none.
        """
        origin = origin_of(origin)
        with self._lock:  # one fetch per origin; other origins' threads are not held up
            lock = self._origin_locks.setdefault(origin, threading.Lock())
        with lock:
            now = time.monotonic()
            entry = self._entries.get(origin)
            if entry is not None and now < entry.expires and not (
                retry_errors and entry.state == "unavailable"
            ):
                return entry
            entry = None if retry_errors else self._load(origin)
            if entry is None:
                entry = self._fetch(origin)
                self._keep(origin, entry)
            self._entries[origin] = entry
            return entry

    # -- R6: kept on disk for every process ------------------------------------------------

    def _path(self, origin: str) -> Path | None:
        if self.store is None:
            return None
        p = urlsplit(origin)
        host = (p.hostname or "").lower()
        port = p.port
        key = host if port is None or (p.scheme, port) in (("http", 80), ("https", 443)) \
            else f"{host}:{port}"
        return self.store / safe_host(key) / f"robots-{p.scheme}.json"

    def _load(self, origin: str) -> RobotsEntry | None:
        path = self._path(origin)
        if path is None:
            return None
        try:
            data = json.loads(path.read_bytes())
            age = time.time() - float(data["fetched_at"])
            state, status, body = data["state"], int(data["status"]), data.get("body")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not 0 <= age < self.settings.robots_cache or state not in ("rules", "allow_all"):
            return None
        left = self.settings.robots_cache - age
        if state == "allow_all" or not isinstance(body, str):
            entry = self._allow_all(status)
        else:
            entry = self._parse(body.encode(), status)
        entry.expires = time.monotonic() + left
        entry.from_store = True
        return entry

    def _keep(self, origin: str, entry: RobotsEntry) -> None:
        path = self._path(origin)
        if path is None or entry.state == "unavailable" or entry.from_store:
            return
        body = entry.body if entry.state == "rules" else None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps({"fetched_at": time.time(), "state": entry.state,
                                           "status": entry.status, "body": body}).encode())
        except OSError as e:  # only a cache: the next process fetches it again
            log.info("could not keep robots.txt of %s: %s", origin, e)

    def forget(self, origin: str) -> None:
        self._entries.pop(origin_of(origin), None)

    # -- fetching -----------------------------------------------------------------------

    def _fetch(self, origin: str) -> RobotsEntry:
        url = origin + "/robots.txt"
        status = 0
        for hop in range(MAX_ROBOTS_REDIRECTS + 1):
            try:
                status, location, entry = self._get(url, origin if hop == 0 else None)
            except (httpx.HTTPError, DecodeError, UnsupportedEncoding) as e:
                # unreadable counts as unreachable: the site waits, it is not crawled blind
                log.info("robots.txt of %s unreachable: %s", origin, e)
                return self._unavailable(status, f"{type(e).__name__}: {e}")
            if entry is not None:
                return entry
            if status in (301, 302, 303, 307, 308) and location:
                url = urljoin(url, location)
                if urlsplit(url).scheme not in ("http", "https"):
                    break
                continue
            if status == 429 or status >= 500:
                return self._unavailable(status, f"HTTP {status}")
            return self._allow_all(status)  # 4xx, other 3xx: no robots.txt
        return self._allow_all(status)  # too many redirects: Google treats it as 404

    def _get(self, url: str, origin: str | None = None
             ) -> tuple[int, str | None, RobotsEntry | None]:
        """One request: (status, Location, parsed entry for a 2xx answer).  With ``origin``,
        the kept copy is looked at again once the gate let us through: another process may
        have fetched it while we waited (R6)."""
        guard = self.guard(url) if self.guard is not None else contextlib.nullcontext()
        with guard as handle:
            kept = self._load(origin) if origin is not None else None
            if kept is not None:
                return kept.status or 200, None, kept
            return self._send(url, handle)

    def _send(self, url: str, handle: object) -> tuple[int, str | None, RobotsEntry | None]:
        with self.client.stream(
            "GET", url, follow_redirects=False, extensions={"trace": sent_trace(handle)}
        ) as r:
            if not 200 <= r.status_code < 300:
                return r.status_code, r.headers.get("location"), None
            buf = bytearray()
            for chunk in decoded(r):
                buf += chunk
                if len(buf) >= MAX_ROBOTS_BYTES:
                    del buf[MAX_ROBOTS_BYTES:]
                    break
            entry = self._parse(bytes(buf), r.status_code)
            if hasattr(handle, "delay"):
                # The guard's lease was taken before the Crawl-delay was known: keep it for
                # the delay just learned, so the first page request is spaced by it too.
                learned = self.settings.delay_for(self._delay(entry))
                handle.delay = max(handle.delay, learned)
            return r.status_code, None, entry

    def _parse(self, body: bytes, status: int) -> RobotsEntry:
        text = body.decode("utf-8", errors="replace").lstrip("\ufeff")
        try:
            parser = Protego.parse(text)
        except Exception as e:  # protego is lenient; never let a bad file stop a crawl
            log.warning("robots.txt could not be parsed (%s); allowing all", e)
            return self._allow_all(status)
        return RobotsEntry(state="rules", parser=parser, status=status,
                           expires=time.monotonic() + self.settings.robots_cache,
                           sitemaps=list(parser.sitemaps), body=text)

    def _allow_all(self, status: int) -> RobotsEntry:
        return RobotsEntry(state="allow_all", status=status,
                           expires=time.monotonic() + self.settings.robots_cache)

    def _unavailable(self, status: int, error: str) -> RobotsEntry:
        return RobotsEntry(state="unavailable", status=status, error=error,
                           expires=time.monotonic() + self.error_ttl)
