"""URL keys, filters and a compact seen-set, sized for a million URLs per prepare.

``normalize_url`` makes the *dedupe key* (never what is fetched).  Sitemaps almost always
list URLs that are already canonical, so a single precompiled regex recognises those and
returns them untouched; only the rest pays for the full RFC 3986 normalisation.  For a whole
column of URLs (the sitemap parser's strict tier) ``plain_origin`` decides the same for all
of them with a few C-speed scans of the joined list, because at a million URLs the per-URL
calls were what cost.  ``UrlSet`` keeps 64-bit hashes in 16 memory-mapped tables (16 bytes
per URL at most) because a Python ``set`` of a million ints costs ~76 MB, more than
prepare's 64 MB budget; its docstring gives the collision probability and why a collision
is not silent.
"""

from __future__ import annotations

import fnmatch
import mmap
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from urllib.parse import quote, urlsplit

from sitemap_crawler.errors import UserError

_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = _UNRESERVED + _SUB_DELIMS + ":@/"
_QUERY_SAFE = _PATH_SAFE + "?"
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

# A percent-escape that is already canonical: upper-case hex and not an unreserved character
# (those are decoded by normalisation).  Unreserved: 2D 2E 30-39 41-5A 5F 61-7A 7E.
_CANON_ESC = r"%(?:[0189A-F][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF])"
_PCHAR = r"[A-Za-z0-9\-._~!$&'()*+,;=:@]"
_QCHAR = r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]"
# Already-canonical http(s) URL: lower-case ASCII host, no default/odd port, canonical
# escapes only, no fragment, no empty "?".  Dot segments are ruled out separately (cheaper:
# most URLs contain no "/." at all, so only those pay for the per-segment check).
_HOST_PORT = r"https?://[a-z0-9._\-]+(?::(?!(?:80|443)(?![0-9]))[1-9][0-9]{0,4})?"
_QUERY = rf"(?:\?(?!\Z){_QCHAR}*(?:{_CANON_ESC}{_QCHAR}*)*)?"
_PATHCHAR = r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]"
_CANONICAL = re.compile(rf"{_HOST_PORT}/{_PATHCHAR}*(?:{_CANON_ESC}{_PATHCHAR}*)*{_QUERY}")
_CANONICAL_SEGMENTS = re.compile(
    rf"{_HOST_PORT}(?:/(?!\.\.?(?:[/?]|\Z)){_PCHAR}*(?:{_CANON_ESC}{_PCHAR}*)*)+{_QUERY}"
)
# Path and query characters that never change under normalisation (no "%", "#"), and the
# newline that joins URLs: deleted by bytes.translate, 4x faster than a regex that matches them
_PLAIN_BYTES = (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                b"-._~!$&'()*+,;=:@/?\n")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_STRAY_PCT = re.compile(r"%(?![0-9A-F]{2})")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_HTTP_URL = re.compile(
    r"(?i:https?)://(?:[^\s\x00-\x1f\x7f/?#@\\]*@)?"
    r"(?:\[[0-9A-Fa-f:.]+\]|[^\s\x00-\x1f\x7f/?#@:\\\[\]]+)"
    r"(?::[0-9]{0,5})?(?:[/?#][^\s\x00-\x1f\x7f]*)?"
)
_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@]*@)?(\[[^\]/?#]*\]|[^/?#:]*)")


def _fix_escape(m: re.Match[str]) -> str:
    ch = chr(int(m.group(1), 16))
    return ch if ch in _UNRESERVED else "%" + m.group(1).upper()


def _norm_part(part: str, safe: str) -> str:
    """Canonical escapes: decode unreserved, upper-case the rest, escape what must be."""
    if "%" in part:
        part = _STRAY_PCT.sub("%25", _ESCAPE.sub(_fix_escape, part))
    return part if _is_clean(part, safe) else quote(part, safe=safe + "%")


_CLEAN_CACHE: dict[str, re.Pattern[str]] = {}


def _is_clean(part: str, safe: str) -> bool:
    rx = _CLEAN_CACHE.get(safe)
    if rx is None:
        rx = re.compile("(?:[" + re.escape(safe) + "]|%[0-9A-F]{2})*")
        _CLEAN_CACHE[safe] = rx
    return rx.fullmatch(part) is not None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 for an absolute path."""
    out: list[str] = []
    for seg in path.split("/"):
        if seg == "..":
            if len(out) > 1:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if path.endswith(("/.", "/..")):
        out.append("")
    res = "/".join(out)
    return res if res.startswith("/") else "/" + res


@lru_cache(maxsize=4096)
def _idna(host: str) -> str:
    """Lower-case host, non-ASCII labels as punycode (UTS 46 where the idna package can)."""
    host = host.lower()
    if host.isascii():
        return host
    try:
        import idna

        return idna.encode(host, uts46=True).decode("ascii")
    except Exception:
        try:
            return host.encode("idna").decode("ascii")
        except UnicodeError:
            return host


def normalize_url(url: str) -> str:
    """The dedupe key of ``url``: equal for URLs that name the same resource.

    Lower-case scheme and host (IDN as punycode), no default port, no fragment, no empty
    query, dot segments resolved, canonical percent-escapes, empty path as ``/``.  Never
    raises: a string that is not an absolute URL comes back stripped.
    """
    if _CANONICAL.fullmatch(url) is not None and (
        "/." not in url or _CANONICAL_SEGMENTS.fullmatch(url) is not None
    ):
        return url
    return _normalize_slow(url)


def plain_origin(urls: list[str]) -> str | None:
    """The origin (``http://host[:port]/``) every URL of ``urls`` starts with, when each of
    them is canonical (``normalize_url`` returns it unchanged) with nothing to decode; else
    None.

    A sitemap's URLs almost always are, and at a million URLs the per-URL calls are what
    costs: this is a few C-speed scans of the joined list instead (no ``%``, ``#``, ``/.`` or
    empty query anywhere, only unreserved, sub-delim, ``:@/?`` characters after one
    canonical origin).  Such a URL is also an http(s) URL on that origin's host.
    """
    if not urls:
        return None
    first = urls[0]
    cut = first.find("/", first.find("://") + 3)
    origin = first[: cut + 1]
    if cut < 0 or _CANONICAL.fullmatch(origin) is None:
        return None
    joined = "\n".join(urls)
    gaps = len(urls) - 1
    if (joined.count("\n") != gaps or joined.count("\n" + origin) != gaps
            or "%" in joined or "#" in joined or "/." in joined or "?\n" in joined
            or joined.endswith("?") or not joined.isascii()
            or joined.encode("ascii").translate(None, _PLAIN_BYTES)):
        return None
    return origin


def normalize_urls(urls: list[str], origin: str | None = None) -> list[str]:
    """``normalize_url`` of each; ``urls`` itself when ``origin`` (from :func:`plain_origin`,
    which is computed here if not given) says that all are canonical already."""
    if origin is None:
        origin = plain_origin(urls)
    return urls if origin is not None else list(map(normalize_url, urls))


def _normalize_slow(url: str) -> str:
    """Full normalisation; ``normalize_url`` without the fast path (tests compare both)."""
    url = url.strip()
    if not _SCHEME.match(url):
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    userinfo, _, hostport = netloc.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        host, port = hostport[: end + 1], hostport[end + 1 :]
        port = port[1:] if port.startswith(":") else ""
    else:
        host, _, port = hostport.partition(":")
    host = _idna(host)
    if port.isdigit():
        port = str(int(port))
        if _DEFAULT_PORTS.get(scheme) == port:
            port = ""
    netloc = (userinfo + "@" if userinfo else "") + host + (":" + port if port else "")
    path = _norm_part(parts.path, _PATH_SAFE)
    if "." in path:
        path = _remove_dot_segments(path)
    if not path:
        path = "/"
    query = _norm_part(parts.query, _QUERY_SAFE) if parts.query else ""
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def is_http_url(s: str) -> bool:
    """An absolute http(s) URL with a host and no whitespace or control characters."""
    return _HTTP_URL.fullmatch(s) is not None


def host_of(url: str) -> str:
    """Lower-case host name of ``url`` (punycode for IDN), or ``""`` if it has none."""
    m = _HOST.match(url)
    if m is None:
        return ""
    return _idna(m.group(1))


def _www_variant(host: str) -> str:
    return host[4:] if host.startswith("www.") else "www." + host


def same_host(url: str, hosts: set[str]) -> bool:
    """True if ``url``'s host is one of ``hosts`` (lower-case), ``www.`` variants included."""
    h = host_of(url)
    return bool(h) and (h in hosts or _www_variant(h) in hosts)


def host_matcher(hosts: Iterable[str], *, many: bool = False) -> re.Pattern[str]:
    """One regex that accepts an http(s) URL on any of ``hosts`` (or their ``www.`` twins).

    A hit implies ``is_http_url(u) and same_host(u, hosts)``; a miss decides nothing, so
    callers fall back to those two.  It exists because discovery checks a million URLs.
    With ``many`` it accepts URLs joined by newlines (a URL it accepts has none), so one
    call checks a whole list.
    """
    names = sorted({h[4:] if h.startswith("www.") else h for h in hosts if h})
    if not names:
        return re.compile(r"(?!)")
    alt = "|".join(re.escape(n) for n in names)
    one = rf"(?i:https?)://(?:www\.)?(?:{alt})(?::[0-9]{{1,5}})?(?:[/?#][^\s\x00-\x1f\x7f]*+)?"
    return re.compile(rf"(?:{one}\n)*+{one}" if many else one)


_TRANSLATED_RE = re.compile(r"\(\?s:(.*)\)\\[Zz]", re.S)


def glob_to_regex(pattern: str) -> str:
    """Regex source (unanchored) for a shell glob in which ``*`` also matches ``/``.

    fnmatch's translation, the one glob engine (``**`` is ``*``; runs of stars become atomic
    lazy groups, so backtracking stays linear however many there are).  A class with a
    reversed range such as ``[z-a]`` is empty there and the pattern could never match: that
    is a typo, so it raises ValueError instead of silently filtering nothing or everything
    (negated, ``[!z-a]``, it is fnmatch's "any one character").
    """
    m = _TRANSLATED_RE.fullmatch(fnmatch.translate(pattern))
    if m is None:  # pragma: no cover - fnmatch changed the shape of its output
        raise ValueError(f"cannot translate glob {pattern!r}")
    inner = m.group(1)
    if "(?!)" in inner:  # literal text is escaped, so this is only ever an empty class
        raise ValueError(f"{pattern!r} has a [...] class with a reversed range, which matches "
                         "nothing")
    return inner


class UrlFilter:
    """Shell-style include/exclude globs matched against the whole URL.

    ``*`` (or ``**``) matches any run of characters including ``/``, ``?`` one character,
    ``[...]`` a class (``[!...]`` negated).  Exclude wins over include; no include patterns
    means include everything.  Each list is compiled into a single regex so a million checks
    stay cheap.
    """

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        inc = self._compile(self.include, "include")
        exc = self._compile(self.exclude, "exclude")
        self._inc = inc.match if inc is not None else None
        self._exc = exc.match if exc is not None else None

    @staticmethod
    def _compile(patterns: Sequence[str], what: str) -> re.Pattern[str] | None:
        if not patterns:
            return None
        for p in patterns:
            if not isinstance(p, str) or not p:
                raise UserError(f"filters.{what}: patterns must be non-empty strings, got {p!r}")
        try:
            groups = [f"(?P<p{i}>{glob_to_regex(p)})" for i, p in enumerate(patterns)]
            return re.compile("(?s:" + "|".join(groups) + r")\Z")
        except (re.error, ValueError) as e:
            raise UserError(f"filters.{what}: bad pattern in {list(patterns)}: {e}") from None

    def check(self, url: str) -> str | None:
        """None if ``url`` is kept, else why not: ``exclude:<pattern>`` or ``include:no-match``."""
        exc = self._exc
        if exc is not None:
            m = exc(url)
            if m is not None:
                return "exclude:" + self.exclude[int(m.lastgroup[1:])]  # type: ignore[index]
        inc = self._inc
        if inc is not None and inc(url) is None:
            return "include:no-match"
        return None

    def __call__(self, url: str) -> bool:
        return self.check(url) is None


class UrlSet:
    """Membership set of URL keys in ~11-23 bytes each: linear probing over 64-bit hashes.

    Keys are reduced to Python's 64-bit ``hash()`` (SipHash, salted per process — fine, the
    set never leaves the process), kept signed in ``array('q')`` tables so that no big
    integer is made per URL.  A Python set of the strings would cost ~100 bytes per URL
    (100 MB for a million), the whole memory budget.  The price is that two different keys
    can share a hash: with n keys that happens with probability ~n²/2⁶⁵ (2.7e-8 for a
    million; 0 is kept as the empty mark, so 1 stands for both).  Such a URL is not lost
    silently: prepare counts it as a duplicate and lists it in ``excluded.jsonl``, and
    because the salt changes with every process the next prepare takes it.

    The hashes are spread over 16 tables by their top 4 bits, each doubling when 70 % full
    (96 * 2^k slots, indexed by ``h % size``): 8 bytes a slot at 35-70 % load, 12 MiB for a
    million.  Powers of two at half full took 16-32 bytes a URL, 16 MiB at a million: a
    quarter of prepare's budget (issue 22).  Probes stay short at that load (1.5-6 slots
    on average for a new key).  One table of a million would need the old and the new
    table at once while it grows; a shard needs a sixteenth of that.  Tables are anonymous
    memory maps: a table given up goes back to the system at once, where malloc would keep
    the freed tables of every growth in the heap.
    """

    __slots__ = ("_counts", "_len", "_limits", "_sizes", "_tables")
    SHARDS = 16  # chosen by h >> 60, which is -8..7 for a signed 64-bit hash: list indexes
    LOAD = 0.7  # a shard doubles past this share of its slots

    def __init__(self) -> None:
        size = 96
        self._tables = [_table(size) for _ in range(self.SHARDS)]
        self._sizes = [size] * self.SHARDS
        self._limits = [int(size * self.LOAD)] * self.SHARDS
        self._counts = [0] * self.SHARDS
        self._len = 0

    def add(self, key: str) -> bool:
        """Add ``key`` (a normalised URL); True if it was not there before."""
        h = hash(key) or 1  # 0 marks an empty slot
        s = h >> 60
        table = self._tables[s]
        size = self._sizes[s]
        i = h % size
        while v := table[i]:
            if v == h:
                return False
            i = (i + 1) % size
        table[i] = h
        self._len += 1
        self._counts[s] += 1
        if self._counts[s] > self._limits[s]:
            self._grow(s)
        return True

    def add_many(self, keys: list[str]) -> list[int]:
        """``add`` each key in turn; the positions of those that were there already (a key
        twice in ``keys`` is there already the second time)."""
        known: list[int] = []
        tables, sizes, limits, counts = self._tables, self._sizes, self._limits, self._counts
        for j, h in enumerate(map(hash, keys)):
            if not h:
                h = 1  # 0 marks an empty slot
            s = h >> 60
            table = tables[s]
            size = sizes[s]
            i = h % size
            v = table[i]
            while v:
                if v == h:
                    known.append(j)
                    break
                i = (i + 1) % size
                v = table[i]
            else:
                table[i] = h
                counts[s] += 1
                if counts[s] > limits[s]:
                    self._grow(s)
        self._len += len(keys) - len(known)
        return known

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self.holds_hash(hash(key))

    def holds_hash(self, h: int) -> bool:
        """``hash(key) in self`` for a key hashed earlier in this process."""
        h = h or 1
        s = h >> 60
        table = self._tables[s]
        size = self._sizes[s]
        i = h % size
        while True:
            v = table[i]
            if v == h:
                return True
            if not v:
                return False
            i = (i + 1) % size

    def __len__(self) -> int:
        return self._len

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables (for reports and tests)."""
        return sum(t.nbytes for t in self._tables)

    def _grow(self, s: int) -> None:
        size = self._sizes[s] * 2
        table = _table(size)
        for h in filter(None, self._tables[s]):
            i = h % size
            while table[i]:
                i = (i + 1) % size
            table[i] = h
        self._tables[s] = table
        self._sizes[s] = size
        self._limits[s] = int(size * self.LOAD)


def _table(size: int) -> memoryview:
    """``size`` zeroed signed 64-bit slots in their own memory map (see :class:`UrlSet`)."""
    return memoryview(mmap.mmap(-1, 8 * size)).cast("q")
