"""Loopback hosts that answer slowly, as a real network does: the server side of bench_network.

Each of ``127.0.0.2``, ``127.0.0.3``, ... is a separate host (Linux routes all of 127/8 to
the loopback device) with ``/robots.txt``, ``/sitemap.xml`` and docs pages of 10-20 KB
rendered by the demo site's generator.  Every answer is held back by a fixed time (the round
trip plus server time a real network adds).  One asyncio process serves every host
(keep-alive HTTP/1.1), so hundreds of hosts cost one process.

Every request is logged (host, path, arrival as the kernel stamped it, end of answer, both
``time.monotonic()`` of this process): politeness is judged from the server's own log
(:func:`politeness`), whoever sent the requests.

    python -m bench.slowhosts --hosts 20 --pages 60 --delay-ms 100 --log LOG --ready FILE
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import socket
import struct
import time
from pathlib import Path
from typing import Any

from sitemap_crawler.demo import site as demosite

SIZE_RANGE = (10_000, 20_000)


def host_ips(n: int, first: int = 2) -> list[str]:
    """``n`` loopback addresses from 127.0.0.<first> on."""
    if first + n > 255:
        raise ValueError("at most 253 hosts")
    return [f"127.0.0.{k}" for k in range(first, first + n)]


def pages(n: int, seed: int = 11) -> dict[str, bytes]:
    """path -> body of ``n`` docs pages (the same set on every host)."""
    site = demosite.generate(0, pages=max(n, 20), seed=seed, size_range=SIZE_RANGE,
                             specials=False)
    out: dict[str, bytes] = {}
    for p in site.pages:
        if p.kind == demosite.HTML and len(out) < n:
            out[p.path] = site.render_page(p)
    return out


class Hosts:
    def __init__(self, ips: list[str], port: int, pages: dict[str, bytes], delay: float) -> None:
        self.ips, self.port, self.pages, self.delay = ips, port, pages, delay
        self.log: list[tuple[str, str, float, float]] = []
        self._tasks: list[asyncio.Future[None]] = []
        self._conns: set[asyncio.Future[None]] = set()

    def routes(self, ip: str) -> dict[str, tuple[bytes, str]]:
        base = f"http://{ip}:{self.port}"
        sm = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
              'schemas/sitemap/0.9">' + "".join(f"<url><loc>{base}{p}</loc></url>"
                                                for p in self.pages) + "</urlset>\n")
        robots = f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap.xml\n"
        r = {p: (b, "text/html; charset=utf-8") for p, b in self.pages.items()}
        r["/sitemap.xml"] = (sm.encode(), "application/xml")
        r["/robots.txt"] = (robots.encode(), "text/plain")
        return r

    async def serve(self, ip: str) -> socket.socket:
        """Listen on ``ip``; each connection is served by :meth:`_conn`."""
        routes = self.routes(ip)
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # accepted sockets inherit it
        lsock.bind((ip, self.port))
        lsock.listen(512)
        lsock.setblocking(False)
        loop = asyncio.get_running_loop()

        async def accept() -> None:
            while True:
                conn, _ = await loop.sock_accept(lsock)
                task = asyncio.ensure_future(self._conn(ip, conn, routes))
                self._conns.add(task)  # held until done: the loop keeps weak references
                task.add_done_callback(self._conns.discard)

        self._tasks.append(asyncio.ensure_future(accept()))
        return lsock

    async def _conn(self, ip: str, conn: socket.socket,
                    routes: dict[str, tuple[bytes, str]]) -> None:
        """Keep-alive HTTP/1.1 on one connection.  A request's arrival is the kernel's
        receive stamp of its first bytes (SO_TIMESTAMPNS), not the time this loop got to
        it: a burst of requests (every host's robots.txt at once) is handled over several
        ms, and stamping in the handler made gaps after a burst look shorter than sent."""
        loop = asyncio.get_running_loop()
        buf, t0 = b"", None
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                while b"\r\n\r\n" not in buf:
                    data, stamp = await _recv(loop, conn)
                    if not data:
                        return
                    if not buf:
                        t0 = stamp
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                start = t0 if t0 is not None else time.monotonic()
                t0 = None
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split(" ")
                path = parts[1] if len(parts) > 1 else "/"
                close = b"connection: close" in head.lower()
                await asyncio.sleep(max(0.0, start + self.delay - time.monotonic()))
                body, ctype = routes.get(path, (b"not found", "text/plain"))
                status = "200 OK" if path in routes else "404 Not Found"
                # the end of an answer is when it is handed to the kernel: the client may
                # read it and send its next request before sock_sendall returns here
                self.log.append((ip, path, start, time.monotonic()))
                await loop.sock_sendall(conn, f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                                        f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                if close:
                    return
        conn.close()


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS is the same


async def _recv(loop: asyncio.AbstractEventLoop, sock: socket.socket
                ) -> tuple[bytes, float | None]:
    """The next bytes on ``sock`` and the monotonic time the kernel received them."""
    while True:
        try:
            data, anc, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(16))
            break
        except BlockingIOError:
            ready = loop.create_future()
            loop.add_reader(sock.fileno(), ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_reader(sock.fileno())
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = struct.unpack("qq", raw[:16])
            return data, time.monotonic() - (time.time() - (sec + nsec / 1e9))
    return data, None


async def _main(args: argparse.Namespace) -> None:
    hosts = Hosts(host_ips(args.hosts), args.port, pages(args.pages), args.delay_ms / 1000)
    servers = [await hosts.serve(ip) for ip in hosts.ips]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.ready:
        Path(args.ready).write_text(json.dumps({"port": args.port, "hosts": hosts.ips}))
    await stop.wait()
    for s in servers:
        s.close()
    Path(args.log).write_text("\n".join(json.dumps(r) for r in hosts.log) + "\n")


def politeness(log_path: Path, prefix: str = "") -> dict[str, Any]:
    """Per host, from the server's log: the smallest gap between two request arrivals and
    whether two requests were ever in flight at once (for pages under ``prefix``)."""
    by_host: dict[str, list[tuple[float, float]]] = {}
    for line in log_path.read_text().splitlines():
        if line:
            ip, path, t0, t1 = json.loads(line)
            if path.startswith(prefix):
                by_host.setdefault(ip, []).append((t0, t1))
    gaps, overlaps = [], 0
    for spans in by_host.values():
        spans.sort()
        for (a0, a1), (b0, _b1) in itertools.pairwise(spans):
            gaps.append(b0 - a0)
            overlaps += b0 < a1
    gaps.sort()

    def q(f: float) -> float | None:
        return round(gaps[min(len(gaps) - 1, int(f * len(gaps)))], 4) if gaps else None

    # With a delay, gap - delay is how late each request came after the host was free
    # again: the scheduling lag, conversion stalls included (issue 18: measure it).
    return {"hosts": len(by_host), "requests": sum(len(v) for v in by_host.values()),
            "min_gap": round(gaps[0], 4) if gaps else None, "gap_p50": q(0.5),
            "gap_p95": q(0.95), "gap_max": round(gaps[-1], 4) if gaps else None,
            "overlaps": overlaps, "max_per_host_in_flight": _max_in_flight(by_host)}


def _max_in_flight(by_host: dict[str, list[tuple[float, float]]]) -> int:
    best = 0
    for spans in by_host.values():
        events = sorted([(t0, 1) for t0, _ in spans] + [(t1, -1) for _, t1 in spans])
        n = 0
        for _t, d in events:
            n += d
            best = max(best, n)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--delay-ms", type=float, default=100)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--ready", type=Path)
    asyncio.run(_main(ap.parse_args(argv)))


if __name__ == "__main__":
    main()
