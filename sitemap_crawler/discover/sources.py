"""URL discovery: sitemaps, sitemap indexes, robots.txt, llms.txt, URL lists and feeds.

``discover`` is a generator so prepare can dedupe and write tickets while the next
sitemap is still arriving; nothing here holds more than one document's chunk and the
list of child sitemaps of the index being walked.  ``discover_batches`` yields the same
entries a chunk at a time, as lists or as :class:`~.sitemap.Columns` (the strict tier's
parallel lists), so that prepare can work on whole lists: at a million URLs per-URL Python
work is most of the cost.  The host check of a column is one regex over the joined URLs.
What a document *is* comes from its bytes (gzip magic, root element, first lines), never
from its name or headers alone.

Every limit in :class:`~sitemap_crawler.config.Settings` is enforced here: response and
decompressed bytes (``max_sitemap_size``), URLs per file, documents per run, index
nesting, redirects.  A root source that cannot be used raises :class:`DiscoveryError`
with one line; a failing child sitemap is recorded in ``stats.errors`` and skipped.

Loops: a ``<loc>`` or a redirect that leads back to a document already read is skipped with
a warning, since nothing is lost; when loops (or failures) leave a source with no URL at all,
that is an error, so a cron job exits non-zero instead of quietly queueing nothing.  A host
that does not resolve or accept connections stops a bare-site probe at once.
"""

from __future__ import annotations

import re
import socket
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from urllib.parse import urljoin, urlsplit

import httpx

from sitemap_crawler.config import Settings
from sitemap_crawler.discover.llmstxt import TextParser, markdown_twin, page_of_twin
from sitemap_crawler.discover.sitemap import Columns, Entry, NotASitemap, XmlParser
from sitemap_crawler.discover.sitemapcache import SitemapCache
from sitemap_crawler.discover.urls import (
    host_matcher,
    host_of,
    is_http_url,
    normalize_url,
    same_host,
)
from sitemap_crawler.errors import DiscoveryError
from sitemap_crawler.fetch.decoding import DecodeError, UnsupportedEncoding, decode, gunzip_if_magic
from sitemap_crawler.fetch.netguard import BlockedAddress

__all__ = ["COMMON_SITEMAP_PATHS", "Batch", "DiscoveryStats", "Entry", "SourceRead", "discover",
           "discover_batches"]

Batch = list[Entry] | Columns

# Seed 000 §5.1 / §16.3, in that order: the first one that is a sitemap wins.
COMMON_SITEMAP_PATHS = (
    "/sitemap.xml", "/sitemap_index.xml", "/sitemap-index.xml", "/sitemapindex.xml",
    "/sitemap/sitemap.xml", "/sitemaps/sitemap.xml", "/sitemap1.xml", "/sitemap-1.xml",
    "/post-sitemap.xml", "/page-sitemap.xml", "/product-sitemap.xml",
    "/category-sitemap.xml", "/wp-sitemap.xml",
)
MAX_ERRORS = 1000  # stats.errors keeps this many lines, then counts
_SNIFF_BYTES = 512
_REDIRECTS = (301, 302, 303, 307, 308)
_HTML = re.compile(rb"(?is)(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*(?:<!doctype\s+html|<html[\s>])")
_ROBOTS_LINE = re.compile(
    rb"(?i)[ \t]*(?:user-agent|disallow|allow|site-?map|crawl-delay|host)[ \t]*:"
)
# "Site-map:" is accepted as Google's robots.txt parser accepts it; a UTF-8 BOM before the
# first line is not part of it (decoded, it is U+FEFF, which \s does not match).
_SITEMAP_LINE = re.compile(r"(?i)[\s\ufeff]*site-?map\s*:\s*(\S+)")
_TEXT_KINDS = ("llms", "llms-full", "text")
_PAGE_KINDS = {"urlset", "rss", "atom", *_TEXT_KINDS}
_LLMS_FILE = re.compile(r"/llms(?:-[^/]*)?\.txt$", re.I)  # /llms-en.txt, /llms-full.txt


@dataclass
class SourceRead:
    """One document discovery read: where, what it turned out to be, URLs taken from it."""

    url: str
    kind: str
    urls: int = 0
    gzip: bool = False


@dataclass
class DiscoveryStats:
    sitemaps_read: int = 0
    sitemap_indexes: int = 0
    bytes_downloaded: int = 0
    urls_found: int = 0
    cross_host: int = 0
    invalid_urls: int = 0
    truncated_files: int = 0
    errors: list[str] = field(default_factory=list)
    sources: list[SourceRead] = field(default_factory=list)
    errors_dropped: int = 0
    not_modified: int = 0  # sitemaps answered 304 and read from the kept copy
    cache_fresh: int = 0  # sitemaps read from a kept copy younger than cache_sitemaps
    optional_skipped: int = 0  # llms.txt "## Optional" links left out (skip_optional)
    # Called with (url, reason) for each page URL left out (other_host, invalid), so
    # prepare can keep the reason per URL for export; None: counted only.
    on_drop: Callable[[str, str], None] | None = None

    def drop(self, url: str, reason: str) -> None:
        if reason == "other_host":
            self.cross_host += 1
        else:
            self.invalid_urls += 1
        if self.on_drop is not None:
            self.on_drop(url, reason)

    def warn(self, line: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(" ".join(line.split()))
        else:
            self.errors_dropped += 1


class _Fail(Exception):
    """A document could not be fetched or used; the message is one line."""


class _Unreachable(_Fail):
    """The host's name did not resolve or no connection could be made: no path will work."""


class _AlreadyRead(Exception):
    """A redirect led to a document this run has already read: nothing to read again."""


@dataclass
class _Outcome:
    kind: str | None = None
    url: str = ""
    children: list[str] = field(default_factory=list)
    urls: int = 0
    error: str | None = None  # set when the document could not be used at all
    warning: str | None = None  # set when it was used only in part
    seen_before: bool = False
    unreachable: bool = False  # the host did not resolve or refused the connection
    cross_host: int = 0  # page links dropped because they are on another host
    other_host: str = ""  # the first of those hosts, to name in a message


def discover(
    sources: Sequence[str],
    settings: Settings,
    client: httpx.Client,
    stats: DiscoveryStats,
    progress: Callable[[str], None] | None = None,
    cache: SitemapCache | None = None,
    probe: Sequence[str] = COMMON_SITEMAP_PATHS,
) -> Iterator[Entry]:
    """Yield every page URL the sources list (duplicates included: the caller dedupes).

    A source is a sitemap or index (gzip or not), a bare site (robots.txt ``Sitemap:``
    lines, else the common paths, plus ``/llms.txt``, else ``/llms-full.txt``), a
    robots.txt, an llms.txt, llms-full.txt or plain URL list, or an RSS/Atom/RDF feed.
    Settings read here beyond the limits: ``allow_other_hosts``, ``skip_optional``,
    ``markdown_twins`` (sets ``Entry.markdown_url``) and ``cache_sitemaps`` as a max age.
    ``client`` carries User-Agent and timeouts; redirects are followed here with
    ``settings.max_redirects`` as the cap.  With a ``cache`` (sitemapcache.py), documents
    are asked for conditionally and a 304 is served from the kept copy.  ``probe``: the
    paths tried on a bare site whose robots.txt names no sitemap (fewer for a site crawled
    by following links, where a sitemap is a bonus and each request costs a delay).
    """
    for batch in discover_batches(sources, settings, client, stats, progress, cache, probe):
        yield from batch


def discover_batches(
    sources: Sequence[str],
    settings: Settings,
    client: httpx.Client,
    stats: DiscoveryStats,
    progress: Callable[[str], None] | None = None,
    cache: SitemapCache | None = None,
    probe: Sequence[str] = COMMON_SITEMAP_PATHS,
) -> Iterator[Batch]:
    """``discover``'s entries a chunk at a time (never an empty batch)."""
    run = _Run(settings, client, stats, progress)
    run.cache = cache
    run.probe = tuple(probe)
    for src in sources:
        yield from run.source(src)


class _Run:
    def __init__(self, settings: Settings, client: httpx.Client, stats: DiscoveryStats,
                 progress: Callable[[str], None] | None) -> None:
        self.s = settings
        self.client = client
        self.stats = stats
        self.progress = progress
        self.seen: set[str] = set()  # normalised URLs of every document requested
        self.seen_here: set[str] = set()  # ... while walking the current source
        self.fetched = 0
        self.budget_warned = False
        self.hosts: set[str] = set()
        self.matcher = host_matcher(())
        self.all_match = host_matcher((), many=True)
        self.failures = 0
        self.loops = 0  # documents skipped because a <loc> or a redirect led back to one read
        self.cache: SitemapCache | None = None
        self.probe: tuple[str, ...] = COMMON_SITEMAP_PATHS  # bare site, no Sitemap: line

    # -- sources ----------------------------------------------------------------------

    def source(self, src: str) -> Iterator[Batch]:
        src = src.strip()
        if not is_http_url(src):
            raise DiscoveryError(f"{src!r}: not an http(s) URL")
        self._set_hosts({host_of(src)})
        self.failures = self.loops = 0
        self.seen_here = set()
        invalid_before, cross_before = self.stats.invalid_urls, self.stats.cross_host
        parts = urlsplit(src)
        if parts.path in ("", "/") and not parts.query:
            found = yield from self._site(f"{parts.scheme}://{parts.netloc}", src)
        else:
            found = yield from self._root(src)
        # A loop loses nothing when the document it leads back to was read: a warning, exit
        # 0.  When it leaves the source with no URLs at all it is an error, like a failed
        # fetch, so that a cron job notices (the same rule for <loc> and redirect loops).
        if found == 0 and (self.failures or self.loops):
            first = next((e for e in reversed(self.stats.errors)), "see errors")
            what = (f"{self.failures} sitemap(s) failed" if self.failures else
                    f"{self.loops} sitemap(s) skipped as loops")
            raise DiscoveryError(f"{src}: no URLs found, {what} (last: {first})")
        invalid = self.stats.invalid_urls - invalid_before
        if found == 0 and invalid:  # nothing to crawl is a failure a cron job must see
            other = self.stats.cross_host - cross_before
            what = (f"all {invalid} entries are invalid" if not other else
                    f"{invalid} entries are invalid and {other} on other hosts")
            raise DiscoveryError(f"{src}: no usable URLs: {what} (not absolute http(s) "
                                 "URLs), so there is nothing to crawl")

    def _root(self, url: str) -> Generator[Batch, None, int]:
        out = yield from self._document(url, role="root")
        if out.seen_before:
            return 0  # listed twice, or already read through an earlier source
        if out.error is not None:
            raise DiscoveryError(f"{url}: {out.error}")
        if out.kind == "robots" and not out.children:
            raise DiscoveryError(f"{url}: robots.txt lists no Sitemap: lines")
        if out.urls == 0 and out.warning is not None:
            raise DiscoveryError(f"{url}: {out.warning}")
        if out.kind in _TEXT_KINDS and out.urls == 0 and out.cross_host:
            raise DiscoveryError(f"{url}: {_all_off_host(out)}")
        if out.kind in _TEXT_KINDS and out.urls == 0 and not self.stats.invalid_urls \
                and not out.children:
            if out.kind == "llms-full":
                raise DiscoveryError(f"{url}: no pages found in this llms-full.txt (expected "
                                     "'Source: URL' lines or headings that are URLs)")
            raise DiscoveryError(f"{url}: no links found (not an llms.txt or URL list)")
        return out.urls + (yield from self._children(out, depth=0))

    def _site(self, origin: str, src: str) -> Generator[Batch, None, int]:
        robots = yield from self._document(origin + "/robots.txt", role="robots")
        if robots.unreachable:
            raise DiscoveryError(f"{src}: {robots.error}")
        total = 0
        found = False
        if robots.error is None and robots.children:
            found = True
            total += yield from self._children(robots, depth=0)
        else:
            for path in self.probe:
                out = yield from self._document(origin + path, role="probe")
                if out.error is None:
                    found = True
                    total += out.urls + (yield from self._children(out, depth=0))
                    break
        llms = yield from self._document(origin + "/llms.txt", role="llms")
        if not found and llms.error is not None and self.probe == COMMON_SITEMAP_PATHS:
            # the pages themselves, as a last resort (not when links will find them)
            llms = yield from self._document(origin + "/llms-full.txt", role="llms")
        if llms.error is None and (llms.urls or llms.children or not llms.cross_host):
            found = True
            total += llms.urls + (yield from self._children(llms, depth=0))
        if not found and llms.error is None:
            raise DiscoveryError(f"{src}: no sitemap found, and /llms.txt: {_all_off_host(llms)}")
        if not found:
            raise DiscoveryError(
                f"{src}: no sitemap found (robots.txt lists none; none of the "
                f"{len(self.probe)} common sitemap paths nor /llms.txt nor "
                "/llms-full.txt is one)"
            )
        return total

    def _children(self, out: _Outcome, depth: int) -> Generator[Batch, None, int]:
        """Walk what an index, robots.txt or an llms.txt naming more llms files points to
        (robots.txt adds no nesting level)."""
        role = "llms" if out.kind in _TEXT_KINDS else "child"
        if out.kind == "robots":
            nested = depth
        elif out.kind == "sitemapindex" or (role == "llms" and out.children):
            nested = depth + 1
            if nested > self.s.max_sitemap_depth:
                self.failures += 1
                what = "sitemap index" if role == "child" else "llms.txt"
                files = "sitemap(s)" if role == "child" else "llms file(s)"
                self.stats.warn(f"{out.url}: {what} nested deeper than max_sitemap_depth "
                                f"({self.s.max_sitemap_depth}); {len(out.children)} child "
                                f"{files} skipped")
                return 0
        else:
            return 0
        total = 0
        for child in out.children:
            sub = yield from self._document(child, role=role)
            if sub.error is not None:
                continue
            total += sub.urls + (yield from self._children(sub, depth=nested))
        return total

    # -- one document -----------------------------------------------------------------

    def _document(self, url: str, role: str) -> Generator[Batch, None, _Outcome]:
        """Fetch, sniff and parse one document, yielding its page entries as they come.

        ``role`` is ``root`` (errors are fatal to the caller), ``child`` (errors are
        warnings), or ``robots``/``probe``/``llms`` (bare-site guesses: misses are silent).
        """
        out = _Outcome(url=url)
        quiet = role in ("robots", "probe", "llms")
        key = normalize_url(url)
        if key in self.seen:
            return self._loop(out, f"{url}: skipped, already read", role, key)
        if self.fetched >= self.s.max_sitemaps:
            out.error = "max_sitemaps reached"
            if not self.budget_warned:
                self.budget_warned = True
                self.stats.warn(f"{url}: max_sitemaps ({self.s.max_sitemaps}) reached; "
                                "further sitemaps skipped")
            self.failures += 1
            return out
        self.seen.add(key)
        self.seen_here.add(key)
        self.fetched += 1
        try:
            resp, final = self._open(url)
        except _AlreadyRead as e:
            return self._loop(out, f"{url}: skipped, {e.args[0]}", role, e.args[1])
        except _Fail as e:
            out.error = str(e)
            out.unreachable = isinstance(e, _Unreachable)
            if not quiet and role != "root":
                self.failures += 1
                self.stats.warn(f"{url}: {e}")
            return out
        out.url = final
        before = self.hosts
        if role != "child" and final != url:
            # the site moved: its new host is the site's while this answer is read, and
            # stays so only if the answer is what was asked for (a sitemap for a probe, a
            # robots.txt for robots.txt ...): an HTML page elsewhere adopts nothing
            self._set_hosts(self.hosts | {host_of(final)})
        try:
            yield from self._parse(resp, final, role, out)
        except _parse_errors() as e:
            out.error = str(e) if isinstance(e, _Fail | NotASitemap) else (
                f"unreadable: {type(e).__name__}: {_line(e)}")
            if self.hosts != before:
                self._set_hosts(before)
            if not quiet and role != "root":
                self.failures += 1
                self.stats.warn(f"{url}: {out.error}")
            return out
        finally:
            resp.close()
        if self.hosts != before and not (out.urls or out.children):
            self._set_hosts(before)  # nothing listed there: no evidence the site moved
        if self.progress is not None:
            self.progress(f"{out.kind} {final}: {out.urls} URLs"
                          + (f", {len(out.children)} "
                             f"{'llms files' if out.kind in _TEXT_KINDS else 'sitemaps'}"
                             if out.children else ""))
        return out

    def _loop(self, out: _Outcome, warning: str, role: str, key: str) -> _Outcome:
        """A document already read this run: skipped with a warning (nothing is lost).

        Read while walking this same source, it is a loop (or a listing twice); read through
        an earlier source, it is a sitemap two sources share, and does not count as a loop.
        """
        out.error = "already read (sitemap loop)"
        out.seen_before = True
        if role not in ("root", "robots", "probe", "llms"):
            if key in self.seen_here:
                self.loops += 1
                self.stats.warn(warning + " (sitemap loop)")
            else:
                self.stats.warn(warning + " through an earlier source")
        return out

    def _open(self, url: str) -> tuple[httpx.Response, str]:
        """GET with redirects followed by hand (cap, loop check), streaming the body."""
        chain = [url]
        max_age = self.s.cache_sitemaps
        max_age = 0.0 if isinstance(max_age, bool) else float(max_age)
        for _hop in range(self.s.max_redirects + 1):
            try:
                cond = self.cache.validators(url) if self.cache else {}
                req = self.client.build_request("GET", url, headers=cond)
                if max_age and self.cache is not None:
                    kept = self.cache.fresh(url, max_age, req)
                    if kept is not None:
                        self.stats.cache_fresh += 1
                        return kept, url
                resp = self.client.send(req, stream=True, follow_redirects=False)
            except BlockedAddress as e:  # a refusal, not a host that is down
                raise _Fail(f"refused: {_line(e)}") from None
            except httpx.ConnectError as e:
                raise _Unreachable(_connect_error(url, e)) from None
            except (httpx.HTTPError, httpx.InvalidURL) as e:
                raise _Fail(f"cannot fetch: {type(e).__name__}: {_line(e)}") from None
            if resp.status_code == 304 and self.cache is not None:
                resp.close()
                kept = self.cache.replay(url, req)
                if kept is not None:
                    self.stats.not_modified += 1
                    return kept, url
                raise _Fail("HTTP 304 to a request we did not make conditional")
            if resp.status_code in _REDIRECTS and "location" in resp.headers:
                resp.close()
                try:
                    target = urljoin(url, resp.headers["location"].strip())
                except ValueError:
                    target = resp.headers["location"]
                if not is_http_url(target):
                    raise _Fail(f"redirect to a non-http(s) URL {target[:200]!r}")
                key = normalize_url(target)
                if any(normalize_url(u) == key for u in chain):
                    raise _Fail("redirect loop: " + " -> ".join([*chain, target])[:400])
                if key in self.seen:
                    raise _AlreadyRead(f"redirects to {target}, which was already read", key)
                self.seen.add(key)
                self.seen_here.add(key)
                chain.append(target)
                url = target
                continue
            if resp.status_code != 200:
                resp.close()
                raise _Fail(f"HTTP {resp.status_code}")
            if self.cache is not None:
                resp = self.cache.recording(url, resp, unvalidated=max_age > 0)
            return resp, url
        raise _Fail(f"more than {self.s.max_redirects} redirects")

    def _parse(self, resp: httpx.Response, url: str, role: str,
               out: _Outcome) -> Iterator[Batch]:
        body = _Body(resp, self.s.max_sitemap_size, self.stats)
        chunks = iter(body)
        head = b""
        for chunk in chunks:
            head += chunk
            if len(head) >= 65536 or len(head.lstrip()) >= _SNIFF_BYTES:
                break
        kind = _sniff(head, url)
        if (role == "probe" and kind != "xml") or (role == "llms" and kind != "text"):
            raise NotASitemap(f"not a {'sitemap' if role == 'probe' else 'llms.txt'}")
        if role == "robots" and kind == "text":
            kind = "robots"
        limit = self.s.max_urls_per_sitemap
        parser: XmlParser | TextParser | _Robots
        if kind == "xml":
            parser = XmlParser(url, limit)
        elif kind == "robots":
            parser = _Robots(url, self.s.max_sitemaps)
        else:
            parser = TextParser(url, limit)
        stream = chain([head], chunks) if head else chunks
        entries = 0
        try:
            for chunk in stream:
                items = parser.feed(chunk)
                if out.kind is None:
                    out.kind = _kind(parser)
                    if role == "probe" and out.kind not in ("urlset", "sitemapindex"):
                        raise NotASitemap(f"not a sitemap: {out.kind}")
                if items and (items := self._take(items, out)):
                    entries += len(items)
                    yield items
                if parser.capped or parser.done:
                    break
            else:
                items = parser.close()
                out.kind = out.kind or _kind(parser)
                if items and (items := self._take(items, out)):
                    entries += len(items)
                    yield items
        except _Fail as e:  # the body broke off: keep what was read
            out.warning = f"{e}; kept {parser.items} entries read before"
        out.kind = out.kind or _kind(parser)
        if role == "probe" and out.kind not in ("urlset", "sitemapindex"):
            raise NotASitemap(f"not a sitemap: {out.kind}")
        if body.truncated:
            self.stats.truncated_files += 1
            out.warning = (f"larger than max_sitemap_size ({self.s.max_sitemap_size} bytes); "
                           f"kept {parser.items} entries from before the cut")
        elif parser.capped:
            self.stats.truncated_files += 1
            out.warning = (f"more than max_urls_per_sitemap ({limit}) entries; "
                           f"kept the first {limit}")
        elif isinstance(parser, XmlParser) and parser.warning:
            out.warning = parser.warning
        if out.warning is not None:
            self.stats.warn(f"{url}: {out.warning}")
        if out.kind == "sitemapindex":
            self.stats.sitemap_indexes += 1
        if out.kind != "robots":
            self.stats.sitemaps_read += 1
        self.stats.sources.append(SourceRead(url, out.kind or "?", entries, body.gzip))
        out.urls = entries

    def _take(self, items: Batch, out: _Outcome) -> Batch:
        """Page entries that pass the URL and host checks; child sitemaps go to ``out``."""
        stats = self.stats
        if isinstance(items, Columns) and not self.s.markdown_twins:
            origin = items.origin()
            if origin is None or self.matcher.fullmatch(origin) is None:
                joined = "\n".join(items.urls)
                if (joined.count("\n") != len(items) - 1
                        or self.all_match.fullmatch(joined) is None):
                    keep = list(map(self._passes, items.urls, repeat(out)))
                    items = items.select(keep)  # still columns, without the URLs dropped
            stats.urls_found += len(items)
            return items
        if isinstance(items, Columns):
            items = list(items)
        if out.kind in _TEXT_KINDS:  # links to more llms files are read, not crawled
            nested = [e for e in items if _LLMS_FILE.search(urlsplit(e.url).path)]
            if nested:
                out.children += [e.url for e in nested if same_host(e.url, self.hosts)]
                items = [e for e in items if not _LLMS_FILE.search(urlsplit(e.url).path)]
        if out.kind in _PAGE_KINDS:
            if out.kind == "llms" and self.s.skip_optional:
                n = len(items)
                items = [e for e in items if not e.optional]
                stats.optional_skipped += n - len(items)
            ok = self.matcher.fullmatch
            keep = [e for e in items if ok(e.url) is not None]
            if len(keep) != len(items):  # the exact (slow) checks decide the rest
                keep = [e for e in items if self._passes(e.url, out)]
            if self.s.markdown_twins:
                _twins(keep)
            stats.urls_found += len(keep)
            return keep
        # sitemapindex entries and robots.txt Sitemap: lines name more sitemaps
        here = {host_of(out.url)} | self.hosts
        for e in items:
            if not is_http_url(e.url):
                stats.invalid_urls += 1
            elif out.kind == "sitemapindex" and not same_host(e.url, here):
                stats.cross_host += 1
                stats.warn(f"{out.url}: child sitemap on another host skipped: {e.url[:200]}")
            else:
                out.children.append(e.url)
        return []

    def _passes(self, url: str, out: _Outcome) -> bool:
        """A page URL is an http(s) URL on the site's hosts; else it is counted as dropped."""
        if self.matcher.fullmatch(url) is not None:
            return True
        if not is_http_url(url):
            self.stats.drop(url, "invalid")
            return False
        if not self.s.allow_other_hosts and not same_host(url, self.hosts):
            self.stats.drop(url, "other_host")
            out.cross_host += 1
            out.other_host = out.other_host or host_of(url)
            return False
        return True

    def _set_hosts(self, hosts: Iterable[str]) -> None:
        self.hosts = {h for h in hosts if h}
        self.matcher = host_matcher(self.hosts)
        self.all_match = host_matcher(self.hosts, many=True)


def _parse_errors() -> tuple[type[BaseException], ...]:
    """What reading a document may raise; lxml's errors once lxml is in use (sitemap.py
    imports it only for the documents that need it)."""
    lxml = sys.modules.get("lxml.etree")
    return (_Fail, NotASitemap, ValueError, httpx.HTTPError, httpx.StreamError,
            *((lxml.LxmlError,) if lxml is not None else ()))


def _kind(parser: XmlParser | TextParser | _Robots) -> str | None:
    if isinstance(parser, _Robots):
        return "robots"
    return parser.kind


def _twins(entries: list[Entry]) -> None:
    """Pair each page with its .md twin; a listed twin stands for its page (one ticket)."""
    for e in entries:
        page = page_of_twin(e.url)
        if page is not None:
            e.url, e.markdown_url = page, e.url
        else:
            e.markdown_url = markdown_twin(e.url)


def _all_off_host(out: _Outcome) -> str:
    return (f"all {out.cross_host} links are on other hosts than the site's (such as "
            f"{out.other_host}); set allow_other_hosts: true for this site to crawl them")


def _connect_error(url: str, e: httpx.ConnectError) -> str:
    """Say plainly when the host name did not resolve: probing more paths cannot help."""
    host = urlsplit(url).hostname or url
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, socket.gaierror):
            return f"the host name {host!r} did not resolve ({_line(cause)}); check the URL"
        cause = cause.__cause__ or cause.__context__
    return f"cannot connect to {host}: {_line(e)}"


def _line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300] or type(e).__name__


def _sniff(head: bytes, url: str) -> str:
    """``xml``, ``robots`` or ``text`` from the first bytes; NotASitemap for anything else."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:
        raise NotASitemap("empty document")
    sample = body[:_SNIFF_BYTES]
    if b"\x00" in sample or sum(b < 9 or 13 < b < 32 for b in sample) > len(sample) // 20:
        raise NotASitemap("not a sitemap: binary data")
    if body.startswith(b"<"):
        if _HTML.match(body):
            raise NotASitemap("not a sitemap: root element is <html>")
        return "xml"
    if urlsplit(url).path.endswith("/robots.txt"):
        return "robots"
    for line in sample.splitlines():
        line = line.strip()
        if line and not line.startswith(b"#"):
            return "robots" if _ROBOTS_LINE.match(line) else "text"
    return "text"


class _Robots:
    """Just the ``Sitemap:`` lines of a robots.txt (the fetcher handles the rules)."""

    def __init__(self, source: str, max_items: int) -> None:
        self.source = source
        self.max_items = max_items
        self.items = 0
        self.capped = False
        self.done = False
        self._partial = b""

    def feed(self, data: bytes) -> list[Entry]:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()[-65536:]
        return self._lines(lines)

    def close(self) -> list[Entry]:
        tail, self._partial = self._partial, b""
        return self._lines([tail])

    def _lines(self, lines: list[bytes]) -> list[Entry]:
        out: list[Entry] = []
        for raw in lines:
            m = _SITEMAP_LINE.match(raw[:65536].decode("utf-8", "replace"))
            if m is None:
                continue
            if self.items >= self.max_items:
                self.capped = True
                break
            self.items += 1
            try:
                url = urljoin(self.source, m.group(1))
            except ValueError:
                url = m.group(1)  # counted as invalid by the caller
            out.append(Entry(url, None, None, None, self.source))
        return out


class _Body:
    """A response body as the parser needs it: decoded, gunzipped once, size-capped.

    Transport encodings are undone here rather than by httpx so that each step is
    bounded (httpx inflates a whole network read at once: ~1000x of 64 KiB).  After that,
    gzip *content* is recognised by its magic bytes alone, whatever the name or headers
    say, and decompressed exactly once.
    """

    def __init__(self, resp: httpx.Response, limit: int, stats: DiscoveryStats) -> None:
        self.resp = resp
        self.limit = limit
        self.stats = stats
        self.truncated = False
        self.gzip = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            src = decode(self._raw(), self.resp.headers.get("content-encoding", ""))
        except UnsupportedEncoding as e:
            raise _Fail(str(e)) from None
        src = gunzip_if_magic(src, on_gzip=self._saw_gzip)
        total = 0
        limit = self.limit
        try:
            for chunk in src:
                total += len(chunk)
                if total > limit:
                    self.truncated = True
                    keep = len(chunk) - (total - limit)
                    if keep > 0:
                        yield chunk[:keep]
                    return
                yield chunk
        except DecodeError as e:
            raise _Fail(_line(e)) from None
        except httpx.HTTPError as e:
            raise _Fail(f"download failed: {type(e).__name__}: {_line(e)}") from None

    def _saw_gzip(self) -> None:
        self.gzip = True

    def _raw(self) -> Iterator[bytes]:
        stats = self.stats
        total = 0
        for chunk in self.resp.iter_raw():
            stats.bytes_downloaded += len(chunk)
            total += len(chunk)
            if total > self.limit:
                self.truncated = True
                yield chunk[: len(chunk) - (total - self.limit)]
                return
            yield chunk
