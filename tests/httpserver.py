"""A real HTTP/1.1 server on 127.0.0.1 for tests: routes, validators, and injected faults.

Tests register what each path answers; the server records every request (path, headers,
monotonic time) so tests can assert politeness (delays, conditional headers) from the
server's side.  The time is when the kernel received the request's first bytes
(SO_TIMESTAMPNS), not when a handler thread got to it: on a busy machine that thread runs
up to ~100 ms later, and a late stamp makes a politeness gap look short.  Keep-alive
works, so the client under test behaves as it does in the wild.
"""

from __future__ import annotations

import email.utils
import hashlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    t: float  # time.monotonic() when the request arrived


@dataclass
class Response:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "text/html; charset=utf-8"
    etag: bool = False  # send a strong ETag from the body and honour If-None-Match
    last_modified: float | None = None  # epoch seconds; honoured with If-Modified-Since
    delay: float = 0.0  # seconds to sleep before answering (timeouts)
    chunks: int = 0  # >0: send the body in this many chunks with chunked encoding
    drip: float = 0.0  # seconds to wait before each chunk (a server that drips its body)


Handler = Callable[[Request], Response]


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; SCM_TIMESTAMPNS is the same


def _arrival(sock: socket.socket) -> float | None:
    """Monotonic time at which the kernel received the next bytes on ``sock`` (waits for
    them, reads nothing); None without a kernel stamp or when the peer closed."""
    try:
        data, anc, _flags, _addr = sock.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
    except OSError:
        return None
    for level, kind, raw in anc:
        if data and level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = struct.unpack("qq", raw[:16])
            return time.monotonic() - (time.time() - (sec + nsec / 1e9))
    return None


class LocalServer:
    """``with LocalServer() as srv: srv.route('/x', Response(body='hi')); srv.url('/x')``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        """``host``: any loopback address (127.0.0.2 ... are other hosts on Linux)."""
        self.routes: dict[str, Response | Handler] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def handle_one_request(self) -> None:
                # clients here never pipeline: the next request's bytes are not buffered yet
                self.arrived = _arrival(self.connection)
                super().handle_one_request()

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                req = Request(self.command, self.path, {k.lower(): v for k, v in
                                                         self.headers.items()},
                              self.arrived or time.monotonic())
                with server._lock:
                    server.requests.append(req)
                    route = server.routes.get(self.path.split("#")[0])
                    if route is None:
                        route = server.routes.get(self.path.split("?")[0])
                if route is None:
                    resp = Response(404, b"not found", content_type="text/plain")
                elif callable(route):
                    resp = route(req)
                else:
                    resp = route
                if resp.delay:
                    time.sleep(resp.delay)
                body = resp.body.encode() if isinstance(resp.body, str) else resp.body
                headers = dict(resp.headers)
                status = resp.status
                if resp.content_type and "Content-Type" not in headers:
                    headers["Content-Type"] = resp.content_type
                if resp.etag:
                    tag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
                    headers["ETag"] = tag
                    if req.headers.get("if-none-match") == tag:
                        status, body = 304, b""
                if resp.last_modified is not None:
                    headers["Last-Modified"] = email.utils.formatdate(resp.last_modified,
                                                                      usegmt=True)
                    ims = req.headers.get("if-modified-since")
                    if ims and status == 200 and "if-none-match" not in req.headers:
                        since = email.utils.parsedate_to_datetime(ims).timestamp()
                        if int(resp.last_modified) <= since:
                            status, body = 304, b""
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if resp.chunks and status == 200:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    if head:
                        return
                    step = max(1, len(body) // resp.chunks)
                    try:
                        for i in range(0, len(body), step):
                            time.sleep(resp.drip)
                            part = body[i:i + step]
                            self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head and status not in (204, 304):
                    try:
                        self.wfile.write(body)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True

        self.httpd = ThreadingHTTPServer((host, 0), _H)
        # set before any connection: the accepted sockets inherit it, so the first
        # request's bytes are stamped too
        self.httpd.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, path: str, resp: Response | Handler) -> None:
        with self._lock:
            self.routes[path] = resp

    def hits(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]


def fail_then(n: int, failure: Response, success: Response) -> Handler:
    """A handler that answers ``failure`` ``n`` times, then ``success``."""
    count = {"n": 0}
    lock = threading.Lock()

    def handler(req: Request) -> Response:
        with lock:
            count["n"] += 1
            k = count["n"]
        return failure if k <= n else success

    return handler
