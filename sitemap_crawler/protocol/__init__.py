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
T1-T7   claim, ownership, complete, hand back, reclaim, at-least-once,  tickets.py
        retention of the ticket queue (Maildir-like tmp -> new -> cur)
H1-H5   heartbeats: announce before claiming, judged dead by content    heartbeat.py
        not changing on the observer's clock, local pid shortcut
G1-G7   per-host politeness tokens renamed between ``.free`` and        hostgate.py
        ``.held.<worker>.<nonce>``; block files without absolute time
J       one append-only journal per worker, fsynced before a ticket     journal.py
        completes; nobody else writes it
I       url-index.json changed only by merge under a RenameLock,        index.py
        written atomically; journals deleted only after the index
        that holds them is in place
======  =============================================================  ===============

Modules: ``fsutil`` (the primitives), ``state`` (the directory layout, worker ids),
``tickets``, ``heartbeat``, ``hostgate``, ``journal``, ``index``.

May import: the base modules (errors, timestamps, frontmatter) only.  Nothing from discover,
fetch, convert or commands: every other room builds on this one.
"""
