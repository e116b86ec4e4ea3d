"""commands: the rooms put to work, one module per thing a user asks for.

``prepare`` (discover -> filter -> plan -> tickets), ``plan`` (which known URLs are due),
``smart`` (sample before a full re-crawl), ``work`` (start worker processes, show progress,
stop them, merge results), ``worker`` (one worker: claim, fetch, convert, write, journal),
``status`` (what the state directory says).

May import every room.  Nothing below imports commands; the CLI and the demo sit on top.
"""
