"""`export`: what happened to every URL a site knows, as a table (JSON lines, CSV, Parquet).

One row per URL: those in url-index.json (crawled, skipped, failed, removed, or queued and
not crawled yet) and those prepare left out (``excluded.jsonl`` in the state directory:
filter, duplicate, other_host, invalid, over_limit).  A URL in both is one row, the index's.
Rows stream from the files to the writer, so a million URLs never sit in memory at once
(the index's base is read entry by entry and its segments folded in,
:func:`protocol.index.iter_view`; a 64-bit hash per URL remembers what was written).

Columns (stable; DuckDB and pandas read every format as is, with the same types)::

    url, outcome, reason, status_code, title, file_path, content_hash, etag,
    last_modified, fetched_at, bytes, depth, source

``outcome`` is one of written, unchanged, skipped, failed, removed, not_found, excluded,
pending; ``reason`` says why (robots, noindex, non_canonical, not_modified, same_content,
http_404, too_short, redirect_loop, filter, duplicate, ...), empty when the page was written.
Types: ``status_code``, ``bytes`` and ``depth`` are integers (``depth`` always has one: 0
for a URL a sitemap, feed, llms.txt or the start page lists, n for one found n links
away); ``fetched_at`` is a UTC timestamp (ISO 8601 text in JSON lines and CSV, a
timestamp in Parquet), no value for a URL not fetched yet; the rest are text.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from sitemap_crawler.config import Site
from sitemap_crawler.discover.urls import UrlSet
from sitemap_crawler.errors import UserError
from sitemap_crawler.protocol.frontier import QUEUED
from sitemap_crawler.protocol.index import iter_view
from sitemap_crawler.protocol.state import EXCLUDED_FILE, StateDir

COLUMNS = ("url", "outcome", "reason", "status_code", "title", "file_path", "content_hash",
           "etag", "last_modified", "fetched_at", "bytes", "depth", "source")
FORMATS = ("jsonl", "csv", "parquet")
_INT_COLUMNS = ("status_code", "bytes", "depth")


def export(site: Site, path: Path, fmt: str = "jsonl") -> int:
    """Write every row of ``site`` to ``path`` in ``fmt``; the number of rows written."""
    if fmt not in FORMATS:
        raise UserError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    state = StateDir(site.state_dir)
    if not state.exists():
        raise UserError(f"{site.name}: nothing to export yet (run: sitemap-crawler crawl "
                        f"{site.name})")
    writer = {"jsonl": _write_jsonl, "csv": _write_csv, "parquet": _write_parquet}[fmt]
    path.parent.mkdir(parents=True, exist_ok=True)
    return writer(rows(site), path)


def rows(site: Site) -> Iterator[dict[str, Any]]:
    """Every row, the index's first, then the URLs prepare left out that the index lacks."""
    state = StateDir(site.state_dir)
    written = UrlSet()
    for url, entry in iter_view(state):
        written.add(url)
        yield index_row(url, entry, site.base_dir)
    for rec in _excluded(state):
        if written.add(rec["url"]):  # False: the index had it (or it was excluded twice)
            yield {**_EMPTY, "url": rec["url"], "outcome": "excluded",
                   "reason": rec.get("reason") or "", "source": rec.get("source") or "",
                   "depth": int(rec.get("depth") or 0)}


# Typed columns have no value rather than "" (so DuckDB infers the same type from every
# format); text columns are "" when empty.
_EMPTY: dict[str, Any] = (dict.fromkeys(COLUMNS, "") | dict.fromkeys(_INT_COLUMNS)
                          | {"fetched_at": None})


def index_row(url: str, e: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """One url-index.json entry as a row: outcome and reason from what the worker recorded."""
    outcome, reason = outcome_reason(e)
    file_path = e.get("file_path") or ""
    if file_path and outcome == "removed" and not (base_dir / file_path).exists():
        file_path = ""  # deleted (or moved aside) with the page
    return {
        "url": url, "outcome": outcome, "reason": reason,
        "status_code": e.get("status_code"), "title": e.get("title") or "",
        "file_path": file_path if outcome != "pending" else "",
        "content_hash": e.get("content_hash") or "", "etag": e.get("etag") or "",
        "last_modified": e.get("last_modified") or "",
        "fetched_at": e.get("last_crawled") or None, "bytes": e.get("bytes"),
        "depth": int(e.get("depth") or 0), "source": e.get("found_on") or e.get("source") or "",
    }


def outcome_reason(e: dict[str, Any]) -> tuple[str, str]:
    """(outcome, reason) of an index entry or a journal record, as the table says them: the
    one mapping from what the worker recorded, shared by export and the crawl report."""
    kind = str(e.get("outcome") or "")
    if kind == "gone":  # a 404/410 for a URL with no file: the summary's "not found"
        return "not_found", _http(e) or "gone"
    if e.get("removed"):
        return "removed", str(e.get("removed_reason") or "")
    if kind in ("new", "changed"):
        return "written", ""
    if kind == "unchanged_304":
        return "unchanged", "not_modified"
    if kind == "unchanged_hash":
        return "unchanged", "same_content"
    if kind.startswith("skipped:"):
        return "skipped", kind.split(":", 1)[1]
    if kind in ("failed", "failed_permanent"):
        return "failed", str(e.get("error") or _http(e) or "error")
    if kind == QUEUED:
        return "pending", "not_crawled_yet"
    return "failed", kind or "unknown"


def _http(e: dict[str, Any]) -> str:
    code = e.get("status_code")
    return f"http_{code}" if isinstance(code, int) and code >= 400 else ""


def _excluded(state: StateDir) -> Iterator[dict[str, Any]]:
    try:
        f = open(state.root / EXCLUDED_FILE, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return
    with f:
        for line in f:
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line of a killed prepare
            if isinstance(rec, dict) and isinstance(rec.get("url"), str):
                yield rec


# -- writers ------------------------------------------------------------------------------

def _write_jsonl(items: Iterator[dict[str, Any]], path: Path) -> int:
    n = 0
    with open(path, "wb") as f:
        for row in items:
            f.write(orjson.dumps(row) + b"\n")
            n += 1
    return n


def _write_csv(items: Iterator[dict[str, Any]], path: Path) -> int:
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in items:
            w.writerow(row)
            n += 1
    return n


# Rows per row group: a group costs ~3 KiB of Python lists and Arrow buffers per row while
# it is built (a bare writer peaked at 87 MiB with 2,000, 106 with 10,000: bench/RESULTS.md).
PARQUET_BATCH = 2_000


def _write_parquet(items: Iterator[dict[str, Any]], path: Path) -> int:
    """Row groups of PARQUET_BATCH rows, built column by column (a list per column, not a
    dict per row), and Arrow's freed buffers handed back after each: a million rows in
    bounded memory (issue 22)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("--format parquet needs pyarrow: pip install "
                        "'sitemap-crawler[parquet]'") from None
    schema = pa.schema([(c, pa.int64() if c in _INT_COLUMNS else
                         pa.timestamp("s", tz="UTC") if c == "fetched_at" else pa.string())
                        for c in COLUMNS])
    pool = pa.default_memory_pool()
    n = 0
    with pq.ParquetWriter(str(path), schema) as w:
        while True:
            cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
            for row in islice(items, PARQUET_BATCH):
                for c in COLUMNS:
                    cols[c].append(row[c])
            rows = len(cols["url"])
            if rows == 0 and n:
                break
            cols["fetched_at"] = [_timestamp(v) for v in cols["fetched_at"]]
            w.write_table(pa.Table.from_pydict(cols, schema=schema))
            del cols
            pool.release_unused()
            n += rows
            if rows < PARQUET_BATCH:
                break
    return n


def _timestamp(stamp: str | None) -> datetime | None:
    """An ISO 8601 UTC stamp as Parquet's timestamp; None when there is none (or not one)."""
    try:
        return datetime.fromisoformat(stamp).astimezone(UTC) if stamp else None
    except ValueError:
        return None
