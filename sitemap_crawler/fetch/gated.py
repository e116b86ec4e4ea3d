"""An httpx transport that sends every request through the host gate: discovery is polite too.

``prepare`` reads robots.txt, sitemaps, feeds and llms.txt with its own redirect handling
(discover/sources.py); before this it sent them back to back, whatever ``request_delay``
said, and right before the workers' first page requests.  Wrapping the transport puts each
of those requests (each redirect hop included) under a lease of the same gate the workers
use (hostgate.py G1-G8), held until the response body is closed: so per host, request
starts stay ``delay`` apart across prepare and every worker, and with a delay no two are
in flight at once.

The delay is ``settings.delay_for(None)`` (robots.txt's Crawl-delay is not known before
robots.txt is read; the workers' fetcher applies it to pages).
"""

from __future__ import annotations

import threading

import httpx

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.netguard import OnClose
from sitemap_crawler.protocol.hostgate import HostGate, Interrupted, host_key, sent_trace


class GatedTransport(httpx.BaseTransport):
    """``inner`` with a gate lease around every request (see the module docstring)."""

    def __init__(self, inner: httpx.BaseTransport, gate: HostGate, settings: Settings,
                 stop: threading.Event | None = None) -> None:
        self.inner, self.gate, self.settings = inner, gate, settings
        self.stop = stop or threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        s = self.settings
        lease = self.gate.acquire(host_key(str(request.url)), s.delay_for(None),
                                  s.max_parallel_per_host, self.stop)
        if lease is None:
            raise Interrupted(str(request.url))
        request.extensions = {**request.extensions, "trace": sent_trace(lease)}
        try:
            resp = self.inner.handle_request(request)
        except BaseException:
            lease.release()
            raise
        assert isinstance(resp.stream, httpx.SyncByteStream)
        return httpx.Response(resp.status_code, headers=resp.headers,
                              stream=OnClose(resp.stream, lease.release),
                              extensions=resp.extensions, request=request)

    def close(self) -> None:
        self.inner.close()
