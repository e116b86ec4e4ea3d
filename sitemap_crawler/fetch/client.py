"""Polite HTTP: robots.txt, the per-host gate, retries with backoff, patience, size limits.

One :class:`Fetcher` per worker process; one keep-alive ``httpx.Client`` per Fetcher.

Rules this module keeps (seed 000 §4, §7, §8; seed 001 patience):

* F1. No request without a lease from the host gate (``hostgate``: spacing >= delay across
  all workers and machines, or at most ``max_parallel_per_host`` at once when delay is 0).
  Each redirect hop and each retry is a request of its own and takes its own lease.  The
  lease is released in a ``finally``.
* F2. delay = ``settings.delay_for(robots Crawl-delay)``; robots.txt disallowed -> "skipped"
  without a request; robots.txt unreachable (5xx, network) -> retried like a 503 and, if it
  stays so, "retryable" with reason ``robots_unavailable`` (never "skipped").
* F3. Retried (up to ``settings.max_retries`` times): network errors, 429, 500, 502, 503, 504.
  Wait = ``Retry-After`` (seconds, or an HTTP date taken relative to the response's own
  ``Date`` header so our clock is not compared with the server's) or exponential backoff with
  full jitter; always capped by ``settings.max_backoff``.  A 429, a Retry-After, or a second
  failure in a row blocks the host for every worker (``gate.block``) for that wait.
* F4. Patience: each URL that ends retryable after all retries counts one consecutive failure
  of its host in the shared block file; any other HTTP answer resets it.  At
  ``settings.patience`` the host is blocked for ``settings.max_backoff`` and, while blocked,
  fetches return "retryable"/``host_gave_up`` without a request.  After that one probe may go
  out; if it fails too, the host is given up again.
* F5. Every wait is ``stop.wait``: when ``stop`` is set the fetch returns "interrupted"
  promptly, even in the middle of a long backoff.  A response whose body is already arriving
  goes on being read for ``netguard.STOP_GRACE`` (a page arriving at speed is not thrown
  away); a slower one is cut then (F8), so a stop takes effect within a second or two.
* F6. Bodies are capped while streaming (Content-Length first); unwanted content types are
  skipped before the body is read.  Small unwanted bodies (redirects, error pages) are read
  so the keep-alive connection survives.
* F7. Our own mistakes are not the host's: a URL we cannot send (bad scheme, bad header) is
  "permanent" (``bad_url``/``bad_request``) and does not count against patience.
* F8. Connections obey the site's address policy (netguard.py): a refused address is
  "permanent"/``blocked_address``, with a log line.  A request, body included, ends at
  ``request_deadline``: "retryable"/``deadline``, not retried within the fetch (a drip
  would hold the worker again), counted against the host's patience.  A stop cuts a body
  still arriving after ``netguard.STOP_GRACE``: "interrupted".
* F9. A redirect is followed only to the site's own origins: a host of the site with the
  scheme and port of the page or of a source (http:80 and https:443 count as one), so a
  page cannot send us to another port of its host.

A Fetcher is shared by the threads of a worker process (commands/dispatch.py): httpx's
Client and its pool are thread-safe, robots.txt is fetched once per origin (robots.py),
and everything else a fetch keeps is local to the call.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.decoding import (
    ACCEPT_ENCODING,
    DecodeError,
    UnsupportedEncoding,
    decoded,
)
from sitemap_crawler.fetch.netguard import (
    AddressPolicy,
    BlockedAddress,
    DeadlineExceeded,
    guarded_transport,
)
from sitemap_crawler.fetch.robots import RobotsCache
from sitemap_crawler.protocol.hostgate import (
    HostGate,
    Interrupted,
    Lease,
    host_key,
    sent_trace,
)

log = logging.getLogger(__name__)

OK_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/markdown", "text/x-markdown",
                      "text/plain"})
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
ACCEPT = ("text/html,application/xhtml+xml;q=0.9,text/markdown;q=0.9,text/plain;q=0.8,"
          "*/*;q=0.1")
DRAIN_LIMIT = 64 * 1024  # bytes of an unwanted body read to keep the connection alive
BACKOFF_BASE = 1.0  # seconds; attempt n waits uniform(0, min(max_backoff, base * 2**n))


class _GaveUp(Exception):
    """The host's patience is used up (F4)."""


class _Lost(Exception):
    """``still_ours`` said no: the caller no longer wants this fetch."""


@dataclass
class FetchResult:
    url: str
    final_url: str
    status: int = 0  # last HTTP status, 0 = no HTTP response
    outcome: str = "retryable"  # ok | not_modified | skipped | permanent | retryable | interrupted
    reason: str | None = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case keys
    content_type: str = ""  # mime, lower case, no parameters
    etag: str | None = None
    last_modified: str | None = None
    redirects: list[str] = field(default_factory=list)  # every Location followed or refused
    attempts: int = 0  # requests sent (robots.txt excluded)
    elapsed: float = 0.0
    bytes_received: int = 0
    # asked right before each request is sent, with the lease held: False drops the fetch
    # (outcome "interrupted", reason "ticket_lost"; the worker's W1, commands/worker.py)
    still_ours: Callable[[], bool] | None = field(default=None, repr=False, compare=False)


@dataclass
class _Answer:
    """One request's result before it is judged."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None  # reason when status == 0 (network) or -1 (cannot send)
    skip: str | None = None  # too_large / content_type:<mime>
    mime: str = ""


@dataclass(frozen=True)
class _Try:
    """One attempt at a URL hop: final (an answer to judge, or None when the result already
    holds the outcome), or the reason to try again and the server's Retry-After."""

    final: bool = False
    answer: _Answer | None = None
    reason: str = ""
    retry_after: float | None = None


_SSL: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def ssl_context() -> ssl.SSLContext:
    """One TLS context per process, shared by every client: httpx builds a new one for
    each client otherwise (24.6 ms of CPU measured here), and a worker process opens a
    client per site, 200 of them in a crawl of 200 sites."""
    global _SSL
    with _SSL_LOCK:
        if _SSL is None:
            _SSL = httpx.create_ssl_context()
        return _SSL


def preload() -> None:
    """Import what httpx imports lazily and build the TLS context in a parent before it
    forks: each forked child (48 prepares at once, the workers) otherwise paid it again, 15 s
    of CPU in a crawl of 200 small sites (py-spy: httpcore's import under HTTPTransport)."""
    import encodings.idna  # noqa: F401  (host names)

    import httpcore  # noqa: F401

    ssl_context()


def parse_retry_after(value: str | None, date: str | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: a number, or an HTTP date relative to the
    response's ``Date`` header (our own clock only when the server sent no Date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    when = http_time(value)
    if when is None:
        return None
    now = http_time(date)
    return max(0.0, when - (time.time() if now is None else now))


def http_time(value: str | None) -> float | None:
    """Epoch seconds of an HTTP date (a ``Date`` or ``Retry-After`` header), or None when
    absent or unreadable; an HTTP date is always GMT, so one without a zone is read as GMT."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def _drain(r: httpx.Response) -> None:
    """Read a small unwanted body (redirect, error page) so the keep-alive connection can be
    reused, sparing the site a new TCP/TLS handshake; a large one is cut (connection dropped)."""
    length = r.headers.get("content-length", "")
    if length.isdigit() and int(length) > DRAIN_LIMIT:
        return
    read = 0
    with contextlib.suppress(httpx.HTTPError):  # the status is what matters, not this body
        for chunk in r.iter_raw():
            read += len(chunk)
            if read > DRAIN_LIMIT:
                return


def _mime(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _sniff(head: bytes) -> str:
    start = head.lstrip()[:64].lower()
    if start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "text/html"
    return "application/octet-stream"


def _canon(url: str) -> str:
    p = urlsplit(url)
    return urlunsplit((p.scheme.lower(), p.netloc.lower(), p.path or "/", p.query, ""))


_DEFAULT_PORTS = {("http", 80), ("https", 443)}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in; None for a bad port."""
    p = urlsplit(url)
    scheme = p.scheme.lower()
    try:
        port = p.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    return scheme, (p.hostname or "").lower(), port


def scheme_ports(url: str) -> set[tuple[str, int]]:
    """The (scheme, port) pairs a redirect from ``url`` may keep (F9): its own, and for a
    default port the other scheme's default (http -> https upgrades, and back)."""
    origin = _origin(url)
    if origin is None:
        return set()
    pair = (origin[0], origin[2])
    return set(_DEFAULT_PORTS) if pair in _DEFAULT_PORTS else {pair}


class Fetcher:
    """Fetch pages politely; see F1–F9."""

    def __init__(self, settings: Settings, *, gate: HostGate, stop: threading.Event,
                 allowed_hosts: set[str] | None = None, robots_error_ttl: float = 60.0,
                 robots_store: Path | None = None, sources: tuple[str, ...] = (),
                 backoff_base: float = BACKOFF_BASE) -> None:
        """``sources``: the site's configured sources, whose addresses the address policy
        exempts and whose scheme and port a redirect may go to (F8, F9)."""
        self.settings = settings
        self.gate = gate
        self.stop = stop
        self.allowed_hosts = {h.lower() for h in allowed_hosts} if allowed_hosts else None
        self.scheme_ports = {sp for src in sources for sp in scheme_ports(src)}
        self.policy = AddressPolicy.for_site(settings, sources)  # F8, netguard.py
        self.backoff_base = backoff_base
        self.client = httpx.Client(
            headers={"User-Agent": settings.user_agent, "Accept": ACCEPT,
                     "Accept-Encoding": ACCEPT_ENCODING},
            timeout=httpx.Timeout(settings.timeout, connect=settings.connect_timeout),
            follow_redirects=False,
            transport=guarded_transport(settings, sources, ssl_context(), stop, self.policy),
        )
        self.robots = RobotsCache(self.client, settings, guard=self._robots_guard,
                                  error_ttl=robots_error_ttl, store=robots_store)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public -------------------------------------------------------------------------

    def needs_robots(self, url: str) -> bool:
        """True if a request to ``url`` would first have to ask its robots.txt."""
        return self.settings.respect_robots_txt and not self.robots.cached(url)

    def prefetch_robots(self, url: str) -> bool:
        """Ask ``url``'s robots.txt now, through the gate (R5), and return as soon as it
        answered: the lease's delay then runs out on the gate, not on a waiting thread.
        What it learned (or an error, cached for ``error_ttl``) is what the page's own
        fetch finds; failures are its to judge and report.  True if the host answered
        (rules, or a 4xx meaning none): it is up, as a page's answer would show."""
        try:
            self._wait_for_host(host_key(url))
            return self.robots.entry(url).state != "unavailable"
        except Exception as e:  # the page's fetch asks again and reports what it finds
            log.debug("%s: robots.txt ahead of the page: %s", url, e)
            return False

    def fetch(self, url: str, *, etag: str | None = None, last_modified: str | None = None,
              still_ours: Callable[[], bool] | None = None) -> FetchResult:
        """GET ``url`` following redirects within the allowed hosts; never raises for HTTP
        or network trouble: the outcome says what happened.  ``still_ours`` is asked right
        before each request goes out (see FetchResult)."""
        started = time.monotonic()
        res = FetchResult(url=url, final_url=url, still_ours=still_ours)
        cond: dict[str, str] = {}
        if etag:
            cond["If-None-Match"] = etag
        if last_modified:
            cond["If-Modified-Since"] = last_modified
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            res.outcome, res.reason = "permanent", "bad_url"
            return res
        try:
            self._follow(res, cond)
        except Interrupted:
            res.outcome, res.reason = "interrupted", "stopped"
        except _Lost:
            res.outcome, res.reason = "interrupted", "ticket_lost"
        except _GaveUp:
            res.outcome, res.reason = "retryable", "host_gave_up"
        if res.outcome in ("ok", "not_modified"):
            res.etag = res.headers.get("etag") or (etag if res.outcome == "not_modified"
                                                   else None)
            res.last_modified = res.headers.get("last-modified") or (
                last_modified if res.outcome == "not_modified" else None)
        res.elapsed = time.monotonic() - started
        return res

    # -- redirects ----------------------------------------------------------------------

    def same_site(self, url: str, page: str) -> bool:
        """``url`` is on one of the site's origins as seen from ``page`` (F9)."""
        origin = _origin(url)
        if origin is None:
            return False
        scheme, host, port = origin
        hosts = self.allowed_hosts or {(urlsplit(page).hostname or "").lower()}
        return host in hosts and (scheme, port) in self.scheme_ports | scheme_ports(page)

    def _follow(self, res: FetchResult, cond: dict[str, str]) -> None:
        current = res.url
        seen = {_canon(current)}
        while True:
            answer = self._with_retries(res, current, cond)
            if answer is None:
                return  # res holds a terminal outcome
            location = answer.headers.get("location")
            if answer.status not in REDIRECT_STATUS or not location:
                self._judge(res, answer)
                return
            res.status, res.headers = answer.status, answer.headers
            target = urljoin(current, location.strip()).split("#", 1)[0]
            res.redirects.append(target)
            if urlsplit(target).scheme not in ("http", "https"):
                return self._end(res, "permanent", "redirect_bad_scheme")
            if not self.same_site(target, res.url):
                res.final_url = target
                return self._end(res, "skipped", "redirect_offsite")
            if _canon(target) in seen:
                return self._end(res, "permanent", "redirect_loop")
            if len(res.redirects) > self.settings.max_redirects:
                return self._end(res, "permanent", "too_many_redirects")
            seen.add(_canon(target))
            current = res.final_url = target

    @staticmethod
    def _end(res: FetchResult, outcome: str, reason: str | None) -> None:
        res.outcome, res.reason = outcome, reason

    def _judge(self, res: FetchResult, a: _Answer) -> None:
        """Turn a final (non-retryable, non-redirect) answer into the result."""
        if a.status < 0:
            res.status = 0
            return self._end(res, "permanent", a.error)
        res.status, res.headers = a.status, a.headers
        if a.status == 304:
            return self._end(res, "not_modified", None)
        if 200 <= a.status < 300:
            if a.skip:
                return self._end(res, "skipped", a.skip)
            if a.status in (204, 205):
                return self._end(res, "skipped", f"http_{a.status}")
            res.body, res.content_type = a.body, a.mime
            return self._end(res, "ok", None)
        return self._end(res, "permanent", f"http_{a.status}")

    # -- retries (F2–F5) ----------------------------------------------------------------

    def _with_retries(self, res: FetchResult, url: str, cond: dict[str, str]) -> _Answer | None:
        """One URL hop with retries. Returns the answer to judge, or None when ``res`` already
        holds the outcome (robots, retries exhausted)."""
        host = host_key(url)
        retries = self.settings.max_retries
        for attempt in range(retries + 1):
            self._wait_for_host(host)
            t = self._attempt(res, url, host, cond, retry=attempt > 0)
            if t.final:
                return t.answer
            if attempt < retries:
                self._pause(url, host, attempt, t)
        self._give_up(res, host, t.reason)
        return None

    def _attempt(self, res: FetchResult, url: str, host: str, cond: dict[str, str], *,
                 retry: bool) -> _Try:
        """One try: robots.txt's word, then the request; final, or why to try again."""
        s = self.settings
        delay = s.delay_for(None)
        if s.respect_robots_txt:
            verdict = self.robots.verdict(url, retry_errors=retry)
            if verdict == "disallowed":
                self._end(res, "skipped", "robots")
                return _Try(final=True)
            if verdict == "unavailable":
                error = self.robots.entry(url).error or ""
                if error.startswith(BlockedAddress.__name__):  # F8: the host is refused
                    log.warning("%s: refused: robots.txt: %s", url, error.split(": ", 1)[1])
                    self._end(res, "permanent", "blocked_address")
                    return _Try(final=True)
                return _Try(reason="robots_unavailable")
            delay = s.delay_for(self.robots.crawl_delay(url))
        answer = self._request(res, url, host, delay, cond)
        res.status = answer.status
        if answer.error == "deadline":  # F8: not again now, but it counts against the host
            self._give_up(res, host, "deadline")
            return _Try(final=True)
        if answer.status == 0:
            return _Try(reason=answer.error or "network_error")
        if answer.status in RETRY_STATUS:
            res.headers = answer.headers
            retry_after = None
            if answer.status in (429, 503):
                retry_after = parse_retry_after(answer.headers.get("retry-after"),
                                                answer.headers.get("date"))
            return _Try(reason=f"http_{answer.status}", retry_after=retry_after)
        if answer.status > 0:  # the host answered: it is alive (patience)
            self.gate.record_success(host)
        return _Try(final=True, answer=answer)

    def _pause(self, url: str, host: str, attempt: int, t: _Try) -> None:
        """Wait before the next try: Retry-After if the server gave one, else backoff with
        jitter; from the second retry on (or on 429) every worker waits too (a host block)."""
        s = self.settings
        wait = self._backoff(attempt) if t.retry_after is None else t.retry_after
        wait = min(wait, s.max_backoff)
        log.info("%s: %s, retry %d in %.1fs", url, t.reason, attempt + 1, wait)
        if t.reason == "http_429" or t.retry_after is not None or attempt >= 1:
            self.gate.block(host, wait, t.reason)  # everyone waits; _wait_for_host obeys it
        elif self.stop.wait(wait):
            raise Interrupted

    def _give_up(self, res: FetchResult, host: str, reason: str) -> None:
        """Retries used up: a retryable failure, counted against the host's patience."""
        s = self.settings
        self._end(res, "retryable", reason)
        failures = self.gate.record_failure(host)
        if s.patience and failures >= s.patience:
            log.warning("%s: %d URLs in a row failed; giving up on the host for %.0fs",
                        host, s.patience, s.max_backoff)
            self.gate.block(host, s.max_backoff, "gave_up")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter (AWS architecture blog's "full jitter")."""
        return random.uniform(0, min(self.settings.max_backoff,
                                     self.backoff_base * 2 ** attempt))

    def _wait_for_host(self, host: str) -> None:
        """Wait out a shared block; raise _GaveUp when the host's patience is used up."""
        patience = self.settings.patience
        while True:
            left = self.gate.blocked_for(host)
            if left <= 0:
                return
            if patience and self.gate.failures(host) >= patience:
                raise _GaveUp
            if self.stop.wait(min(left, 0.5)):
                raise Interrupted

    @contextlib.contextmanager
    def _lease(self, host: str, delay: float) -> Iterator[Lease]:
        # the gate uses slot 0 only when delay > 0 (G5): P names the token set all share
        lease = self.gate.acquire(host, delay, self.settings.max_parallel_per_host, self.stop)
        if lease is None:
            raise Interrupted
        try:
            yield lease
        finally:
            lease.release()

    @contextlib.contextmanager
    def lease_for(self, url: str) -> Iterator[Lease]:
        """A lease on ``url``'s host for requests this Fetcher does not send itself (a
        browser's navigation, fetch/browser.py): host blocks, patience and robots.txt's
        Crawl-delay hold as for our own requests (F1, F2, F4)."""
        host = host_key(url)
        self._wait_for_host(host)
        s = self.settings
        delay = s.delay_for(self.robots.crawl_delay(url) if s.respect_robots_txt else None)
        with self._lease(host, delay) as lease:
            yield lease

    @contextlib.contextmanager
    def _robots_guard(self, url: str) -> Iterator[Lease]:
        """robots.txt requests obey blocks and the gate too (R5).  The Crawl-delay is not
        known yet: the lease starts with the configured delay and RobotsCache raises it to
        the one it learned before the lease is released."""
        host = host_key(url)
        self._wait_for_host(host)
        with self._lease(host, self.settings.delay_for(None)) as lease:
            yield lease

    # -- one request --------------------------------------------------------------------

    def _request(self, res: FetchResult, url: str, host: str, delay: float,
                 cond: dict[str, str]) -> _Answer:
        with self._lease(host, delay) as lease:
            if res.still_ours is not None and not res.still_ours():
                raise _Lost(url)
            res.attempts += 1
            try:
                return self._send(res, url, cond, lease)
            except BlockedAddress as e:  # F8
                log.warning("%s: refused: %s", url, e)
                return _Answer(status=-1, error="blocked_address")
            except DeadlineExceeded:
                log.warning("%s: cut at request_deadline (%.0f s)", url,
                            self.settings.request_deadline)
                return _Answer(error="deadline")
            except httpx.TimeoutException:
                return _Answer(error="timeout")
            except httpx.ConnectError:
                return _Answer(error="connect_error")
            except httpx.RemoteProtocolError:
                return _Answer(error="protocol_error")
            except (httpx.LocalProtocolError, httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
                # our request cannot be sent as it is (a bad header value or URL): retrying
                # would not help, and must not count against the host's patience
                log.info("%s: %s", url, e)
                return _Answer(status=-1, error="bad_request")
            except httpx.TransportError as e:
                log.info("%s: %s", url, e)
                return _Answer(error="network_error")
            except (httpx.DecodingError, DecodeError):
                return _Answer(error="decoding_error")

    def _send(self, res: FetchResult, url: str, cond: dict[str, str], lease: Lease) -> _Answer:
        limit = self.settings.max_file_size
        with self.client.stream("GET", url, headers=cond,
                                extensions={"trace": sent_trace(lease)}) as r:
            a = _Answer(status=r.status_code, headers={k.lower(): v for k, v in r.headers.items()})
            if len(dates := r.headers.get_list("date")) > 1:
                a.headers["date"] = dates[0]  # one Date, or a merged pair no parser can read
            try:
                if not 200 <= r.status_code < 300 or r.status_code in (204, 205):
                    _drain(r)
                    return a
                length = a.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    a.skip = "too_large"
                    return a
                a.mime = _mime(a.headers.get("content-type"))
                if a.mime and a.mime not in OK_TYPES:
                    a.skip = f"content_type:{a.mime}"
                    return a
                try:
                    body = decoded(r)
                except UnsupportedEncoding as e:
                    a.skip = f"content_encoding:{e.coding}"
                    return a
                buf = bytearray()
                # A body already on its way is read on after a stop, for a grace (F5): finishing
                # the in-flight request costs less than fetching it again next time.
                for chunk in body:
                    buf += chunk
                    if len(buf) > limit:
                        a.skip = "too_large"
                        return a
                if not a.mime:
                    a.mime = _sniff(bytes(buf[:512]))
                    if a.mime not in OK_TYPES:
                        a.skip = f"content_type:{a.mime}"
                        return a
                a.body = bytes(buf)
                return a
            finally:
                res.bytes_received += r.num_bytes_downloaded

