"""discover: find every URL a site offers, as a stream, with hostile input kept in bounds.

The first room a URL walks through.  ``sources.discover`` reads a site's sources (sitemaps and
sitemap indexes, ``.xml.gz``, robots.txt ``Sitemap:`` lines, llms.txt, plain-text lists,
RSS/Atom) and yields entries while the next bytes arrive; ``urls`` makes dedupe keys, applies
the include/exclude globs and keeps a compact seen-set; ``sitemapcache`` keeps copies of
sitemaps so a re-crawl re-reads them with conditional GETs.

Modules: ``sources`` (the walk over a site's sources), ``sitemap`` (streaming XML/feed
parser), ``llmstxt`` (llms.txt and URL lists), ``urls`` (normalisation, filters, UrlSet),
``sitemapcache``.

May import: the base modules (config, errors, logs, timestamps, frontmatter),
``fetch.decoding`` (bounded Content-Encoding) and ``protocol.fsutil`` (atomic files).
"""
