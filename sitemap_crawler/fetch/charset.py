"""Decode an HTML response body the way browsers do (WHATWG "encoding sniffing", simplified).

Order: byte-order mark, then the charset of the HTTP Content-Type header, then a
``<meta charset>`` / ``<meta http-equiv=Content-Type>`` prescan of the first 1024 bytes, then
UTF-8 if the body is valid UTF-8, else windows-1252.  Labels are mapped as the WHATWG
Encoding Standard says (``latin1``, ``iso-8859-1`` and ``ascii`` all mean windows-1252), so a
page that lies in the old, common way still decodes as the browser shows it.  Decoding never
raises: bad bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
import re

import webencodings

# webencodings is the WHATWG label table (labels -> encoding names -> Python codecs).  Where the
# Standard's decoder for an encoding is wider than Python's codec of the same name, the wider
# codec is used: the Standard decodes "gbk" with the gb18030 decoder, and Python's gbk codec
# turns gb18030's four-byte sequences into U+FFFD.
_WIDER_CODEC: dict[str, codecs.CodecInfo] = {"gbk": codecs.lookup("gb18030")}
# The Standard maps ISO-2022-KR, HZ-GB-2312 and ISO-2022-CN to "replacement" (the whole body
# becomes one U+FFFD, so browsers cannot be tricked by script hidden in their escapes).  A
# crawler that only reads text gains nothing from an empty page: such a label is ignored, as
# an unknown one is, and the body is sniffed as if it had none.
_IGNORED = frozenset({"replacement"})

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
)
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?([^"';,\s]+)""", re.I)
_COMMENT_RE = re.compile(rb"<!--.*?(?:-->|\Z)", re.S)
_META_RE = re.compile(rb"<meta[\s/]([^>]*)", re.I)
_ATTR_RE = re.compile(rb"""([^\s=/>]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")
_CONTENT_CHARSET_RE = re.compile(rb"""charset\s*=\s*["']?([^"';\s]+)""", re.I)


def lookup(label: str | None) -> str | None:
    """The WHATWG encoding name for ``label`` (case and surrounding space ignored), or None."""
    if not label:
        return None
    encoding = webencodings.lookup(label.strip().strip("\"'"))
    if encoding is None or encoding.name in _IGNORED:
        return None
    return str(encoding.name)


def _decode(body: bytes, name: str) -> str:
    """``body`` decoded with the WHATWG encoding ``name``; bad bytes become U+FFFD."""
    info = _WIDER_CODEC.get(name) or webencodings.lookup(name).codec_info
    return str(info.decode(body, "replace")[0])


def charset_from_header(content_type: str | None) -> str | None:
    """The encoding named by a Content-Type header value, if it names a known one."""
    if not content_type:
        return None
    m = _HEADER_CHARSET_RE.search(content_type)
    return lookup(m.group(1)) if m else None


def prescan_meta(head: bytes) -> str | None:
    """The encoding declared by a ``<meta>`` in ``head`` (the first 1024 bytes), or None.

    A regular-expression version of the HTML "prescan a byte stream" algorithm: comments
    are skipped, the first meta with a usable ``charset`` (or ``http-equiv=content-type``
    plus a ``content`` with ``charset=``) wins.  A meta that claims UTF-16 means UTF-8,
    since the meta could only be read because the bytes are ASCII-compatible; one that claims
    x-user-defined means windows-1252, as the HTML Standard says.
    """
    head = _COMMENT_RE.sub(b"", head)
    for m in _META_RE.finditer(head):
        attrs: dict[bytes, bytes] = {}
        for a in _ATTR_RE.finditer(m.group(1)):
            key = a.group(1).lower()
            if key not in attrs:
                attrs[key] = (a.group(2) or b"").strip(b"\"'/")
        label: bytes | None = None
        if b"charset" in attrs:
            label = attrs[b"charset"]
        elif attrs.get(b"http-equiv", b"").lower() == b"content-type" and b"content" in attrs:
            cm = _CONTENT_CHARSET_RE.search(attrs[b"content"])
            label = cm.group(1) if cm else None
        if label is None:
            continue
        name = lookup(label.decode("ascii", "replace"))
        if name is None:
            continue
        if name in ("utf-16be", "utf-16le"):
            return "utf-8"
        return "windows-1252" if name == "x-user-defined" else name
    return None


def utf16_by_zeros(head: bytes) -> str | None:
    """``utf-16le``/``utf-16be`` when ``head`` is plainly UTF-16 text without a BOM (markup
    is ASCII, so every other byte is NUL), else None."""
    if len(head) < 16 or head.count(0) < len(head) // 4:
        return None
    odd, even = head[1::2].count(0), head[0::2].count(0)
    if odd >= 3 * even:
        return "utf-16le"
    if even >= 3 * odd:
        return "utf-16be"
    return None


def _believed(name: str | None, head: bytes) -> str | None:
    """A header's label, unless the bytes contradict it: UTF-16 without a single NUL is
    ASCII-compatible text (a label once seen writing an English page as CJK), and text
    that is plainly UTF-16 is not in an ASCII-compatible encoding."""
    sniffed = utf16_by_zeros(head)
    if name in ("utf-16be", "utf-16le"):
        return (sniffed or name) if b"\x00" in head else None
    return sniffed or name


def decode_html(body: bytes, content_type_header: str | None) -> tuple[str, str]:
    """``(text, encoding)`` for an HTML body; never raises (bad bytes become U+FFFD)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return _decode(body[len(bom):], name), name
    name = (_believed(charset_from_header(content_type_header), body[:1024])
            or prescan_meta(body[:1024]))
    if name is None:
        try:
            return body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            name = "windows-1252"
    return _decode(body, name), name
