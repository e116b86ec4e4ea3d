"""The crawl report: what one crawl came to, for people (report.md) and scripts (report.json).

Written into the state directory at the end of every crawl (``work``), shown again by
``status SITE --report``.  Its facts come from the journal records the crawl left (each URL's
outcome, reason, status, bytes and time; the last record of a URL wins), the crawl's totals
(bytes saved by conditional requests) and the hosts' block files (rate limits, backoffs and
give-ups the fetcher shared with every worker).  Read before the journals are folded into
url-index.json, because the index keeps no timings.  The link folds of a link-following
crawl delete no journal while it runs (worker.fold_links), so its report counts every URL
of the run too, not only those of the workers still running at its end.
"""

from __future__ import annotations

import heapq
import json
from array import array
from collections import Counter
from typing import Any

from sitemap_crawler.commands.export import outcome_reason
from sitemap_crawler.fetch.client import host_key
from sitemap_crawler.protocol.fsutil import atomic_write
from sitemap_crawler.protocol.hostgate import BLOCK_FILE, safe_host
from sitemap_crawler.protocol.journal import journal_files, read_journal
from sitemap_crawler.protocol.keysort import sorted_pairs
from sitemap_crawler.protocol.state import StateDir

TOP = 10
REPORT_MD, REPORT_JSON = "report.md", "report.json"
# reasons that say a host pushed back, and what the report calls them
_PUSHBACK = {"http_429": "rate_limited", "http_503": "unavailable", "robots": "robots_disallowed",
             "http_403": "forbidden", "host_gave_up": "gave_up"}


def build(state: StateDir, site: str, totals: dict[str, Any]) -> dict[str, Any]:
    """The report of the records in the journals now, with this crawl's ``totals``.

    Each record's (outcome, reason, host) is kept as a number into the few distinct ones,
    beside the hash of its URL, in two flat arrays (16 bytes a record); sorted stably by
    hash, the last of each run is the URL's last record (two URLs of one crawl sharing a
    64-bit hash is ~1 in 10^7 at 1,000,000 URLs, and would cost one count).  A dict of URL
    strings and tuples held 340 MiB at the end of a 1,000,000-page crawl, a dict by hash
    129 MiB (keysort.py)."""
    hashes, kind_of = array("q"), array("q")
    kinds: dict[tuple[str, str, str], int] = {}  # (outcome, reason, host) -> its number
    slow: list[tuple[float, str, int]] = []
    large: list[tuple[int, str, int]] = []
    for path in journal_files(state.journal):
        for rec in read_journal(path):
            url = rec.get("url")
            if not isinstance(url, str):
                continue
            reason = outcome_reason(rec)[1]
            kind = (str(rec.get("outcome") or "unknown"), reason, host_key(url))
            hashes.append(hash(url))
            kind_of.append(kinds.setdefault(kind, len(kinds)))
            status = int(rec.get("status_code") or 0)
            _keep(slow, (float(rec.get("elapsed") or 0), url, status))
            _keep(large, (int(rec.get("bytes") or 0), url, status))
    hashes, kind_of = sorted_pairs(hashes, kind_of)
    n = len(hashes)
    per_kind = Counter(kind_of[i] for i in range(n) if i + 1 == n or hashes[i + 1] != hashes[i])
    urls = sum(per_kind.values())
    del hashes, kind_of
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    pushback: dict[str, Counter[str]] = {}
    for (outcome, reason, host), k in kinds.items():
        n = per_kind[k]
        if not n:
            continue
        outcomes[outcome] += n
        if reason:
            reasons[reason] += n
        if reason in _PUSHBACK:
            pushback.setdefault(host, Counter())[_PUSHBACK[reason]] += n
    hosts = {h: dict(c) for h, c in pushback.items()}
    names = {safe_host(h): h for (_o, _r, h), k in kinds.items() if per_kind[k]}
    # the gate is shared with other sites: this site's hosts only (and only theirs read: a
    # crawl of 200 sites read 200 x 200 block files)
    for name, block in _blocks(state, set(names)).items():
        hosts.setdefault(names[name], {}).update(block)
    numbers = {k: v for k, v in totals.items() if isinstance(v, int | float)}
    return {
        "site": site, "finished_at": totals.get("finished_at"), "run": totals.get("run"),
        "stopped": totals.get("stopped") or ("interrupted" if totals.get("interrupted") else ""),
        "urls": urls, "outcomes": dict(outcomes.most_common()),
        "reasons": dict(reasons.most_common()),
        "slowest": [{"url": u, "seconds": round(t, 3), "status": s}
                    for t, u, s in sorted(slow, reverse=True) if t > 0],
        "largest": [{"url": u, "bytes": b, "status": s}
                    for b, u, s in sorted(large, reverse=True) if b > 0],
        "hosts": dict(sorted(hosts.items())),
        "conditional": {"not_modified": outcomes["unchanged_304"],
                        "bytes_saved": int(numbers.get("bytes_saved", 0))},
        "totals": numbers,
    }


def _keep(heap: list[Any], item: tuple[Any, ...]) -> None:
    """Keep the TOP largest items seen (a bounded heap: a crawl may have millions of URLs)."""
    if len(heap) < TOP:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)


def _blocks(state: StateDir, names: set[str]) -> dict[str, dict[str, Any]]:
    """Of the hosts ``names`` (gate folder names), those that blocked every worker this crawl
    (429/Retry-After, backoff, give-up): the block files stay until the next crawl starts."""
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(names):
        try:
            data = json.loads((state.gate_root / name / BLOCK_FILE).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and int(data.get("seq") or 0) > 0:
            out[name] = {"blocks": int(data["seq"]),
                         "last_block": f"{data.get('reason') or '?'} "
                                       f"({float(data.get('seconds') or 0):.0f} s)"}
    return out


def markdown(rep: dict[str, Any]) -> str:
    """The report for people: a few short sections, nothing when there is nothing to say."""
    t = rep.get("totals") or {}
    lines = [f"# Crawl report: {rep['site']}", ""]
    ended = f", stopped: {rep['stopped']}" if rep.get("stopped") else ""
    lines.append(f"Finished {rep.get('finished_at') or '?'} (run {rep.get('run') or '?'}"
                 f"{ended}): {rep['urls']} URLs in {float(t.get('seconds', 0)):.1f} s, "
                 f"{int(t.get('bytes', 0)):,} bytes downloaded, "
                 f"{int(t.get('written', 0)):,} bytes of markdown written.")
    lines += ["", "## Outcomes", "", "| outcome | URLs |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in rep["outcomes"].items()]
    if rep["reasons"]:
        lines += ["", "## Reasons", "", "| reason | URLs |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in rep["reasons"].items()]
    if rep["slowest"]:
        lines += ["", "## Slowest pages", "", "| seconds | status | URL |", "|---:|---:|---|"]
        lines += [f"| {p['seconds']:.3f} | {p['status']} | {p['url']} |" for p in rep["slowest"]]
    if rep["largest"]:
        lines += ["", "## Largest pages", "", "| bytes | status | URL |", "|---:|---:|---|"]
        lines += [f"| {p['bytes']:,} | {p['status']} | {p['url']} |" for p in rep["largest"]]
    lines += ["", "## Hosts that blocked or rate-limited us", ""]
    if rep["hosts"]:
        lines += [f"- {h}: " + ", ".join(f"{k} {v}" for k, v in info.items())
                  for h, info in rep["hosts"].items()]
    else:
        lines.append("None.")
    c = rep["conditional"]
    lines += ["", "## Conditional requests", "",
              f"{c['not_modified']} page(s) answered 304 Not Modified, saving "
              f"{c['bytes_saved']:,} bytes.", ""]
    return "\n".join(lines)


def write(state: StateDir, rep: dict[str, Any]) -> None:
    """report.md and report.json in the state directory (each replaced whole, by rename)."""
    atomic_write(state.root / REPORT_JSON, json.dumps(rep, indent=2).encode() + b"\n")
    atomic_write(state.root / REPORT_MD, markdown(rep).encode())


def read(state: StateDir) -> dict[str, Any] | None:
    """The last crawl's report, or None before the first crawl that wrote one."""
    try:
        data = json.loads((state.root / REPORT_JSON).read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None
