"""Pages that are gone: remove (or move aside) their markdown and keep a tombstone.

A URL is gone when the server answers 404/410 (the worker handles that) or when it is no
longer in the site's sources.  The second is decided by prepare, and only after a discovery
that read every sitemap without error: a child sitemap that failed to load must never make
its pages look removed.  The tombstone (``removed: true`` with ``removed_at``) stays in
url-index.json, so a page that comes back is recognised as new again and counted.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from sitemap_crawler.convert.output import OutputLayout


def remove_output(layout: OutputLayout, file_path: str | None, mode: str) -> bool:
    """Apply ``on_removed`` (delete | move | keep) to one markdown file; True if it changed.

    ``file_path`` comes from url-index.json, so it goes through the same inside-base_dir
    check as every write (``OutputLayout.check_inside``).
    """
    if not file_path or mode == "keep":
        return False
    base_dir = layout.base_dir
    full = layout.check_inside(Path(file_path))
    if not full.exists():
        return False
    if mode == "delete":
        with contextlib.suppress(FileNotFoundError):
            full.unlink()
        return True
    dest = base_dir / ".removed" / file_path
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(full, dest)
    return True


def tombstone(entry: dict[str, Any], when: str, reason: str) -> None:
    entry["removed"] = True
    entry["removed_at"] = when
    entry["removed_reason"] = reason
