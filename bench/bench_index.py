"""Index scale: does a crawl cost what it does, or what the site holds?

    python -m bench.bench_index [--sizes 10000,100000,1000000] [--changed 1000]
                                [--dirs local,smb] [--pythonpath DIR] [--workdir DIR]
                                [--base-format jsonl|json]

For each state location (``local``: a directory under --workdir; ``smb``: the SMB share's
mount A, ../shared/netfs) and each index size N, on one nginx (bench/nginx.py) serving
``--changed`` real documentation pages (bench/site.py):

1. a url-index of N entries is synthesised in a fresh state directory: the ``--changed`` real
   pages, crawled long ago, plus N - changed other URLs of the same site; the site's sitemap
   lists all N, the real pages with a new ``lastmod``, the others with an old one.  The
   JSONL base is written by the code under test (``write_base_stream``, with its segment
   list, as a crawl leaves it); until issue 22b (bench/RESULTS.md) it was written without a
   list, so the first prepare measured also rewrote the whole base once (I6);
2. ``sitemap-crawler prepare`` (timed, peak RSS): it must ticket exactly the changed pages;
3. ``sitemap-crawler work --workers 4`` (timed): fetches and writes the changed pages and
   merges their results into the index; "state bytes written" is the size of every file in
   the state directory that is new or replaced after the run (url-index.json, its segments,
   journals, tickets, heartbeats), measured by comparing (inode, mtime, size) before/after;
4. ``sitemap-crawler status --json`` (timed), then ``prepare`` again (timed, peak RSS): a
   no-op, every URL fresh; then ``export`` of every row to jsonl and to parquet (timed,
   peak RSS);
5. a merge alone: a journal of ``--changed`` records folded by ``protocol.index.merge`` in a
   fresh process (timed).

``--pythonpath`` runs every sitemap-crawler process from another checkout (for a before/after
comparison at an older commit).  One JSON line per (dir, N); a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench import site as bench_site
from bench.nginx import nginx_serving

REPO = Path(__file__).resolve().parents[1]
SMB = Path("/tmp/netfs/mnt/smb-a")
OLD = "2026-01-01T00:00:00Z"
OLDER = "2025-12-01T00:00:00Z"

_MEASURE = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_CHILDREN)
rss = use.ru_maxrss
print(json.dumps({"rc": r.returncode, "seconds": wall, "max_rss_kib": rss,
                  "cpu": use.ru_utime + use.ru_stime,
                  "stdout": r.stdout[-4000:], "stderr": r.stderr[-2000:]}))
"""

_MERGE = r"""
import json, sys, time
from pathlib import Path
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.journal import Journal
from sitemap_crawler.protocol.state import StateDir, new_worker_id
from sitemap_crawler.timestamps import utcnow
state = StateDir(Path(sys.argv[1]))
wid = new_worker_id()
j = Journal(state.journal, wid)
for i in range(int(sys.argv[2])):
    j.append({"url": f"{sys.argv[3]}/other/{i}.html", "ticket": "m", "worker": wid,
              "final": True, "last_crawled": utcnow(), "status_code": 200,
              "outcome": "changed", "etag": '"m"', "content_hash": "sha256:" + "cd" * 32})
j.close()
t0 = time.perf_counter()
url_index.merge(state, wid, lambda w: False, lambda w: True)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


_LIST = r"""
import sys
from pathlib import Path
from sitemap_crawler.protocol import index as url_index
from sitemap_crawler.protocol.state import StateDir
src = Path(sys.argv[2])
state = StateDir(Path(sys.argv[1]))
state.ensure()
url_index.write_base_stream(state, url_index.iter_entries(src),
                            lambda: None)
src.unlink()
"""


def _env(pythonpath: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath or str(REPO)
    return env


def _cwd(env: dict[str, str]) -> str:
    """``python -m``/``-c`` put the working directory first on sys.path: run from the
    checkout under test, or the repository's own package would be imported instead."""
    return env["PYTHONPATH"]


def _measured(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True,
                       text=True, env=env, check=True, cwd=_cwd(env))
    out = json.loads(r.stdout)
    if out["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd[2:])}: exit {out['rc']}: {out['stderr']}")
    return out


def _entry(url: str, path: str, i: int) -> dict[str, Any]:
    return {"etag": f'"{i:x}-5f3c"', "last_modified": "Thu, 01 Jan 2026 00:00:00 GMT",
            "content_hash": f"sha256:{i:064x}", "status_code": 200, "last_crawled": OLD,
            "file_path": f"md/{path.strip('/') or 'index'}.md", "outcome": "unchanged",
            "title": f"Page {i}", "bytes": 14000 + i % 5000}


def write_sitemaps(root: Path, n: int, base: str, real: list[str]) -> str:
    """``/n<N>/sitemap.xml``: an index over files of 50,000; the real pages listed with a
    new lastmod, the others (never served: prepare must not ticket them) with an old one."""
    d = root / f"n{n}"
    d.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = [(base + p, now) for p in real]
    rows += [(f"{base}/other/{i}.html", OLDER) for i in range(n - len(real))]
    names = []
    for k in range(0, len(rows), 50_000):
        name = f"part-{k // 50_000:04d}.xml"
        body = ['<?xml version="1.0" encoding="UTF-8"?>',
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        body += [f"<url><loc>{u}</loc><lastmod>{lm}</lastmod></url>"
                 for u, lm in rows[k:k + 50_000]]
        body.append("</urlset>\n")
        (d / name).write_text("\n".join(body))
        names.append(name)
    idx = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    idx += [f"<sitemap><loc>{base}/n{n}/{x}</loc></sitemap>" for x in names]
    idx.append("</sitemapindex>\n")
    (d / "sitemap.xml").write_text("\n".join(idx))
    return f"{base}/n{n}/sitemap.xml"


def synth_index(state: Path, n: int, base: str, real: list[str], fmt: str = "jsonl") -> int:
    """The base as the measured code writes it: ``jsonl`` (sorted lines, since issue 22) or
    ``json`` (one object, for code before it)."""
    idx = {base + p: _entry(base + p, p, i) for i, p in enumerate(real)}
    for i in range(n - len(real)):
        u = f"{base}/other/{i}.html"
        idx[u] = _entry(u, f"other/{i}.html", i + len(real))
    state.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        data = orjson.dumps(idx, option=orjson.OPT_SORT_KEYS)
    else:
        buf = bytearray()
        for u in sorted(idx):
            buf += orjson.dumps({"url": u, **idx[u]}) + b"\n"
        data = bytes(buf)
    del idx
    (state / "url-index.json").write_bytes(data)
    return len(data)


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            out[p] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return out


def written(before: dict[str, tuple[int, int, int]],
            after: dict[str, tuple[int, int, int]]) -> tuple[int, int]:
    """(bytes, files) new or replaced between the two snapshots."""
    changed = [v for p, v in after.items() if before.get(p) != v]
    return sum(v[2] for v in changed), len(changed)


def one(where: Path, n: int, changed: int, base: str, real: list[str], source: str,
        env: dict[str, str], fmt: str = "jsonl") -> dict[str, Any]:
    out = where / f"run-{n}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cfg = out / "config.yaml"
    cfg.write_text(yaml.safe_dump({
        "settings": {"base_output_dir": str(out), "request_delay": 0,
                     "max_parallel_per_host": 8, "max_urls_per_site": 0,
                     "crawl_state": {"ticket_size": 100}},
        "sites": [{"name": "bench", "source": source, "base_dir": "md"}]}))
    state = out / ".crawl-state" / "bench"
    if fmt == "json":
        base_bytes = synth_index(state, n, base, real, fmt)
    else:  # written by the code under test, with its segment list, as a crawl leaves it
        raw = out / "synth-base.jsonl"
        synth_index(out / "synth", n, base, real, fmt)
        (out / "synth" / "url-index.json").rename(raw)
        subprocess.run([sys.executable, "-c", _LIST, str(state), str(raw)], env=env,
                       check=True, cwd=_cwd(env))
        base_bytes = (state / "url-index.json").stat().st_size
    cli = [sys.executable, "-m", "sitemap_crawler", "--config", str(cfg), "--log-level",
           "WARNING"]
    prep = _measured([*cli, "prepare", "bench"], env)
    pending = sum(len(orjson.loads(p.read_bytes())["urls"])
                  for p in (state / "tickets" / "pending").glob("*.json"))
    if pending != changed:
        raise RuntimeError(f"prepare ticketed {pending} URLs, expected {changed}")
    before = snapshot(state)
    work = _measured([*cli, "work", "bench", "--workers", "4"], env)
    after = snapshot(state)
    wbytes, wfiles = written(before, after)
    st = _measured([*cli, "status", "bench", "--json"], env)
    noop = _measured([*cli, "prepare", "bench"], env)  # nothing changed since: all fresh
    if noop["rc"] != 0 or "wrote 0 tickets" not in noop["stdout"]:
        raise RuntimeError(f"the second prepare was not a no-op: {noop['stdout'][-500:]}"
                           f"{noop['stderr'][-500:]}")
    exports = {}
    for fmt_out in ("jsonl", "parquet"):  # every row of the index, streamed (issue 22)
        dest = out / f"export.{fmt_out}"
        ex = _measured([*cli, "export", "bench", "--format", fmt_out, "-o", str(dest)], env)
        exports[fmt_out] = (ex, dest.stat().st_size)
        dest.unlink()
    merge = subprocess.run([sys.executable, "-c", _MERGE, str(state), str(changed), base],
                           capture_output=True, text=True, env=env, check=True,
                           cwd=_cwd(env))
    code = subprocess.run([sys.executable, "-c", "import sitemap_crawler as s; print(s.__file__)"],
                          capture_output=True, text=True, env=env, cwd=_cwd(env)).stdout.strip()
    rec = {"dir": str(where), "code": code, "index_entries": n, "index_base_bytes": base_bytes,
           "changed": changed,
           "prepare_s": round(prep["seconds"], 2),
           "prepare_rss_mib": round(prep["max_rss_kib"] / 1024, 1),
           "prepare_cpu_s": round(prep["cpu"], 2), "work_cpu_s": round(work["cpu"], 2),
           "noop_prepare_cpu_s": round(noop["cpu"], 2),
           "loadavg_1m": round(os.getloadavg()[0], 2),
           "work_s": round(work["seconds"], 2),
           "work_state_bytes_written": wbytes, "work_state_files_written": wfiles,
           "work_rss_mib": round(work["max_rss_kib"] / 1024, 1),
           "status_s": round(st["seconds"], 2),
           "recrawl_s": round(prep["seconds"] + work["seconds"], 2),
           "noop_prepare_s": round(noop["seconds"], 2),
           "noop_prepare_rss_mib": round(noop["max_rss_kib"] / 1024, 1),
           **{f"export_{k}_{m}": v for k, (ex, size) in exports.items()
              for m, v in (("s", round(ex["seconds"], 2)),
                           ("rss_mib", round(ex["max_rss_kib"] / 1024, 1)),
                           ("mb", round(size / 1e6, 1)))},
           "merge_1000_s": round(json.loads(merge.stdout)["seconds"], 3),
           "md_files": sum(1 for _ in (out / "md").rglob("*.md"))}
    shutil.rmtree(out, ignore_errors=True)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--changed", type=int, default=1000)
    ap.add_argument("--dirs", default="local,smb")
    ap.add_argument("--pythonpath", default=None)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--base-format", choices=("jsonl", "json"), default="jsonl",
                    help="json: the one-object base of code before issue 22 (--pythonpath)")
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-index-"))
    site_root = work / "site"
    bench_site.build_site(site_root, pages=a.changed)
    real = sorted(bench_site.load_manifest(site_root)["urls"])[:a.changed]
    env = _env(a.pythonpath)
    rows = []
    with nginx_serving(site_root) as base_url:
        base = base_url.rstrip("/")
        sizes = [int(s) for s in a.sizes.split(",")]
        sources = {n: write_sitemaps(site_root, n, base, real) for n in sizes}
        for kind in a.dirs.split(","):
            where = work / "local" if kind == "local" else SMB / f"bench-index-{os.getpid()}"
            where.mkdir(parents=True, exist_ok=True)
            try:
                for n in sizes:
                    rec = {"where": kind, **one(where, n, a.changed, base, real, sources[n],
                                                env, a.base_format)}
                    rows.append(rec)
                    print(json.dumps(rec), flush=True)
            finally:
                if kind != "local":
                    shutil.rmtree(where, ignore_errors=True)
    print(f"\n{'where':6} {'entries':>9} {'base MB':>8} {'prepare s':>9} {'prep MiB':>8} "
          f"{'work s':>7} {'re-crawl s':>10} {'state MB written':>16} {'status s':>8} "
          f"{'merge s':>8} {'no-op prep s':>12} {'MiB':>6}")
    for r in rows:
        print(f"{r['where']:6} {r['index_entries']:>9,} {r['index_base_bytes'] / 1e6:>8.1f} "
              f"{r['prepare_s']:>9.2f} {r['prepare_rss_mib']:>8.1f} {r['work_s']:>7.2f} "
              f"{r['recrawl_s']:>10.2f} "
              f"{r['work_state_bytes_written'] / 1e6:>16.2f} {r['status_s']:>8.2f} "
              f"{r['merge_1000_s']:>8.3f} {r['noop_prepare_s']:>12.2f} "
              f"{r['noop_prepare_rss_mib']:>6.1f}")
    if a.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
