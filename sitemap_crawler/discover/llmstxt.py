"""llms.txt (llmstxt.org) and plain-text URL lists, parsed line by line as bytes arrive.

The llms.txt format is markdown: an H1 title, an optional ``>`` summary, free text, then
H2 sections whose list items are ``- [name](url): notes``; a section named ``Optional``
marks links a reader may skip.  Real files stray from it (links outside lists, numbered
lists, code blocks, bare URLs), so the parser takes every list-item link and every bare
URL line (and ``- Name: https://...`` items), ignores everything else, and never fails on
a line.  Relative links resolve against the file's own URL; a scheme is case-insensitive
(``Https://`` is ``https://``).  Links to more llms files (``/llms-en.txt``) are read as
llms files by discover/sources.py, not crawled as pages.  A plain-text sitemap (one URL
per line) is the degenerate case and comes out of the same parser.

**llms-full.txt** is not an index but the pages themselves, concatenated as markdown.  Its
links are the pages' own links (relative ones meant for each page, not for the file), so in
this mode only the markers that say where a page came from are URLs.  Real files mark a page
with a heading followed by a ``Source: URL`` line (Mintlify, and the files that copied it),
``URL: /path`` (then a ``Source:`` names the raw source file: ``URL:`` wins), a YAML front
matter block with ``url:``/``source:`` (quoted or not), or a heading that is itself the
page's URL.  A file named like an llms-full.txt that shows no page at all but a list of
links is an llms.txt under the other name, and read as one.  A file
named ``llms-full*.txt`` or ``llms-ctx-full*.txt`` is read this way from its first line; any
other text file switches to it at the first heading + ``Source:``/``URL:`` header.

**Markdown twins**: the proposal has a page offer its markdown at ``page.md`` (``index.html.md``
for a URL ending in ``/``).  :func:`markdown_twin` and :func:`page_of_twin` map between them.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from sitemap_crawler.discover.sitemap import Entry

_MAX_LINE = 64 * 1024  # longer lines are skipped (bounded memory on a file with no newlines)
_H1 = re.compile(r"#\s+(.+?)\s*#*\s*$")
_H2 = re.compile(r"##\s+(.+?)\s*#*\s*$")
_QUOTE = re.compile(r">\s?(.*)$")
_FENCE = re.compile(r"(```|~~~)")
_LIST = re.compile(r"(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
# [title](url), [title](<url>), [title](url "link title")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"
                   r"\(\s*(<[^<>]*>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)"
                   r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")
_BARE = re.compile(r"(?:<)?((?i:https?)://[^\s<>]+?)(?:>)?")  # schemes are case-insensitive
# "- Name: https://..." and "- Name: <https://...> - notes" (a list item naming its link)
_NAMED = re.compile(r"[^:\[\]()<>]{1,200}?:\s+<?((?i:https?)://[^\s<>]+?)>?(?:\s+[-:–—]\s.*)?")
_MD_INLINE = re.compile(r"[*_`]+")
# "Source: https://...", "URL: /docs/x", "**Source:** <https://...>" (a page's header line)
_MARKER = re.compile(r"[*_]*(source|url)[*_]*\s*:[*_]*\s*[<\"']?((?:https?://|/)[^\s<>\"']*)"
                     r"[>\"']?\s*", re.I)  # YAML front matter quotes its value
_URL_HEADING = re.compile(r"#{1,6}\s+<?(https?://[^\s<>]+|/[^\s<>]*)>?\s*")
_FULL_NAME = re.compile(r"llms(?:-ctx)?-full[^/]*\.txt$", re.I)


def markdown_twin(url: str) -> str | None:
    """The URL where the llms.txt proposal puts ``url``'s markdown; None if it is markdown."""
    parts = urlsplit(url)
    if parts.query or parts.path.endswith(".md"):
        return None
    base = url.split("#", 1)[0]
    if not parts.path:
        return base + "/index.html.md"
    return base + "index.html.md" if base.endswith("/") else base + ".md"


def page_of_twin(url: str) -> str | None:
    """The page a ``.md`` twin URL stands for (``/a/index.html.md`` -> ``/a/``); else None."""
    parts = urlsplit(url)
    if parts.query or parts.fragment or not parts.path.endswith(".md"):
        return None
    if parts.path.endswith("/index.html.md"):
        return url[: -len("index.html.md")]
    return url[:-3] if len(parts.path) > 4 else None


class TextParser:
    """Incremental llms.txt / URL-list parser: ``feed(bytes) -> [Entry]``, ``close()``.

    After parsing, ``kind`` is ``llms-full`` (see the module docstring), ``llms`` if
    markdown structure was seen, else ``text``; ``title`` and ``summary`` hold the H1 and
    the first blockquote line.
    """

    def __init__(self, source: str, max_items: int) -> None:
        self.full = _FULL_NAME.search(urlsplit(source).path) is not None
        self._heading_text: str | None = None  # the page heading whose header is being read
        self._heading_level = 0  # its level (0: front matter)
        self._page_level: int | None = None  # the level the file's pages are headed with
        self._header: dict[str, str] = {}  # its "source"/"url" marker lines so far
        self._front = False  # inside a "---" front matter block
        self.source = source
        self.max_items = max_items
        self.items = 0
        self.capped = False
        self.done = False
        self.title: str | None = None
        self.summary: str | None = None
        self.markdown = False
        self.ignored_lines = 0
        self._section: str | None = None
        self._optional = False
        self._fence: str | None = None
        self._partial = b""
        self._skipping = False  # inside an over-long line
        self._listed: list[tuple[str, str | None]] = []  # llms-full: list links, no page yet

    @property
    def kind(self) -> str:
        return "llms-full" if self.full else "llms" if self.markdown else "text"

    def feed(self, data: bytes) -> list[Entry]:
        out: list[Entry] = []
        if self.capped:
            return out
        lines = data.split(b"\n")
        lines[0] = self._partial + lines[0]
        self._partial = lines.pop()
        for raw in lines:
            if self._skipping:
                self._skipping = False
                continue
            self._line(raw, out)
            if self.capped:
                return out
        if len(self._partial) > _MAX_LINE:
            self._partial = b""
            self._skipping = True
            self.ignored_lines += 1
        return out

    def close(self) -> list[Entry]:
        out: list[Entry] = []
        if self._partial and not self._skipping and not self.capped:
            self._line(self._partial, out)
        self._partial = b""
        self._end_header(out)
        if not self.items and self._listed:  # named llms-full but an llms.txt list of links
            self.full, self.markdown = False, True
            for target, title in self._listed:
                self._emit(target, title, out)
        self._listed = []
        return out

    def _list_link(self, line: str) -> None:
        """Keep a list item's link of an llms-full.txt that has shown no page yet: a file
        with no page at all is an llms.txt under the other name (bounded: ``max_items``)."""
        m = _LIST.match(line)
        link = _LINK.match(m.group(1)) if m is not None else None
        if link is not None and len(self._listed) < self.max_items:
            target = link.group(2)
            if target.startswith("<"):
                target = target[1:-1].strip().replace(" ", "%20")
            self._listed.append((target, _MD_INLINE.sub("", link.group(1)).strip() or None))

    def _line(self, raw: bytes, out: list[Entry]) -> None:
        if len(raw) > _MAX_LINE:
            self.ignored_lines += 1
            return
        line = raw.decode("utf-8", "replace").strip().lstrip("\ufeff")
        if (self._heading_text is not None or self._front) and self._page_header(line, out):
            return
        if not line:
            return
        fence = _FENCE.match(line)
        if self._fence is not None:
            if fence is not None and fence.group(1) == self._fence:
                self._fence = None
            return
        if fence is not None:
            self._fence = fence.group(1)
            self.markdown = True
            return
        if line.startswith("#"):
            self._heading(line, out)
            return
        if self.full:
            if line == "---":
                self._front = True  # a page's front matter, or a rule between pages
                self._heading_level = 0
            elif not self.items:
                self._list_link(line)
            return  # page text: its links belong to the page, not to the crawl
        m = _QUOTE.match(line)
        if m is not None:
            self.markdown = True
            if self.summary is None and m.group(1).strip():
                self.summary = m.group(1).strip()
            return
        m = _LIST.match(line)
        body = m.group(1) if m is not None else line
        link = _LINK.match(body)
        if link is not None:
            self.markdown = True
            target = link.group(2)
            if target.startswith("<"):  # <url with spaces>
                target = target[1:-1].strip().replace(" ", "%20")
            title = _MD_INLINE.sub("", link.group(1)).strip() or None
            self._emit(target, title, out)
            return
        bare = _BARE.fullmatch(body)
        if bare is not None:
            self._emit(bare.group(1), None, out)
            return
        named = _NAMED.fullmatch(body) if m is not None else None
        if named is not None:
            self.markdown = True
            self._emit(named.group(1), body.partition(":")[0].strip() or None, out)
            return
        self.ignored_lines += 1

    def _page_header(self, line: str, out: list[Entry]) -> bool:
        """Read the lines after a heading (or inside front matter) for the page's URL.

        Returns True when the line was part of that header.
        """
        m = _MARKER.fullmatch(line)
        if m is not None:
            self._header.setdefault(m.group(1).lower(), m.group(2))
            return True
        if self._front:
            if line == "---":
                self._front = False
                self._end_header(out)
                return True
            key, colon, value = line.partition(":")
            if colon and key.strip().isidentifier():  # another front matter key
                if key.strip().lower() == "title" and value.strip():
                    self._heading_text = value.strip().strip("\"'") or None
                return True
            self._front = False  # it was a rule between pages, not front matter
        if not line and not self._header:
            return True  # blank lines between a heading and its Source: line
        self._end_header(out)
        return False

    def _end_header(self, out: list[Entry]) -> None:
        header, title = self._header, self._heading_text
        self._header, self._heading_text = {}, None
        target = header.get("url") or header.get("source")
        if target is None:
            return
        # A page's own "## Endpoint" + "URL: https://api..." is not a page: pages are
        # headed alike throughout a file, so the first page header sets the level.
        if self._page_level is None:
            self._page_level = self._heading_level
        elif self._heading_level != self._page_level:
            return
        if not self.full:
            self.full = True  # a page header: this is an llms-full.txt from here on
            self.markdown = True
        self._emit(target, title, out)

    def _heading(self, line: str, out: list[Entry]) -> None:
        self._end_header(out)
        m = _URL_HEADING.fullmatch(line)
        if m is not None and (self.full or m.group(1).startswith("http")):
            if not self.full:
                self.full = self.markdown = True
            self._emit(m.group(1), None, out)
            return
        text = line.lstrip("#").strip()
        self._heading_level = len(line) - len(line.lstrip("#"))
        self._heading_text = _MD_INLINE.sub("", text).strip() or None
        if self.full:
            return
        m = _H2.match(line)
        if m is not None:
            self.markdown = True
            self._section = m.group(1).strip()
            self._optional = self._section.lower() == "optional"
            return
        m = _H1.match(line)
        if m is not None:
            self.markdown = True
            if self.title is None:
                self.title = m.group(1).strip()
            return
        # "### sub-heading" keeps the current H2 section; "#comment" is a stray line.
        if not line.startswith("###"):
            self.ignored_lines += 1

    def _emit(self, target: str, title: str | None, out: list[Entry]) -> None:
        if self.items >= self.max_items:
            self.capped = True
            return
        if target.startswith("#"):
            url = ""  # an in-page anchor is not a page; the caller counts it as invalid
        else:
            try:
                url = urljoin(self.source, target)
            except ValueError:
                url = target
            scheme, sep, rest = url.partition("://")
            if sep and scheme.lower() in ("http", "https"):
                url = scheme.lower() + sep + rest  # Https://host/ is https://host/
        self.items += 1
        out.append(Entry(url, None, None, None, self.source, title=title,
                         section=self._section, optional=self._optional))
