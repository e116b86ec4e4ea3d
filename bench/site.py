"""Static benchmark sites written to disk, to be served by nginx (see bench/nginx.py).

Why static files: benchmarks must measure the crawler, so the server has to be fast and
boring.  Two shapes (``shape=``/``--shape``): ``docs``, the demo site's renderer
(``sitemap_crawler.demo.site``) with a fixed footer instead of the live clock, 10-30 KB each;
``long`` (bench/longsite.py), long prose pages (40-90 KB) under deep, heavy navigation with
few code blocks, the "another site of the same kind" of issue 13.

- ``build_site(root, pages=5000)``: the pages plus ``bench-site.json`` (path -> version,
  lastmod); file mtimes are set to each page's lastmod, so nginx's Last-Modified matches the
  sitemap.
- ``write_sitemaps(root, base_url)``: ``robots.txt``, ``sitemap.xml`` (an index) and one child
  per section (split at 50,000 URLs).  Sitemaps need absolute URLs, so this runs once the
  server's address is known; nginx serves files written after it started.
- ``mutate(root, fraction=0.05)``: rewrites the article of that fraction of pages and moves
  their lastmod (file mtime and sitemap) to now: the "5 % changed" incremental run.
- ``make_big_sitemap(dir, files=20, per_file=50_000, base_url=...)``: 1,000,000 URLs in urlset
  files under a sitemap index, for the prepare/discovery benchmark (pages are not written).

CLI: ``python -m bench.site build|sitemaps|mutate|big ...`` (``--help`` on each).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape

from bench.longsite import LongSite
from sitemap_crawler.demo import site as demosite

MANIFEST = "bench-site.json"
SIZE_RANGE = (10_000, 30_000)
MAX_PER_SITEMAP = 50_000  # the sitemaps.org limit per urlset file
_CHANGEFREQ = {"guide": "weekly", "reference": "monthly", "api": "weekly",
               "tutorials": "monthly", "blog": "yearly", "": "daily"}
_PRIORITY = {"guide": "0.8", "reference": "0.6", "api": "0.7", "tutorials": "0.6",
             "blog": "0.4", "": "1.0"}


def _w3c(t: datetime) -> str:
    return t.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def page_file(root: Path, url_path: str) -> Path:
    """Where the static file for a URL path lives (``/`` -> ``index.html``)."""
    rel = url_path.lstrip("/") or "index.html"
    if rel.endswith("/"):
        rel += "index.html"
    return root / rel


SHAPES = ("docs", "long")


def _site(pages: int, seed: int, shape: str = "docs") -> demosite.DemoSite | LongSite:
    """``docs``: the demo's documentation pages; ``long``: bench/longsite.py (long prose,
    deep navigation, few code blocks)."""
    if shape == "long":
        return LongSite(pages, seed)
    if shape != "docs":
        raise ValueError(f"unknown site shape {shape!r} (one of {', '.join(SHAPES)})")
    return demosite.generate(0, pages=pages, seed=seed, size_range=SIZE_RANGE, specials=False)


def _write(path: Path, data: bytes, mtime: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    os.replace(tmp, path)  # atomic: nginx never serves a half-written page


def load_manifest(root: Path) -> dict:
    return json.loads((Path(root) / MANIFEST).read_text())


def _save_manifest(root: Path, manifest: dict) -> None:
    _write(Path(root) / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True).encode())


def _related(site: demosite.DemoSite | LongSite, related: int) -> dict[str, list[str]]:
    """A ``related``-ary tree over all pages (home first, then the generator's order): page
    i links to pages ``related*i+1 .. related*i+related``, so every page is reachable from
    the home page by links, within log_related(N) + 1 hops."""
    order = sorted((p.path for p in site.pages), key=lambda p: p != "/")
    return {path: order[related * i + 1:related * i + 1 + related]
            for i, path in enumerate(order)}


def _with_related(body: bytes, links: list[str]) -> bytes:
    """The page with a "Related pages" list before ``</main>`` (no-op without links)."""
    if not links:
        return body
    lis = "".join(f'<li><a href="{escape(p)}">{escape(p.rsplit("/", 1)[-1] or "Home")}</a></li>'
                  for p in links)
    nav = (f'<nav class="related" aria-label="Related pages"><p>Related pages</p><ul>{lis}'
           "</ul></nav>\n")
    return body.replace(b"</main>", nav.encode() + b"</main>", 1)


def build_site(root: Path, pages: int = 5_000, seed: int = 7, related: int = 0,
               shape: str = "docs") -> dict:
    """Write ``pages`` documentation pages (plus home and 5 section indexes) under ``root``.

    The demo site's pages link only to the ~50 sidebar pages, so a crawler that follows links
    from the home page reaches 53 of them.  ``related=K`` adds a "Related pages" list of K
    links to every page (a K-ary tree over the whole site, see :func:`_related`) so that
    link following reaches all of them; the link-following benchmark uses ``related=10``.
    ``shape`` picks the pages: ``docs`` (the demo's) or ``long`` (bench/longsite.py)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    site = _site(pages, seed, shape)
    tree = _related(site, related) if related else {}
    entries: dict[str, dict] = {}
    total = 0
    for page in site.pages:
        body = _with_related(site.render_page(page), tree.get(page.path, []))
        total += len(body)
        _write(page_file(root, page.path), body, page.lastmod.timestamp())
        entries[page.path] = {"version": page.version, "lastmod": _w3c(page.lastmod),
                              "section": page.section}
    manifest = {"pages": pages, "seed": seed, "related": related, "mutations": 0,
                "shape": shape,
                "base_url": None,
                "bytes": total, "urls": entries}
    _save_manifest(root, manifest)
    return manifest


def _urlset(base_url: str, rows: list[tuple[str, str, str]]) -> bytes:
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    out += [f"<url><loc>{escape(base_url + path)}</loc><lastmod>{lastmod}</lastmod>"
            f"<changefreq>{_CHANGEFREQ.get(section, 'weekly')}</changefreq>"
            f"<priority>{_PRIORITY.get(section, '0.5')}</priority></url>"
            for path, lastmod, section in rows]
    out.append("</urlset>\n")
    return "\n".join(out).encode()


def _index(entries: list[tuple[str, str]]) -> bytes:
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    out += [f"<sitemap><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></sitemap>"
            for loc, lastmod in entries]
    out.append("</sitemapindex>\n")
    return "\n".join(out).encode()


def _robots(base_url: str, index_path: str) -> bytes:
    return (f"User-agent: *\nDisallow: /private/\nAllow: /\n\n"
            f"Sitemap: {base_url}{index_path}\n").encode()


def write_sitemaps(root: Path, base_url: str) -> Path:
    """robots.txt + sitemap.xml (index) + ``sitemap-<section>[-N].xml`` for ``base_url``."""
    root = Path(root)
    base_url = base_url.rstrip("/")
    manifest = load_manifest(root)
    by_section: dict[str, list[tuple[str, str, str]]] = {}
    for path, e in sorted(manifest["urls"].items()):
        by_section.setdefault(e["section"] or "home", []).append(
            (path, e["lastmod"], e["section"]))
    index_entries = []
    for section, rows in by_section.items():
        for n, i in enumerate(range(0, len(rows), MAX_PER_SITEMAP), 1):
            chunk = rows[i:i + MAX_PER_SITEMAP]
            name = f"sitemap-{section}.xml" if n == 1 else f"sitemap-{section}-{n}.xml"
            _write(root / name, _urlset(base_url, chunk))
            index_entries.append((f"{base_url}/{name}", max(r[1] for r in chunk)))
    _write(root / "sitemap.xml", _index(index_entries))
    _write(root / "robots.txt", _robots(base_url, "/sitemap.xml"))
    manifest["base_url"] = base_url
    _save_manifest(root, manifest)
    return root / "sitemap.xml"


def mutate(root: Path, fraction: float = 0.05, seed: int | None = None) -> list[str]:
    """Rewrite the article of ``fraction`` of the article pages; returns their URL paths.

    Their lastmod (file mtime, sitemap ``<lastmod>``) moves to now; sitemaps are rewritten
    when ``write_sitemaps`` has run before (the manifest remembers the base URL).
    """
    root = Path(root)
    manifest = load_manifest(root)
    site = _site(manifest["pages"], manifest["seed"], manifest.get("shape", "docs"))
    tree = _related(site, manifest["related"]) if manifest.get("related") else {}
    step = manifest["mutations"]
    rng = random.Random(f"{manifest['seed']}:mutate:{step}" if seed is None else seed)
    candidates = sorted(p for p, e in manifest["urls"].items()
                        if e["section"] and not p.endswith("/index.html"))
    k = min(len(candidates), max(1, round(fraction * len(manifest["urls"]))))
    chosen = sorted(rng.sample(candidates, k))
    # whole seconds, strictly later than any earlier lastmod: nginx's ETag is mtime + size
    now = datetime.fromtimestamp(int(time.time()), UTC)
    for path in chosen:
        e = manifest["urls"][path]
        before = datetime.fromisoformat(e["lastmod"].replace("Z", "+00:00"))
        when = max(now, before + timedelta(seconds=1))
        page = site.page(path)
        assert page is not None, path
        page = dataclasses.replace(page, version=e["version"] + 1, lastmod=when)
        _write(page_file(root, path), _with_related(site.render_page(page), tree.get(path, [])),
               when.timestamp())
        e["version"], e["lastmod"] = page.version, _w3c(when)
    manifest["mutations"] = step + 1
    _save_manifest(root, manifest)
    if manifest.get("base_url"):
        write_sitemaps(root, manifest["base_url"])
    return chosen


_WORDS = ("install", "configure", "deploy", "backup", "network", "storage", "policy",
          "account", "billing", "release", "notes", "security", "cluster", "metrics",
          "upgrade", "migration", "troubleshooting", "reference", "overview", "quick")


def make_big_sitemap(dir: Path, files: int = 20, per_file: int = 50_000, *,
                     base_url: str, shape: str = "plain", gzipped: bool = False) -> Path:
    """``files`` urlset files of ``per_file`` URLs each (default 1,000,000) under an index.

    Writes ``sitemap.xml`` (the index), ``sitemaps/urls-NNNN.xml`` and a ``robots.txt`` that
    points at the index.  The pages themselves are not written: this is for discovery only.
    ``shape``: ``plain`` paths (``/guide/page-0000001.html``) or ``varied`` ones, longer and
    of many lengths (``/guide/deploy-backup-notes-0000001.html``, issue 22); ``gzipped``:
    the urlset files as ``.xml.gz``.
    """
    if per_file > MAX_PER_SITEMAP:
        raise ValueError("the sitemap protocol allows at most 50,000 URLs per file")
    root = Path(dir)
    (root / "sitemaps").mkdir(parents=True, exist_ok=True)
    base_url = base_url.rstrip("/")
    sections = ("guide", "reference", "api", "tutorials", "blog")
    freqs = ("daily", "weekly", "monthly", "yearly")
    epoch = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    index_entries = []
    n = 0
    for f in range(1, files + 1):
        rows = ['<?xml version="1.0" encoding="UTF-8"?>',
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        last = ""
        for _ in range(per_file):
            section = sections[n % 5]
            lastmod = _w3c(datetime.fromtimestamp(epoch - (n * 7919) % (400 * 86400), UTC))
            last = max(last, lastmod)
            if shape == "varied":
                w = _WORDS
                page = f"{w[n % 20]}-{w[n * 7 // 3 % 20]}-{w[n * 13 // 7 % 20]}-{n:07d}"
            else:
                page = f"page-{n:07d}"
            rows.append(f"<url><loc>{base_url}/{section}/{page}.html</loc>"
                        f"<lastmod>{lastmod}</lastmod><changefreq>{freqs[n % 4]}</changefreq>"
                        f"<priority>0.{n % 9 + 1}</priority></url>")
            n += 1
        rows.append("</urlset>\n")
        name = f"sitemaps/urls-{f:04d}.xml" + (".gz" if gzipped else "")
        body = "\n".join(rows).encode()
        _write(root / name, gzip.compress(body, 6) if gzipped else body)
        index_entries.append((f"{base_url}/{name}", last))
    _write(root / "sitemap.xml", _index(index_entries))
    _write(root / "robots.txt", _robots(base_url, "/sitemap.xml"))
    return root / "sitemap.xml"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.site", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the static documentation pages")
    b.add_argument("root", type=Path)
    b.add_argument("--pages", type=int, default=5_000)
    b.add_argument("--seed", type=int, default=7)
    b.add_argument("--related", type=int, default=0,
                   help="add K 'Related pages' links per page so links reach every page")
    b.add_argument("--shape", choices=SHAPES, default="docs",
                   help="docs: the demo's docs pages (10-30 KB); long: long prose pages "
                        "under deep, heavy navigation (bench/longsite.py)")
    s = sub.add_parser("sitemaps", help="write robots.txt and sitemaps for a base URL")
    s.add_argument("root", type=Path)
    s.add_argument("--base", required=True, help="e.g. http://127.0.0.1:8088")
    m = sub.add_parser("mutate", help="rewrite a fraction of the pages")
    m.add_argument("root", type=Path)
    m.add_argument("--fraction", type=float, default=0.05)
    g = sub.add_parser("big", help="write the 1,000,000-URL sitemap index")
    g.add_argument("root", type=Path)
    g.add_argument("--base", required=True)
    g.add_argument("--files", type=int, default=20)
    g.add_argument("--per-file", type=int, default=50_000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.cmd == "build":
        man = build_site(args.root, args.pages, args.seed, args.related, args.shape)
        print(f"{len(man['urls'])} pages, {man['bytes'] / 1e6:.1f} MB in {args.root}")
    elif args.cmd == "sitemaps":
        print(write_sitemaps(args.root, args.base))
    elif args.cmd == "mutate":
        print(f"{len(mutate(args.root, args.fraction))} pages changed")
    else:
        print(make_big_sitemap(args.root, args.files, args.per_file, base_url=args.base))
    print(f"{time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
