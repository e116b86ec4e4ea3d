"""Markdown file names owned exactly once, across workers and machines (N1-N4).

Two URLs can map to one file: ``/a`` and ``/a.html`` are both ``a.md``; ``/A`` and ``/a``
are one file on a case-insensitive share (SMB, macOS, Windows), and so are the NFC and NFD
spellings of ``café``.  Looking at the folder before writing is not enough: two workers
that write such a pair at the same moment both see the name free, and one page is lost.

* N1. A name is **claimed before it is written**: the claim is the folder
  ``names/<h[:2]>/<h[2:40]>/`` (``h`` the SHA-256 of the name's collision key, case- and
  Unicode-folded) holding one file, ``owner``: the owning URL and the key.  It is made as
  a private temporary folder renamed into place.  Renaming a folder onto one that exists
  and is not empty fails on a local disk, SMB and sshfs alike (O_EXCL and hard links do
  not exclude on SMB: ../shared/netfs/README.md), so exactly one claimant wins.
* N2. Whatever the rename answered, the owner is read back by path: SMB can report
  success to a loser, and a loser learns the winner the same way.
* N3. A claim is never released: a page that leaves the site and comes back finds its name
  still its own, and no other URL takes it meanwhile.  Claims are small and only made
  for names written; the ownership of folders (``/x`` next to ``/x.md/y``) is claimed the
  same way, by the owner :data:`FOLDER`.
* N4. A claim's content is input (the state folder is shared): an owner that is not a URL
  or a known marker counts as someone else's, so the worst a bad claim does is send a page
  to its hashed variant name.
* N5. A new claim names as owner what is on disk at that name first (a folder, the URL in
  a page's front matter, or a file that is not ours), and only then the claimant
  (``OutputLayout.claim_path``): files written before claims existed keep their owners, and
  a claim lost to a power cut is made again for the page that was written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol.fsutil import TMP_PREFIX, fsync_dir, real_dir, unlink_quiet
from sitemap_crawler.protocol.untrusted import QUARANTINE

FOLDER = "folder:"  # a claim held by a folder of pages
FOREIGN = "foreign:"  # a file found there that is not one of our pages (a user's own)
NAMES_DIR = "names"
_READ_BACK = 30.0  # seconds a lost claimant waits to read the winner (share caches)
KNOWN = 8192  # claims a process remembers; older ones are read from disk again (N3)


class NameClaims:
    """The claims of one site's state folder; each process keeps what it learnt (claims
    never change hands, N3)."""

    def __init__(self, state_root: Path, known: int = KNOWN) -> None:
        """``known``: how many claims to remember.  A claim never changes (N3), so one
        forgotten is read again from its file; remembering all of them grew a worker by
        ~25 MiB for every 100,000 pages of a 1,000,000-page crawl."""
        self.dir = state_root / NAMES_DIR
        self.quarantine = state_root / QUARANTINE
        self._known: OrderedDict[str, str] = OrderedDict()  # oldest first
        self._limit = max(1, known)
        self._lock = threading.Lock()
        self._made: set[Path] = set()  # shard folders known to exist

    def claim(self, key: str, owner: Callable[[], str]) -> str:
        """The owner of the name ``key``: the one already recorded, or ``owner()``, claimed
        now (N1) unless a rival was first (N2)."""
        got = self._known.get(key)
        if got is not None:
            return got
        h = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        path = self.dir / h[:2] / h[2:40]
        got = _read_owner(path, key)
        if got is None:
            if path.parent not in self._made:
                real_dir(self.dir, self.quarantine)  # a symlink would lead out
                path.parent.mkdir(exist_ok=True)
                self._made.add(path.parent)
            _make(path, owner(), key)
            got = _read_back(path, key)
        with self._lock:  # fetch threads claim side by side: no insert while one forgets
            self._known[key] = got
            while len(self._known) > self._limit:  # (a dict's first key after many
                self._known.popitem(last=False)      # deletions is a scan; this is not)
        return got


def _make(path: Path, owner: str, key: str) -> None:
    """Try to create the claim ``path`` for ``owner`` (N1); losing is not an error."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    tmp.mkdir()
    moved = False
    try:
        with open(tmp / "owner", "wb") as f:
            f.write(f"{owner}\n{key}\n".encode("utf-8", "surrogatepass"))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.rename(tmp, path)
            moved = True
        except OSError:
            if not os.path.lexists(path):  # not a lost race: the share refused
                raise
    finally:
        if not moved:  # (SMB refuses to delete a file just closed for a moment: retried)
            with contextlib.suppress(OSError):
                unlink_quiet(tmp / "owner", busy_ok=True)
                tmp.rmdir()
    if moved:
        fsync_dir(path.parent)


def _read_back(path: Path, key: str) -> str:
    """The owner of a claim just made or lost (N2), waiting out a share's caches."""
    deadline = time.monotonic() + _READ_BACK
    pause = 0.01
    while True:
        got = _read_owner(path, key)
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise CrawlError(f"{path}: a file name claim that cannot be read back")
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def _read_owner(path: Path, key: str) -> str | None:
    """The owner a claim records; None if there is no claim; :data:`FOREIGN` for one that
    is not well formed (N4)."""
    try:
        raw = (path / "owner").read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        if os.path.lexists(path) and not path.is_dir():
            return FOREIGN  # something else sits where a claim would be
        return None
    lines = raw.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 2 or lines[1] != key:
        return FOREIGN
    owner = lines[0]
    if owner in (FOLDER, FOREIGN) or owner.startswith(("http://", "https://")):
        return owner
    return FOREIGN
