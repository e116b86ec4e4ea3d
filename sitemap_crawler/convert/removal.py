"""Pages that are gone: remove (or move aside) their markdown and keep a tombstone.

A URL is gone when the server answers 404/410 (the worker handles that) or when it is no
longer in the site's sources.  The second is decided by prepare, and only after a discovery
that read every sitemap without error: a child sitemap that failed to load must never make
its pages look removed.  The tombstone (``removed: true`` with ``removed_at``) stays in
url-index.json, so a page that comes back is recognised as new again and counted.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from typing import Any

from sitemap_crawler.convert.output import OutputLayout
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.protocol.fsutil import real_dir

log = logging.getLogger(__name__)

REMOVED_DIR = ".removed"
QUARANTINE_DIR = ".quarantine"  # what was found where .removed/ should be (a symlink)


def remove_output(layout: OutputLayout, url: str, file_path: str | None, mode: str) -> bool:
    """Apply ``on_removed`` (delete | move | keep) to ``url``'s markdown file; True if it
    changed.

    ``file_path`` comes from the url-index or a ticket, which are input: it is used only if
    it is the file the layout gives ``url`` (``OutputLayout.owned_path``), so no stored path
    can delete or move another page's file, a user's file, or anything outside.
    """
    if not file_path or mode == "keep":
        return False
    path = layout.owned_path(url, file_path)
    if path is None:
        log.warning("%s: its stored file %r is not this URL's file; nothing removed", url,
                    str(file_path)[:200], extra={"url": url})
        return False
    base_dir = layout.base_dir
    full = layout.check_inside(path)
    if not full.exists():
        return False
    if mode == "delete":
        with contextlib.suppress(FileNotFoundError):
            full.unlink()
        return True
    real_dir(base_dir / REMOVED_DIR, base_dir / QUARANTINE_DIR)  # a symlink would lead out
    dest = base_dir / REMOVED_DIR / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    target = dest.parent.resolve() / dest.name
    if not target.is_relative_to((base_dir / REMOVED_DIR).resolve()):
        raise CrawlError(f"refusing to move {path} outside {base_dir / REMOVED_DIR}")
    shutil.move(full, target)
    return True


# Validators of a page that was removed: its file is gone, so a 304 must not stand for it.
_STALE_WHEN_REMOVED = ("etag", "last_modified", "content_hash", "raw_hash")


def returning(prior: dict[str, Any]) -> dict[str, Any]:
    """A ticket's prior for a URL the index holds as removed that is listed again: fetched
    in full and written anew (its file was deleted or moved aside), marked so the worker
    lifts the tombstone."""
    out = {k: v for k, v in prior.items() if k not in _STALE_WHEN_REMOVED}
    out["removed"] = True
    return out


def revived(prior: dict[str, Any]) -> dict[str, Any]:
    """Index fields that lift the tombstone of a page that is back (written again)."""
    if not prior.get("removed"):
        return {}
    return {"removed": None, "removed_at": None, "removed_reason": None}


def tombstone(entry: dict[str, Any], when: str, reason: str) -> None:
    entry["removed"] = True
    entry["removed_at"] = when
    entry["removed_reason"] = reason
