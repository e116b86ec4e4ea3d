"""llms.txt (llmstxt.org) and plain-text URL lists, parsed line by line as bytes arrive.

The llms.txt format is markdown: an H1 title, an optional ``>`` summary, free text, then
H2 sections whose list items are ``- [name](url): notes``; a section named ``Optional``
marks links a reader may skip.  Real files stray from it (links outside lists, numbered
lists, code blocks, bare URLs), so the parser takes every list-item link and every bare
URL line, ignores everything else, and never fails on a line.  Relative links resolve
against the file's own URL.  A plain-text sitemap (one URL per line) is the degenerate
case and comes out of the same parser.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

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
_BARE = re.compile(r"(?:<)?(https?://[^\s<>]+?)(?:>)?")
_MD_INLINE = re.compile(r"[*_`]+")


class TextParser:
    """Incremental llms.txt / URL-list parser: ``feed(bytes) -> [Entry]``, ``close()``.

    After parsing, ``kind`` is ``llms`` if markdown structure was seen, else ``text``;
    ``title`` and ``summary`` hold the H1 and the first blockquote line.
    """

    def __init__(self, source: str, max_items: int) -> None:
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

    @property
    def kind(self) -> str:
        return "llms" if self.markdown else "text"

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
        return out

    def _line(self, raw: bytes, out: list[Entry]) -> None:
        if len(raw) > _MAX_LINE:
            self.ignored_lines += 1
            return
        line = raw.decode("utf-8", "replace").strip().lstrip("\ufeff")
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
            self._heading(line)
            return
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
        self.ignored_lines += 1

    def _heading(self, line: str) -> None:
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
        self.items += 1
        out.append(Entry(url, None, None, None, self.source, title=title,
                         section=self._section, optional=self._optional))
