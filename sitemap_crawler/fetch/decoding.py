"""Content-Encoding undone in bounded steps, because httpx's own decoders are not bounded.

httpx decodes each raw chunk in one call with no limit on the output.  Measured here: one
64 KiB chunk of a gzip bomb came back as 34 MB, and 1,617 bytes of brotli are 1 GiB of zeros
in a single call, which is enough to get a worker killed for memory by one hostile page
(and then every worker that takes its ticket back).  So bodies are read raw
(``Response.iter_raw``) and decoded here, at most ``step`` bytes at a time.  The caller's size
cap then sees every piece before the next one is made.

We only advertise what we can decode this way (:data:`ACCEPT_ENCODING`): gzip and deflate
always, br when the installed brotli can limit its output (brotli >= 1.1).  A server that
sends another coding anyway gets :class:`UnsupportedEncoding`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

import httpx

STEP = 256 * 1024  # decoded bytes per decompressor call
# Codings stacked on one body: real servers send one, a proxy may add a second.  Each is a
# generator wrapped around the last, so 3,000 of them are a RecursionError while reading.
MAX_CODINGS = 3


class DecodeError(ValueError):
    """The body is not valid data for its Content-Encoding."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding we did not ask for and cannot decode with bounded memory."""

    def __init__(self, coding: str) -> None:
        super().__init__(f"unsupported Content-Encoding {coding!r}")
        self.coding = coding


class TooManyCodings(UnsupportedEncoding):
    """More than :data:`MAX_CODINGS` codings stacked: refused like an unknown coding (the
    page is skipped with a reason, a sitemap fails alone, robots.txt is unreadable)."""

    def __init__(self, n: int) -> None:
        ValueError.__init__(self, f"{n} stacked Content-Encodings (at most {MAX_CODINGS})")
        self.coding = "stacked"


def _bounded_brotli() -> bool:
    try:
        import brotli  # optional: other packages install it
    except ImportError:
        return False
    try:
        brotli.Decompressor().process(b"", output_buffer_limit=1)
    except Exception:  # brotli < 1.1 has no output limit (TypeError)
        return False
    return True


BROTLI = _bounded_brotli()
ACCEPT_ENCODING = "gzip, deflate, br" if BROTLI else "gzip, deflate"


def decoded(resp: httpx.Response, step: int = STEP) -> Iterator[bytes]:
    """The body of a streamed ``resp`` with its Content-Encoding undone.

    Raises :class:`UnsupportedEncoding` at once (before reading) for a coding we cannot
    decode, :class:`DecodeError` while reading a corrupt body.
    """
    return decode(resp.iter_raw(), resp.headers.get("content-encoding", ""), step)


def decode(chunks: Iterable[bytes], content_encoding: str, step: int = STEP) -> Iterator[bytes]:
    """``chunks`` with the codings of ``content_encoding`` undone, last applied first."""
    src: Iterator[bytes] = iter(chunks)
    codings = [c for c in (c.strip().lower() for c in content_encoding.split(","))
               if c and c != "identity"]
    if len(codings) > MAX_CODINGS:
        raise TooManyCodings(len(codings))
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            src = gunzip_if_magic(src, step)
        elif coding == "deflate":
            src = _deflate(src, step)
        elif coding == "br" and BROTLI:
            src = _brotli(src, step)
        else:
            raise UnsupportedEncoding(coding)
    return src


def _first_bytes(chunks: Iterator[bytes], n: int) -> bytes | None:
    """At least ``n`` bytes from the front of ``chunks`` (fewer only at the end)."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        if len(buf) >= n:
            break
    return buf or None


def gunzip_if_magic(chunks: Iterator[bytes], step: int = STEP,
                    on_gzip: Callable[[], None] | None = None) -> Iterator[bytes]:
    """gzip by its magic bytes, or the bytes as they are.  Used for Content-Encoding gzip
    (a server that says gzip and sends plain text is common enough; httpx would fail the
    whole response) and for ``.xml.gz`` files, whatever their headers say."""
    first = _first_bytes(chunks, 2)
    if first is None:
        return
    rest = chain([first], chunks)
    if first[:2] == b"\x1f\x8b":
        if on_gzip is not None:
            on_gzip()
        yield from inflate(rest, 31, step)
    else:
        yield from rest


def _deflate(chunks: Iterator[bytes], step: int) -> Iterator[bytes]:
    """HTTP "deflate" is zlib-wrapped by the RFC and raw deflate in practice: both."""
    first = _first_bytes(chunks, 2)
    if first is None:
        return
    zlib_header = len(first) >= 2 and (first[0] & 0x0F == 8) and (
        (first[0] << 8 | first[1]) % 31 == 0)
    yield from inflate(chain([first], chunks), 15 if zlib_header else -15, step)


def inflate(chunks: Iterable[bytes], wbits: int, step: int = STEP) -> Iterator[bytes]:
    """zlib/gzip/raw-deflate in steps of at most ``step`` output bytes.

    Concatenated gzip members are one file (as gunzip sees them); anything else after
    the end of the stream is ignored.
    """
    d = zlib.decompressobj(wbits)
    try:
        for data in chunks:
            while data:
                if d.eof:
                    if wbits != 31 or data[:2] != b"\x1f\x8b":
                        return
                    d = zlib.decompressobj(wbits)  # the next gzip member
                out = d.decompress(data, step)
                if out:
                    yield out
                data = d.unused_data if d.eof else d.unconsumed_tail
                while not data and len(out) == step and not d.eof:
                    out = d.decompress(b"", step)  # output still pending inside zlib
                    if out:
                        yield out
                    data = d.unused_data if d.eof else d.unconsumed_tail
    except zlib.error as e:
        raise DecodeError(f"corrupt compressed data ({e})") from None
    if not d.eof:  # a body cut short (a dropped connection, a broken server) is not a page
        raise DecodeError("compressed data ends before its end marker")


def _brotli(chunks: Iterator[bytes], step: int) -> Iterator[bytes]:
    import brotli  # only when BROTLI

    d = brotli.Decompressor()
    try:
        for data in chunks:
            if d.is_finished():
                return
            out = d.process(data, output_buffer_limit=step)
            if out:
                yield out
            # At the limit, brotli keeps the rest of the output inside; it must be drained
            # with empty input before more input may be given.
            while not d.can_accept_more_data():
                out = d.process(b"", output_buffer_limit=step)
                if not out:
                    break
                yield out
    except brotli.error as e:
        raise DecodeError(f"corrupt brotli data ({e})") from None
    if not d.is_finished():
        raise DecodeError("brotli data ends before its end marker")
