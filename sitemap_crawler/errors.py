"""Errors that end a command with a one-line message instead of a traceback.

``UserError`` (exit 2) is for anything the user can fix in what they typed or wrote: the
config file, a site name, an argument.  ``CrawlError`` (exit 1) is for a failure at run time:
a source that cannot be read, a full disk, a state directory that is not usable.
"""

from __future__ import annotations


class CrawlerError(Exception):
    """Base class: carries the exit code the CLI should use."""

    exit_code = 1


class UserError(CrawlerError):
    """Bad usage or configuration (exit 2)."""

    exit_code = 2


class ConfigError(UserError):
    """A wrong key, type or value in config.yaml; the message names the key and the file."""


class CrawlError(CrawlerError):
    """A runtime failure (exit 1)."""


class DiscoveryError(CrawlError):
    """A source (sitemap, llms.txt, robots.txt) could not be read or is not acceptable."""
