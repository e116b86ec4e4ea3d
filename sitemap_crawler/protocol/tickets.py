"""The work queue: JSON tickets that change hands by rename, like Maildir's tmp→new→cur.

File names (every name is unique for all time, so no *move* between states ever targets an
existing name; only ``[A-Za-z0-9._-]`` are used, as SMB clients escape others in listings)::

    pending/<ticket>.<gen>.json                     waiting; gen grows each time it is handed back
    claimed/<ticket>.<gen>_<worker>.json            held by <worker>
    completed/<ticket>.<gen>_<worker>_<stamp>.json  every URL reached a final state at <stamp>
                                                    (``YYYYmmddTHHMMSSZ``, the finisher's UTC)
    completed/<ticket>.<gen>_<worker>.json          being finished (T3), or an older version's
    failed/<ticket>.<gen>_<worker>.json             some URL used up its retries (``resume``)

Invariants (see ../shared/netfs/README.md for why each primitive was chosen):

* T1 (claim). A worker claims ``pending/X.g.json`` by renaming it to
  ``claimed/X.g_<its id>.json`` and then checking that this destination exists: SMB can report
  success to a rename loser, but only the winner's unique destination exists.  ENOENT, EBUSY,
  EACCES, EPERM mean "lost the race".  Ticket files are never kept open.
* T2 (ownership). A worker owns a ticket exactly while its claimed file exists under its own
  name.  Before it writes a result or completes, it checks that; a worker that was paused or
  cut off and lost its ticket drops it without writing anything else.
* T3 (complete). ``claimed/X_w`` → ``completed/X_w`` (or ``failed/``) by rename: if the rename
  fails, somebody took the ticket back and the worker drops it.  Only then is the final
  progress written: into completed/ as a *new* file ``X_w_<stamp>`` (``atomic_write`` onto a
  name nobody else ever uses, so SMB's non-atomic replace is not involved), after which the
  bare ``completed/X_w`` is unlinked; in failed/ the file is rewritten in place (the one
  rename onto an existing name in the queue, retried on SMB).  Nobody else writes either
  file; a crash between the two steps leaves both names, which readers count once (by
  ticket id) and T7 tidies.  Readers take a moment's absence on SMB for "being finished".
* T4 (hand back). With progress ``done`` (url → final outcome), a ticket is written as a *new*
  file ``pending/X.<g+1>.json`` and the claimed file is removed.  A crash between the two steps
  leaves two copies: the work is done twice (results are idempotent), never lost.
* T5 (reclaim). Tickets of a dead worker (heartbeat.py decides) are taken by renaming
  ``claimed/X_dead`` to ``claimed/X_me`` (one reclaimer wins, as in T1) and handed back as in
  T4 with their progress, which is read from the dead worker's journal *before* the rename:
  while ``claimed/X_dead`` exists its journal is kept (index.py J2), so the progress is
  complete.  What stays open: a reclaimer killed between its rename and its hand back
  leaves the ticket under its own id with that progress only in its memory.
* T5b (orphans). A ticket claimed under a worker's own id that the worker does not hold (a
  rename that happened on the server but answered an error) is handed back by that worker's
  own reclaim, so it never waits for itself.
* T7 (retention, by name alone). ``completed/`` is terminal: nothing renames a ticket out of
  it.  prepare deletes completed tickets whose name's ``<stamp>`` (the finisher's clock, as
  ``completed_at`` always was) is older than ``crawl_state.keep_completed``, *without opening
  them*: a prepare costs one listing of completed/, not one read per completed ticket.  A
  name without a stamp is never deleted for its age unless its content says it is finished:
  it is a ticket being finished right now (T3's final file is not written yet) or one whose
  finisher died in between (kept, as before), or one finished by an older version
  (``completed_at`` in the content): that one is read once and renamed to its stamped name
  (a new unique name inside completed/), or deleted if it is already old.  A bare name whose
  stamped twin exists is a leftover of T3's last step and is deleted.  So a ticket being
  finished is never deleted whatever the clocks say; a clock skew only moves *when* a
  finished one goes.  url-index.json holds each URL's outcome, so nothing is lost with them.
  ``failed/`` is never pruned: it waits for ``resume``.
* T8 (durability). Every move between states fsyncs both directories (fsutil D; a share's
  are not: the server did the rename when it answered) before the mover acts on it;
  tickets added by prepare are made durable by one ``syncfs`` at its end (fsutil).
* T9 (keyed by host).  A ticket holds the URLs of one host, and its id ends in
  ``-h-<host tag>`` (:func:`host_tag`), so a worker can choose, from a listing alone, a ticket
  of a host it is not busy with (commands/dispatch.py).  The tag is a hint for scheduling,
  never trusted for politeness: the gate is keyed by each URL's own host.  Ids without a tag
  (an older version's, or mixed hosts) are claimed like any other.
* T10 (claim cost).  A queue keeps its listing of ``pending/`` between claims, grouped by
  host tag (:class:`PendingView`), so a claim costs a rename, not a listing: at 100,000
  pending tickets a listing costs most of a second, and listing for every claim made draining
  the queue quadratic.  The view is listed again when it runs empty, when half of it has been
  used, when a claim from it found every candidate gone, or when it is older than
  :data:`RELIST_FACTOR` times what the last listing took (at least :data:`RELIST_MIN` s),
  so listings take a bounded share of the time whatever the queue's size.  A stale view is
  harmless: a name somebody else took fails its rename (T1 decides, never the listing), and a
  name the view has not seen yet is seen at the next listing, the same as with a share's
  lagging listings (../shared/netfs/README.md: up to 20 s on sshfs).  What this queue writes
  into ``pending/`` itself (hand back, reclaim, add) enters its view at once (but for
  prepare's adds: it never claims).
* T11 (full rounds).  A ticket written by a full round the user asked for (``prepare
  --full``, ``crawl_mode: full``, ``crawl_state.incremental: false``) carries ``"full":
  true``: its URLs are fetched without ``If-None-Match``/``If-Modified-Since``, so their
  markdown is made again.  The field travels with the ticket (hand back, reclaim, resume
  copy it), so a full round interrupted and finished later stays full.
* T6 (at-least-once). Every URL of a ticket is processed at least once; results (markdown
  files, journal records) are idempotent, so doing one twice is harmless.
* T12 (names are input).  A listed name is a ticket's only if it is exactly a name the queue
  makes (``[A-Za-z0-9._-]``, and what :meth:`TicketName.file` gives back for it): nothing
  is decoded, so no name can lead a move out of its folder.  A worker moves any other
  ``*.json`` in pending/ to quarantine/ with one log line before it claims.
* T13 (sharded pending/).  Once ``pending/`` itself holds :data:`SHARD_AT` tickets (counted
  by a queue at its first add, then by what it adds), a queue writes each new ticket into a
  bucket folder ``pending/s<hh>/`` (``hh``: two hex digits,
  :func:`bucket_of` the ticket id, :data:`BUCKETS` of them), and a ticket handed back
  goes to the folder it was claimed from.  So no folder holds more than about
  ``SHARD_AT + N / BUCKETS`` tickets: on SMB a rename out of a folder costs more the more
  it holds (9.5 ms at 10,000 against 3-6 ms in a small one), and a claim is that rename.
  Claiming is T1 unchanged, from ``pending/s<hh>/X.g.json`` or ``pending/X.g.json`` alike
  (one rename to the unique ``claimed/X.g_<worker>.json``); the view (T10) lists pending/
  and each bucket in it, so a state folder written before buckets (tickets in pending/
  itself) is worked as it was, and small queues never make a bucket.  Only a name that is
  exactly ``s<hh>`` and not a symlink is a bucket (T12: no listed name leads a move out of
  pending/).  A bucket, once made, stays (T14), and a bucket listing that fails (not a
  folder, or ESTALE on sshfs) is skipped; a writer that finds its bucket gone (removed by
  hand) makes it again, and after :data:`BUCKET_TRIES` tries writes into pending/ itself.
* T14 (a drained queue is cheap to ask).  ``pending_at_most`` (asked after every ticket by
  a link-following worker, and every second for a site a process has not opened) does not
  list a bucket again that it listed empty less than :data:`EMPTY_TTL` seconds ago, unless
  this queue wrote into it since: a drained big queue costs one listing of ``pending/``
  per call and 64 more every few seconds, not 65 a call.  It may so miss, for at most
  that long, a ticket another process put into a bucket found empty: what a share's
  lagging listing already does (up to 20 s on sshfs); nothing is ever removed or skipped
  for good, and a new prepare's tickets go into ``pending/`` itself first (T13), where
  every call looks.  ``has_work`` (a process's decision to end) lists everything: claimed/
  first (a drained queue whose last tickets others hold is one listing), then pending/
  and claimed/ again, so a ticket claimed or handed back while it looked is seen in one of
  the three.  Removing empty buckets was tried twice and is not done: a claim's rename out
  of a bucket another mount had just removed answered EIO on smbnetfs (and so did the
  look at its destination after it), and sshfs's other mount got ESTALE listing it.
"""

from __future__ import annotations

import calendar
import contextlib
import dataclasses
import errno
import logging
import os
import random
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.protocol.fsutil import (
    TMP_PREFIX,
    atomic_write,
    move_exclusive,
    read_bytes,
    unlink_quiet,
    write_new_file,
)
from sitemap_crawler.protocol.hostgate import host_key
from sitemap_crawler.protocol.state import StateDir
from sitemap_crawler.protocol.untrusted import quarantine
from sitemap_crawler.timestamps import parse_ts, utcnow

log = logging.getLogger(__name__)


def claimed_owners(state: StateDir) -> set[str]:
    """Worker ids under which some ticket is claimed right now (index.py J2, heartbeat H7)."""
    try:
        entries = os.listdir(state.ticket_dir("claimed"))
    except FileNotFoundError:
        return set()
    return {n.owner for n in (TicketName.parse(e) for e in entries) if n and n.owner}

HOST_MARK = "-h-"
_NAME_RE = re.compile(r"[A-Za-z0-9._-]+\.json")  # every name the queue makes
_TAG_RE = re.compile(r"[^a-z0-9.-]")


def host_tag(host: str) -> str:
    """A host key (``host`` or ``host:port``) as it ends a ticket id (T9): only
    ``[a-z0-9.-]``, as ticket names allow."""
    return _TAG_RE.sub("-", host.lower())[:100]


def by_host(entries: list[dict[str, Any]], hosts: set[str] | None = None,
            ) -> list[tuple[str, list[dict[str, Any]]]]:
    """``entries`` (dicts with a ``url``) split by host tag, in order of first appearance:
    one ticket per group (T9).  ``hosts``: gets the host key of every entry (the hosts a
    prepare queued, commands/scope.py).  A batch whose URLs all start with the first one's
    head and a ``/`` (the common case) is one group, found without a loop per URL."""
    if not entries:
        return []
    head = _head(entries[0]["url"])
    prefix = head + "/"
    if all(e["url"].startswith(prefix) for e in entries):  # the same head: the same host
        key = host_key(head)
        if hosts is not None:
            hosts.add(key)
        return [(host_tag(key), list(entries))]
    groups: dict[str, list[dict[str, Any]]] = {}
    tags: dict[str, str] = {}  # by the URL's head up to its path: one urlsplit per host
    for e in entries:
        head = _head(e["url"])
        if (tag := tags.get(head)) is None:
            key = host_key(head)
            if hosts is not None:
                hosts.add(key)
            tag = tags[head] = host_tag(key)
        groups.setdefault(tag, []).append(e)
    return list(groups.items())


def _head(url: str) -> str:
    """The URL up to its path: it holds the whole netloc (which ends at ``/?#``)."""
    start = url.find("//")
    end = url.find("/", start + 2) if start >= 0 else -1
    return url[:end] if end > 0 else url


def ticket_host(ticket_id: str) -> str | None:
    """The host tag of a ticket id (T9), or None when it has none."""
    i = ticket_id.find(HOST_MARK)
    return ticket_id[i + len(HOST_MARK):] or None if i >= 0 else None


STAMP_FORMAT = "%Y%m%dT%H%M%SZ"  # completion time in a completed ticket's name (T7)


def stamp_of(ts: str) -> str:
    """``2026-11-23T13:47:59Z`` -> ``20261123T134759Z``: only [0-9TZ], sorts like the time."""
    return ts.replace("-", "").replace(":", "")


def stamp_seconds(stamp: str) -> float | None:
    """Seconds since the epoch of a name's stamp, or None if it is not one."""
    try:
        return float(calendar.timegm(time.strptime(stamp, STAMP_FORMAT)))
    except ValueError:
        return None


@dataclass(frozen=True)
class TicketName:
    ticket_id: str
    gen: int
    owner: str | None
    done_at: str | None = None  # completed/ only: the finisher's stamp (T3, T7)
    bucket: str | None = field(default=None, compare=False)  # pending/ only: its bucket (T13)

    @classmethod
    def parse(cls, name: str) -> TicketName | None:
        if not _NAME_RE.fullmatch(name) or name.startswith(TMP_PREFIX):
            return None
        # Our names use only [A-Za-z0-9._-] (smbnetfs %-escapes others in listings, so a
        # name with '%' is not ours: never decoded); '_' separates the owner and then the
        # stamp (neither ticket ids nor worker ids contain '_').
        stem = name[:-5]
        base, _, rest = stem.partition("_")
        owner, _, stamp = rest.partition("_")
        tid, _, gen = base.rpartition(".")
        if not tid or not gen.isdigit():
            return None
        if stamp and (not owner or stamp_seconds(stamp) is None):
            owner, stamp = rest, ""  # not a stamp: an owner with '_' (never ours) stays whole
        got = cls(tid, int(gen), owner or None, stamp or None)
        # only a name that is exactly what file() makes can be moved by it ("t.007", "t.0_")
        return got if got.filename == name else None

    def file(self, owner: str | None = None, gen: int | None = None,
             done_at: str | None = None) -> str:
        """The file name for this ticket with another owner/gen/stamp (never the own stamp:
        a name derived for a move is always stampless unless asked)."""
        g = self.gen if gen is None else gen
        if not owner:
            return f"{self.ticket_id}.{g}.json"
        tail = f"_{done_at}" if done_at else ""
        return f"{self.ticket_id}.{g}_{owner}{tail}.json"

    @property
    def filename(self) -> str:
        """The exact name this ticket was listed under."""
        return self.file(self.owner, done_at=self.done_at)


@dataclass
class Claimed:
    """A ticket this worker holds (T2): ``path`` is its claimed file."""

    name: TicketName
    path: Path
    data: dict[str, Any]
    done: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    bucket: str | None = None  # the pending/ bucket it was claimed from: it goes back there (T13)

    @property
    def ticket_id(self) -> str:
        return self.name.ticket_id

    @property
    def urls(self) -> list[dict[str, Any]]:
        return self.data.get("urls", [])

    def remaining(self) -> Iterator[dict[str, Any]]:
        for u in self.urls:
            if u["url"] not in self.done:
                yield u


class TicketQueue:
    def __init__(self, state: StateDir, worker_id: str) -> None:
        self.state = state
        self.worker_id = worker_id
        self.dirs = {s: state.ticket_dir(s) for s in ("pending", "claimed", "completed", "failed")}
        self.held: set[str] = set()  # names of the claimed files this queue holds (T5b)
        self.view = PendingView(self.dirs["pending"])
        self.bad: set[str] = set()  # pending/ entries that are not ticket names (T12)
        self._refused: set[str] = set()  # of those, ones quarantine/ would not take
        self.added: int | None = None  # tickets in pending/ itself as add() counts (T13)
        self._made: set[str] = set()  # buckets this queue has made (or found) already
        self._empty: dict[str, float] = {}  # buckets pending_at_most listed empty, when (T14)

    # -- listing -----------------------------------------------------------------------------
    def names(self, state: str) -> list[TicketName]:
        """Every ticket name in ``state`` (pending/: with its buckets' ones, T13), by id."""
        if state == "pending":
            out, bad = list_pending(self.dirs["pending"])
            self.bad |= bad
        else:
            try:
                entries = os.listdir(self.dirs[state])
            except FileNotFoundError:
                return []
            out = [n for n in map(TicketName.parse, entries) if n is not None]
        out.sort(key=lambda n: (n.ticket_id, n.gen))
        return out

    def path(self, state: str, name: TicketName) -> Path:
        """Where a listed name is (a pending/ one may be in a bucket, T13)."""
        d = self.dirs[state]
        return (d / name.bucket if name.bucket else d) / name.filename

    def quarantine_bad_names(self) -> None:
        """Move the pending files whose names are not ticket names (hand-made, or hostile:
        ``..%2F..``) to quarantine/ with one log line each: never claimed by a name that
        would lead elsewhere, never retried for ever."""
        for e in sorted(self.bad - self._refused):
            try:  # e is "name" or "s<hh>/name" (T13)
                quarantine(self.state.root, self.dirs["pending"] / e, "not a ticket name")
            except OSError as err:  # left where it is (never claimed), said once
                self._refused.add(e)
                log.error("%s: not a ticket name; cannot move it to quarantine/: %s",
                          self.dirs["pending"] / e, err.strerror or err)
        self.bad.clear()

    def counts(self) -> dict[str, int]:
        """Tickets per state, each ticket counted once even if a crash left two copies."""
        counts: dict[str, int] = {}
        seen: set[str] = set()
        for s in ("completed", "claimed", "failed", "pending"):
            ids = {n.ticket_id for n in self.names(s)} - seen
            counts[s] = len(ids)
            seen |= ids
        return counts

    # -- creation ----------------------------------------------------------------------------
    def add(self, ticket: dict[str, Any], *, to_view: bool = True) -> Path:
        """Write a new pending ticket (gen 0); prepare makes them durable at its end (T8).
        Past the first :data:`SHARD_AT`, into its bucket (T13).  ``to_view=False``: for a
        writer that never claims (prepare), the ticket stays out of this queue's view
        (T10), which would hold 10,000 names for a million URLs and insert each in front."""
        tid = str(ticket["ticket_id"])
        if self.added is None:  # what others left there counts too (each fold is a new queue)
            self.added = _count_upto(self.dirs["pending"], SHARD_AT)
        bucket = bucket_of(tid) if self.added >= SHARD_AT else None
        self.added += 1
        name = f"{tid}.0.json"
        data = orjson.dumps(ticket)
        path, bucket = self._in_bucket(bucket, lambda d: write_new_file(str(d), name, data))
        if to_view:
            self.view.add(TicketName(tid, 0, None, bucket=bucket))
        return Path(path)

    def _in_bucket(self, bucket: str | None, write: Callable[[Path], Any],
                   ) -> tuple[Any, str | None]:
        """``write(folder)`` into pending/ or its ``bucket``, made first if need be, and made
        again if it was removed meanwhile (T13); after :data:`BUCKET_TRIES`
        tries into pending/ itself.  Returns what ``write`` returned and the bucket used."""
        top = self.dirs["pending"]
        if bucket is None:
            return write(top), None
        self._empty.pop(bucket, None)  # T14: written into, so listed again
        d = top / bucket
        for attempt in range(BUCKET_TRIES):
            try:
                if attempt or bucket not in self._made:
                    d.mkdir(exist_ok=True)
                    self._made.add(bucket)
                return write(d), bucket
            except OSError as e:  # gone: removed between our mkdir and write (T13)
                if e.errno not in _GONE:
                    raise
        log.debug("pending/%s kept vanishing; ticket written into pending/ itself", bucket)
        return write(top), None

    # -- T1 ----------------------------------------------------------------------------------
    def claim(self, rank: Callable[[TicketName], int | None] | None = None) -> Claimed | None:
        """T1 on a pending ticket; ``rank`` (lower is better, None: not now) orders the
        choice, e.g. by the host in the ticket id (T9).  None if nothing wanted is pending."""
        view = self.view
        if view.stale():
            self._relist()
        got, tried = self._claim_from(view, rank)
        if got is None and tried and not view.fresh:
            # Every candidate was gone: others drained what this view saw; look again (T10).
            self._relist()
            got, _ = self._claim_from(view, rank)
        if got is None and not view.size and not view.fresh:
            self._relist()  # empty: new tickets may have come since the last listing
            got, _ = self._claim_from(view, rank)
        view.fresh = False
        return got

    def _relist(self) -> None:
        """List pending/ again (T10); what is not a ticket name goes to quarantine (T12)."""
        self.bad |= self.view.relist()
        self.quarantine_bad_names()

    def _claim_from(self, view: PendingView, rank: Callable[[TicketName], int | None] | None,
                    ) -> tuple[Claimed | None, int]:
        """Try up to 64 names of the best rank from the view; (ticket, names tried)."""
        tried = 0
        while tried < 64:
            name = view.pick(rank)
            if name is None:
                break
            tried += 1
            got = self._take(self.path("pending", name), name)
            if got is not None:
                return got, tried
        return None, tried

    def pending_at_most(self, n: int) -> bool:
        """True if ``pending/`` holds at most ``n`` tickets, read from the first entries of a
        listing only (a check made after every ticket must not cost a full listing)."""
        return _count_upto(self.dirs["pending"], n + 1, buckets=True, empty=self._empty) <= n

    def _take(self, src: Path, name: TicketName) -> Claimed | None:
        dst = self.dirs["claimed"] / name.file(self.worker_id)
        try:
            moved = move_exclusive(src, dst, durable=True)
        except FileNotFoundError:  # T13: a bucket removed by hand once this move emptied
            if name.bucket is None:  # it, before its fsync (dst's folder was synced first)
                raise
            moved = dst.exists()
        if not moved:
            return None
        return self._load_claimed(dst, name)

    def _load_claimed(self, dst: Path, name: TicketName) -> Claimed | None:
        self.held.add(dst.name)
        raw = read_bytes(dst)
        try:
            data = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("urls"), list):
            self._quarantine(dst)
            self.held.discard(dst.name)
            return None
        data["claimed_by"], data["claimed_at"] = self.worker_id, utcnow()
        c = Claimed(TicketName(name.ticket_id, name.gen, self.worker_id), dst, data,
                    bucket=name.bucket)
        c.done = dict(data.get("done") or {})
        return c

    def _quarantine(self, path: Path) -> None:
        """A ticket that cannot be read (torn by a power loss) goes aside, never silently away.

        If it cannot be moved aside the error is raised: left in claimed/, it would make
        every worker wait for it for ever."""
        bad = self.state.tickets / "corrupt"
        bad.mkdir(exist_ok=True)
        log.error("ticket %s cannot be read; moved to %s", path.name, bad)
        os.rename(path, bad / path.name)

    # -- T2 ----------------------------------------------------------------------------------
    def owned(self, c: Claimed) -> bool:
        return c.path.exists()

    # -- T3 ----------------------------------------------------------------------------------
    def finish(self, c: Claimed) -> str | None:
        """Move to completed/ (or failed/ if some URL failed); None if the ticket was lost."""
        state = "failed" if c.failures else "completed"
        dst = self.dirs[state] / c.path.name
        self.held.discard(c.path.name)
        if not move_exclusive(c.path, dst, durable=True):
            return None
        c.data.update(self._progress(c))
        c.data["completed_at"] = now = utcnow()
        if state == "failed":
            atomic_write(dst, orjson.dumps(c.data))
            return state
        # T3/T7: the final file gets a new name carrying the time, so retention never has to
        # open it; the bare name is "being finished" until this file is in place.
        final = dst.with_name(c.name.file(c.name.owner, done_at=stamp_of(now)))
        atomic_write(final, orjson.dumps(c.data))
        unlink_quiet(dst, busy_ok=True)  # if the share refuses now, T7 removes it later
        return state

    # -- T4 ----------------------------------------------------------------------------------
    def hand_back(self, c: Claimed) -> bool:
        """Return a held ticket to pending/ with its progress, for the next owner to continue."""
        if not self.owned(c):
            return False
        data = dict(c.data)
        data.update(self._progress(c))
        data["claimed_by"] = data["claimed_at"] = None
        data["gen"] = c.name.gen + 1
        name = c.name.file(owner=None, gen=c.name.gen + 1)

        def write(d: Path) -> None:
            if not (d / name).exists():
                atomic_write(d / name, orjson.dumps(data))

        _, bucket = self._in_bucket(c.bucket, write)  # T13: where it was claimed from
        self.view.add(TicketName(c.name.ticket_id, c.name.gen + 1, None, bucket=bucket))
        with contextlib.suppress(FileNotFoundError):
            c.path.unlink()
        self.held.discard(c.path.name)
        return True

    def _progress(self, c: Claimed) -> dict[str, Any]:
        total = len(c.urls)
        ok = sum(1 for v in c.done.values() if not v.startswith(("skipped", "permanent")))
        skipped = sum(1 for v in c.done.values() if v.startswith("skipped"))
        permanent = sum(1 for v in c.done.values() if v.startswith("permanent"))
        return {"done": c.done, "failures": c.failures,
                "progress": {"total": total, "success": ok, "skipped": skipped,
                             "failed": permanent + len(c.failures),
                             "remaining": total - len(c.done)}}

    # -- T5 ----------------------------------------------------------------------------------
    def reclaim(self, is_dead: Callable[[str], bool],
                progress_of: Callable[[str, str], dict[str, str]]) -> list[str]:
        """Hand back every ticket held by a dead worker; returns the dead workers' ids."""
        dead: set[str] = set()
        verdict: dict[str, bool] = {}
        for name in self.names("claimed"):
            owner = name.owner
            if owner is None:
                continue
            path = self.dirs["claimed"] / name.file(owner)
            if owner == self.worker_id:
                if path.name not in self.held:  # T5b: an orphan of a misreported rename
                    c = self._load_claimed(path, name)
                    if c is not None:
                        c.done.update(progress_of(owner, name.ticket_id))
                        self.hand_back(c)
                continue
            if owner not in verdict:
                verdict[owner] = is_dead(owner)
            if not verdict[owner]:
                continue
            done = progress_of(owner, name.ticket_id)  # T5: before the journal may go (J2)
            c = self._take(path, name)
            if c is None:
                continue
            c.done.update(done)
            self.hand_back(c)
            dead.add(owner)
        return sorted(dead)

    def resume_failed(self) -> int:
        """failed/ → pending/ (gen+1), keeping what finished and retrying only what failed."""
        n = 0
        for name in self.names("failed"):
            c = self._take(self.dirs["failed"] / name.file(name.owner), name)
            if c is None:
                continue
            c.failures = {}
            self.hand_back(c)
            n += 1
        return n

    # -- T7 ----------------------------------------------------------------------------------
    def prune_completed(self, max_age: float, now: float | None = None) -> int:
        """Delete completed tickets finished more than ``max_age`` seconds ago (T7).

        Decided from the names: a stamped ticket is never opened.  Only a bare name without a
        stamped twin is read (an older version's ticket, read once and then renamed to its
        stamped name; or one being finished, which is kept).  Returns tickets deleted."""
        cutoff = (time.time() if now is None else now) - max_age
        directory = self.dirs["completed"]
        names = self.names("completed")
        stamped = {(n.ticket_id, n.gen, n.owner) for n in names if n.done_at}
        n = 0
        for name in names:
            path = directory / name.filename
            if name.done_at is not None:
                finished = stamp_seconds(name.done_at)
                if finished is not None and finished < cutoff:
                    n += unlink_quiet(path, busy_ok=True)
                continue
            if (name.ticket_id, name.gen, name.owner) in stamped:
                unlink_quiet(path, busy_ok=True)  # T3's last step, left by a crash or EBUSY
                continue
            data = self.read("completed", name)
            at = data.get("completed_at") if data else None
            finished = parse_ts(at) if isinstance(at, str) else None
            if finished is None or name.owner is None:
                continue  # being finished right now, or its finisher died: kept
            if finished < cutoff:
                n += unlink_quiet(path, busy_ok=True)
            else:  # an older version's ticket: give it its stamp, so it is never read again
                stamp = time.strftime(STAMP_FORMAT, time.gmtime(finished))
                move_exclusive(path, directory / name.file(name.owner, done_at=stamp))
        return n

    def read(self, state: str, name: TicketName) -> dict[str, Any] | None:
        raw = read_bytes(self.path(state, name))
        try:
            data = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    def remaining_urls(self) -> int:
        """URLs not yet done in pending and claimed tickets (progress and ETA)."""
        n = 0
        for state in ("pending", "claimed"):
            for name in self.names(state):
                data = self.read(state, name)
                if data:
                    n += max(0, len(data.get("urls", [])) - len(data.get("done") or {}))
        return n

    def has_work(self) -> bool:
        """A ticket pending or claimed, from full listings (T14: claimed/ first, then
        pending/, then claimed/ again, so one moving between them meanwhile is seen)."""
        claimed = self.dirs["claimed"]
        return bool(_count_upto(claimed, 1)
                    or _count_upto(self.dirs["pending"], 1, buckets=True)
                    or _count_upto(claimed, 1))

    def pending_urls(self) -> Iterator[str]:
        """Every URL in pending, claimed or failed tickets (prepare's idempotence)."""
        for state in ("pending", "claimed", "failed"):
            for name in self.names(state):
                data = self.read(state, name)
                if data:
                    done = data.get("done") or {}
                    for u in data.get("urls", []):
                        if u.get("url") not in done:
                            yield u["url"]


SHARD_AT = 128  # tickets a queue writes into pending/ itself before it uses buckets (T13)
BUCKETS = 64  # bucket folders pending/s00 .. pending/s3f (T13)
_BUCKET_RE = re.compile(r"s[0-9a-f]{2}")
BUCKET_TRIES = 3  # a writer makes its vanished bucket again this often (T13)
_GONE = {errno.ENOENT, errno.ESTALE}  # a folder removed, as a local disk or sshfs says it


EMPTY_TTL = 5.0  # seconds a bucket listed empty is not listed again by pending_at_most (T14)


def bucket_of(ticket_id: str) -> str:
    """The bucket folder of a ticket id in pending/ (T13): the same on every machine."""
    return f"s{zlib.crc32(ticket_id.encode()) % BUCKETS:02x}"


def list_pending(directory: Path) -> tuple[list[TicketName], set[str]]:
    """Ticket names in pending/ and in its buckets (T13), each with its bucket; and the
    ``*.json`` entries that are not ticket names, as paths relative to pending/ (T12)."""
    out: list[TicketName] = []
    bad: set[str] = set()
    try:
        with os.scandir(directory) as it:
            top = [(e.name, _BUCKET_RE.fullmatch(e.name) is not None and not e.is_symlink())
                   for e in it]
    except FileNotFoundError:
        return out, bad

    def sort(entry: str, bucket: str | None) -> None:
        n = TicketName.parse(entry)
        if n is not None:
            out.append(dataclasses.replace(n, bucket=bucket) if bucket else n)
        elif entry.endswith(".json") and not entry.startswith(TMP_PREFIX):
            bad.add(f"{bucket}/{entry}" if bucket else entry)

    for e, is_bucket in top:
        if not is_bucket:
            sort(e, None)
            continue
        try:
            inner = os.listdir(directory / e)
        except OSError:  # not a folder, or gone (ESTALE on sshfs): nothing to claim there
            continue
        for f in inner:
            sort(f, e)
    return out, bad


RELIST_MIN = 2.0  # seconds a view of pending/ is used before it is listed again (T10)
RELIST_FACTOR = 20  # ... or this many times what the last listing took, if longer
PICK_FROM = 8  # workers would all race for the first ticket: each takes one of the first few


def _count_upto(directory: Path, n: int, buckets: bool = False,
                empty: dict[str, float] | None = None) -> int:
    """Ticket names in ``directory`` (with ``buckets``: and in its buckets, T13), counted
    up to ``n`` (a scan that stops early).  ``empty`` (T14): bucket -> monotonic time it
    was listed empty; one listed empty within :data:`EMPTY_TTL` is not listed again, and
    what this scan finds is recorded there."""
    inner: list[str] = []
    try:
        found, _ = _tickets_in(directory, n, inner if buckets else None)
    except (FileNotFoundError, NotADirectoryError):
        found = 0
    now = time.monotonic()
    for b in inner:
        if found >= n:
            break
        if empty is not None and now - empty.get(b, -1e18) < EMPTY_TTL:
            continue
        try:
            more, seen = _tickets_in(directory / b, n - found)
        except OSError:  # not a folder, or gone (ESTALE on sshfs): holds nothing (T13)
            continue
        found += more
        if empty is not None:
            if seen:
                empty.pop(b, None)
            else:
                empty[b] = now
    return found


def _tickets_in(directory: Path, n: int, buckets: list[str] | None = None) -> tuple[int, bool]:
    """Ticket names in one folder, counted up to ``n``, and whether it holds anything at
    all; the bucket folders it lists are added to ``buckets`` when given (T13)."""
    found, seen = 0, False
    with os.scandir(directory) as it:
        for e in it:
            seen = True
            if TicketName.parse(e.name) is not None:
                found += 1
                if found >= n:
                    break
            elif buckets is not None and _BUCKET_RE.fullmatch(e.name) and not e.is_symlink():
                buckets.append(e.name)
    return found, seen


class PendingView:
    """This queue's listing of ``pending/``, kept between claims and grouped by host tag (T10).

    Each tag's names are sorted with the first to claim at the end, so taking one is a pop."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.tags: dict[str | None, list[TicketName]] = {}
        self.size = 0
        self.listed = 0  # size at the last listing
        self.at = -1e18  # monotonic time of the last listing
        self.took = 0.0  # what the last listing took
        self.fresh = False  # listed during the current claim

    def stale(self) -> bool:
        age = time.monotonic() - self.at
        return (self.size == 0 or self.size * 2 < self.listed
                or age > max(RELIST_MIN, RELIST_FACTOR * self.took))

    def relist(self) -> set[str]:
        """List pending/ again; returns the ``*.json`` names there that are not ticket
        names (T12)."""
        t0 = time.monotonic()
        listed, bad = list_pending(self.directory)
        tags: dict[str | None, list[TicketName]] = {}
        for n in listed:
            if n.owner is None:
                tags.setdefault(ticket_host(n.ticket_id), []).append(n)
        for names in tags.values():
            names.sort(key=lambda n: (n.ticket_id, n.gen), reverse=True)
        self.tags = tags
        self.size = self.listed = sum(len(v) for v in tags.values())
        self.at = time.monotonic()
        self.took = self.at - t0
        self.fresh = True
        return bad

    def add(self, name: TicketName) -> None:
        """A ticket this queue wrote into pending/: claimable at once (it goes to the far end
        of its tag, as it would be a later id in a listing)."""
        names = self.tags.setdefault(ticket_host(name.ticket_id), [])
        if name not in names[-PICK_FROM:]:
            names.insert(0, name)
            self.size += 1

    def pick(self, rank: Callable[[TicketName], int | None] | None) -> TicketName | None:
        """Remove and return a name of the best rank: a random one of the first
        :data:`PICK_FROM` in id order among the tags of that rank."""
        best: int | None = None
        heads: list[tuple[str, int, str | None, int]] = []
        for tag, names in self.tags.items():
            if not names:
                continue
            r = 0 if rank is None else rank(names[-1])
            if r is None or (best is not None and r > best):
                continue
            if best is None or r < best:
                best, heads = r, []
            for i in range(len(names) - 1, max(-1, len(names) - 1 - PICK_FROM), -1):
                heads.append((names[i].ticket_id, names[i].gen, tag, i))
        if not heads:
            return None
        heads.sort()
        _id, _gen, tag, i = random.choice(heads[:PICK_FROM])
        names = self.tags[tag]
        name = names.pop(i)
        if not names:
            del self.tags[tag]
        self.size -= 1
        return name
