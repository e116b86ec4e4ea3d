"""discover: find every URL a site offers, as a stream, with hostile input kept in bounds.

The first room a URL walks through.  ``sources.discover`` reads a site's sources (sitemaps and
sitemap indexes, ``.xml.gz``, robots.txt ``Sitemap:`` lines, llms.txt, llms-full.txt,
plain-text lists, RSS/Atom/RDF) and yields entries while the next bytes arrive; ``urls``
makes dedupe keys, applies the include/exclude globs and keeps a compact seen-set;
``sitemapcache`` keeps copies of sitemaps so a re-crawl re-reads them with conditional GETs.

Modules: ``sources`` (the walk over a site's sources), ``sitemap`` (streaming XML/feed
parser), ``llmstxt`` (llms.txt, llms-full.txt, URL lists, .md twins), ``urls``
(normalisation, filters, UrlSet), ``sitemapcache`` (conditional re-reads, or none at all
within the ``cache_sitemaps`` max age).

May import: the base modules (config, errors, logs, timestamps, frontmatter),
``fetch.decoding`` (bounded Content-Encoding), ``fetch.netguard`` (the error a refused
address raises, told apart from a host that is down) and ``protocol.fsutil`` (atomic files).
"""
