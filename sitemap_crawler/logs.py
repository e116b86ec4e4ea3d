"""Logging: short lines for people on the console, JSON lines for machines in --log-file.

Every record may carry ``worker``, ``ticket`` and ``url`` (pass them in ``extra=``); the JSON
lines keep them as fields so a crawl can be traced per worker, ticket and URL.  Every JSON
line also carries ``run``: one id per run of the command, shared by the parent and every
worker process it starts (they inherit it through ``SITEMAP_CRAWLER_LOG``), so one crawl's
lines can be picked out of a file that many runs appended to.

Long runs: the file rotates by size (``log_max_size``, ``log_backups``: ``crawl.log`` ->
``crawl.log.1`` -> ...).  Several worker processes on one machine append to the same file,
so every write and every rotation happens under an inter-process lock (``<file>.lock``): a
process checks, under the lock, whether the path still names the file it holds open (another
process may have rotated it) and whether this line would overflow it.  The lock is a
local-disk lock: the log file must be on a local disk, not on the shared state directory.
On POSIX it is ``flock`` on a descriptor kept open (about 1.5 us a line, measured; filelock,
which opens the lock file for every acquire, took 118 us a line, and the log gets a line per
URL); filelock is the fallback where there is no ``fcntl``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from filelock import FileLock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_FIELDS = ("event", "worker", "ticket", "url", "site", "status", "outcome", "reason", "elapsed")
EVENTS = "sitemap_crawler.events"  # per-URL records: the log file gets them, the console not
RUN_ID_ENV = "SITEMAP_CRAWLER_RUN_ID"  # set it to give a run an id of your own (e.g. per job)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_BACKUPS = 5

_run_id = ""


def new_run_id() -> str:
    """Sortable by start time, unique enough across machines: ``20261123T104250Z-3f9a1c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def run_id() -> str:
    """This run's id (the same in the parent and in its worker processes)."""
    global _run_id
    if not _run_id:
        _run_id = os.environ.get(RUN_ID_ENV) or new_run_id()
    return _run_id


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z", "level": record.levelname.lower(),
            "logger": record.name, "run": run_id(), "pid": record.process,
            "msg": record.getMessage()}
        for k in _FIELDS:
            v = getattr(record, k, None)
            if v is not None:
                out[k] = v
        data = getattr(record, "data", None)
        if isinstance(data, dict):
            out.update({k: v for k, v in data.items() if k not in out})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class Console(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {msg}"
        return msg


class _ProcessLock:
    """An exclusive lock between the processes of one machine, on ``path``.

    The descriptor is opened again in a forked child: a flock belongs to the open file, so a
    descriptor shared with the parent would not keep the two apart."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1
        self._pid = 0
        self._fallback = FileLock(path) if fcntl is None else None

    def __enter__(self) -> None:
        if self._fallback is not None:
            self._fallback.acquire()
            return
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._pid = os.getpid()
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *_exc: object) -> None:
        if self._fallback is not None:
            self._fallback.release()
        else:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._pid == os.getpid() and self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._pid = -1, 0


class SharedRotatingFile(logging.Handler):
    """Append lines to one file from many processes, rotating it by size.

    Why not logging's RotatingFileHandler: each process would rotate on its own idea of the
    file's size and keep writing to the file another process renamed away.  Here the size
    and the identity of the file are read under an inter-process lock before every write.
    ``max_bytes`` 0 never rotates; ``backups`` 0 keeps no old file (a full file is dropped).
    """

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        super().__init__()
        self.path = Path(path)
        self.max_bytes, self.backups = max_bytes, backups
        self.file_lock = _ProcessLock(f"{path}.lock")
        self._fd: int | None = None
        self._pid = os.getpid()
        self._ident: tuple[int, int] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8")
            with self.file_lock:
                self._write(line)
        except Exception:
            self.handleError(record)

    def _write(self, line: bytes) -> None:
        if self._pid != os.getpid():  # forked: the descriptor is the parent's
            self._fd, self._pid = None, os.getpid()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if self._fd is None or st is None or (st.st_dev, st.st_ino) != self._ident:
            st = self._reopen()  # first write, or another process rotated the file
        if self.max_bytes and st.st_size and st.st_size + len(line) > self.max_bytes:
            self._rotate()
            self._reopen()
        assert self._fd is not None
        os.write(self._fd, line)

    def _reopen(self) -> os.stat_result:
        self._close_fd()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        st = os.fstat(self._fd)
        self._ident = (st.st_dev, st.st_ino)
        return st

    def _rotate(self) -> None:
        """crawl.log.(n-1) -> crawl.log.n, ..., crawl.log -> crawl.log.1 (the oldest goes)."""
        if self.backups <= 0:
            os.unlink(self.path)
            return
        for i in range(self.backups - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{self.path}.{i}", f"{self.path}.{i + 1}")
        os.replace(self.path, f"{self.path}.1")

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        if self._pid == os.getpid():
            self._close_fd()
        self.file_lock.close()
        super().close()


_opts: dict[str, Any] = {}


def setup(level: str = "INFO", log_file: str | None = None, verbose: bool = False,
          max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS,
          run: str | None = None) -> None:
    """Console + optional JSON-lines file; ``run`` keeps a parent's run id (workers)."""
    global _run_id
    if run:
        _run_id = run
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
        if isinstance(h, SharedRotatingFile):
            h.close()
    lvl = logging.DEBUG if verbose else getattr(logging, level.upper(), logging.INFO)
    root.setLevel(logging.DEBUG if log_file else lvl)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(lvl)
    console.setFormatter(Console())
    if not verbose:
        console.addFilter(lambda r: not r.name.startswith(EVENTS))
    root.addHandler(console)
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        fh = SharedRotatingFile(log_file, max_bytes, backups)
        fh.setLevel(logging.DEBUG if verbose else min(lvl, logging.INFO))
        fh.setFormatter(JsonLines())
        root.addHandler(fh)
    for noisy in ("httpx", "httpcore", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _opts.update(level=level, log_file=log_file, verbose=verbose, max_bytes=max_bytes,
                 backups=backups)
    _export()


def set_rotation(max_bytes: int, backups: int) -> None:
    """Apply config.yaml's ``log_max_size`` / ``log_backups`` once the config is read."""
    _opts.update(max_bytes=max_bytes, backups=backups)
    for h in logging.getLogger().handlers:
        if isinstance(h, SharedRotatingFile):
            h.max_bytes, h.backups = max_bytes, backups
    _export()


def _export() -> None:
    """Hand the logging setup (and the run id) to worker processes through the environment."""
    os.environ["SITEMAP_CRAWLER_LOG"] = json.dumps({**_opts, "run": run_id()})


def setup_from_env() -> None:
    """In a worker process: the same logging, and the same run id, as the parent."""
    raw = os.environ.get("SITEMAP_CRAWLER_LOG")
    opts = json.loads(raw) if raw else {}
    if isinstance(opts, dict):
        setup(**opts)
    else:
        setup()


def summary_line(fields: dict[str, Any]) -> None:
    """The run's last JSON line, ``"event": "run_summary"``: what a script reads."""
    logging.getLogger(EVENTS + ".run").info(
        "run summary", extra={"event": "run_summary", "data": fields})
