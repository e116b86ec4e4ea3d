"""Scale: a crawl of 100,000 small pages end to end, watching that the bookkeeping stays flat.

    python -m bench.bench_scale [--pages 100000] [--workers 4] [--workdir DIR] [--keep]
    python -m bench.bench_scale --pages 5000          # smoke run, ~30 s

Writes ``--pages`` small static pages (~1.5 KB of HTML each, in directories of 1,000) and
their sitemaps (``bench/site.py``'s urlset and index writers, 50,000 URLs per file), serves
them with a private nginx (``bench/nginx.py``), then runs the real CLI:
``sitemap-crawler prepare`` and ``work --workers N``.  While ``work`` runs it samples, from
outside the crawler:

* pages done over time: the complete lines of the workers' journals, read incrementally
  every 0.25 s (journals are append-only; each line is one finished URL), giving pages/s for
  every ``--chunk`` pages (10,000 by default: the first, each one between, the last);
* RSS of each process of the run (the runner and its workers) from /proc every second;
* the number of files under ``.crawl-state`` but ``names/``, every 5 s and at the end
  (after the merge), split by directory; the name claims (one a page, never released:
  protocol/names.py N3) are counted at the end only (``count_files``).

After the crawl it times ``status --json`` and a second ``prepare`` (which prunes completed
tickets by name, tickets.py T7).  One JSON record goes to stdout (and ``--out``), preceded
by a readable summary on stderr.  Why: issue 13 ("scale") asks that a long crawl's costs
per page and per process stay flat instead of growing with what was already done.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from bench.nginx import nginx_serving
from bench.site import MAX_PER_SITEMAP, _index, _urlset, _write

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Item {i}</title></head><body><header><a href="/">Home</a></header>
<main><article><h1>Item {i}</h1>
<p>This is item number {i} of the scale benchmark. It has a short paragraph of text so that
the converter keeps it as a page: section {d}, position {r} in its directory.</p>
<h2>Details</h2><ul><li>identifier {i}</li><li>group {d}</li><li>rank {r}</li></ul>
<p>Nothing else is on this page; the point is the bookkeeping of many small pages.</p>
</article></main><footer>scale bench</footer></body></html>
"""


def build(root: Path, pages: int) -> list[str]:
    """The static pages; returns their URL paths."""
    paths = []
    for i in range(pages):
        d, r = divmod(i, 1000)
        rel = f"p/{d:03d}/{i:06d}.html"
        f = root / rel
        if r == 0:
            f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(PAGE.format(i=i, d=d, r=r))
        paths.append("/" + rel)
    return paths


def write_sitemaps(root: Path, base: str, paths: list[str]) -> None:
    lastmod = "2026-01-01T00:00:00Z"
    entries = []
    for n, i in enumerate(range(0, len(paths), MAX_PER_SITEMAP)):
        name = f"sitemap-{n}.xml"
        _write(root / name, _urlset(base, [(p, lastmod, "") for p in
                                           paths[i:i + MAX_PER_SITEMAP]]))
        entries.append((f"{base}/{name}", lastmod))
    _write(root / "sitemap.xml", _index(entries))
    _write(root / "robots.txt", f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap.xml\n"
           .encode())


def write_config(path: Path, base: str, out: Path, ticket_size: int) -> Path:
    cfg = {"settings": {"base_output_dir": str(out), "request_delay": 0,
                        "max_parallel_per_host": 8, "max_urls_per_site": 0,
                        "crawl_state": {"ticket_size": ticket_size}},
           "sites": [{"name": "bench", "source": f"{base}/sitemap.xml", "base_dir": "md"}]}
    path.write_text(yaml.safe_dump(cfg))
    return path


def cli(cfg: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sitemap_crawler", "--config", str(cfg),
                             "--log-level", "WARNING", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_timed(cfg: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = cli(cfg, *args)
    out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"{args}: exit {p.returncode}\n{err[-3000:]}")
    return time.perf_counter() - t0, out


# -- sampling from outside -------------------------------------------------------------------
def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc/*/stat)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def count_files(root: Path, names: bool = True) -> tuple[int, dict[str, int]]:
    """Files under the state folder by ``<site>/<dir>``.  A name claim is a folder with one
    file (names.py N1), so ``names/`` grows by one folder a page by design (N3); walking it
    is a listdir per claim (~0.5 s of CPU a sample at 500,000 pages, which slowed the crawl
    it measures), so its claims are counted by listing its shards, and only if ``names``."""
    by: dict[str, int] = {}
    total = 0
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root).parts
        if len(rel) == 2 and rel[1] == "names":
            dirs[:] = []
            if names:
                n = sum(len(os.listdir(e.path)) for e in os.scandir(dirpath) if e.is_dir())
                by["names"] = n
                total += n
            continue
        if not files:
            continue
        key = "/".join(rel[1:3]) if len(rel) > 1 else "."  # <site>/tickets/completed -> ...
        by[key] = by.get(key, 0) + len(files)
        total += len(files)
    return total, by


class Sampler:
    """Journal lines (pages done), RSS and state files, sampled while ``work`` runs."""

    def __init__(self, state: Path, runner: int, t0: float) -> None:
        self.state, self.runner, self.t0 = state, runner, t0
        self.offsets: dict[str, int] = {}  # journal owner -> bytes counted
        self.done = 0
        self.progress: list[tuple[float, int]] = [(0.0, 0)]
        self.rss: dict[int, list[tuple[float, int]]] = {}
        self.files: list[dict[str, Any]] = []
        self.last_worker_seen = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _journals(self) -> None:
        jdir = self.state / "journal"
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(jdir):
                if not name.endswith(".jsonl") or name.startswith("."):
                    continue
                owner = name.removesuffix(".jsonl").removesuffix(".closed")
                start = self.offsets.get(owner, 0)
                try:
                    with open(jdir / name, "rb") as f:
                        f.seek(start)
                        data = f.read()
                except FileNotFoundError:
                    continue
                end = data.rfind(b"\n") + 1  # count complete lines only
                self.done += data[:end].count(b"\n")
                self.offsets[owner] = start + end
        self.progress.append((time.monotonic() - self.t0, self.done))

    def _rss(self) -> None:
        t = time.monotonic() - self.t0
        kids = children(self.runner)
        for pid in [self.runner, *kids]:
            if (kib := rss_kib(pid)) is not None:
                self.rss.setdefault(pid, []).append((t, kib))
        if kids:
            self.last_worker_seen = t

    def _files(self) -> None:
        total, by = count_files(self.state.parent, names=False)  # names/: at the end
        self.files.append({"t": round(time.monotonic() - self.t0, 1), "files": total,
                           "by_dir": by})

    def _run(self) -> None:
        n = 0
        while not self.stop.wait(0.25):
            self._journals()
            if n % 4 == 0:
                self._rss()
            if n % 20 == 0:
                self._files()
            n += 1

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def crossing(progress: list[tuple[float, int]], k: int) -> float | None:
    """When the pages-done curve reached ``k`` (linear between samples)."""
    for (t0, d0), (t1, d1) in itertools.pairwise(progress):
        if d0 < k <= d1:
            return t0 + (t1 - t0) * (k - d0) / (d1 - d0)
    return None


def chunk_rates(progress: list[tuple[float, int]], total: int, chunk: int,
                end: float) -> list[dict[str, Any]]:
    """pages/s for every ``chunk`` pages: [0, chunk), [chunk, 2 chunk), ... up to ``total``.
    The last boundary is ``end`` if the sampler did not see the last lines (merged away)."""
    out = []
    prev_t, prev_k = 0.0, 0
    for k in [*range(chunk, total, chunk), total]:
        t = crossing(progress, k)
        if t is None:
            t = end
        rate = (k - prev_k) / (t - prev_t) if t > prev_t else None
        out.append({"pages": f"{prev_k}-{k}", "seconds": round(t - prev_t, 2),
                    "pages_per_s": round(rate, 1) if rate else None})
        prev_t, prev_k = t, k
    return out


def rss_summary(rss: dict[int, list[tuple[float, int]]], runner: int) -> dict[str, Any]:
    out = {}
    for pid, s in sorted(rss.items()):
        kib = [v for _t, v in s]
        at10 = next((v for t, v in s if t >= s[0][0] + 10), kib[-1])
        out["runner" if pid == runner else f"worker-{pid}"] = {
            "first_mib": round(kib[0] / 1024, 1), "at_10s_mib": round(at10 / 1024, 1),
            "max_mib": round(max(kib) / 1024, 1), "last_mib": round(kib[-1] / 1024, 1),
            "samples": len(kib)}
    return out


def rss_timeline(rss: dict[int, list[tuple[float, int]]], runner: int,
                 step: float = 10.0) -> list[dict[str, Any]]:
    """RSS (MiB) of the runner and the largest worker about every ``step`` seconds."""
    times = sorted({round(t) for s in rss.values() for t, _v in s})
    out: list[dict[str, Any]] = []
    for t in times:
        if out and t - out[-1]["t"] < step and t != times[-1]:
            continue
        row: dict[str, Any] = {"t": t}
        for pid, s in rss.items():
            v = next((v for tt, v in s if round(tt) == t), None)
            if v is None:
                continue
            if pid == runner:
                row["runner_mib"] = round(v / 1024, 1)
            else:
                row["worker_max_mib"] = max(row.get("worker_max_mib", 0), round(v / 1024, 1))
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--ticket-size", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=0,
                    help="pages per rate step (default 10,000, or pages/10 below 20,000)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="append the JSON record here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    chunk = a.chunk or (10_000 if a.pages >= 20_000 else max(1, a.pages // 10))
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    if work.exists():
        shutil.rmtree(work)
    site, out = work / "site", work / "out"
    site.mkdir(parents=True)
    t = time.perf_counter()
    paths = build(site, a.pages)
    print(f"built {a.pages} pages in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    rec: dict[str, Any] = {"bench": "scale", "pages": a.pages, "workers": a.workers,
                           "ticket_size": a.ticket_size, "chunk": chunk}
    try:
        with nginx_serving(site) as base:
            write_sitemaps(site, base, paths)
            cfg = write_config(work / "config.yaml", base, out, a.ticket_size)
            state = out / ".crawl-state" / "bench"
            rec["prepare_s"], _ = run_timed(cfg, "prepare", "bench")
            rec["files_after_prepare"] = count_files(out / ".crawl-state")[0]
            t0 = time.monotonic()
            proc = cli(cfg, "work", "bench", "--workers", str(a.workers))
            sampler = Sampler(state, proc.pid, t0).start()
            _stdout, err = proc.communicate()
            wall = time.monotonic() - t0
            sampler.close()
            if proc.returncode != 0:
                raise RuntimeError(f"work: exit {proc.returncode}\n{err[-3000:]}")
            total, by = count_files(out / ".crawl-state")
            sampler.files.append({"t": round(wall, 1), "files": total - by.get("names", 0),
                                  "by_dir": by, "after": "work exited (journals merged)"})
            last = json.loads((state / "manifest.json").read_text())["last_crawl"]
            rec.update({"work_s": round(wall, 2), "urls": last.get("urls"),
                        "new": last.get("new"), "failed": last.get("failed", 0),
                        "pages_per_s": round((last.get("urls") or 0) / wall, 1),
                        "journal_lines_seen": sampler.done})
            end = sampler.last_worker_seen or wall
            rec["rate_per_chunk"] = chunk_rates(sampler.progress, last.get("urls") or 0,
                                                chunk, end)
            rec["rss"] = rss_summary(sampler.rss, proc.pid)
            rec["rss_timeline"] = rss_timeline(sampler.rss, proc.pid)
            rec["workers_exited_at_s"] = round(sampler.last_worker_seen, 1)
            rec["state_files"] = [{k: v for k, v in f.items() if k != "by_dir"}
                                  for f in sampler.files]
            rec["state_files_end_by_dir"] = by
            rec["state_files_max"] = max(f["files"] for f in sampler.files)
            rec["status_s"], _ = run_timed(cfg, "status", "bench", "--json")
            rec["prepare_again_s"], _ = run_timed(cfg, "prepare", "bench")
            md = sum(1 for _ in (out / "md").rglob("*.md"))
            rec["markdown_files"] = md
        # the record first: removing a million pages' files takes many minutes
        print(summary(rec), file=sys.stderr)
        line = json.dumps(rec)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def summary(rec: dict[str, Any]) -> str:
    lines = [f"{rec['urls']} pages in {rec['work_s']} s ({rec['pages_per_s']} pages/s), "
             f"prepare {rec['prepare_s']:.1f} s; {rec['markdown_files']} markdown files"]
    lines += [f"  pages {c['pages']}: {c['pages_per_s']} pages/s" for c in rec["rate_per_chunk"]]
    lines += [f"  RSS {k}: {v['first_mib']} -> {v['at_10s_mib']} (10 s) -> {v['last_mib']} MiB, "
              f"max {v['max_mib']}" for k, v in rec["rss"].items()]
    lines.append("  RSS over time (runner / largest worker, MiB): " + ", ".join(
        f"{r['t']}s {r.get('runner_mib')}/{r.get('worker_max_mib', '-')}"
        for r in rec["rss_timeline"]))
    lines.append(f"  workers last seen at {rec['workers_exited_at_s']} s of {rec['work_s']} s")
    lines.append("  .crawl-state files: " + ", ".join(
        f"{f['t']}s {f['files']}" for f in rec["state_files"]))
    lines.append(f"  status {rec['status_s']:.2f} s, second prepare {rec['prepare_again_s']:.1f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
