"""httpx and httpcore without the optional extras that a synchronous client never runs.

When they happen to be installed, ``import httpx`` also imports its command line (click,
pygments, rich) and ``import httpcore`` imports trio for its async backend: about 8 MiB of
the 64 MiB a prepare of a million URLs may use (issue 22), for code no request of ours
runs.  Both packages treat these as optional and carry on without them.
:func:`import_http` imports the two while those extras that are not imported yet are
marked unimportable (``sys.modules[name] = None``, the import system's documented way),
then clears the marks, so a later ``import rich`` works as usual.  It does so only while
the process has a single thread, so that no other import can run into a mark; the command
line calls it before it imports a command that needs httpx.
"""

from __future__ import annotations

import sys
import threading

EXTRAS = ("click", "pygments", "rich", "trio")  # httpx's CLI; httpcore's trio backend


def import_http() -> bool:
    """Import httpx and httpcore without :data:`EXTRAS`; False if they were imported
    already or another thread runs (then nothing is done), or if a version of them needs
    an extra after all (then they are imported with it, as without this function)."""
    if "httpx" in sys.modules or "httpcore" in sys.modules or threading.active_count() > 1:
        return False
    marked = [name for name in EXTRAS if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import httpcore
        import httpx
    except ImportError:  # a version that needs one of them after all: imported as usual
        lean = False
    else:
        lean = True
    finally:
        for name in marked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    if not lean:
        import httpcore  # noqa: F401
        import httpx  # noqa: F401
    return lean
