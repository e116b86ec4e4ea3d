"""Where a page's markdown file goes, and writing it only when it changed.

Paths are a pure function of the URL (and the template), so workers on different machines
agree without talking to each other.  Names must be safe on Windows/SMB shares as well as on
Linux: reserved characters and device names are neutralised, components are kept under
255 bytes, and no URL - whatever its ``..``, ``%2e%2e`` or ``%2f`` - can name a file outside
the output directory (checked on the resolved path, not just assumed).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from datetime import date
from itertools import chain
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from sitemap_crawler.errors import CrawlError
from sitemap_crawler.frontmatter import read_front_matter
from sitemap_crawler.protocol.fsutil import atomic_write

MAX_COMPONENT_BYTES = 255  # NAME_MAX on ext4/xfs/NTFS(UTF-16 units)/SMB: the common floor
# A file name must leave room for fsutil.tmp_name's ".tmp-" + ".<pid>.<8 hex>" (<= 22 bytes),
# or atomic_write fails with ENAMETOOLONG on exactly the names that are near the limit.
MAX_FILE_NAME_BYTES = MAX_COMPONENT_BYTES - 32
DEFAULT_MAX_PATH_BYTES = 240  # relative path; beyond it the URL path is replaced by a hash
_PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".php", ".asp", ".aspx", ".jsp",
                  ".md", ".markdown")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSAFE_RE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DOT_SEGMENTS = {".", "%2e"}
_GONE = {errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP}  # pathlib's "not there"
_DOTDOT_SEGMENTS = {"..", ".%2e", "%2e.", "%2e%2e"}
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{d}{n}" for d in ("COM", "LPT") for n in [*"0123456789", "¹", "²", "³"]]
)


def short_hash(text: str, n: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def _decode_segment(segment: str) -> str:
    """Percent-decode for readability; bytes that are not UTF-8 stay percent-encoded."""
    if "%" not in segment:
        return segment
    raw = unquote_to_bytes(segment).decode("utf-8", "surrogateescape")
    return "".join(f"%{ord(c) - 0xDC00:02X}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in raw)


def safe_component(name: str) -> str:
    """One path component that Windows, SMB and POSIX all accept, never ``.``/``..``/empty.

    Reserved characters and control characters become ``_``, trailing dots and spaces are
    removed (Windows drops them silently, which would merge names), device names such as
    ``CON`` or ``com1.txt`` get a ``_`` prefix, and the name is cut to 255 UTF-8 bytes
    (file names to :data:`MAX_FILE_NAME_BYTES`, done by the caller).
    """
    name = _UNSAFE_RE.sub("_", name).rstrip(". ")
    if not name:
        return "_"
    if name.split(".", 1)[0].rstrip(" ").upper() in _RESERVED:
        name = "_" + name
    return fit_component(name)


def fit_component(name: str, limit: int = MAX_COMPONENT_BYTES) -> str:
    """``name`` if it fits in ``limit`` UTF-8 bytes, else a cut name + hash of the full one.

    The extension (``.md``) is kept; the cut never splits a multi-byte character.
    """
    encoded = name.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or len(ext.encode()) > 16:
        stem, ext = name, ""
    tail = f"~{short_hash(name, 12)}" + (f".{ext}" if ext else "")
    room = limit - len(tail.encode())
    cut = stem.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore").rstrip(". ")
    return cut + tail


def _path_segments(path: str) -> list[str]:
    """URL path → decoded, safe segments; dot segments are resolved and clamped at the root.

    Splitting happens before decoding, so ``%2f`` stays inside its segment (it becomes
    ``_``), and ``%2e%2e`` counts as ``..`` exactly as browsers treat it.
    """
    out: list[str] = []
    for seg in path.split("/"):
        low = seg.lower()
        if low in _DOTDOT_SEGMENTS:
            if out:
                out.pop()
            continue
        if not seg or low in _DOT_SEGMENTS:
            continue
        out.append(safe_component(_decode_segment(seg)))
    return out


class OutputLayout:
    """Maps URLs to markdown files under ``base_dir`` using a path template.

    Template fields: ``{domain}`` (host, ``_port`` appended for non-default ports),
    ``{path}`` (URL path without the leading slash; ``index`` for directory URLs; page
    suffixes such as ``.html`` removed; a query becomes ``__q-<hash>``), ``{date}`` (fixed
    when the layout is made, so one run agrees with itself) and ``{site}``.
    """

    def __init__(
        self,
        base_dir: Path,
        template: str = "{domain}/{path}.md",
        site: str = "",
        *,
        today: date | None = None,
        max_path_bytes: int = DEFAULT_MAX_PATH_BYTES,
        tmp_dir: Path | None = None,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.template = template
        self.site = site
        self.date = (today or date.today()).isoformat()
        self.max_path_bytes = max_path_bytes
        self.tmp_dir = tmp_dir  # where atomic writes stage their files (same file system)
        self._base_resolved = self.base_dir.resolve()

    # -- mapping ------------------------------------------------------------------------------

    def domain_of(self, url: str) -> str:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:  # "host:99999" or "host:abc": keep it visible, but safe
            port = None
            host = parts.netloc.rpartition("@")[2].lower()
        if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
            host = f"{host}_{port}"
        return safe_component(host)

    def stem_of(self, url: str) -> str:
        """The ``{path}`` value: readable relative path, no extension."""
        parts = urlsplit(url.strip())
        segments = _path_segments(parts.path)
        if not segments or parts.path.endswith("/") or _is_dir_ending(parts.path):
            segments.append("index")
        else:
            last = segments[-1]
            low = last.lower()
            for suffix in _PAGE_SUFFIXES:
                if low.endswith(suffix) and len(last) > len(suffix):
                    segments[-1] = safe_component(last[: -len(suffix)])
                    break
        if parts.query:
            segments[-1] = f"{segments[-1]}__q-{short_hash(parts.query)}"
        return "/".join(segments)

    def path_for(self, url: str) -> Path:
        """The file for ``url``, relative to ``base_dir``; deterministic, always inside it."""
        stem = self.stem_of(url)
        rel = self._render(url, stem)
        if len(rel.encode("utf-8", "surrogatepass")) > self.max_path_bytes:
            # Too long for comfort on Windows clients: keep a readable tail, hash the rest.
            last = stem.rsplit("/", 1)[-1].encode("utf-8", "surrogatepass")
            short = last[:60].decode("utf-8", "ignore").rstrip(". ")
            rel = self._render(url, f"_long/{short}~{short_hash(url, 16)}")
        path = Path(*rel.split("/"))
        self.check_inside(path)
        return path

    def _render(self, url: str, stem: str) -> str:
        text = self.template.format(domain=self.domain_of(url), path=stem, date=self.date,
                                    site=self.site)
        # The template's own text is made safe too, component by component.
        parts = [safe_component(p) for p in text.replace("\\", "/").split("/") if p]
        if parts:
            parts[-1] = fit_component(parts[-1], MAX_FILE_NAME_BYTES)
        return "/".join(p for p in parts if p not in (".", ".."))

    def check_inside(self, path: Path) -> Path:
        """The resolved absolute path of ``path`` (relative to base_dir, or absolute);
        raises :class:`CrawlError` if it is not inside base_dir (``..``, symlinks)."""
        target = resolved(self.base_dir / path)
        if not target.is_relative_to(self._base_resolved) or target == self._base_resolved:
            raise CrawlError(f"refusing to write outside {self.base_dir}: {path}")
        return target

    # -- collisions ---------------------------------------------------------------------------

    @staticmethod
    def collision_key(path: Path) -> str:
        """Key for "is this file taken?" lookups: equal for paths that a case-insensitive or
        normalising file system (Windows, SMB, macOS) would treat as one file."""
        return unicodedata.normalize("NFC", path.as_posix()).casefold()

    def claim_path(self, url: str, claim: Callable[[str, Callable[[], str]], str],
                   path: Path | None = None) -> Path:
        """The file for ``url`` (``path``, or :meth:`path_for`), owned by ``url`` alone.

        ``claim(key, owner)`` is protocol/names.py's ``NameClaims.claim``: the owner of the
        name with collision key ``key``, made ``owner()`` if nobody holds it yet, exactly once
        across workers and machines.  Each folder on the way is claimed as a folder, so
        ``/x`` (``x.md``) and ``/x.md/y`` (``x.md/y.md``) cannot both have ``x.md``: the
        later one gets ``x.md__d/`` or ``x__u-<hash>.md``.  A URL whose name another URL
        owns gets a hash of itself before the suffix (``__u-<hash>``), a pure function of
        the URL.  Names are case- and Unicode-folded, as an SMB share folds them."""
        checked = None  # path_for's answer was checked a moment ago: not again below
        if path is None:
            path = checked = self.path_for(url)
        parts = list(path.parts)
        for i in range(len(parts) - 1):
            for name in (parts[i], parts[i] + _FOLDER_VARIANT):
                if self._claim(Path(*parts[:i], name), FOLDER, claim) == FOLDER:
                    parts[i] = name
                    break
            else:
                raise CrawlError(f"no free folder name for {url} near {Path(*parts[:i + 1])}")
        plain = Path(*parts)
        # the variants are made only when the plain name is taken (three hashes a page)
        for candidate in chain((plain,), (_variant(plain, url, n) for n in _VARIANT_HASHES)):
            if self._claim(candidate, url, claim) == url:
                if candidate != checked:
                    self.check_inside(candidate)
                return candidate
        raise CrawlError(f"no free file name for {url} near {plain}")

    def _claim(self, rel: Path, owner: str,
               claim: Callable[[str, Callable[[], str]], str]) -> str:
        """Claim ``rel`` for ``owner``, unless what is on disk there already belongs to
        someone (written before claims existed, or a user's own file)."""
        return claim(self.collision_key(rel), lambda: self._found_owner(rel) or owner)

    def _found_owner(self, rel: Path) -> str | None:
        """Who owns ``rel`` by what is on disk: a folder, a page (its front matter's url) or
        a file that is not one of our pages; None when nothing is there."""
        full = self.base_dir / rel
        try:  # one lstat: what is_symlink, is_dir and exists would each ask again
            mode = os.lstat(full).st_mode
        except OSError as e:
            if e.errno in _GONE:
                return None
            raise
        except ValueError:  # a name the file system cannot encode: nothing is there
            return None
        if stat.S_ISLNK(mode):
            return FOREIGN
        if stat.S_ISDIR(mode):
            return FOLDER
        meta = read_front_matter(full)
        url = meta.get("url") if meta else None
        return url if isinstance(url, str) else FOREIGN

    def owned_path(self, url: str, stored: object) -> Path | None:
        """``stored`` (a ``file_path`` read from a ticket or the url-index) as a Path if it is
        what this layout gives ``url``, or one of its collision variants; else None.  A stored
        path is input: a hostile one would steer a write or a delete onto another page's file
        or a user's own.  With ``{date}`` in the template any date is accepted (the file of an
        earlier day)."""
        if not isinstance(stored, str) or not stored:
            return None
        try:
            plain = self.path_for(url)
        except CrawlError:
            return None
        # each folder as the layout gives it or as claim_path renamed it; the file's name
        # plain or with the URL's hash
        names = [re.escape(p.name) for p in (plain, *(_variant(plain, url, n)
                                                      for n in _VARIANT_HASHES))]
        folders = [f"{re.escape(d)}(?:{re.escape(_FOLDER_VARIANT)})?" for d in plain.parts[:-1]]
        pattern = "/".join([*folders, f"(?:{'|'.join(names)})"])
        if "{date}" in self.template:
            pattern = pattern.replace(re.escape(self.date), r"\d{4}-\d{2}-\d{2}")
        if not re.fullmatch(pattern, stored):
            return None
        path = Path(stored)
        try:
            self.check_inside(path)
        except CrawlError:  # a symlinked folder on the way
            return None
        return path

    # -- writing ------------------------------------------------------------------------------

    def write_if_changed(self, path: Path, data: str | bytes) -> bool:
        """:func:`write_if_changed` for ``path`` relative to base_dir (or absolute inside it),
        refusing any path that resolves outside base_dir."""
        return write_if_changed(self.check_inside(path), data, tmp_dir=self.tmp_dir)


def write_if_changed(path: Path, data: str | bytes, *, tmp_dir: Path | None = None) -> bool:
    """Write ``data`` atomically to ``path`` unless the file already holds exactly these bytes.

    An unchanged file is not touched (its mtime stays), so incremental re-crawls and
    file-sync tools see only real changes.  Parent directories are created.  Returns True
    if the file was written.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if st.st_size == len(raw):
            try:
                if path.read_bytes() == raw:
                    return False
            except FileNotFoundError:  # removed meanwhile: just write it
                pass
    try:
        atomic_write(path, raw, tmp_dir=tmp_dir)
    except (FileNotFoundError, NotADirectoryError):
        # the folder is missing (the first page in it): made only then, not for every page
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, raw, tmp_dir=tmp_dir)
    return True


def resolved(path: Path) -> Path:
    """``path.resolve()``, with one ``lstat`` per component and no more when ``path`` is
    absolute, has no ``..`` and none of its components is a symlink (the answer is then
    ``path`` itself); any other path is resolved as before.  It runs for every page written,
    and the pure-Python walk of ``resolve`` cost ~60 us a call."""
    if not path.is_absolute() or ".." in path.parts:
        return path.resolve()
    text = str(path)
    end = 0
    while end >= 0:
        end = text.find("/", end + 1)
        try:
            mode = os.lstat(text if end < 0 else text[:end]).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break  # nothing below exists, so no symlink either: kept as written
        except (OSError, ValueError):
            return path.resolve()  # (with its own errors)
        if stat.S_ISLNK(mode):
            return path.resolve()
    return path


def _is_dir_ending(path: str) -> bool:
    """True for paths whose last segment is a dot segment (``/a/.``, ``/a/..``)."""
    last = path.rsplit("/", 1)[-1].lower()
    return last in _DOT_SEGMENTS or last in _DOTDOT_SEGMENTS


_VARIANT_HASHES = (8, 16, 64)  # lengths of the URL hash a colliding URL's name carries
_FOLDER_VARIANT = "__d"  # a folder whose name a page's file owns (/x.md/y beside /x)
FOLDER, FOREIGN = "folder:", "foreign:"  # owners of a name that are not URLs (names.py)


def _variant(path: Path, url: str, n: int) -> Path:
    """``path`` for ``url`` when another URL owns it: a hash of the URL before the suffix."""
    return path.with_name(_with_suffix(path.name, f"__u-{short_hash(url, n)}"))


def _with_suffix(name: str, suffix: str) -> str:
    """``name`` with ``suffix`` inserted before its extension, still a valid file name."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    tail = suffix + (f".{ext}" if ext else "")
    room = MAX_FILE_NAME_BYTES - len(tail.encode())
    stem = stem.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return stem + tail
