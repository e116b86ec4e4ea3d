"""A worker's C heap stays flat (commands/work.py ``bound_malloc``, issue 22).

glibc raises its mmap threshold when a large block is freed, and later blocks of that size
are then carved from the heap and kept there after they are freed: the workers of a
300,000-page crawl grew that way while Python's own memory stayed flat.  Each case runs in a
fresh interpreter, so the heap it measures is its own."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
                .split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
from sitemap_crawler.commands.work import bound_malloc
if sys.argv[1] == "bound":
    bound_malloc()
before = libc.mallinfo2().arena
big = bytearray(4 << 20)
del big  # a large block freed: glibc alone would now take blocks up to 4 MiB from the heap
held = [bytearray(1 << 20) for _ in range(3)]
del held
print(libc.mallinfo2().arena - before)  # heap bytes kept after everything was freed
"""


def kept(mode: str) -> int:
    r = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                       check=True)
    return int(r.stdout)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc 2.33+ only")
def test_freed_large_blocks_go_back_to_the_system():
    assert kept("default") >= 2 << 20  # what a worker kept before: 1 MiB blocks in the heap
    assert kept("bound") < 256 << 10
