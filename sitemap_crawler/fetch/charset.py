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

# WHATWG encoding name -> (labels, Python codec).  Only encodings Python can decode are
# listed; an unknown label is ignored, as the prescan would ignore it.
_ENCODINGS: dict[str, tuple[str, str]] = {
    "utf-8": ("unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
              "utf-8"),
    "ibm866": ("866 cp866 csibm866 ibm866", "cp866"),
    "iso-8859-2": ("csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 "
                   "iso_8859-2:1987 l2 latin2", "iso8859-2"),
    "iso-8859-3": ("csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 "
                   "iso_8859-3:1988 l3 latin3", "iso8859-3"),
    "iso-8859-4": ("csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 "
                   "iso_8859-4:1988 l4 latin4", "iso8859-4"),
    "iso-8859-5": ("csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 "
                   "iso_8859-5 iso_8859-5:1988", "iso8859-5"),
    "iso-8859-6": ("arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 "
                   "iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 "
                   "iso_8859-6 iso_8859-6:1987", "iso8859-6"),
    "iso-8859-7": ("csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 "
                   "iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek", "iso8859-7"),
    "iso-8859-8": ("csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 "
                   "iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual", "iso8859-8"),
    "iso-8859-8-i": ("csiso88598i iso-8859-8-i logical", "iso8859-8"),
    "iso-8859-10": ("csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
                    "iso8859-10"),
    "iso-8859-13": ("iso-8859-13 iso8859-13 iso885913", "iso8859-13"),
    "iso-8859-14": ("iso-8859-14 iso8859-14 iso885914", "iso8859-14"),
    "iso-8859-15": ("csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
                    "iso8859-15"),
    "iso-8859-16": ("iso-8859-16", "iso8859-16"),
    "koi8-r": ("cskoi8r koi koi8 koi8-r koi8_r", "koi8-r"),
    "koi8-u": ("koi8-ru koi8-u", "koi8-u"),
    "macintosh": ("csmacintosh mac macintosh x-mac-roman", "mac-roman"),
    "windows-874": ("dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874", "cp874"),
    "windows-1250": ("cp1250 windows-1250 x-cp1250", "cp1250"),
    "windows-1251": ("cp1251 windows-1251 x-cp1251", "cp1251"),
    "windows-1252": ("ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 "
                     "iso-ir-100 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 "
                     "us-ascii windows-1252 x-cp1252", "cp1252"),
    "windows-1253": ("cp1253 windows-1253 x-cp1253", "cp1253"),
    "windows-1254": ("cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
                     "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254", "cp1254"),
    "windows-1255": ("cp1255 windows-1255 x-cp1255", "cp1255"),
    "windows-1256": ("cp1256 windows-1256 x-cp1256", "cp1256"),
    "windows-1257": ("cp1257 windows-1257 x-cp1257", "cp1257"),
    "windows-1258": ("cp1258 windows-1258 x-cp1258", "cp1258"),
    "x-mac-cyrillic": ("x-mac-cyrillic x-mac-ukrainian", "mac-cyrillic"),
    "gbk": ("chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 "
            "x-gbk", "gb18030"),
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5 big5-hkscs cn-big5 csbig5 x-x-big5", "big5hkscs"),
    "euc-jp": ("cseucpkdfmtjapanese euc-jp x-euc-jp", "euc_jp"),
    "iso-2022-jp": ("csiso2022jp iso-2022-jp", "iso2022_jp"),
    "shift_jis": ("csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
                  "cp932"),
    "euc-kr": ("cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 "
               "ksc5601 ksc_5601 windows-949", "cp949"),
    "utf-16be": ("unicodefffe utf-16be", "utf-16-be"),
    "utf-16le": ("csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
                 "utf-16-le"),
}
_LABELS: dict[str, str] = {
    label: name for name, (labels, _) in _ENCODINGS.items() for label in labels.split()
}
_CODEC: dict[str, str] = {name: codec for name, (_, codec) in _ENCODINGS.items()}

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
    return _LABELS.get(label.strip().strip("\"'").lower())


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
    since the meta could only be read because the bytes are ASCII-compatible.
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
        return "utf-8" if name in ("utf-16be", "utf-16le") else name
    return None


def decode_html(body: bytes, content_type_header: str | None) -> tuple[str, str]:
    """``(text, encoding)`` for an HTML body; never raises (bad bytes become U+FFFD)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(_CODEC[name], "replace"), name
    name = charset_from_header(content_type_header) or prescan_meta(body[:1024])
    if name is None:
        try:
            return body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            name = "windows-1252"
    return body.decode(_CODEC[name], "replace"), name
