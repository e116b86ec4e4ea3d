"""Logging: short lines for people on the console, JSON lines for machines in --log-file.

Every record may carry ``worker``, ``ticket`` and ``url`` (pass them in ``extra=``); the JSON
lines keep them as fields so a crawl can be traced per worker, ticket and URL.  Worker
processes call :func:`setup` with the same arguments as the parent, so all processes append
to one file (O_APPEND keeps whole lines intact on a local disk).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

_FIELDS = ("worker", "ticket", "url", "site", "status", "outcome", "elapsed")
EVENTS = "sitemap_crawler.events"  # per-URL records: the log file gets them, the console not


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
               + f".{int(record.msecs):03d}Z", "level": record.levelname.lower(),
               "logger": record.name, "pid": record.process, "msg": record.getMessage()}
        for k in _FIELDS:
            v = getattr(record, k, None)
            if v is not None:
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class Console(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {msg}"
        return msg


def setup(level: str = "INFO", log_file: str | None = None, verbose: bool = False) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
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
        fh = logging.FileHandler(log_file, mode="a", encoding="utf-8")
        fh.setLevel(logging.DEBUG if verbose else min(lvl, logging.INFO))
        fh.setFormatter(JsonLines())
        root.addHandler(fh)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ["SITEMAP_CRAWLER_LOG"] = json.dumps([level, log_file, verbose])


def setup_from_env() -> None:
    """In a spawned worker process: the same logging as the parent."""
    raw = os.environ.get("SITEMAP_CRAWLER_LOG")
    if raw:
        level, log_file, verbose = json.loads(raw)
        setup(level, log_file, verbose)
    else:
        setup()
