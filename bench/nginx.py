"""A private nginx serving one directory on 127.0.0.1, for benchmarks.

Why nginx: the "beside" numbers must measure the crawlers, not a slow Python test server, and
nginx is what static documentation sites are served by.  Everything it writes (config, pid,
logs, temp dirs) lives in a fresh temp dir; /etc/nginx and /var/log/nginx are never used.

    with nginx_serving(Path("/tmp/bench-site")) as base_url:   # "http://127.0.0.1:PORT"
        ...

``python -m bench.nginx serve DIR [--port P] [--no-cache]`` serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

INSTALL_HINT = "nginx is not installed: run `apt-get update && apt-get install -y nginx`"

_CONF = """\
{user}
worker_processes {workers};
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
daemon off;
master_process on;

events {{
    worker_connections 4096;
}}

http {{
    types {{
        text/html html htm;
        text/plain txt;
        text/markdown md;
        application/xml xml;
        application/gzip gz;
        application/pdf pdf;
        text/css css;
        text/javascript js;
        image/png png;
    }}
    default_type application/octet-stream;
    charset utf-8;
    charset_types text/html text/plain text/markdown;
    log_format bench '$status $bytes_sent $request_length $request_uri';
    {access_log}
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    etag on;
    gzip off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;

    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        root {root};
        index index.html;
        {extra}
    }}
}}
"""


def nginx_binary() -> str:
    """Path of nginx; installs it with apt-get when missing and we are root (else explains)."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing nginx with apt-get ...", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-q"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-q", "nginx"], check=True,
                       stdout=subprocess.DEVNULL, env={**os.environ,
                                                       "DEBIAN_FRONTEND": "noninteractive"})
        found = shutil.which("nginx") or "/usr/sbin/nginx"
        if Path(found).exists():
            return found
    raise RuntimeError(INSTALL_HINT)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user_line() -> str:
    # As root, nginx workers would drop to "nobody" and could not read a 0700 temp dir.
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(0).gr_name};"


class Nginx:
    """One nginx master process (``daemon off``) that we started and will stop."""

    def __init__(self, root: Path, port: int = 0, *, no_cache: bool = False,
                 cache_control: str | None = None, workers: int = 2,
                 access_log: bool = False, extra_conf: str = "") -> None:
        self.root = Path(root).resolve()
        self.extra_conf = extra_conf  # raw directives for the server block (e.g. locations)
        self.access_log = access_log
        self.cache_control = "no-cache" if no_cache else cache_control
        self.workers = workers
        self.port = port
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        binary = nginx_binary()
        # Without Cache-Control, RFC 2616 caches (Scrapy's httpcache) trust heuristic freshness
        # (10 % of the time since Last-Modified) and never ask again; "no-cache" or
        # "max-age=0" tells them to come back (see bench/README.md for what Scrapy does).
        extra = (f'add_header Cache-Control "{self.cache_control}" always;'
                 if self.cache_control else "") + self.extra_conf
        for attempt in range(5):
            port = self.port or free_port()
            conf = self.tmp / "nginx.conf"
            alog = (f"access_log {self.tmp}/access.log bench;" if self.access_log
                    else "access_log off;")
            conf.write_text(_CONF.format(user=_user_line(), workers=self.workers, tmp=self.tmp,
                                         port=port, root=self.root, extra=extra,
                                         access_log=alog))
            log = open(self.tmp / "stderr.log", "wb")  # noqa: SIM115 - handed to the child
            self.proc = subprocess.Popen(
                [binary, "-p", str(self.tmp), "-c", str(conf), "-e", str(self.tmp / "error.log")],
                stdout=log, stderr=log, start_new_session=True)
            log.close()
            if self._wait_ready(port):
                self.port = port
                return self.base_url
            self.stop()
            if self.port:  # a fixed port that does not work will not work next time either
                break
            time.sleep(0.1 * (attempt + 1))
        raise RuntimeError("nginx did not start: " + self._log_tail())

    def status_counts(self, reset: bool = False) -> dict[str, int]:
        """Server-side truth from the access log (``access_log=True``): requests per status,
        response bytes sent (headers + body) and request bytes received.  ``reset`` empties the
        log for the next measurement."""
        path = self.tmp / "access.log"
        counts: dict[str, int] = {"requests": 0, "bytes": 0, "request_bytes": 0}
        if path.exists():
            for line in path.read_text().splitlines():
                # response bytes on the wire (headers + body), then the request's own bytes
                status, sent, *req = line.split()
                counts["requests"] += 1
                counts[status] = counts.get(status, 0) + 1
                counts["bytes"] += int(sent)
                counts["request_bytes"] += int(req[0]) if req else 0
            if reset:
                path.write_bytes(b"")  # nginx appends (O_APPEND), so truncating is safe
        return counts

    def uri_counts(self) -> dict[str, dict[str, int]]:
        """``{status: {request URI: requests}}`` from the access log (``access_log=True``);
        call before ``status_counts(reset=True)``.  Duplicate fetches show as counts > 1."""
        path = self.tmp / "access.log"
        out: dict[str, dict[str, int]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                parts = line.split(maxsplit=3)
                if len(parts) == 4:
                    by = out.setdefault(parts[0], {})
                    by[parts[3]] = by.get(parts[3], 0) + 1
        return out

    def _wait_ready(self, port: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            with socket.socket() as s:
                s.settimeout(0.2)
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return True
            time.sleep(0.02)
        return False

    def _log_tail(self) -> str:
        out = []
        for name in ("stderr.log", "error.log"):
            p = self.tmp / name
            if p.exists():
                out.append(p.read_text(errors="replace")[-2000:])
        return "\n".join(out).strip()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)  # fast shutdown of master and its workers
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def nginx_serving(root: Path, port: int = 0, *, no_cache: bool = False,
                  cache_control: str | None = None, workers: int = 2) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a free port unless given); yields the base URL.

    ``no_cache=True`` adds ``Cache-Control: no-cache`` to every response; ``cache_control``
    sets any other value (e.g. ``"max-age=0"``).
    """
    server = Nginx(root, port, no_cache=no_cache, cache_control=cache_control, workers=workers)
    try:
        yield server.start()
    finally:
        server.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.nginx", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve DIR until Ctrl-C")
    s.add_argument("root", type=Path)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--no-cache", action="store_true", help="add Cache-Control: no-cache")
    s.add_argument("--cache-control", help='any Cache-Control value, e.g. "max-age=0"')
    s.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    with nginx_serving(args.root, args.port, no_cache=args.no_cache,
                       cache_control=args.cache_control, workers=args.workers) as base:
        print(base, flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
