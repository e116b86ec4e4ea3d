"""Copies of the sitemaps prepare has read, with their validators, for conditional re-reads.

A re-crawl re-reads every sitemap: on a large site that is megabytes each time (0.9 MB of
the 3.8 MB an all-304 re-crawl of the 5,000-page bench site moved).  So prepare keeps the raw
body of every sitemap that came with an ETag or Last-Modified under
``<state>/sitemaps/``, asks with ``If-None-Match``/``If-Modified-Since`` next time, and on a
304 parses the kept copy exactly as if it had been downloaded again.  A body is kept only if
it was read to the end (not cut by a size cap, not broken off by an error), written under a
temporary name and renamed into place.

With ``cache_sitemaps`` set to a max age (seed 000's ``sitemap_cache_hours``), a copy
confirmed by the server less than that long ago is used without asking at all, and copies
are kept even without validators.  The age counts from the last time the server sent or
confirmed (304) the copy, by the wall clock, so every machine sharing the directory agrees.

Copies of sitemaps the source no longer leads to are pruned after a prepare that read every
sitemap completely (a failed read keeps them: the copy may be needed next time), and
temporary files left by a prepare that was killed are removed once they are an hour old.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from sitemap_crawler.protocol.fsutil import (
    TMP_PREFIX,
    atomic_write,
    read_bytes,
    sweep_tmp,
    tmp_name,
    unlink_quiet,
)

CHUNK = 64 * 1024
_KEEP_HEADERS = ("content-type", "content-encoding", "etag", "last-modified")


class SitemapCache:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._used: set[str] = set()  # file stems replayed or written by this prepare

    def _paths(self, url: str) -> tuple[Path, Path]:
        h = hashlib.sha1(url.encode(), usedforsecurity=False).hexdigest()[:24]
        return self.root / f"{h}.body", self.root / f"{h}.json"

    def _meta(self, url: str) -> dict[str, str] | None:
        body, meta = self._paths(url)
        raw = read_bytes(meta)
        if not raw or not body.exists():
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        return data if isinstance(data, dict) and data.get("url") == url else None

    def validators(self, url: str) -> dict[str, str]:
        """Request headers that ask "changed since the copy we keep?"."""
        meta = self._meta(url)
        if not meta:
            return {}
        headers = {}
        if meta.get("etag"):
            headers["If-None-Match"] = meta["etag"]
        if meta.get("last-modified"):
            headers["If-Modified-Since"] = meta["last-modified"]
        return headers

    def fresh(self, url: str, max_age: float, request: httpx.Request) -> httpx.Response | None:
        """The kept copy if the server sent or confirmed it less than ``max_age`` s ago."""
        meta = self._meta(url)
        if meta is None:
            return None
        fetched = meta.get("fetched_at")
        age = time.time() - fetched if isinstance(fetched, int | float) else -1.0
        if not 0 <= age < max_age:
            return None
        return self._replay(url, meta, request)

    def replay(self, url: str, request: httpx.Request) -> httpx.Response | None:
        """The kept copy as a streamed 200 response (after the server said 304)."""
        meta = self._meta(url)
        if meta is None:
            return None
        _, meta_path = self._paths(url)
        atomic_write(meta_path, json.dumps({**meta, "fetched_at": time.time()}), fsync=False)
        return self._replay(url, meta, request)

    def _replay(self, url: str, meta: dict[str, str], request: httpx.Request) -> httpx.Response:
        body, _ = self._paths(url)
        self._used.add(body.stem)
        headers = {k: v for k, v in meta.items() if k in _KEEP_HEADERS}
        return httpx.Response(200, headers=headers, stream=_FileStream(body), request=request)

    def recording(self, url: str, resp: httpx.Response, *,
                  unvalidated: bool = False) -> httpx.Response:
        """``resp`` with its raw body also written to the cache as it is read.

        A body without ETag or Last-Modified is kept only if ``unvalidated`` (a max age is
        set: the copy is then worth having even though it cannot be revalidated).
        """
        if not (unvalidated or resp.headers.get("etag") or resp.headers.get("last-modified")):
            return resp
        headers = {k: resp.headers[k] for k in _KEEP_HEADERS if k in resp.headers}
        stream = _Recorder(resp, self, url, headers)
        return httpx.Response(resp.status_code, headers=resp.headers, stream=stream,
                              request=resp.request)

    def commit(self, url: str, tmp: Path, headers: dict[str, str]) -> None:
        body, meta = self._paths(url)
        os.replace(tmp, body)
        atomic_write(meta, json.dumps({"url": url, **headers, "fetched_at": time.time()}),
                     fsync=False)
        self._used.add(body.stem)

    def prune(self, tmp_max_age: float = 3600.0) -> int:
        """Delete the copies this prepare neither replayed nor wrote; returns how many.

        Call it only after a prepare that read every sitemap to the end: then a copy not
        used is one of a sitemap the source no longer leads to (or that lost its
        validators).  Temporary files older than ``tmp_max_age`` seconds are left by a
        killed prepare (a running one writes its own for a few seconds at most).
        """
        sweep_tmp(self.root, tmp_max_age)
        removed = 0
        with os.scandir(self.root) as it:
            for entry in it:
                name = entry.name
                if name.startswith(TMP_PREFIX):
                    continue
                stem, dot, ext = name.rpartition(".")
                if dot and ext in ("body", "json") and stem not in self._used:
                    unlink_quiet(Path(entry.path))
                    removed += ext == "body"
        return removed


class _FileStream(httpx.SyncByteStream):
    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            while chunk := f.read(CHUNK):
                yield chunk


class _Recorder(httpx.SyncByteStream):
    """Tee of a response's raw bytes into a temporary file, kept only if read to the end."""

    def __init__(self, resp: httpx.Response, cache: SitemapCache, url: str,
                 headers: dict[str, str]) -> None:
        self.resp, self.cache, self.url, self.headers = resp, cache, url, headers
        self.tmp = tmp_name(cache._paths(url)[0])
        self.complete = False

    def __iter__(self) -> Iterator[bytes]:
        with open(self.tmp, "wb") as f:
            for chunk in self.resp.iter_raw():
                f.write(chunk)
                yield chunk
        self.complete = True

    def close(self) -> None:
        self.resp.close()
        if self.complete:
            with contextlib.suppress(OSError):
                self.cache.commit(self.url, self.tmp, self.headers)
        unlink_quiet(self.tmp)
