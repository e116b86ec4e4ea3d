"""New files written by a helper process, so that creating them overlaps the caller's work.

prepare writes 10,000 ticket files for a million URLs, and creating a file is kernel work
(an inode, two directory entries, a rename) that a thread of the same process cannot take
off the parser: the thread needs the GIL back after every system call, and the parser
holds it.  A :class:`Spool` is a small interpreter of its own (``python -I -S``, the
standard library only, ~10 MB) fed through a pipe: the caller pays one ``write`` to the
pipe per file, the helper creates the file on the other core (tickets.py T15).

Each file is written as :func:`fsutil.write_new_file` writes it: under a temporary name in
its folder and renamed into place, so a reader sees a whole file or none.  What the helper
guarantees, and how:

* It writes nothing after its parent is gone: the kernel kills it when the parent dies
  (``PR_SET_PDEATHSIG``, Linux), and before each file it checks that its parent is still
  its parent.  A message cut short by the parent's death is never written.
* Its first error (a full disk, a folder that cannot be made) ends it: the message says
  the errno, the file and the reason, and :meth:`Spool.write` or :meth:`Spool.close`
  raises it in the caller as the same ``OSError``, as the caller's own write would have.
* A folder that vanishes under it (ENOENT, ESTALE) is made again and the file written once
  more, up to three times, then written into ``fallback`` (tickets.py T14).
* SIGINT and SIGTERM are the parent's: the helper ignores them, and ends when the pipe
  closes after it has written every file it was given (:meth:`Spool.close` waits for that).
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import subprocess
import sys

_HEAD = struct.Struct("<IIII")  # folder, fallback folder, name, data: their lengths
_PIPE_SIZE = 1 << 20  # the pipe's buffer: a burst of tickets does not wait for the helper
_F_SETPIPE_SZ = 1031  # fcntl command (Linux)

_HELPER = r"""
import ctypes, errno, os, signal, struct, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
parent = int(sys.argv[1])
try:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent
except (AttributeError, OSError):
    pass
if os.getppid() != parent:
    os._exit(3)
os.write(1, b"+")  # ready
head = struct.Struct("<IIII")
src = open(0, "rb", buffering=1 << 20)
tag = "%d.%s" % (os.getpid(), os.urandom(4).hex())
flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
count = 0

def put(folder, name, data):
    global count
    count += 1
    tmp = "%s/.tmp-%s.%s.%d" % (folder, name, tag, count)
    fd = os.open(tmp, flags, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, folder + "/" + name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

def write(folder, fallback, name, data):
    for _ in range(3):
        try:
            return put(folder, name, data)
        except OSError as e:
            if not fallback or e.errno not in (errno.ENOENT, errno.ESTALE):
                raise
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
    put(fallback, name, data)

try:
    while True:
        h = src.read(head.size)
        if not h:
            break
        if len(h) != head.size:
            os._exit(3)
        sizes = head.unpack(h)
        parts = [src.read(n) for n in sizes]
        if any(len(p) != n for p, n in zip(parts, sizes)) or os.getppid() != parent:
            os._exit(3)  # cut short: the parent died mid-message, or is gone
        folder, fallback, name = (p.decode() for p in parts[:3])
        write(folder, fallback, name, parts[3])
except OSError as e:
    os.write(1, ("%s\t%s\t%s" % (e.errno or 0, e.filename or "", e.strerror or e)).encode())
    os._exit(1)
"""


class Spool:
    """A helper process that writes new files for this one (module docstring)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _HELPER, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdin.fileno()
        with contextlib.suppress(OSError, AttributeError):
            import fcntl

            fcntl.fcntl(self.fd, _F_SETPIPE_SZ, _PIPE_SIZE)
        self.closed = False
        if self.proc.stdout.read(1) != b"+":  # an interpreter that cannot run the helper
            self.close(quiet=True)  # (an embedding program's sys.executable): the caller
            raise OSError(errno.ENOEXEC, "the file writer did not start")  # writes itself

    def write(self, folder: str, name: str, data: bytes, fallback: str = "") -> None:
        """Queue ``folder/name`` with ``data``; it is in place once :meth:`close` returns.
        ``fallback``: where it goes if ``folder`` keeps vanishing."""
        parts = [folder.encode(), fallback.encode(), name.encode()]
        msg = memoryview(b"".join([_HEAD.pack(*map(len, parts), len(data)), *parts, data]))
        try:
            while msg:
                msg = msg[os.write(self.fd, msg):]
        except BrokenPipeError:
            self.close()  # raises the helper's error
            raise

    def close(self, quiet: bool = False) -> None:
        """Wait until every file given is written; raise the helper's error (not with
        ``quiet``, for a caller already failing)."""
        if self.closed:
            return
        self.closed = True
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        said = self.proc.stdout.read().decode(errors="replace")
        self.proc.stdout.close()
        rc = self.proc.wait()
        if rc == 0 or quiet:
            return
        no, _, rest = said.partition("\t")
        filename, _, reason = rest.partition("\t")
        if no.isdigit():
            raise OSError(int(no), reason or os.strerror(int(no)), filename or None)
        raise OSError(errno.EIO, f"the file writer ended with status {rc}")
