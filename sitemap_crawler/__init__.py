"""sitemap-crawler: turn whole websites into clean markdown, fast and politely, and keep them fresh.

The package is laid out as the rooms a URL walks through (README "How it works")::

    discover/   find a site's URLs: sitemaps, indexes, robots.txt, llms.txt, feeds; URL rules
    protocol/   the state on disk shared by every worker on every machine: tickets,
                heartbeats, host gate, journals, url-index (the part that must hold on NFS/SMB)
    fetch/      polite HTTP: robots.txt, retries, bounded decoding, charsets
    convert/    HTML to markdown, front matter, where files go, removals
    commands/   prepare, work (runner + worker), status: the rooms put to work
    demo/       the built-in demo site and ``sitemap-crawler demo``
    api.py      the Python API (below), which the command line calls too
    cli.py      the command line, a thin layer over api.py and commands/

Base modules every room may import: ``config``, ``errors``, ``logs``, ``timestamps``,
``frontmatter``.  Rooms import only the rooms listed as allowed in their ``__init__``
(tests/test_layout.py checks it).

The public Python API is what ``__all__`` lists below; everything else is internal and may
change between releases.  Names are imported lazily, so ``import sitemap_crawler`` stays cheap
for the CLI and for worker processes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.5.0.dev0"  # as pyproject.toml: v0.5.0 is in progress (ROADMAP.md)

# public name -> module that defines it
_API = {
    "Config": "sitemap_crawler.config",
    "Site": "sitemap_crawler.config",
    "Settings": "sitemap_crawler.config",
    "load_config": "sitemap_crawler.config",
    "CrawlerError": "sitemap_crawler.errors",
    "UserError": "sitemap_crawler.errors",
    "ConfigError": "sitemap_crawler.errors",
    "CrawlError": "sitemap_crawler.errors",
    "prepare": "sitemap_crawler.commands.prepare",
    "PrepareResult": "sitemap_crawler.commands.prepare",
    "run_site": "sitemap_crawler.commands.work",
    "site_status": "sitemap_crawler.commands.status",
    "html_to_markdown": "sitemap_crawler.convert.markdown",
    "Page": "sitemap_crawler.convert.markdown",
    "config_from_dict": "sitemap_crawler.api",
    "work": "sitemap_crawler.api",
    "status": "sitemap_crawler.api",
    "export": "sitemap_crawler.api",
}

__all__ = [
    "Config",
    "ConfigError",
    "CrawlError",
    "CrawlerError",
    "Page",
    "PrepareResult",
    "Settings",
    "Site",
    "UserError",
    "__version__",
    "config_from_dict",
    "export",
    "html_to_markdown",
    "load_config",
    "prepare",
    "run_site",
    "site_status",
    "status",
    "work",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors only
    from sitemap_crawler.api import config_from_dict, export, status, work
    from sitemap_crawler.commands.prepare import PrepareResult, prepare
    from sitemap_crawler.commands.status import site_status
    from sitemap_crawler.commands.work import run_site
    from sitemap_crawler.config import Config, Settings, Site, load_config
    from sitemap_crawler.convert.markdown import Page, html_to_markdown
    from sitemap_crawler.errors import ConfigError, CrawlerError, CrawlError, UserError


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'sitemap_crawler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
