"""protocol: the state on disk that every worker on every machine shares, and its invariants.

This room is what must stay correct on a local disk, NFS, SMB and sshfs at once.  What was
measured on real shares (../shared/netfs/README.md) chose the primitives:

* ``rename`` to a **unique** destination name is the only operation exclusive everywhere;
  SMB may report success to a loser, so every exclusive move checks its destination after
  (``fsutil.move_exclusive``).  No ``O_EXCL``, hard link, ``flock`` or ``filelock`` is trusted
  between machines.
* Files that change hands are written whole under ``.tmp-*`` and renamed into place
  (``fsutil.atomic_write``): a reader never sees half a file.
* No clock or mtime is compared across machines: liveness is a heartbeat *content* change
  timed on the observer's own monotonic clock.

The invariants, each explained where it is enforced:

======  =============================================================  ===============
D, R    directories fsynced after renames and creates where durability    fsutil.py
        is claimed; a rename is judged by its unique destination, not
        by its reply (SMB answers errors for renames that happened)
L1-L4   RenameLock: token renamed to a unique name; the holder rewrites   fsutil.py
        its content while it holds it; broken only after ``timeout`` of
        unchanged content (observer's clock) or a proven-local death;
        a holder that lost it finds out before it writes anything
T1-T14  claim, ownership, complete, hand back, reclaim (progress read     tickets.py
        before the rename; own-id orphans handed back), at-least-once,
        retention, durability of the queue (Maildir-like tmp->new->cur);
        a completed ticket's name carries its completion stamp, so T7
        prunes from one listing without opening a finished ticket, and
        never deletes one being finished (its name has no stamp yet)
H1-H7   heartbeats: announce before claiming, judged dead by content     heartbeat.py
        not changing on the observer's clock, local pid shortcut only
        for a *proven* local id (machine id, boot, pid namespace; a
        zombie is dead), write failures stop the worker, dead workers'
        files pruned
G1-G7   per-host politeness tokens renamed between ``.free`` and        hostgate.py
        ``.held.<worker>.<nonce>``; block files without absolute time
J, J3   one append-only journal per worker, fsynced before a ticket     journal.py
        completes; nobody else writes it; a live worker's heartbeat
        says how many records its journal's first N bytes hold, so
        ``status`` reads only what came after (commands/status.py ST1:
        status opens the files of active work only)
I1-I4,  the url-index (a base + segments) written only under the       index.py
J2, J4  index lock, each file atomically; a segment deleted only after
        a base holding it is in place; which segments exist is a list
        file read by path, never a listing; a journal deleted only
        after the segment that holds it is in place and while no
        ticket is claimed under its worker's id; a merge reads each
        journal from where the list says the last one stopped
S1      a file replaced by rename (index, manifest) is read until it     fsutil.py
        parses: a share's client may serve the old size for seconds
N1-N5   a markdown file name is claimed before it is written: a         names.py
        folder holding its owner renamed into place (exclusive on
        every share), read back by path, never released; case and
        Unicode folded; a new claim's owner is what is on disk first
F1-F5   link following: only the index lock holder turns links into     frontier.py
        tickets, marking them queued in the same fold; a write-ahead
        intent makes index + tickets crash-safe; workers stop only
        after a fold that found nothing
======  =============================================================  ===============

Worker ids (state.py) are ``<full host>-<machine token>-<pid>-<nonce>``: unique per machine,
and the only proof that a worker runs where its pid can be checked.

Modules: ``fsutil`` (the primitives), ``state`` (the directory layout, worker ids),
``tickets``, ``heartbeat``, ``hostgate``, ``journal``, ``index``, ``names`` (file names
owned once), ``untrusted`` (what is read from the state folder is checked before any file
system call; a bad file goes to ``quarantine/``).

May import: the base modules (errors, timestamps, frontmatter) only.  Nothing from discover,
fetch, convert or commands: every other room builds on this one.
"""
