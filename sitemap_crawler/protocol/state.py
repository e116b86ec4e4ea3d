"""The state directory of one site: where everything a crawl knows lives, beside its output.

Layout (roadmap v0.4.0)::

    {base_output_dir}/.crawl-state/{site}/
      tickets/{pending,claimed,completed,failed}/   the work queue (see tickets.py)
      workers/<worker-id>.lock                      heartbeats (see heartbeat.py)
      journal/<worker-id>.jsonl                     per-worker results (see journal.py)
      hosts/<host>/                                 politeness tokens (see hostgate.py)
      locks/                                        rename tokens for state-wide jobs
      manifest.json                                 what prepare and the crawls did
      url-index.json                                url -> validators, hashes, file path

There is no database and no server: another machine that mounts the same directory sees the
same state, and copying the directory copies the crawl.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol.fsutil import atomic_write, ensure_token_dir

TICKET_STATES = ("pending", "claimed", "completed", "failed")


@dataclass(frozen=True)
class StateDir:
    root: Path

    @property
    def tickets(self) -> Path:
        return self.root / "tickets"

    def ticket_dir(self, state: str) -> Path:
        return self.root / "tickets" / state

    @property
    def workers(self) -> Path:
        return self.root / "workers"

    @property
    def journal(self) -> Path:
        return self.root / "journal"

    @property
    def hosts(self) -> Path:
        return self.root / "hosts"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    @property
    def index_path(self) -> Path:
        return self.root / "url-index.json"

    def exists(self) -> bool:
        return (self.root / "tickets").is_dir()

    def ensure(self) -> None:
        """Create the layout; a full disk or a read-only share is a one-line CrawlError."""
        try:
            for s in TICKET_STATES:
                self.ticket_dir(s).mkdir(parents=True, exist_ok=True)
            for d in (self.workers, self.journal, self.hosts):
                d.mkdir(parents=True, exist_ok=True)
            ensure_token_dir(self.locks, ["index.free"])
        except OSError as e:
            raise CrawlError(f"cannot create state directory {self.root}: {e.strerror}") from None

    def read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads(self.manifest_path.read_bytes())
            return data if isinstance(data, dict) else {}
        except FileNotFoundError:
            return {}
        except (ValueError, OSError):
            return {}

    def write_manifest(self, data: dict[str, Any]) -> None:
        atomic_write(self.manifest_path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def hostname() -> str:
    """This machine's name, made safe for file names (letters, digits, '-')."""
    name = socket.gethostname().split(".")[0] or "host"
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)[:40] or "host"


def new_worker_id() -> str:
    """host-pid-nonce: unique across machines and restarts, and safe inside file names."""
    return f"{hostname()}-{os.getpid()}-{os.urandom(3).hex()}"


def parse_worker_id(wid: str) -> tuple[str, int] | None:
    """(host, pid) from a worker id, or None if it is not one of ours."""
    parts = wid.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])
