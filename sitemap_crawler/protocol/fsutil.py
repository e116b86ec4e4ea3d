"""File-system primitives that hold on local disks, NFS, SMB and sshfs.

What was measured on real shares (../shared/netfs/README.md) decides what is here:

* ``rename`` to a *unique* destination name is the only primitive that is exclusive
  everywhere.  SMB can report success to a loser, so every exclusive move is verified by
  looking at the destination afterwards (:func:`move_exclusive`).
* ``O_EXCL``, hard links and ``flock`` are not used for anything shared between machines.
* Files that change hands are written whole under a temporary name and renamed into place
  (:func:`atomic_write`), so a reader never sees half a file and a crash leaves at most a
  stray temporary file (named ``.tmp-*``; :func:`sweep_tmp` removes old ones).
* D (durability). Where power-loss safety is claimed (``atomic_write`` with ``fsync``, ticket
  moves, journal creation) the directory is fsynced after the create or rename
  (:func:`fsync_dir`); a filesystem that refuses fsync on a directory (EINVAL/EBADF, some
  FUSE shares) is tolerated, any other error is raised.  On a network share (NFS, SMB,
  sshfs: :data:`NETWORK_FS`) no directory is fsynced: a create or rename there is a request
  the server has carried out when it answers, so the client has nothing of it to flush, and
  on smbnetfs opening a directory lists it (a claim from a ``pending/`` of 10,000 tickets
  spent 317 ms of its ~600 ms there, against 3 ms for a small one).
* R (idempotent renames). A rename that reports an error may still have happened on the
  server (SMB, a retried request): :func:`move_exclusive` then looks at its unique
  destination, which only this caller can have made, before it believes the error.
* R2 (late renames on SMB). A loser's rename can land on the server *after* the winner's:
  SMB renames an open handle, and a loser that opened the source before the winner renamed
  it then moves the winner's file on to its own name.  Measured on smbnetfs, two mounts
  renaming the same sources in lockstep: of 300 races, 6-13 answered success to both, and
  1-2 times both saw their destination right after (``os.path.exists``), one of them
  losing it within 5 ms.  So on SMB (:data:`LATE_RENAME_FS`) a winner waits twice its own
  rename's time (10 ms to 0.5 s) and opens the destination, which asks the server, before
  it believes the win.
* L1-L4 (:class:`RenameLock`). L1: taking the lock is the exclusive rename of the token
  ``<name>.free`` to ``<name>.held.<owner>.<nonce>``.  L2: while it holds the lock, the holder
  rewrites the held token's *content* (a counter) every ``interval`` from a thread, as a
  worker's heartbeat does (heartbeat.py H1).  L3: another process breaks the lock (renames
  the token back to ``.free``) only if that content has not changed for ``timeout`` seconds
  of its *own* monotonic clock, or if the holder is proven dead on this machine
  (``local_dead``, heartbeat.py H3).  L4: a holder whose token is gone has lost the lock: its
  next beat or :meth:`RenameLock.check` raises :class:`LockLost`, and it must check before
  every write it makes under the lock (``atomic_write(..., before_replace=lock.check)``).
  What stays open: a holder paused inside the one ``rename`` after its last check.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sitemap_crawler.errors import CrawlError

log = logging.getLogger(__name__)

# errno values that mean "someone else got there first" on one of the shares we support.
LOST_RACE = {errno.ENOENT, errno.EBUSY, errno.EACCES, errno.EPERM, errno.EEXIST, errno.ENOTEMPTY}
TMP_PREFIX = ".tmp-"
# fsync on a directory refused by the filesystem (not an I/O error): nothing more can be done.
_DIR_FSYNC_REFUSED = {errno.EINVAL, errno.EBADF}
# File systems whose creates and renames are server requests (D): no directory fsync.
NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs",
                        "fuse.sshfs", "fuse.smbnetfs", "fuse.glusterfs", "fuse.rclone"})
# R2: where a loser's rename can move the winner's file after the winner saw it
LATE_RENAME_FS = frozenset({"cifs", "smb3", "smbfs", "fuse.smbnetfs"})
_FS_TYPES: dict[int, str] = {}
_FS_TYPES_LOCK = threading.Lock()


def fs_type(directory: Path) -> str:
    """The mount type (``/proc/self/mountinfo``) of the file system holding ``directory``;
    "" where it cannot be told.  Cached per device."""
    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return ""
    with _FS_TYPES_LOCK:
        if dev not in _FS_TYPES:
            _FS_TYPES[dev] = _mount_type(os.major(dev), os.minor(dev))
        return _FS_TYPES[dev]


def _mount_type(major: int, minor: int) -> str:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[2] == f"{major}:{minor}" and " - " in line:
            return line.split(" - ", 1)[1].split()[0]
    return ""


def sync_filesystem(directory: Path) -> None:
    """Make everything written on ``directory``'s file system durable with one ``syncfs``:
    prepare writes thousands of ticket files without a per-file fsync.  ``os.sync()`` did
    this before and flushed every file system of the machine, other programs' writes
    included; ``syncfs`` flushes only this one (Linux; elsewhere ``os.sync()``)."""
    libc_syncfs = _syncfs()
    if libc_syncfs is None:
        os.sync()
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if libc_syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(directory))
    finally:
        os.close(fd)


def _syncfs() -> Any:
    """libc's ``syncfs``, or None where there is none."""
    global _SYNCFS
    if _SYNCFS is False:
        try:
            fn = ctypes.CDLL(None, use_errno=True).syncfs
            fn.argtypes = [ctypes.c_int]
            _SYNCFS = fn
        except (AttributeError, OSError):
            _SYNCFS = None
    return _SYNCFS


_SYNCFS: Any = False


def fsync_dir(directory: Path) -> None:
    """Make the creates and renames done in ``directory`` survive a power loss (D)."""
    if fs_type(directory) in NETWORK_FS:
        return  # the server carried them out before answering (D)
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        if e.errno in _DIR_FSYNC_REFUSED:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _DIR_FSYNC_REFUSED:
            raise
    finally:
        os.close(fd)


def tmp_name(target: Path) -> Path:
    """A temporary name beside ``target``, unique across processes and machines."""
    return target.with_name(f"{TMP_PREFIX}{target.name}.{os.getpid()}.{secrets.token_hex(4)}")


def atomic_write(target: Path, data: bytes | bytearray | str, *, tmp_dir: Path | None = None,
                 fsync: bool = True,
                 replace_retries: int = 20,
                 before_replace: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``target`` so that readers see the old or the new file, never a mix.

    With ``fsync`` the data and then the directory entry are made durable (D).  On SMB,
    replacing a file that a reader holds open fails with EEXIST/EBUSY/EACCES: the rename is
    retried for a while (readers hold files for milliseconds).  ``before_replace`` runs just
    before the rename and may raise to abandon the write (a lock holder's L4 check).
    ``tmp_dir`` (on the same file system) holds the temporary file instead of the target's
    directory, so a writer killed mid-write leaves nothing in a user's folder (W2).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = tmp_name(target) if tmp_dir is None else tmp_dir / tmp_name(target).name
    done = False
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        replace_file(tmp, target, replace_retries)
        done = True
        if fsync:
            fsync_dir(target.parent)
    finally:
        if not done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def write_new_file(directory: str, name: str, data: bytes) -> str:
    """``atomic_write(directory/name, data, fsync=False)`` for writers of many small files.

    The same temporary name and rename, with plain ``os`` calls on strings: prepare writes
    10,000 tickets for a million URLs and the ``Path`` and buffered-file layers cost a third
    of that.  Durability is the caller's (prepare calls :func:`sync_filesystem` once at its end).
    """
    target = f"{directory}/{name}"
    tmp = f"{directory}/{TMP_PREFIX}{name}.{os.getpid()}.{secrets.token_hex(4)}"
    done = False
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        replace_file(tmp, target)
        done = True
    finally:
        if not done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return target


def replace_file(tmp: Path | str, target: Path | str, retries: int = 20) -> None:
    """``os.replace`` that outlasts SMB's EEXIST/EBUSY/EACCES while a reader holds ``target``
    open (readers hold files for milliseconds)."""
    for attempt in range(retries):
        try:
            os.replace(tmp, target)
            return
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.EBUSY, errno.EACCES) or (
                attempt == retries - 1
            ):
                raise
            time.sleep(0.02 * (attempt + 1))


def move_exclusive(src: Path, dst: Path, *, durable: bool = False) -> bool:
    """Move ``src`` to the unique name ``dst``; True only if this call won.

    ``dst`` must be a name nobody else will ever use (it carries the mover's id), so its
    existence decides, not the reply: a success that SMB reports to a loser is caught, and a
    rename that happened on the server but answered an error is not taken for a loss (R).
    ``durable`` fsyncs both directories afterwards (D).
    """
    t0 = time.monotonic()
    try:
        os.rename(src, dst)
    except OSError as e:
        if not dst.exists():
            if e.errno in LOST_RACE:
                return False
            raise
    if not dst.exists():
        return False
    if fs_type(dst.parent) in LATE_RENAME_FS and not _kept(dst, time.monotonic() - t0):
        return False
    if durable:
        fsync_dir(dst.parent)
        if src.parent != dst.parent:
            fsync_dir(src.parent)
    return True


def _kept(dst: Path, took: float) -> bool:
    """R2: ``dst`` is still there once a late rename would have landed (an open of it
    goes to the share's server)."""
    time.sleep(min(max(2 * took, 0.01), 0.5))
    try:
        os.close(os.open(dst, os.O_RDONLY))
    except FileNotFoundError:
        return False
    return True


def real_dir(path: Path, quarantine: Path) -> Path:
    """``path`` as a real directory (created if missing), never a symlink: a symlinked
    folder in the state or output folder would carry every file made through it outside.
    Anything else found at ``path`` (a symlink, a file) is moved into ``quarantine`` first,
    with one log line; the data a symlink points at is not touched.  Only the last
    component is checked: callers pass folders directly under a root they trust."""
    for _ in range(3):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                path.mkdir(parents=True)
            continue  # look again: a rival may have made it, as anything
        if stat.S_ISDIR(st.st_mode):
            return path
        if quarantine == path or quarantine in path.parents:
            raise CrawlError(f"{path}: not a real folder; move it away and run again")
        real_dir(quarantine, quarantine)  # itself a real folder (else the error above)
        aside = quarantine / f"{path.name}.{os.getpid()}.{secrets.token_hex(3)}"
        with contextlib.suppress(FileNotFoundError):
            os.rename(path, aside)
            log.error("%s is not a real folder (a symlink or a file); moved to %s",
                      path, aside)
    raise CrawlError(f"{path}: kept changing while it was made a real folder")


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if it is gone (renamed away by another worker)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def unlink_quiet(path: Path, *, busy_ok: bool = False) -> bool:
    """Delete ``path`` if it is there; True if this call deleted it.

    With ``busy_ok`` a file the share refuses to delete for now (SMB: EBUSY/EACCES while a
    client still holds it open, e.g. a FUSE close that has not reached the server yet; seen
    by bench/soak.py) is retried briefly and then left for a later pass, for housekeeping
    whose file may safely stay (a merged journal is merged again, idempotently).
    """
    for attempt in range(5 if busy_ok else 1):
        try:
            path.unlink()
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            if not busy_ok or e.errno not in (errno.EBUSY, errno.EACCES, errno.EPERM):
                raise
            time.sleep(0.05 * (attempt + 1))
    return False


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


def sweep_pid_tmp(directories: list[Path], pid: int, before: float) -> int:
    """Remove the temporary files and folders (``.tmp-<name>.<pid>.<8 hex>``) that process
    ``pid`` of this machine left when it died, made before ``before`` (epoch seconds).  A new
    process given the same pid in between could lose a file it is writing: its rename then
    fails and that one URL is retried, nothing is lost.  Returns the entries removed."""
    tail = re.compile(rf"\.{pid}\.[0-9a-f]{{8}}$")
    removed = 0
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            if not (e.name.startswith(TMP_PREFIX) and tail.search(e.name)):
                continue
            with contextlib.suppress(OSError):
                if e.stat(follow_symlinks=False).st_mtime >= before:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path)
                else:
                    os.unlink(e.path)
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


class LockLost(CrawlError):
    """L4: this holder's lock token was taken by another process (we were judged dead)."""


class RenameLock:
    """A lock that holds across machines: the token ``<name>.free`` renamed to a unique name.

    See L1-L4 in the module docstring.  Between processes of one machine this costs two
    renames and a small write per ``interval``; nothing here trusts clocks, O_EXCL or flock.
    """

    RECORD = 128  # fixed size: the in-place rewrite of L2 never changes the file's length

    def __init__(self, directory: Path, name: str, owner: str, *, timeout: float = 60.0,
                 interval: float | None = None,
                 local_dead: Callable[[str], bool] | None = None) -> None:
        self.directory, self.name, self.owner = directory, name, owner
        self.free = directory / f"{name}.free"
        self.held: Path | None = None
        self.timeout = timeout
        self.interval = interval if interval is not None else min(5.0, max(0.05, timeout / 6))
        self.local_dead = local_dead
        self.lost = threading.Event()
        self._counter = 0
        self._seen: dict[str, tuple[bytes | None, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._beat_lock = threading.Lock()

    def acquire(self, timeout: float = 300.0) -> bool:
        deadline = time.monotonic() + timeout
        pause = 0.01
        while time.monotonic() < deadline:
            mine = self.directory / f"{self.name}.held.{self.owner}.{secrets.token_hex(3)}"
            if move_exclusive(self.free, mine):
                self.held = mine
                self.lost.clear()
                self._beat()  # L2 at once: the token now differs from what it was when free
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name=f"lock-{self.name}",
                                                daemon=True)
                self._thread.start()
                return True
            if not self.directory.is_dir():  # removed under us: no token can come back
                raise CrawlError(f"{self.directory}: the folder of the {self.name} lock is "
                                 "gone (was the output folder moved or deleted?)")
            self._break_stale()
            time.sleep(pause)
            pause = min(pause * 1.5, 0.25)
        return False

    def _beat(self) -> None:
        """L2: rewrite the held token's content; L4: raise LockLost if it is gone."""
        with self._beat_lock:
            if self.held is None or self.lost.is_set():
                raise LockLost(f"{self.directory}: lost the {self.name} lock")
            self._counter += 1
            rec = f"{self.owner} {self._counter} {secrets.token_hex(4)}".encode()
            try:
                fd = os.open(self.held, os.O_WRONLY)
            except FileNotFoundError:
                self.lost.set()
                raise LockLost(f"{self.directory}: the {self.name} lock was taken by another "
                               "process (this one was judged dead); nothing more written"
                               ) from None
            try:
                os.pwrite(fd, rec[: self.RECORD - 1].ljust(self.RECORD - 1) + b"\n", 0)
            finally:
                os.close(fd)

    def check(self) -> None:
        """Raise LockLost unless this process still holds the lock (L4); proves it by a beat."""
        self._beat()

    def _run(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval):
            try:
                self._beat()
                failures = 0
            except LockLost:
                return
            except OSError:
                failures += 1  # a share's hiccup: the next beat may pass; L3 allows timeout
                if failures * self.interval >= self.timeout:
                    return

    def _break_stale(self) -> None:
        """L3: rename back to free a held token whose content stood still for ``timeout``."""
        prefix = f"{self.name}.held."
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return
        now = time.monotonic()
        for n in names:
            if not n.startswith(prefix):
                continue
            holder = n[len(prefix):].rsplit(".", 1)[0]
            if holder == self.owner:
                continue
            content = read_bytes(self.directory / n)
            seen = self._seen.get(n)
            if seen is None or seen[0] != content:
                self._seen[n] = (content, now)
                stale = False
            else:
                stale = now - seen[1] >= self.timeout
            if stale or (self.local_dead is not None and self.local_dead(holder)):
                with contextlib.suppress(OSError):
                    os.rename(self.directory / n, self.free)
                self._seen.pop(n, None)

    def release(self) -> None:
        """Hand the token back; raises LockLost if another process had taken it (L4)."""
        if self.held is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)
        held, self.held = self.held, None
        # The free name cannot exist while we hold the token, so this never replaces a file.
        for attempt in range(20):
            try:
                os.rename(held, self.free)
                break
            except FileNotFoundError:
                self.lost.set()
                break
            except OSError as e:  # SMB: EBUSY/EACCES while a breaker reads the token (L3)
                if e.errno not in LOST_RACE or attempt == 19:
                    raise
                time.sleep(0.01 * (attempt + 1))
        if self.lost.is_set():
            raise LockLost(f"{self.directory}: the {self.name} lock was taken by another "
                           "process while this one held it (judged dead)")


# -- S1: files another machine replaces by rename --------------------------------------------

T = TypeVar("T")

STALE_SIZE_WINDOW = 30.0  # sshfs caches attributes for 20 s by default
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs")


def read_settled(path: Path, parse: Callable[[bytes], T], *,
                 window: float = STALE_SIZE_WINDOW) -> T:
    """Read and parse a file that other machines replace by rename (url-index, manifest).

    S1: a share's client may go on using the replaced file's *size* for a while (sshfs caches
    attributes for 20 s by default; measured here on the sshfs mounts: a url-index read
    ended after 94 bytes of a larger new file), so the read is cut short and the parse fails
    at the end of the data.  On a network file system such a failure is read again until the
    content parses or ``window`` seconds pass; a parse error before the end of the data, or
    any error on a local disk, is corruption and raises at once.  FileNotFoundError passes.
    """
    deadline = time.monotonic() + window
    pause = 0.1
    while True:
        raw = path.read_bytes()
        try:
            return parse(raw)
        except ValueError as e:
            pos = getattr(e, "pos", None)
            cut_short = pos is not None and pos >= len(raw) - 1
            if not cut_short or time.monotonic() >= deadline or not on_network_fs(path):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 2.0)


def on_network_fs(path: Path) -> bool:
    """True when ``path`` is on NFS, SMB, a FUSE file system (sshfs, smbnetfs) or the like;
    True as well where /proc/self/mountinfo cannot say (the careful answer)."""
    try:
        mounts = _mounts()
    except OSError:
        return True
    target = os.path.realpath(path)
    best, fstype = "", ""
    for point, kind in mounts:
        if (target == point or target.startswith(point.rstrip("/") + "/")) \
                and len(point) > len(best):
            best, fstype = point, kind
    return fstype.startswith("fuse") or fstype in _NETWORK_FS


def _mounts() -> list[tuple[str, str]]:
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 4 and right:
                point = fields[4].replace("\\040", " ")
                out.append((point, right.split()[0]))
    return out
