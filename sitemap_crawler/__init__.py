"""sitemap-crawler: turn whole websites into clean markdown, fast and politely, and keep them fresh.

The public surface is the CLI (``sitemap-crawler``); the modules below are small and each does
one job: ``config`` (config.yaml), ``urls`` (normalisation, filters), ``discovery`` (sitemaps,
llms.txt, robots.txt), ``tickets`` (the work queue on disk), ``heartbeat`` (liveness),
``journal``/``index`` (url-index.json), ``fetch`` (polite HTTP), ``hostgate`` (per-host delay
across workers and machines), ``convert`` (HTML to markdown), ``output`` (file paths and writes),
``worker`` (the loop tying them together).
"""

__version__ = "0.4.0"
