"""The state folder is input: what is read from it is checked before any file system call.

The state folder is shared with other machines and can be edited by hand, by a bug, or by
a hostile neighbour.  Nothing read from it may steer a write, a move or a delete outside
the folders the crawl owns, or stop the crawl:

* names read from files (segment names in ``url-index.segments.json``, link-frontier intent
  ids) must have exactly the shape this crawler writes: no ``/``, no ``..``, no absolute
  path can pass;
* the folders the crawl writes in are real folders, not symlinks (``fsutil.real_dir``);
* a file that fails is moved into ``quarantine/`` with one log line, never followed and
  never silently dropped (a person can look at it).

Stored markdown paths (``file_path``) are checked against the output layout by
``convert.output.OutputLayout.owned_path``: only the layout knows what a URL's file is.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

from sitemap_crawler.protocol.fsutil import real_dir

log = logging.getLogger(__name__)

QUARANTINE = "quarantine"
# <8-digit sequence>-<writer id>[-<nonce>].jsonl, as index._write_segment names them
SEGMENT_NAME_RE = re.compile(r"^\d{8}-[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.jsonl$")
# L<yyyymmdd>T<hhmmss><6 hex>, as frontier.Frontier.fold makes them
INTENT_ID_RE = re.compile(r"^L\d{8}T\d{6}[0-9a-f]{6}$")


def segment_name_ok(name: Any) -> bool:
    """A segment name as index.py writes them, so ``url-index.d/<name>`` stays inside."""
    return isinstance(name, str) and bool(SEGMENT_NAME_RE.match(name)) and ".." not in name


def intent_problem(data: Any, file_name: str) -> str | None:
    """Why a link-frontier intent cannot be replayed, or None if it can: its id names the
    tickets it writes and the file it deletes, and every URL must be a record."""
    if not isinstance(data, dict):
        return "not a JSON object"
    iid = data.get("id")
    if not isinstance(iid, str) or not INTENT_ID_RE.match(iid):
        return f"bad id {str(iid)[:80]!r}"
    if file_name != f"intent-{iid}.json":
        return "its id is not its file name"
    urls = data.get("urls")
    if not isinstance(urls, list):
        return "no list of URLs"
    for u in urls:
        if not (isinstance(u, dict) and isinstance(u.get("url"), str)
                and u["url"].startswith(("http://", "https://"))
                and isinstance(u.get("depth"), int) and not isinstance(u["depth"], bool)
                and u["depth"] >= 0 and isinstance(u.get("found_on", ""), str)):
            return f"a bad URL record {str(u)[:120]}"
    if not isinstance(data.get("created_at", ""), str):
        return "bad created_at"
    return None


def quarantine(state_root: Path, path: Path, why: str) -> Path | None:
    """Move ``path`` (a file of the state folder that failed a check) into
    ``<state>/quarantine/``, with one log line; None if it was gone already."""
    qdir = real_dir(state_root / QUARANTINE, state_root / QUARANTINE)
    aside = qdir / f"{path.name}.{os.getpid()}.{secrets.token_hex(3)}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    log.error("%s: %s; moved to %s", path, why, aside)
    return aside
