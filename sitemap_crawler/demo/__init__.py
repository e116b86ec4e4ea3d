"""demo: a generated documentation site served on 127.0.0.1, and ``sitemap-crawler demo``.

A feature beside the product, not part of it: ``site`` builds and serves the site (it
changes between generations so a second run is a real incremental crawl), ``run`` crawls it
end to end.  Tests and benchmarks reuse the site.

May import everything.  Nothing in the product imports demo (the CLI only, lazily).
"""
