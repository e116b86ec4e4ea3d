"""The frontier of a link-following crawl: links found by any worker on any machine become
tickets, each URL exactly once, with no database and no coordinator.

Design (written before the code; the invariants are F1-F5):

* **Who finds links.**  A worker that fetched an HTML page at depth ``d < max_depth`` writes
  the page's in-scope links (discover/links.py) into the page's record in its own journal
  (``links``, ``depth``).  Nothing else is shared at that moment: a worker never decides
  alone that a link is new, since another machine may have found it a millisecond earlier.
* **Who turns links into tickets (F1).**  Only the holder of the url-index lock (a rename
  token, exclusive on every share; protocol/index.py) does, while it folds the journals into
  url-index.json.  One holder at a time means one place that decides what is new: a link is
  new when its dedupe key (``normalize_url``) is neither in the index nor earlier in this
  fold.  New URLs enter the index at once as ``outcome: queued`` with their ``depth`` and
  ``found_on``, so the next fold, on any machine, sees them as known.
* **Crash safety (F2, write-ahead intent).**  The fold writes, in this order: an intent file
  ``frontier/intent-<id>.json`` naming the new URLs (atomic), the index with the queued
  entries (atomic), the tickets ``<id>-<k>`` for the intent's chunks, then deletes the
  intent.  A crash anywhere leaves either nothing (the journals are still there and the next
  fold finds the same links again) or an intent, which the next fold replays first: its
  URLs are marked queued and each chunk's ticket is written unless a ticket of that id
  already exists in any state (only the lock holder writes frontier tickets, so the check
  cannot race).  So a kill -9 loses no discovered link and tickets none twice.
* **Lagging listings (F2b).**  Replay finds intents, and a replayed chunk's ticket, by
  listing folders; on sshfs (default cache) a new name shows in another mount's listing
  only after 18-20 s (../shared/netfs/README.md).  Neither lag loses a link.  An intent is
  deleted only after its tickets are written, and every ``work``, ``prepare`` and ``crawl``
  folds (so replays) first and last: an intent a listing does not show yet is replayed by a
  later fold, at worst by the next command.  A fold that follows a lock broken from another
  machine comes at least ``heartbeat_timeout`` after the dead holder last touched it (kept
  above the lag, as index.py J2 requires), when its intent shows.  A ticket a listing does
  not show yet is written again: its URLs are fetched twice (T6), never lost.
* **Termination (F3).**  A worker with nothing to claim folds the journals (if any grew since
  it last looked) before it decides there is no work (and one that finished a ticket folds
  when at most one ticket is left pending, so the next wave is ready before the queue runs
  dry); it stops only when no ticket is
  pending or claimed after such a fold.  A worker that completed a ticket folds before it
  stops, so the links of its last page are never left behind; if it is killed first, the
  next ``work``/``prepare``/``crawl`` folds them.
* **Depth and caps (F4).**  A link's depth is its page's depth + 1; pages at ``max_depth``
  record no links.  Depth is the shortest path found: workers on many machines find links in
  no set order, so a URL first queued at depth 3 may be found at depth 2 later; the fold then
  lowers its depth in the index (written with the fold), and :func:`index.apply` keeps the
  smaller depth when a record carries its ticket's older one.  (A page ticketed deeper than it
  is may still record no links at ``max_depth``.)  The frontier adds no URL once the index
  holds ``max_urls_per_site`` entries.
* **Re-crawls (F5).**  Known pages are revalidated with conditional GETs through prepare (the
  index remembers each URL's depth); a 304 has no body and so no links, which is right: an
  unchanged page links to what was already found.  New pages are found on changed pages.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from sitemap_crawler.protocol.fsutil import (
    TMP_PREFIX,
    atomic_write,
    read_bytes,
    real_dir,
    sync_filesystem,
)
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.tickets import HOST_MARK, TicketQueue, by_host
from sitemap_crawler.protocol.untrusted import QUARANTINE, intent_problem, quarantine
from sitemap_crawler.timestamps import utcnow

QUEUED = "queued"  # the outcome of an index entry whose URL has a ticket but no result yet


class Frontier:
    """Folds the links of journal records into tickets; used under the index lock only."""

    def __init__(self, state: StateDir, site: str, *, cap: int, ticket_size: int,
                 key: Callable[[str], str]) -> None:
        self.state = state
        self.site = site
        self.cap = cap
        self.ticket_size = ticket_size
        self.key = key
        self.dir = state.root / "frontier"
        self.added = 0
        self.over_cap = 0
        self.shallower: list[str] = []  # known URLs the last fold found a shorter path to

    # -- F2: replay ---------------------------------------------------------------------------
    def replay(self, idx: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The intents a killed fold left, their URLs marked queued in ``idx``; the caller
        writes the index, then calls :meth:`commit` with ``replay=True`` for each."""
        out = []
        for path in self._intents():
            intent = _load(path)
            if intent is None:  # gone meanwhile
                continue
            why = intent_problem(intent, path.name)
            if why is not None:  # its id would name tickets and files anywhere
                quarantine(self.state.root, path, f"not a link-frontier intent ({why})")
                continue
            self._mark(idx, intent["urls"])
            out.append(intent)
        return out

    # -- F1/F4: fold ---------------------------------------------------------------------------
    def fold(self, idx: dict[str, dict[str, Any]], records: Iterable[dict[str, Any]],
             known: set[str] | None = None) -> dict[str, Any] | None:
        """New URLs among the records' links, marked queued in ``idx``; their intent is
        written and returned (the caller writes the index, then calls :meth:`commit`).
        ``known``: the keys of every URL in ``idx``, if the caller keeps them between folds
        (protocol/index.py); it is updated in place."""
        if known is None:
            known = {self.key(u) for u in idx}
        total = len(idx)
        new: list[dict[str, Any]] = []
        self.shallower = []
        for rec in records:
            here = (idx.get(rec["url"]) or {}).get("depth")  # F4: maybe lowered since ticketed
            depth = min(int(rec.get("depth") or 0), int(here) if here is not None
                        else 1 << 30) + 1
            for link in rec.get("links") or ():
                k = self.key(link)
                if k in known:
                    old = idx.get(link)
                    if old is not None and old.get("depth") is not None \
                            and int(old["depth"]) > depth:
                        old["depth"] = depth  # a shorter path to a known URL (F4)
                        self.shallower.append(link)
                    continue
                known.add(k)
                if self.cap and total >= self.cap:
                    self.over_cap += 1
                    continue
                total += 1
                new.append({"url": link, "depth": depth, "found_on": rec["url"]})
        if not new:
            return None
        intent = {"id": time.strftime("L%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(3),
                  "site": self.site, "created_at": utcnow(), "urls": new}
        real_dir(self.dir, self.state.root / QUARANTINE)
        atomic_write(self.dir / f"intent-{intent['id']}.json", orjson.dumps(intent))
        self._mark(idx, new)
        self.added += len(new)
        return intent

    def commit(self, intent: dict[str, Any], *, replay: bool = False) -> None:
        """After the index holding the queued entries is written: tickets, then no intent.
        A replayed intent writes only the tickets that do not exist yet in any state."""
        self._write_tickets(intent, replay=replay)
        (self.dir / f"intent-{intent['id']}.json").unlink(missing_ok=True)

    # -- helpers -----------------------------------------------------------------------------
    def _mark(self, idx: dict[str, dict[str, Any]], urls: list[dict[str, Any]]) -> None:
        now = utcnow()
        for u in urls:
            if u["url"] not in idx:
                idx[u["url"]] = {"outcome": QUEUED, "depth": u["depth"],
                                 "found_on": u["found_on"], "first_seen": now}

    def _write_tickets(self, intent: dict[str, Any], *, replay: bool) -> int:
        queue = TicketQueue(self.state, "frontier")
        existing: set[str] = set()
        if replay:
            for s in ("pending", "claimed", "completed", "failed"):
                existing |= {n.ticket_id for n in queue.names(s)}
        n = 0
        # One host per ticket (tickets.py T9); the split is a function of the intent alone,
        # so a replay names the same tickets.
        chunks = [(tag, group[i:i + self.ticket_size])
                  for tag, group in by_host(intent["urls"])
                  for i in range(0, len(group), self.ticket_size)]
        for k, (tag, part) in enumerate(chunks):
            tid = f"{intent['id']}-{k:05d}{HOST_MARK}{tag}"
            if tid in existing:
                continue
            chunk = [{"url": u["url"], "depth": u["depth"]} for u in part]
            queue.add({"ticket_id": tid, "site": self.site, "created_at": intent["created_at"],
                       "gen": 0, "urls": chunk, "size": len(chunk), "claimed_by": None,
                       "claimed_at": None, "completed_at": None,
                       "progress": {"total": len(chunk), "success": 0, "failed": 0,
                                    "skipped": 0}})
            n += 1
        if n:
            with contextlib.suppress(OSError):  # durability only: the intent still holds them
                sync_filesystem(queue.dirs["pending"])
        return n

    def _intents(self) -> list[Any]:
        if os.path.lexists(self.dir):  # a symlink would list (and quarantine) another folder
            real_dir(self.dir, self.state.root / QUARANTINE)
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []
        return [self.dir / n for n in names
                if n.startswith("intent-") and n.endswith(".json") and not n.startswith(TMP_PREFIX)]


def _load(path: Any) -> Any:
    """The intent's JSON (checked by the caller: a torn one is not ours, atomic_write never
    leaves one), or None if it is gone."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "not JSON"
