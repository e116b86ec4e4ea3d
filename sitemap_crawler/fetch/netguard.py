"""Where a request may connect, and how long it may take (issue 20: #12 and #13).

**Address policy.**  A site names its hosts, but a hostile one can still send us elsewhere:
a redirect, a link, a ``Sitemap:`` line, or a DNS answer that points at 127.0.0.1, 10.x,
169.254.169.254 (cloud metadata) or fd00:ec2::254.  So every TCP connection the crawler
opens goes through :class:`GuardedBackend`: it resolves the name once, checks each address,
connects to the checked address itself (no second lookup that a rebinding DNS server could
answer differently), and checks the socket's peer address once more.

* Refused by default: every address that is not globally routable (loopback, private,
  link-local with the metadata address, shared, reserved, unspecified) and multicast,
  also when written as IPv4-mapped IPv6.
* Allowed anyway: the networks named in ``allow_networks``, and *the site's own addresses*:
  those its configured source hosts resolve to when the policy is made
  (:meth:`AddressPolicy.for_site`).  So the demo and the tests on 127.0.0.1, or an intranet
  wiki on 10.1.2.3, are crawled as before.  The exemption is those addresses, not their
  networks: a site on 127.0.0.2 may not reach 127.0.0.1, and a site on a public address may
  reach no private one.  Ports are not part of it: page redirects compare scheme, host and
  port (client.py), and a public site cannot name a loopback address to begin with.
* A refused connection raises :class:`BlockedAddress` (reason ``blocked_address``).
  Proxies from the environment (``HTTP_PROXY``) are not used (httpx ignores them for a
  client with its own transport): a proxy would connect where we cannot check.

**Deadline.**  httpx's timeouts bound the connect and each gap between two reads: a server
that drips a byte a second never trips them.  Each request through
:class:`GuardedTransport` runs under a :class:`Limits` (``request_deadline`` from the moment
it is sent, and the caller's stop event), kept per thread until its body is closed.  A socket
read waits at most :data:`SLICE` at a time and checks both in between, so a deadline cuts a
drip or a silent server (:class:`DeadlineExceeded`, reason ``deadline``) and a stop reaches
a read that is waiting: after :data:`STOP_GRACE` (a body arriving at speed still completes,
client.py F5) the read raises ``Interrupted``.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
import typing
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpcore
import httpx

from sitemap_crawler.config import Settings
from sitemap_crawler.protocol.hostgate import Interrupted

SLICE = 0.5  # seconds one socket wait lasts before the deadline and the stop are looked at
STOP_GRACE = 1.0  # seconds a body may go on arriving after a stop before it is cut
# cloud metadata services (AWS, GCP, Azure, OpenStack; AWS IPv6; Alibaba; Oracle): refused
# anyway as link-local, private or shared addresses, named so a log line says what they are
_METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254",
                                               "100.100.100.200", "192.0.0.192")}

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(httpx.ConnectError):
    """The address a host name leads to is one the policy refuses."""

    def __init__(self, host: str, address: str, why: str) -> None:
        super().__init__(f"blocked_address: {host} is {address} ({why}); a site may reach it "
                         "only when its own source is there or allow_networks lists it")
        self.host, self.address, self.why = host, address, why


class DeadlineExceeded(httpx.ReadTimeout):
    """The request, body included, took longer than ``request_deadline``."""


def _plain(address: str) -> IP:
    """The address without an IPv6 zone, IPv4-mapped IPv6 as the IPv4 it stands for."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def refused_kind(ip: IP) -> str | None:
    """Why ``ip`` is refused by default (``loopback``, ``private`` ...), or None."""
    if ip in _METADATA:
        return "cloud metadata"
    for kind in ("loopback", "link_local", "private", "multicast", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "reserved"


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a site's requests may connect to (see the module docstring)."""

    allow: tuple[Net, ...] = ()
    own: frozenset[IP] = frozenset()

    @classmethod
    def for_site(cls, settings: Settings, sources: Iterable[str]) -> AddressPolicy:
        """The policy of a site: ``allow_networks`` and the addresses its sources are on
        now (a source that does not resolve exempts nothing)."""
        own: set[IP] = set()
        for src in sources:
            host = urlsplit(src).hostname
            if host:
                own |= {ip for ip in _resolve(host) if refused_kind(ip) is not None}
        allow = tuple(ipaddress.ip_network(n.strip(), strict=False)
                      for n in settings.allow_networks)
        return cls(allow, frozenset(own))

    def address_for(self, host: str) -> str | None:
        """An address of ``host`` the policy allows (for a client that resolves names
        itself: it is told to use this one), or None."""
        return next((str(ip) for ip in _resolve(host) if self.refusal(str(ip)) is None), None)

    def refusal(self, address: str) -> str | None:
        """Why a connection to ``address`` is refused, or None when it may go ahead."""
        ip = _plain(address)
        why = refused_kind(ip)
        if why is None or ip in self.own or any(ip in n for n in self.allow):
            return None
        return why


def _resolve(host: str) -> list[IP]:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [_plain(str(info[4][0])) for info in infos]


# -- the deadline, per thread --------------------------------------------------------------

@dataclass(eq=False)
class Limits:
    """One request's deadline (monotonic) and the stop event its caller obeys."""

    seconds: float
    stop: threading.Event | None
    deadline: float = field(init=False)
    stopped_at: float | None = None

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def wait(self, timeout: float | None) -> float:
        """How long the next socket wait may last (never more than ``timeout``); raises
        when the deadline has passed or a stop's grace is over."""
        now = time.monotonic()
        if now >= self.deadline:
            raise DeadlineExceeded(f"deadline: no complete answer within {self.seconds:g} s "
                                   "(request_deadline)")
        left = min(SLICE, self.deadline - now)
        if self.stop is not None and self.stop.is_set():
            if self.stopped_at is None:
                self.stopped_at = now
            if now - self.stopped_at >= STOP_GRACE:
                raise Interrupted("stopped in the middle of a request")
            left = min(left, self.stopped_at + STOP_GRACE - now)
        if timeout is not None:
            left = min(left, timeout)
        return max(left, 0.01)  # 0 would make the socket non-blocking


_local = threading.local()


def _stack() -> list[Limits]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current() -> Limits | None:
    """The limits of the request this thread is in, if any."""
    stack = _stack()
    return stack[-1] if stack else None


# -- the network backend -------------------------------------------------------------------

class GuardedStream(httpcore.NetworkStream):
    """A connection whose reads and writes obey the thread's :class:`Limits`."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        lim = current()
        if lim is None:
            return self.inner.read(max_bytes, timeout)
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if end is None else end - time.monotonic()
            try:
                return self.inner.read(max_bytes, lim.wait(left))
            except httpcore.ReadTimeout:
                if end is not None and time.monotonic() >= end:
                    raise  # the read timeout's own gap between bytes

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _bounded(current(), timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return GuardedStream(self.inner.start_tls(ssl_context, server_hostname,
                                                  _bounded(current(), timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


def _bounded(lim: Limits | None, timeout: float | None) -> float | None:
    """``timeout`` cut to what is left of the deadline (one blocking call: no slices)."""
    if lim is None:
        return timeout
    left = lim.deadline - time.monotonic()
    if left <= 0:
        lim.wait(timeout)  # raises DeadlineExceeded
    return left if timeout is None else min(timeout, left)


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, connected only to addresses the policy allows."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            raise httpcore.ConnectError(str(e)) from e
        refused: BlockedAddress | None = None
        failed: Exception | None = None
        for info in infos:
            address = str(info[4][0])
            why = self.policy.refusal(address)
            if why is not None:
                refused = refused or BlockedAddress(host, address, why)
                continue
            try:
                stream = self.inner.connect_tcp(address, port, _bounded(current(), timeout),
                                                local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                failed = e
                continue
            peer = stream.get_extra_info("server_addr")
            why = self.policy.refusal(str(peer[0])) if peer else "no peer address"
            if why is not None:  # connected somewhere else than the address checked
                stream.close()
                raise BlockedAddress(host, str(peer[0]) if peer else "?", why)
            return GuardedStream(stream)
        if failed is not None:
            raise failed
        if refused is not None:  # the caller logs it with the URL
            raise refused
        raise httpcore.ConnectError(f"{host}: no address")

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[typing.Any] | None = None
                            ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by the crawler")

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


# -- the transport -------------------------------------------------------------------------

class OnClose(httpx.SyncByteStream):
    """A response body that calls ``done`` once it is closed (read or not)."""

    def __init__(self, inner: httpx.SyncByteStream, done: typing.Callable[[], None]) -> None:
        self.inner, self.done = inner, done

    def __iter__(self) -> Iterator[bytes]:
        yield from self.inner

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.done()


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport on a :class:`GuardedBackend`, each request under :class:`Limits`."""

    def __init__(self, settings: Settings, policy: AddressPolicy, *, verify: ssl.SSLContext,
                 stop: threading.Event | None = None) -> None:
        super().__init__(verify=verify)
        # the pool httpx built, rebuilt with the same limits on our backend (httpx takes no
        # backend of its own)
        self._pool = httpcore.ConnectionPool(
            ssl_context=verify, max_connections=100, max_keepalive_connections=20,
            keepalive_expiry=5.0, network_backend=GuardedBackend(policy))
        self.settings, self.policy, self.stop = settings, policy, stop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        stack = _stack()
        lim = Limits(float(self.settings.request_deadline), self.stop)
        stack.append(lim)

        def done() -> None:
            if lim in stack:
                stack.remove(lim)

        try:
            resp = super().handle_request(request)
        except BaseException:
            done()
            raise
        assert isinstance(resp.stream, httpx.SyncByteStream)
        resp.stream = OnClose(resp.stream, done)  # (the client wraps it so too: no new Response)
        return resp


def guarded_transport(settings: Settings, sources: Sequence[str], verify: ssl.SSLContext,
                      stop: threading.Event | None = None,
                      policy: AddressPolicy | None = None) -> GuardedTransport:
    """The transport of a site's clients: its policy (from ``sources``) and deadline."""
    if policy is None:
        policy = AddressPolicy.for_site(settings, sources)
    return GuardedTransport(settings, policy, verify=verify, stop=stop)
