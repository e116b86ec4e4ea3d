"""The state directory of one site: where everything a crawl knows lives, beside its output.

Layout (roadmap v0.4.0)::

    {base_output_dir}/.crawl-state/{site}/
      tickets/{pending,claimed,completed,failed}/   the work queue (see tickets.py)
      workers/<worker-id>.lock                      heartbeats (see heartbeat.py)
      journal/<worker-id>.jsonl                     per-worker results (see journal.py)
      hosts/<host>/                                 what the site learnt of a host (ETags lie)
    {base_output_dir}/.crawl-state/.hosts/<host>/   politeness tokens of every site (hostgate.py)
    {base_output_dir}/.crawl-state/.hosts-workers/  heartbeats of the processes holding them
      locks/                                        rename tokens for state-wide jobs
      manifest.json                                 what prepare and the crawls did, and the
                                                    hosts prepare queued (commands/scope.py)
      excluded.jsonl                                URLs the last prepare left out, and why
      url-index.json                                url -> validators, hashes, file path (base)
      url-index.d/<seq>-<writer>.jsonl              what later merges learnt (see index.py)
      url-index.segments.json                       which segments are live (see index.py I4)
      url-index.keys                                the base's URLs as hashes (index.count)
      names/                                        file name claims (see names.py)
      quarantine/                                   files that failed a check (untrusted.py)

There is no database and no server: another machine that mounts the same directory sees the
same state, and copying the directory copies the crawl.

Worker ids are ``<full host>-<machine token>-<pid>-<nonce>`` (:func:`new_worker_id`): the
full host name (two machines may share the first label), and a token that is equal only
where pids can be compared (same machine id, boot and pid namespace).  Only the token proves
that a worker is local (heartbeat.py H3).  ``$SITEMAP_CRAWLER_MACHINE_ID`` replaces
/etc/machine-id, for tests and for containers that share one.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol.fsutil import (
    atomic_write,
    ensure_token_dir,
    read_settled,
    real_dir,
)
from sitemap_crawler.protocol.untrusted import QUARANTINE, quarantine

log = logging.getLogger(__name__)

TICKET_STATES = ("pending", "claimed", "completed", "failed")
EXCLUDED_FILE = "excluded.jsonl"  # written by prepare, read by export


_NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}


def folder_refuses(e: OSError) -> bool:
    """True when ``e`` (EACCES/EPERM) comes from a folder that refuses new files, so every
    page written there would fail alike; False for one file refused (a share's reader holding
    it, a file a user protected), which costs that page only."""
    if e.errno not in (errno.EACCES, errno.EPERM) or not e.filename:
        return False
    d = Path(os.fsdecode(e.filename)).parent
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        require_writable([d])
    except CrawlError:
        return True
    return False


def require_writable(directories: list[Path]) -> None:
    """Make and remove a probe folder in each directory (created if missing), so a crawl
    that cannot write its output or state says so once, before it claims work, instead of
    finding "no work" (a claim refused looks like one lost to another worker) or failing
    every URL after fetching it.  A folder, not a file: SMB refuses to delete a file just
    closed (EBUSY) for a moment, and a probe left behind would litter the user's folder."""
    for d in directories:
        probe = d / f".tmp-probe-{os.getpid()}-{os.urandom(3).hex()}"
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe.mkdir()
        except OSError as e:
            if e.errno not in _NOT_WRITABLE:
                raise
            raise CrawlError(f"{d}: not writable ({e.strerror}); the crawl writes its "
                             "markdown and its state there") from None
        for attempt in range(10):
            try:
                probe.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno not in (errno.EBUSY, errno.EACCES, errno.EPERM) or attempt == 9:
                    raise
                time.sleep(0.05 * (attempt + 1))


@dataclass(frozen=True)
class StateDir:
    root: Path

    def writable_dirs(self) -> list[Path]:
        """The folders a worker writes in (require_writable); each must be a real folder,
        not a symlink that would carry its files outside (fsutil.real_dir)."""
        return [self.root, *(self.ticket_dir(s) for s in TICKET_STATES), self.workers,
                self.journal, self.hosts, self.root / "tmp"]

    def real_dirs(self) -> None:
        """Make the folders workers write in, each a real folder: a symlinked one (journal/,
        tmp/, ...) is moved to quarantine/ (fsutil.real_dir), never written through."""
        self.root.mkdir(parents=True, exist_ok=True)
        real_dir(self.tickets, self.root / QUARANTINE)
        for d in self.writable_dirs()[1:]:
            real_dir(d, self.root / QUARANTINE)
        for d, token in ((self.locks, "index.free"), (self.prepare_lock, "prepare.free")):
            if d.is_symlink():  # its tokens would be renamed in another folder
                quarantine(self.root, d, "a symlink, not a real folder")
                ensure_token_dir(d, [token])  # made again, exactly once across machines

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
    def gate_root(self) -> Path:
        """The host gate (hostgate.py) shared by every site of this ``.crawl-state``: two
        sites on one host keep one delay between them."""
        return self.root.parent / ".hosts"

    @property
    def gate_workers(self) -> Path:
        """Heartbeats of the processes that use the shared gate (who may hold a token)."""
        return self.root.parent / ".hosts-workers"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def prepare_lock(self) -> Path:
        """The rename token held by the one prepare that may run at a time (P2)."""
        return self.root / "prepare-lock"

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
            self.real_dirs()
            ensure_token_dir(self.locks, ["index.free"])
            ensure_token_dir(self.prepare_lock, ["prepare.free"])
        except OSError as e:
            raise CrawlError(f"cannot create state directory {self.root}: {e.strerror}") from None

    def read_manifest(self) -> dict[str, Any]:
        """The manifest; only a *missing* file is empty, so history is never overwritten
        because of a read error: an I/O error is a one-line CrawlError, and a corrupt file
        is moved aside (``manifest.corrupt.<pid>.json``) with a warning before starting anew."""
        try:
            data = read_settled(self.manifest_path, json.loads)  # S1 (fsutil)
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise CrawlError(f"cannot read {self.manifest_path}: {e.strerror}") from None
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data
        aside = self.manifest_path.with_name(f"manifest.corrupt.{os.getpid()}.json")
        try:
            os.rename(self.manifest_path, aside)
        except OSError as e:
            raise CrawlError(f"{self.manifest_path} is corrupt and cannot be moved aside: "
                             f"{e.strerror}") from None
        log.warning("%s was corrupt; kept as %s, starting a new history",
                    self.manifest_path, aside.name)
        return {}

    def write_manifest(self, data: dict[str, Any]) -> None:
        atomic_write(self.manifest_path, json.dumps(data, indent=2, sort_keys=True) + "\n")


# For tests and for containers that share /etc/machine-id and the boot id but not their pids
# (another pid namespace is detected by itself): names this machine instead of /etc/machine-id.
MACHINE_ENV = "SITEMAP_CRAWLER_MACHINE_ID"
UNKNOWN_MACHINE = "0" * 10  # no machine id and no boot id: nothing is ever proven local


def hostname() -> str:
    """This machine's *full* name, safe inside file names (``[A-Za-z0-9.-]``, <= 40 chars).

    The first label alone is not enough: node1.us.example and node1.eu.example are two
    machines.  A name longer than 40 characters is cut and a hash of the whole name appended,
    so two long names that differ only at their end stay apart.
    """
    raw = socket.gethostname() or "host"
    name = "".join(c if (c.isascii() and c.isalnum()) or c in ".-" else "-" for c in raw)
    name = name.strip(".-") or "host"
    if len(name) > 40:
        name = name[:31].rstrip(".-") + "-" + hashlib.sha1(raw.encode()).hexdigest()[:8]
    return name


def _read_first(*paths: str) -> str:
    for p in paths:
        try:
            text = Path(p).read_text().strip()
        except OSError:
            continue
        if text:
            return text
    return ""


def machine_token() -> str:
    """10 hex digits, equal for two processes only if each can see the other's pid.

    A hash of the machine id (or ``$SITEMAP_CRAWLER_MACHINE_ID``), the boot id and the pid
    namespace: a pid means the same process only on the same machine, in the same boot, in
    the same pid namespace (containers).  Without a machine id or boot id it is
    ``UNKNOWN_MACHINE`` and no worker is ever judged by its pid (heartbeat.py H3).
    """
    return _machine_token(os.environ.get(MACHINE_ENV))


@functools.lru_cache(maxsize=4)
def _machine_token(env: str | None) -> str:
    # read once per process (a crawl of 200 sites read these files thousands of times)
    machine = env or _read_first("/etc/machine-id", "/var/lib/dbus/machine-id")
    boot = _read_first("/proc/sys/kernel/random/boot_id")
    if not machine and not boot:
        return UNKNOWN_MACHINE
    try:
        pidns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = ""
    return hashlib.sha256(f"{machine}|{boot}|{pidns}".encode()).hexdigest()[:10]


def new_worker_id() -> str:
    """``<full host>-<machine token>-<pid>-<nonce>``: unique per machine, boot and process.

    Only ``[A-Za-z0-9.-]`` (ticket names use ``_`` and ``[A-Za-z0-9._-]``), at most ~65
    characters.  The machine token is what proves "same machine" (heartbeat.py H3), never the
    host name: two machines may share a name.
    """
    return f"{hostname()}-{machine_token()}-{os.getpid()}-{os.urandom(3).hex()}"


@dataclass(frozen=True)
class WorkerIdParts:
    host: str
    machine: str
    pid: int


def parse_worker_id(wid: str) -> WorkerIdParts | None:
    """The parts of a worker id, or None if it is not one of ours (or of an older format)."""
    parts = wid.rsplit("-", 3)
    if (len(parts) != 4 or not parts[2].isdigit() or len(parts[1]) != 10
            or any(c not in "0123456789abcdef" for c in parts[1])):
        return None
    return WorkerIdParts(parts[0], parts[1], int(parts[2]))
