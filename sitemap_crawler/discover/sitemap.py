"""Streaming parser for XML sitemaps, sitemap indexes, RSS and Atom feeds.

Feed it bytes as they arrive, get entries back; memory stays bounded whatever the file
size.  Three engines share the work, fastest first:

* a *strict tier* for ``<urlset>`` files as generators write them: ASCII, ``<loc>`` then
  optional ``<lastmod>``, ``<changefreq>``, ``<priority>`` in that order, no attributes,
  extensions, comments, CDATA or entities other than ``&amp;``.  A run of such blocks is cut
  into columns by one ``re.split`` over the decoded text and comes back as :class:`Columns`
  (parallel lists, no per-URL objects); lastmods are checked in bulk by one regex over the
  joined column.  This is where a million-URL prepare spends least: per-URL Python work,
  not XML, was most of its time.
* the *fast path*: one precompiled regex per ``<url>``/``<sitemap>`` block, used while the
  document has the shape sitemap generators write (UTF-8, no DTD, no comments or CDATA
  inside the blocks); children in any order, entities and extension elements allowed.
* lxml's pull parser, hardened (no entity resolution, no DTD loading, no network, no huge
  trees), for everything else.  The fast path hands over to it at the first block it does
  not understand by feeding lxml the saved prolog plus the rest of the stream, so the
  result is the same as if lxml had read the whole file.

Each tier hands what it does not understand to the next one, block by block, and the tests
check that all three give identical entries.  Anything with a DOCTYPE (the carrier of XXE and
entity bombs) always goes to lxml.
"""

from __future__ import annotations

import email.utils
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import repeat
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

if TYPE_CHECKING:
    from lxml import etree
else:
    etree: Any = None  # lxml, imported by _load_lxml when a document needs it

from sitemap_crawler.discover.urls import plain_origin

CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
_CHANGEFREQ_SET = frozenset(CHANGEFREQS)

# --- entries and field normalisation ----------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One URL found by discovery, with the metadata its source gave for it."""

    url: str
    lastmod: str | None
    changefreq: str | None
    priority: float | None
    source: str
    title: str | None = None
    section: str | None = None
    optional: bool = False  # listed under llms.txt's "## Optional": a reader may skip it
    markdown_url: str | None = None  # the page's .md twin, to ask for first (markdown_twins)


class Columns:
    """Entries of one run of strict ``<url>`` blocks as parallel lists (see the module doc).

    A million-URL sitemap costs a Python object per URL per step; columns let prepare and
    the host check work on whole lists.  Iterating yields :class:`Entry` objects, so any
    consumer that wants entries gets them.
    """

    __slots__ = ("_origin", "changefreqs", "lastmods", "priorities", "source", "urls")

    def __init__(self, urls: list[str], lastmods: list[str | None],
                 changefreqs: list[str | None], priorities: list[float | None],
                 source: str) -> None:
        self.urls, self.lastmods, self.source = urls, lastmods, source
        self.changefreqs, self.priorities = changefreqs, priorities
        self._origin: str | bool | None = False  # not computed yet

    def origin(self) -> str | None:
        """urls.plain_origin of the URLs (computed once: the host check and prepare ask)."""
        if self._origin is False:
            self._origin = plain_origin(self.urls)
        return self._origin  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.urls)

    def __iter__(self) -> Iterator[Entry]:
        return map(Entry, self.urls, self.lastmods, self.changefreqs, self.priorities,
                   repeat(self.source))

    def entry(self, i: int) -> Entry:
        return Entry(self.urls[i], self.lastmods[i], self.changefreqs[i], self.priorities[i],
                     self.source)

    def select(self, keep: list[bool]) -> Columns:
        """Only the entries whose flag in ``keep`` is true."""
        def pick(col: list) -> list:  # type: ignore[type-arg]
            return [v for v, k in zip(col, keep, strict=True) if k]
        return Columns(pick(self.urls), pick(self.lastmods), pick(self.changefreqs),
                       pick(self.priorities), self.source)


_W3C = re.compile(
    r"\s*(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ]\s*(\d\d):(\d\d)(?::(\d\d)(?:[.,]\d+)?)?)?)?)?"
    r"\s*(Z|z|UTC|GMT|[+-]\d\d(?::?\d\d)?)?\s*"
)
_LM_CACHE: dict[str, str | None] = {}
_fromiso = datetime.fromisoformat


def norm_lastmod(value: str | None) -> str | None:
    """W3C datetime (any precision, any offset) as ``YYYY-MM-DDTHH:MM:SSZ``; None if not one."""
    if not value:
        return None
    n = len(value)
    if ((n == 25 and value.endswith("+00:00")) or (n == 20 and value[19] == "Z")) and (
        value[4] == "-" and value[7] == "-" and value[10] == "T"
    ):
        try:
            _fromiso(value[:19])  # validates digits and ranges at C speed
        except ValueError:
            return None
        return value[:19] + "Z"
    hit = _LM_CACHE.get(value, _LM_CACHE)
    if hit is not _LM_CACHE:
        return hit  # type: ignore[return-value]
    out = _parse_w3c(value)
    if len(_LM_CACHE) >= 8192:
        _LM_CACHE.clear()
    _LM_CACHE[value] = out
    return out


def _parse_w3c(value: str) -> str | None:
    m = _W3C.fullmatch(value)
    if m is None:
        return None
    y, mo, d, hh, mi, ss, tz = m.groups()
    try:
        dt = datetime(int(y), int(mo or 1), int(d or 1), int(hh or 0), int(mi or 0),
                      int(ss or 0))
        if tz and tz[0] in "+-":
            digits = tz[1:].replace(":", "")
            off = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
            dt = dt - off if tz[0] == "+" else dt + off
    except (ValueError, OverflowError):
        return None
    return dt.isoformat(timespec="seconds") + "Z"


def norm_rfc822(value: str | None) -> str | None:
    """RSS ``pubDate`` (RFC 822/2822) as ``YYYY-MM-DDTHH:MM:SSZ``, else try W3C, else None."""
    if not value:
        return None
    try:
        dt = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return norm_lastmod(value)
    if dt.tzinfo is not None:
        try:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
        except (ValueError, OverflowError):
            return None
    return dt.isoformat(timespec="seconds") + "Z"


def norm_changefreq(value: str | None) -> str | None:
    """One of the protocol's values, lower-cased; anything else is None."""
    if not value:
        return None
    v = value.strip().lower()
    return v if v in _CHANGEFREQ_SET else None


def norm_priority(value: str | None) -> float | None:
    """A number clamped to 0..1; None if missing or not a finite number."""
    if not value:
        return None
    try:
        p = float(value.strip())
    except ValueError:
        return None
    if p != p or p in (float("inf"), float("-inf")):
        return None
    return min(1.0, max(0.0, p))


# Bounded caches for the fast path, keyed by the raw bytes from the file.
_CF_BYTES: dict[bytes, str | None] = {c.encode(): c for c in CHANGEFREQS}
_PR_BYTES: dict[bytes, float | None] = {}
_MISS = object()


def _changefreq_b(raw: bytes) -> str | None:
    v = norm_changefreq(raw.decode("utf-8", "replace"))
    if len(_CF_BYTES) < 256:
        _CF_BYTES[raw] = v
    return v


def _priority_b(raw: bytes) -> float | None:
    v = norm_priority(raw.decode("utf-8", "replace"))
    if len(_PR_BYTES) < 1024:
        _PR_BYTES[raw] = v
    return v


# --- the fast path ------------------------------------------------------------------------

class NotASitemap(Exception):
    """The document is not a sitemap or feed; the message is one line saying what it is."""


_HEAD = re.compile(
    rb"(?:\xef\xbb\xbf)?[ \t\r\n]*"
    rb"(?:<\?xml[ \t\r\n](?P<decl>[^<>?]*)\?>)?"
    rb"(?:[ \t\r\n]*(?:<\?[A-Za-z][^<>?]*\?>|<!--(?:[^-]|-(?!-))*-->))*"
    rb"[ \t\r\n]*<(?P<root>urlset|sitemapindex)(?:[ \t\r\n][^<>]*)?(?<!/)>"
)
_ENCODING = re.compile(rb"""encoding[ \t\r\n]*=[ \t\r\n]*["']([A-Za-z0-9._\-]+)["']""")
_WS = rb"[ \t\r\n]*+"  # possessive (*+, ++): no backtracking, ~10% faster
_TEXT = rb"[^<&]*+(?:&(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});[^<&]*+)*+"
# A lastmod already in UTC at second precision: captured alone so the common case needs
# no parsing at all (days 29-31 are still checked against the calendar).
_UTC_STAMP = (
    rb"(?P<lmz>(?!0000)\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)"
    rb"(?:\.\d{1,9})?(?:Z|[+-]00:00)"
)
_QNAME = rb"[A-Za-z_][\w.\-]*:[\w.\-]+"
_ATTRS = rb"(?:[ \t\r\n][^<>]*)?"
# A prefixed extension element (image:image, xhtml:link, news:news ...), two levels deep.
_EXT = (
    rb"(?P<e1>" + _QNAME + rb")" + _ATTRS + rb"(?:/>|>[^<]*(?:<(?P<e2>" + _QNAME + rb")"
    + _ATTRS + rb"(?:/>|>[^<]*</(?P=e2)>)[^<]*)*</(?P=e1)>)"
)
_HANDOVER_AT = 1 << 20  # an unmatched tail this long cannot be a sitemap block: use lxml


def _block(item: bytes, pages: bool) -> re.Pattern[bytes]:
    """Regex for one ``<url>``/``<sitemap>`` block; children in any order, extensions ok."""
    alts = [
        rb"loc>(?P<loc>" + _TEXT + rb")</loc>",
        rb"lastmod>(?:" + _UTC_STAMP + rb"|(?P<lm>" + _TEXT + rb"))</lastmod>",
    ]
    if pages:
        alts += [rb"changefreq>(?P<cf>" + _TEXT + rb")</changefreq>",
                 rb"priority>(?P<pr>" + _TEXT + rb")</priority>"]
    # Starts with a literal so a search skips ahead at C speed (a leading blank run made
    # a long run of blanks quadratic); the blanks after a block belong to it.
    return re.compile(
        b"<" + item + b">(?:" + _WS + b"<(?:" + b"|".join(alts) + b"|" + _EXT + b"))*"
        + _WS + b"</" + item + b">" + _WS
    )


_BLOCKS = {"urlset": (_block(b"url", True), b"</url>"),
           "sitemapindex": (_block(b"sitemap", False), b"</sitemap>")}
_END = {k: re.compile(_WS + b"</" + k.encode() + b">" + _WS) for k in _BLOCKS}


# --- the strict tier ---------------------------------------------------------------------

_SWS = r"[ \t\r\n]*+"
# Text of a field; a <loc> must not start or end with blanks (those go to the fast path,
# which strips them) and must not be empty.
_STRICT_TEXT = r"([^<]*+)"
_STRICT_URL = (
    rf"<url>{_SWS}<loc>(?=[^<\s])([^<]*+)(?<!\s)</loc>{_SWS}"
    rf"(?:<lastmod>{_STRICT_TEXT}</lastmod>{_SWS})?"
    rf"(?:<changefreq>{_STRICT_TEXT}</changefreq>{_SWS})?"
    rf"(?:<priority>{_STRICT_TEXT}</priority>{_SWS})?</url>{_SWS}"
)
_STRICT = re.compile(_STRICT_URL)
_STRICT_RUN = re.compile(rf"(?:{_STRICT_URL})+")
_STRICT_GROUPS = 4  # re.split returns: junk, loc, lastmod, changefreq, priority, junk, ...
# A lastmod that norm_lastmod would return unchanged: UTC, second precision, a real date
# (year 0001-9999, day within the month, 29 February only in leap years).
# [0-9], not \d: \d is every Unicode digit, and slower (the text here is ASCII anyway).
_MONTH_DAY = (r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
              r"|(?:0[13578]|1[02])-31)")
_LEAP_DAY = (r"(?:[0-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
             r"-02-29")
_NORMAL_STAMP = (rf"(?!0000)(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_DAY})"
                 r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z")
_NORMAL_STAMPS = re.compile(rf"(?:{_NORMAL_STAMP}\n)*+{_NORMAL_STAMP}")
_CF_STR: dict[str | None, str | None] = {None: None, **{c: c for c in CHANGEFREQS}}
_PR_STR: dict[str | None, float | None] = {None: None}


def _norm_column(values: list, table: dict, norm: object, limit: int) -> list:  # type: ignore[type-arg]
    """``values`` mapped through the cache ``table``; misses are normalised and cached."""
    try:
        return list(map(table.__getitem__, values))  # a column of known values: one C loop
    except KeyError:
        out = list(map(table.get, values, repeat(_MISS)))
        for i, v in enumerate(out):
            if v is _MISS:
                raw = values[i]
                out[i] = v = norm(raw)  # type: ignore[operator]
                if len(table) < limit:
                    table[raw] = v
    return out


# The first block's layout (its tags and the blanks between them) -> a regex of that layout
# alone, or None where it did not hold for a whole run (see _template)
_TEMPLATES: dict[tuple[str, ...], re.Pattern[str] | None] = {}
_LOC = r"(?=[^<\s])([^<]*+)(?<!\s)"  # as in _STRICT_URL


def _template(text: str) -> tuple[tuple[str, ...], re.Pattern[str] | None, tuple[int, ...]]:
    """The layout of the first strict block of ``text``, its regex (None: not worth
    trying) and which of the four fields it has.

    Generators write every block alike, and a regex with the first block's tags and blanks
    as literals splits a run in half the time of ``_STRICT`` (0.36 against 0.67 s for a
    million URLs, issue 22).  A block laid out otherwise leaves text between the matches,
    and the run is split by ``_STRICT`` as before."""
    m = _STRICT.match(text)
    if m is None:
        return (), None, ()
    fields = tuple(g for g in range(1, _STRICT_GROUPS + 1) if m.start(g) >= 0)
    ends = (m.start(), *(x for g in fields for x in (m.start(g), m.end(g))))
    layout = tuple(text[ends[i]:ends[i + 1]] for i in range(0, len(ends) - 1, 2))
    layout += (text[m.end(fields[-1]):m.end()].rstrip(" \t\r\n"),)
    if layout not in _TEMPLATES:
        if len(_TEMPLATES) >= 64:
            _TEMPLATES.clear()
        pattern = re.escape(layout[0]) + _LOC + "".join(
            re.escape(lit) + _STRICT_TEXT for lit in layout[1:-1]) + re.escape(layout[-1])
        _TEMPLATES[layout] = re.compile(pattern + _SWS)
    return layout, _TEMPLATES[layout], fields


def _strict_columns(text: str, source: str) -> tuple[Columns | None, int]:
    """Columns for the run of strict ``<url>`` blocks at the start of ``text``, and how many
    characters they take (0: the first block is not strict)."""
    layout, template, fields = _template(text)
    if template is not None:
        parts = template.split(text)
        step = len(fields) + 1
        if not any(parts[0::step]):  # every block laid out as the first
            n = len(parts) // step
            columns: list[list[str | None]] = [[None] * n for _ in range(_STRICT_GROUPS)]
            for k, g in enumerate(fields, 1):
                columns[g - 1] = parts[k::step]  # type: ignore[assignment]
            return _columns(*columns, source), len(text)
        _TEMPLATES[layout] = None  # this layout does not hold here: not tried again
    parts = _STRICT.split(text)
    step = _STRICT_GROUPS + 1
    junk = parts[0::step]
    if not any(junk):
        used = len(text)
    else:  # a block the strict tier does not take: stop before it
        n = next(i for i, j in enumerate(junk) if j)
        if n == 0:
            return None, 0
        m = _STRICT_RUN.match(text)
        assert m is not None
        used = m.end()
        parts = parts[: n * step]
    return _columns(parts[1::step], parts[2::step], parts[3::step], parts[4::step],
                    source), used


def _columns(urls: list[str], lastmods: list[str | None], changefreqs: list[str | None],
             priorities: list[str | None], source: str) -> Columns:
    """The strict tier's raw fields, normalised, as :class:`Columns`."""
    if None in lastmods or _NORMAL_STAMPS.fullmatch("\n".join(lastmods)) is None:  # type: ignore[arg-type]
        lastmods = list(map(norm_lastmod, lastmods))
    return Columns(urls, lastmods, _norm_column(changefreqs, _CF_STR, norm_changefreq, 256),
                   _norm_column(priorities, _PR_STR, norm_priority, 1024), source)


# --- the lxml path ------------------------------------------------------------------------

# root local name -> (kind, local name of the items)
_ROOTS = {"urlset": ("urlset", "url"), "sitemapindex": ("sitemapindex", "sitemap"),
          "feed": ("atom", "entry"), "rss": ("rss", "item"), "RDF": ("rss", "item")}
_FIELDS = {"urlset": ("loc", "lastmod", "changefreq", "priority"),
           "sitemapindex": ("loc", "lastmod"), "rss": ("link", "guid", "pubDate", "title"),
           "atom": ("link", "updated", "published", "title")}
_DC_DATE = "{http://purl.org/dc/elements/1.1/}date"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_RSS1 = "{http://purl.org/rss/1.0/}"  # RSS 1.0 items live here, not in the root's RDF namespace
_XML_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*")
_SNIFF_LIMIT = 1 << 20  # the root element must start within the first MiB
_SWEEP_EVERY = 1 << 16  # bytes fed between sweeps of stray elements


def _load_lxml() -> None:
    """Import lxml (4 MB) only when a document needs it: most sitemaps never get here."""
    global etree
    if etree is None:
        from lxml import etree as lxml_etree

        etree = lxml_etree


def _hardened(**kw: object) -> etree.XMLPullParser:
    """No entity expansion, no DTD or network access, libxml2's size limits kept on."""
    return etree.XMLPullParser(resolve_entities=False, no_network=True, load_dtd=False,
                               huge_tree=False, remove_comments=True, remove_pis=True, **kw)


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


class _Lxml:
    """lxml pull parsing with a tag filter (near bare-lxml speed) and bounded memory.

    Stage 1 parses only until the root element starts, to learn which item tag to ask
    lxml for.  Stage 2 re-feeds those bytes to a parser filtered on root + item: each item
    is read from its direct children and cleared.  Elements that are not items never
    produce events, so every ``_SWEEP_EVERY`` bytes the open path is swept of finished
    children: a document of a million junk elements cannot grow the tree.
    """

    def __init__(self, owner: XmlParser) -> None:
        _load_lxml()
        self.o = owner
        self.sniff: etree.XMLPullParser | None = _hardened(events=("start",))
        self.seen: list[bytes] = []
        self.seen_len = 0
        self.xp: etree.XMLPullParser | None = None
        self.root: etree._Element | None = None
        self.item_tag = ""
        self.item_tags: frozenset[str] = frozenset()
        self.ns = ""
        self.fields: dict[str, str] = {}
        self._fields_ns: dict[str, dict[str, str]] = {}
        self.since_sweep = 0
        self.prolog: bytes | None = b""  # None once the document's first bytes were seen
        self.utf8: _Utf8Repair | None = None

    def _start(self, data: bytes) -> bytes:
        """The first bytes, made acceptable to libxml2 and checked for their encoding.

        Blanks (and a BOM) before ``<?xml`` are dropped: libxml2 rejects the declaration
        anywhere but at byte 0, and real sitemaps come with a blank line first.  A document
        in UTF-8 (declared, or by default) is fed through :class:`_Utf8Repair`.
        """
        buf = self.prolog + data  # type: ignore[operator]
        body = buf[_XML_START.match(buf).end():]  # type: ignore[union-attr]
        if not body or (body.startswith(b"<?") and b"?>" not in body and len(body) < 1024):
            self.prolog = buf
            return b""
        self.prolog = None
        decl = body[: body.find(b"?>")] if body.startswith(b"<?xml") else b""
        enc = _ENCODING.search(decl)
        if body.startswith(b"<") and (enc is None or enc.group(1).lower() in (b"utf-8",
                                                                               b"utf8")):
            self.utf8 = _Utf8Repair()
        return body

    def feed(self, data: bytes, out: list[Entry]) -> None:
        if self.prolog is not None:
            data = self._start(data)
            if not data:
                return
        if self.utf8 is not None:
            data = self.utf8.feed(data)
            self.o.bad_utf8 = self.utf8.replaced
        self._feed(data, out)

    def _feed(self, data: bytes, out: list[Entry]) -> None:
        try:
            if self.xp is None:
                self._sniff(data, out)
                return
            # Slices, so that no single feed can build more than _SWEEP_EVERY bytes of tree.
            for i in range(0, len(data), _SWEEP_EVERY):
                self.xp.feed(data[i : i + _SWEEP_EVERY])
                self._events(out)
                if self.o.done:
                    return
                self.since_sweep += min(_SWEEP_EVERY, len(data) - i)
                if self.since_sweep >= _SWEEP_EVERY:
                    self._sweep()
        except etree.LxmlError as e:
            self._error(e, out)

    def close(self, out: list[Entry]) -> None:
        if self.prolog:
            self.prolog, rest = None, self.prolog
            self.feed(rest, out)
        if self.utf8 is not None and self.utf8.carry:
            self._feed(self.utf8.flush(), out)
            self.o.bad_utf8 = self.utf8.replaced
        if self.o.done:
            return
        try:
            if self.xp is None:
                assert self.sniff is not None
                self.sniff.close()
                self._sniffed(out)
            if self.xp is not None and not self.o.done:
                self.xp.close()
                self._events(out)
        except etree.LxmlError as e:
            self._error(e, out)
            return
        if self.o.kind is None:
            raise NotASitemap("not a sitemap: no XML root element")

    def _sniff(self, data: bytes, out: list[Entry]) -> None:
        assert self.sniff is not None
        self.seen.append(data)
        self.seen_len += len(data)
        error: etree.LxmlError | None = None
        try:
            self.sniff.feed(data)
        except etree.LxmlError as e:
            error = e  # the root may have started before it: look first
        self._sniffed(out)
        if error is not None and self.xp is None:
            raise error
        if self.xp is None and self.seen_len > _SNIFF_LIMIT:
            raise NotASitemap("not a sitemap: no root element in the first MiB")

    def _sniffed(self, out: list[Entry]) -> None:
        assert self.sniff is not None
        for _ev, el in self.sniff.read_events():
            tag = el.tag if isinstance(el.tag, str) else ""
            local = tag.rpartition("}")[2]
            if local not in _ROOTS:
                raise NotASitemap(f"not a sitemap: root element is <{local or '?'}>")
            kind, item = _ROOTS[local]
            self.o.kind = kind
            self.ns = tag[: tag.index("}") + 1] if tag.startswith("{") else ""
            # RSS 2.0 has no namespace; RSS 1.0 items are in the RSS 1.0 namespace.
            field_ns = {"rss": "", "RDF": _RSS1}.get(local, self.ns)
            self.item_tag = field_ns + item
            # An item that resets the default namespace (<url xmlns="">) is still an item.
            self.item_tags = frozenset((self.item_tag, item))
            self.fields = self._fields_for(self.item_tag)
            self.sniff = None
            self.xp = _hardened(events=("start", "end"), tag=[tag, *self.item_tags])
            seen, self.seen = self.seen, []
            for chunk in seen:
                self._feed(chunk, out)
            return

    def _fields_for(self, item_tag: str) -> dict[str, str]:
        """Field tags of an item: its children in its own namespace (plus ``dc:date``)."""
        ns = item_tag[: item_tag.index("}") + 1] if item_tag.startswith("{") else ""
        fields = self._fields_ns.get(ns)
        if fields is None:
            fields = {ns + name: name for name in _FIELDS[self.o.kind]}  # type: ignore[index]
            fields[_DC_DATE] = "date"
            self._fields_ns[ns] = fields
        return fields

    def _error(self, e: etree.LxmlError, out: list[Entry]) -> None:
        if self.xp is not None:
            self._events(out)
        self.o._finish()
        if self.o.kind is None:
            raise NotASitemap(f"not a sitemap: not well-formed XML ({_one_line(e)})")
        self.o.malformed = (f"malformed XML ({_one_line(e)}); kept {self.o.items} entries "
                          "from before it")

    def _events(self, out: list[Entry]) -> None:
        assert self.xp is not None
        item_tags = self.item_tags
        for ev, el in self.xp.read_events():
            if ev == "start":
                if self.root is None:
                    self.root = el
                continue
            if el.tag not in item_tags or self.o.done:
                continue
            if self.o.items >= self.o.max_items:
                self.o.capped = True
                self.o._finish()
                return
            out.append(self._entry(el))
            self.o.items += 1
            el.clear(keep_tail=False)
            parent = el.getparent()
            while el.getprevious() is not None:
                del parent[0]

    def _sweep(self) -> None:
        """Drop finished children along the open path (root -> last child -> ...).

        In an item that is still open only the fields read later survive, and only a few.
        """
        self.since_sweep = 0
        node = self.root
        while node is not None and len(node):
            if node.tag in self.item_tags:
                fields = self._fields_for(node.tag)
                for child in list(node)[:-1]:
                    if child.tag not in fields:
                        node.remove(child)
                if len(node) > 64:
                    del node[:-1]
            elif len(node) > 1:
                del node[:-1]
            node = node[-1]

    def _absolute(self, href: str, *nodes: etree._Element) -> str:
        """An Atom href resolved against the ``xml:base`` of the feed, entry and link (each
        relative to the one above), starting from the feed's own URL (RFC 4287 sec. 4.2.7)."""
        if _ABSOLUTE.match(href):
            return href
        base = self.o.source
        for node in (self.root, *nodes):
            b = node.get(_XML_BASE) if node is not None else None
            if b:
                base = urljoin(base, b.strip())
        try:
            return urljoin(base, href)
        except ValueError:
            return href  # counted as invalid by the caller

    def _entry(self, item: etree._Element) -> Entry:
        fields = self.fields if item.tag == self.item_tag else self._fields_for(item.tag)
        f: dict[str, str] = {}
        for c in item:
            name = fields.get(c.tag)  # type: ignore[call-overload]
            if name is None:
                continue
            if name == "link" and self.o.kind == "atom":
                href, rel = c.get("href"), c.get("rel")
                if href and rel in (None, "alternate") and "link" not in f:
                    f["link"] = self._absolute(href.strip(), item, c)
            elif name not in f or name != "date":
                f[name] = c.text or ""
        kind, src = self.o.kind, self.o.source
        if kind in ("urlset", "sitemapindex"):
            return Entry(f.get("loc", "").strip(), norm_lastmod(f.get("lastmod")),
                         norm_changefreq(f.get("changefreq")), norm_priority(f.get("priority")),
                         src)
        title = (f.get("title") or "").strip() or None
        if kind == "rss":
            url = f.get("link", "").strip() or f.get("guid", "").strip()
            lastmod = norm_rfc822(f.get("pubDate")) or norm_lastmod(f.get("date"))
            return Entry(url, lastmod, None, None, src, title=title)
        lastmod = norm_lastmod(f.get("updated")) or norm_lastmod(f.get("published"))
        return Entry(f.get("link", "").strip(), lastmod, None, None, src, title=title)


class _Utf8Repair:
    """Bytes in, valid UTF-8 out: each invalid sequence becomes U+FFFD and is counted.

    libxml2 stops at the first invalid byte ("Invalid bytes in character encoding"); one
    bad byte in a WordPress feed then cost every item after it.  Decoding with replacement
    keeps them, as other sitemap readers do.  Valid chunks pass through after one strict
    decode (C speed); a sequence cut by a chunk boundary is carried to the next chunk.
    """

    def __init__(self) -> None:
        self.carry = b""
        self.replaced = 0

    def feed(self, data: bytes) -> bytes:
        buf = self.carry + data if self.carry else data
        cut = len(buf)
        i = cut - 1
        while i >= 0 and cut - i <= 3 and buf[i] & 0xC0 == 0x80:
            i -= 1
        if i >= 0 and buf[i] >= 0xC0:
            need = 2 if buf[i] < 0xE0 else 3 if buf[i] < 0xF0 else 4
            if cut - i < need:
                cut = i
        self.carry = buf[cut:]
        return self._clean(buf[:cut] if cut < len(buf) else buf)

    def flush(self) -> bytes:
        tail, self.carry = self.carry, b""
        return self._clean(tail)

    def _clean(self, buf: bytes) -> bytes:
        try:
            buf.decode()
            return buf
        except UnicodeDecodeError:
            text = buf.decode("utf-8", "replace")
            self.replaced += text.count("\ufffd") - buf.count(b"\xef\xbf\xbd")
            return text.encode()


# --- the parser --------------------------------------------------------------------------


class XmlParser:
    """Incremental parser: ``feed(bytes) -> [Entry]``, then ``close() -> [Entry]``.

    ``kind`` becomes ``urlset``, ``sitemapindex``, ``rss`` or ``atom`` once the root is
    known (for ``sitemapindex`` the entries are child sitemaps).  Raises
    :class:`NotASitemap` for any other root or for bytes that are not XML.  A syntax
    error after the root keeps what came before and sets ``warning``.  More than
    ``max_items`` entries stops the parse and sets ``capped``.  ``fast=False`` forces lxml,
    ``strict=False`` skips the strict tier (tests and benchmarks compare the three).

    ``feed`` and ``close`` return a list of entries, or :class:`Columns` when all of them
    came from the strict tier; either iterates as entries.
    """

    def __init__(self, source: str, max_items: int, *, fast: bool = True,
                 strict: bool = True) -> None:
        self.source = source
        self.max_items = max_items
        self.allow_fast = fast
        self.allow_strict = fast and strict
        self.strict_items = 0
        self._cols: Columns | None = None
        self.kind: str | None = None
        self.malformed: str | None = None
        self.bad_utf8 = 0  # invalid UTF-8 sequences replaced (the items around them kept)
        self.capped = False
        self.items = 0
        self.fast_items = 0
        self._mode = "head"  # head -> fast -> lxml -> done
        self._head = b""
        self._buf = b""
        self._lxml: _Lxml | None = None

    @property
    def done(self) -> bool:
        return self._mode == "done"

    @property
    def warning(self) -> str | None:
        """What was wrong with a document that was still used, in one line, or None."""
        notes = [self.malformed] if self.malformed else []
        if self.bad_utf8:
            notes.append(f"{self.bad_utf8} invalid UTF-8 sequence(s) replaced with U+FFFD")
        return "; ".join(notes) or None

    def feed(self, data: bytes) -> list[Entry] | Columns:
        out: list[Entry] = []
        mode = self._mode
        if mode == "fast":
            self._fast(data, out)
        elif mode == "lxml":
            self._lxml.feed(data, out)  # type: ignore[union-attr]
        elif mode == "head":
            self._buf += data
            self._try_head(out, final=False)
        return self._result(out) if self._cols is not None else out

    def _result(self, out: list[Entry]) -> list[Entry] | Columns:
        """The strict tier's columns (which came first in the stream) and ``out``."""
        cols, self._cols = self._cols, None
        if cols is None:
            return out
        return [*cols, *out] if out else cols

    def close(self) -> list[Entry] | Columns:
        out: list[Entry] = []
        if self._mode == "head":
            self._try_head(out, final=True)
        if self._mode == "fast":
            if _END[self.kind].fullmatch(self._buf) is None:  # type: ignore[index]
                self._to_lxml(self._buf, out)
            else:
                self._finish()
        if self._mode == "lxml":
            self._lxml.close(out)  # type: ignore[union-attr]
        self._finish()
        return self._result(out)

    def _finish(self) -> None:
        self._mode = "done"
        self._buf = b""
        self._lxml = None

    def _try_head(self, out: list[Entry], final: bool) -> None:
        buf = self._buf
        m = _HEAD.match(buf) if self.allow_fast else None
        if m is not None:
            enc = _ENCODING.search(m.group("decl") or b"")
            if enc is None or enc.group(1).lower() in (b"utf-8", b"utf8"):
                self.kind = m.group("root").decode()
                self._head = buf[: m.end()]
                self._buf = b""
                self._mode = "fast"
                self._fast(buf[m.end() :], out)
                return
        if final or m is not None or not self.allow_fast or len(buf) >= 4096:
            self._buf = b""
            self._mode = "lxml"
            self._lxml = _Lxml(self)
            self._lxml.feed(buf, out)

    def _fast(self, data: bytes, out: list[Entry]) -> None:
        buf = (self._buf + data if self._buf else data).lstrip(b" \t\r\n")
        if self.allow_strict and self.kind == "urlset":
            buf = self._strict(buf)
            if self.done:
                return
        block, end_tag = _BLOCKS[self.kind]  # type: ignore[index]
        source = self.source
        index = self.kind == "sitemapindex"
        room = self.max_items - self.items
        append = out.append
        pos = n = 0
        gi = block.groupindex
        groups = (gi["loc"], gi["lmz"], gi["lm"], gi.get("cf", 0), gi.get("pr", 0))
        cf_cache, pr_cache, miss = _CF_BYTES, _PR_BYTES, _MISS
        cfv: str | object | None = None
        prv: float | object | None = None
        for m in block.finditer(buf):
            if m.start() != pos:
                break
            if n >= room:
                self.capped = True
                break
            loc, lmz, lm, cf, pr = m.group(*groups)
            if loc is None:
                url = ""
            else:
                try:
                    url = loc.decode()
                except UnicodeDecodeError:
                    break  # let lxml report what invalid UTF-8 means
                if b"&" in loc:
                    url = html.unescape(url)
                url = url.strip()
            if lmz is not None:
                lastmod = lmz.decode()
                # The regex checked the ranges; only the 29th-31st need the calendar.
                lastmod = lastmod + "Z" if lastmod[8:10] <= "28" else norm_lastmod(lastmod + "Z")
            elif lm is not None:
                lastmod = norm_lastmod(lm.decode("utf-8", "replace"))
            else:
                lastmod = None
            if index:
                append(Entry(url, lastmod, None, None, source))
            else:
                if cf is None:
                    cfv = None
                elif (cfv := cf_cache.get(cf, miss)) is miss:
                    cfv = _changefreq_b(cf)
                if pr is None:
                    prv = None
                elif (prv := pr_cache.get(pr, miss)) is miss:
                    prv = _priority_b(pr)
                append(Entry(url, lastmod, cfv, prv, source))  # type: ignore[arg-type]
            n += 1
            pos = m.end()
        self.items += n
        self.fast_items += n
        if self.capped:
            self._finish()
            return
        tail = buf[pos:]
        if end_tag in tail or len(tail) > _HANDOVER_AT:
            self._to_lxml(tail, out)
        else:
            self._buf = tail

    def _strict(self, buf: bytes) -> bytes:
        """Take the strict blocks at the start of ``buf`` into ``self._cols``; the rest."""
        cut = buf.rfind(b"</url>")
        if cut < 0 or not buf.startswith(b"<url>"):
            return buf
        region = buf[: cut + 6]
        if not region.isascii():
            return buf
        text = region.decode("ascii")
        amp = "&" in text
        if amp:
            if text.count("&") != text.count("&amp;"):
                return buf  # other entities: the fast path decodes them
            text = text.replace("&amp;", "&")
        cols, used = _strict_columns(text, self.source)
        if cols is None or (amp and used < len(text)):
            return buf  # offsets moved with the &amp;s: let the fast path do it all
        room = self.max_items - self.items
        if len(cols) > room:
            cols = cols.select([True] * room + [False] * (len(cols) - room))
            self.capped = True
        self.items += len(cols)
        self.strict_items += len(cols)
        self._cols = cols
        if self.capped:
            self._finish()
            return b""
        return buf[len(region) if used == len(text) else used :]

    def _to_lxml(self, tail: bytes, out: list[Entry]) -> None:
        """Give lxml the saved prolog and the rest: the blocks read so far are skipped."""
        self._buf = b""
        self._mode = "lxml"
        self._lxml = _Lxml(self)
        self._lxml.feed(self._head, out)
        if self._mode == "lxml":
            self._lxml.feed(tail, out)
