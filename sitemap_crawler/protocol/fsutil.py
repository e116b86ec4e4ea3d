"""File-system primitives that hold on local disks, NFS, SMB and sshfs.

What was measured on real shares (../shared/netfs/README.md) decides what is here:

* ``rename`` to a *unique* destination name is the only primitive that is exclusive
  everywhere.  SMB can report success to a loser, so every exclusive move is verified by
  looking at the destination afterwards (:func:`move_exclusive`).
* ``O_EXCL``, hard links and ``flock`` are not used for anything shared between machines.
* Files that change hands are written whole under a temporary name and renamed into place
  (:func:`atomic_write`), so a reader never sees half a file and a crash leaves at most a
  stray temporary file (named ``.tmp-*``; :func:`sweep_tmp` removes old ones).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

# errno values that mean "someone else got there first" on one of the shares we support.
LOST_RACE = {errno.ENOENT, errno.EBUSY, errno.EACCES, errno.EPERM, errno.EEXIST, errno.ENOTEMPTY}
TMP_PREFIX = ".tmp-"


def tmp_name(target: Path) -> Path:
    """A temporary name beside ``target``, unique across processes and machines."""
    return target.with_name(f"{TMP_PREFIX}{target.name}.{os.getpid()}.{secrets.token_hex(4)}")


def atomic_write(
    target: Path, data: bytes | str, *, fsync: bool = True, replace_retries: int = 20
) -> None:
    """Write ``data`` to ``target`` so that readers see the old or the new file, never a mix.

    On SMB, replacing a file that a reader holds open fails with EEXIST/EBUSY/EACCES: the
    rename is retried for a while (readers hold files for milliseconds).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = tmp_name(target)
    done = False
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        for attempt in range(replace_retries):
            try:
                os.replace(tmp, target)
                done = True
                return
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.EBUSY, errno.EACCES) or (
                    attempt == replace_retries - 1
                ):
                    raise
                time.sleep(0.02 * (attempt + 1))
    finally:
        if not done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def move_exclusive(src: Path, dst: Path) -> bool:
    """Move ``src`` to the unique name ``dst``; True only if this call won.

    ``dst`` must be a name nobody else will ever use (it carries the mover's id), so a
    success that SMB reports to a loser is caught by checking that ``dst`` exists.
    """
    try:
        os.rename(src, dst)
    except OSError as e:
        if e.errno in LOST_RACE:
            return False
        raise
    return dst.exists()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if it is gone (renamed away by another worker)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def unlink_quiet(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def sweep_tmp(directory: Path, older_than: float = 3600.0) -> int:
    """Remove temporary files left by crashed writers (judged by mtime, so only old ones)."""
    removed = 0
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if entry.name.startswith(TMP_PREFIX):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > older_than:
                    os.unlink(entry.path)
                    removed += 1
    return removed


def ensure_token_dir(directory: Path, tokens: list[str]) -> bool:
    """Create ``directory`` holding the empty files ``tokens``, exactly once across machines.

    O_EXCL and link() are broken on SMB, so the tokens are made in a private temporary
    directory that is renamed into place: a second creator's rename fails because the target
    exists and is not empty (the directory always holds its tokens, free or held).  Returns True
    if this call created it.
    """
    if directory.exists():
        return False
    tmp = directory.with_name(f"{TMP_PREFIX}{directory.name}.{os.getpid()}.{secrets.token_hex(4)}")
    tmp.mkdir(parents=True)
    try:
        for name in tokens:
            (tmp / name).touch()
        try:
            os.rename(tmp, directory)
        except OSError as e:
            if e.errno in LOST_RACE or directory.exists():
                return False
            raise
        return True
    finally:
        if tmp.exists():
            for name in tokens:
                with contextlib.suppress(OSError):
                    (tmp / name).unlink()
            with contextlib.suppress(OSError):
                tmp.rmdir()


class RenameLock:
    """A lock that holds across machines: the token ``<name>.free`` renamed to a unique name.

    Taking it is the exclusive rename of T1 (tickets.py); a holder found dead by ``is_dead``
    loses it to whoever renames its token back first.  Between processes of one machine this
    costs two renames; nothing here trusts clocks, O_EXCL or flock.
    """

    def __init__(self, directory: Path, name: str, owner: str) -> None:
        self.directory, self.name, self.owner = directory, name, owner
        self.free = directory / f"{name}.free"
        self.held: Path | None = None

    def acquire(self, is_dead: Callable[[str], bool], timeout: float = 300.0) -> bool:
        deadline = time.monotonic() + timeout
        pause = 0.01
        while time.monotonic() < deadline:
            mine = self.directory / f"{self.name}.held.{self.owner}.{secrets.token_hex(3)}"
            if move_exclusive(self.free, mine):
                self.held = mine
                return True
            self._break_dead(is_dead)
            time.sleep(pause)
            pause = min(pause * 1.5, 0.25)
        return False

    def _break_dead(self, is_dead: Callable[[str], bool]) -> None:
        prefix = f"{self.name}.held."
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        for n in names:
            if n.startswith(prefix):
                holder = n[len(prefix):].rsplit(".", 1)[0]
                if holder != self.owner and is_dead(holder):
                    with contextlib.suppress(OSError):
                        os.rename(self.directory / n, self.free)

    def release(self) -> None:
        if self.held is not None:
            # The free name cannot exist while we hold the token, so this never replaces a file.
            os.rename(self.held, self.free)
            self.held = None
